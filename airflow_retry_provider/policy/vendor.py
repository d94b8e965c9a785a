"""Vendor token shapes from gitleaks' rule set, as data: one family of redaction.

``policy/data/gitleaks.json`` holds the rules of gitleaks' ``config/gitleaks.toml`` (MIT; its
version, commit and the rules left out are in the file, converted by ``tools/vendor_gitleaks.py``).
Go's regexps are RE2's syntax, so each rule runs as it is written upstream. The file is read and
its patterns made on first use (importing this module reads nothing); a rule runs only when one
of its keywords (gitleaks' ``keywords``) is in the text, and all the keywords are looked for in
one pass (``engine.LiteralSet``), so a plain message pays one linear scan. A match is a secret when its secret group (gitleaks'
``secretGroup``, else its first group that took part, else the whole match) has more entropy than
the rule asks for (gitleaks' ``entropy``).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from airflow_retry_provider.policy.engine import LiteralSet, Pattern, pattern

Span = tuple[int, int]

MAX_MATCHES_PER_RULE = 16
"""A rule's matches past this many in one text are not looked at (the text is bounded already)."""


@dataclass(frozen=True)
class Rule:
    """One of gitleaks' rules.

    :param id: gitleaks' rule id (``github-pat``, ``slack-bot-token``...).
    :param pattern: its regex, in RE2 (compiled on first use).
    :param keywords: lower-case strings one of which the text must hold for the rule to run.
    :param group: the group that holds the secret (0: the first group that took part).
    :param entropy: the least Shannon entropy of a secret (0: any).
    """

    id: str
    pattern: Pattern
    keywords: tuple[str, ...]
    group: int
    entropy: float


@dataclass(frozen=True)
class RuleSet:
    """The vendored rules and where they come from."""

    version: str
    commit: str
    rules: tuple[Rule, ...]
    dropped: tuple[str, ...]
    keywords: LiteralSet


@cache
def rule_set() -> RuleSet:
    """The rules of ``policy/data/gitleaks.json``, read once."""
    source = resources.files("airflow_retry_provider.policy").joinpath("data/gitleaks.json")
    data = json.loads(source.read_text(encoding="utf-8"))
    rules = tuple(
        Rule(
            id=item["id"],
            pattern=pattern(item["regex"]),
            keywords=tuple(item["keywords"]),
            group=int(item["group"]),
            entropy=float(item["entropy"]),
        )
        for item in data["rules"]
    )
    keywords = LiteralSet(tuple(word for rule in rules for word in rule.keywords), ignore_case=True)
    return RuleSet(
        data["version"], data["commit"], rules, tuple(item["id"] for item in data["dropped"]), keywords
    )


def entropy(data: str) -> float:
    """Shannon entropy in bits per character (gitleaks' and detect-secrets' measure)."""
    size = len(data)
    if not size:
        return 0.0
    return math.log2(size) - sum(count * math.log2(count) for count in Counter(data).values()) / size


def _secret(match: Any, group: int) -> Span:
    """The secret of a rule's match: its secret group, else its first group that took part, else all of it."""
    groups = match.re.groups
    if group and group <= groups:
        return match.span(group)
    for index in range(1, groups + 1):
        start, end = match.span(index)
        if start >= 0 and end > start:
            return start, end
    return match.span()


MIN_PATH_SECRET = 16
"""A URL's last path segment this long holds a webhook's secret alone (``/services/T.../B.../<secret>``)."""


def _url_path_secret(text: str, start: int, end: int) -> Span:
    """Of a match that is a URL, its last path segment when that is long enough to be the secret:
    the segments before it name the account and the app (Slack's team and bot ids), on-call reads them."""
    last = text.rfind("/", start, end) + 1
    if last == 0 or "." not in text[start:last]:
        return start, end  # not a host and a path
    return (last, end) if end - last >= MIN_PATH_SECRET else (start, end)


def find(text: str) -> list[Span]:
    """The spans of the vendor tokens in ``text``."""
    spans: list[Span] = []
    rules = rule_set()
    present = rules.keywords.found(text)  # one pass for every keyword
    if not present:
        return spans
    for rule in rules.rules:
        if present.isdisjoint(rule.keywords):
            continue
        for count, match in enumerate(rule.pattern.finditer(text)):
            if count == MAX_MATCHES_PER_RULE:
                break
            start, end = _url_path_secret(text, *_secret(match, rule.group))
            if end > start and (not rule.entropy or entropy(text[start:end]) > rule.entropy):
                spans.append((start, end))
    return spans
