"""Failure text cannot stall a worker: every rule runs on RE2, over bounded text, in linear time."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from airflow_retry_provider.policy import DEFAULT_RULES, AllOf, MessagePattern, classify
from airflow_retry_provider.policy.engine import MAX_MATCH_CHARS, Pattern, PatternError, bounded, pattern
from airflow_retry_provider.retry_policy import ClassifiedRetryPolicy

NOW = datetime(2026, 12, 1, 10, tzinfo=timezone.utc)
SIZES = (1_000, 10_000, 100_000)
# generous: linear matching of 100 KB takes about a millisecond; backtracking took seconds
BOUND_SECONDS = 0.25


def _message_rules():
    for rule in DEFAULT_RULES:
        parts = rule.rules if isinstance(rule, AllOf) else (rule,)
        yield from (part for part in parts if isinstance(part, MessagePattern))


def _words() -> list[str]:
    """Every literal the default message rules look for, and the pieces of their regexes."""
    words: set[str] = set()
    for rule in _message_rules():
        words.update(rule.substrings)
        for regex in rule.regexes:
            words.update(w for w in re.split(r"[^a-z]+", regex.source) if w)
    return sorted(words)


def _adversarial(size: int) -> list[str]:
    """Each keyword and delimiter repeated, keyword pairs with filler, to ``size`` characters."""
    inputs = []
    for word in _words():
        for unit in (word, word + " ", word + "_", word + "-" * 59):
            inputs.append((unit * (size // len(unit) + 1))[:size])
    inputs.append(("exceed" * (size // 6 + 1))[:size])  # the quadratic case of the old engine
    inputs.append(("exceeded " + "x" * 61 + " ") * (size // 71))
    return inputs


def test_every_default_pattern_compiles_with_re2():
    """No default rule holds a pattern that RE2 cannot run (and none is Python's backtracking re)."""
    regexes = [regex for rule in _message_rules() for regex in rule.regexes]
    assert regexes, "the default rules have regexes"
    for regex in regexes:
        assert isinstance(regex, Pattern)
        regex.check()


def test_a_backtracking_construct_is_refused_where_the_rule_is_declared():
    """A look-behind given as Python's re.Pattern is a ValueError naming the construct."""
    with pytest.raises(ValueError, match=r"not a regex RE2 can run in linear time: '\(\?<=quota\) x'"):
        MessagePattern(re.compile(r"(?<=quota) x"), "poison", "quota")


def test_an_re_pattern_keeps_its_ignorecase():
    """re.IGNORECASE carries over to RE2; without it the match is case-sensitive."""
    assert MessagePattern(re.compile("QUOTA", re.IGNORECASE), "poison", "q").regexes[0].search("quota")
    assert not MessagePattern(re.compile("QUOTA"), "poison", "q").regexes[0].search("quota")


def test_patterns_compile_on_first_use_only():
    """Declaring a pattern compiles nothing (import stays cheap); its first search does."""
    declared = pattern(r"quota \d+")
    assert declared._compiled is None
    assert declared.search("quota 7")
    assert declared._compiled is not None
    with pytest.raises(PatternError):
        pattern(r"(a)\1").check()


def test_bounded_keeps_head_and_tail_and_says_how_much_was_left_out():
    """A long text keeps about 8 KiB of head and of tail, fits in MAX_MATCH_CHARS, and its mark counts exactly what is left out."""
    text = "H" * 10_000 + "M" * 50_000 + "T" * 10_000
    short = bounded(text)
    head, omitted, tail = re.fullmatch(r"(H+)\n\[… (\d+) characters omitted …\]\n(T+)", short).groups()
    assert len(head) == len(tail) > MAX_MATCH_CHARS // 2 - 40
    assert int(omitted) == len(text) - len(head) - len(tail)
    assert len(short) <= MAX_MATCH_CHARS
    assert bounded(short) == short  # bounded twice (classify, then redact) counts once
    assert bounded("short") == "short"


def test_bounded_cuts_minified_json_between_fields():
    """A long minified JSON body is cut after a field's comma: the fields kept are whole and the count is exact."""
    body = json.dumps([{"order": i, "status": "rejected"} for i in range(2_000)], separators=(",", ":"))
    short = bounded("HTTP 422: " + body)
    head, omitted, tail = re.fullmatch(r"(.*)\n\[… (\d+) characters omitted …\]\n(.*)", short, re.S).groups()
    assert head.startswith('HTTP 422: [{"order":0,"status":"rejected"}')
    assert head[-1] in ",{}[]" and tail[0] in ",{}[]"  # at a delimiter, not inside a value
    assert int(omitted) == len("HTTP 422: " + body) - len(head) - len(tail)


@pytest.mark.parametrize("size", SIZES)
def test_no_message_stalls_classify(size):
    """classify() over every adversarial message of ``size`` characters stays far under the bound."""
    worst = 0.0
    for text in _adversarial(size):
        start = time.perf_counter()
        classify(RuntimeError(text), now=NOW)
        worst = max(worst, time.perf_counter() - start)
    assert worst < BOUND_SECONDS, f"worst classify at {size} chars: {worst * 1000:.1f} ms"


@pytest.mark.parametrize("size", SIZES)
def test_no_message_stalls_evaluate(size):
    """The whole decision (classify, decide, redact, mask) stays linear through evaluate()."""
    policy = ClassifiedRetryPolicy("report", clock=lambda: NOW)
    # no task instance: the failed try is not recorded (a database round trip is not the decision's time)
    context = {"task": SimpleNamespace(retries=2)}
    worst = 0.0
    for text in _adversarial(size)[::3]:
        start = time.perf_counter()
        decision = policy.evaluate(RuntimeError(text), 1, 2, context)
        worst = max(worst, time.perf_counter() - start)
        assert decision.reason and not decision.reason.startswith("[policy error]")
    assert worst < BOUND_SECONDS, f"worst evaluate at {size} chars: {worst * 1000:.1f} ms"


def test_the_quadratic_message_of_the_issue_is_classified_at_once():
    """'exceed' x 800 took 4.4 s on the backtracking engine; now it is matched in milliseconds."""
    start = time.perf_counter()
    result = classify(RuntimeError("exceed" * 800))
    assert time.perf_counter() - start < 0.05
    assert result.category == "unclassified"
    assert classify(RuntimeError("query exceeded the bytes billed limit")).category == "cost-limit-exceeded"


def test_a_rule_after_the_bound_is_still_seen_in_the_tail():
    """The tail of a long message is matched too: a cause at the end of a huge log is not lost."""
    text = "x" * 200_000 + " connection reset by peer"
    assert classify(RuntimeError(text)).category == "connection-failed"
