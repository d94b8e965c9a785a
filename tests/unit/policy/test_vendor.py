"""The vendor family: gitleaks' rules as data, gated by their keywords, run in RE2."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from airflow_retry_provider.policy import redact, vendor

ALNUM = "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"

# (rule id gitleaks names, a token of its shape)
TOKENS = [
    ("github-pat", "ghp_" + ALNUM),
    ("gitlab-pat", "glpat-" + ALNUM[:20]),
    ("slack-bot-token", "xoxb-1234567890123-1234567890123-" + ALNUM[:24]),
    ("stripe-access-token", "sk_live_" + ALNUM[:24]),
    ("anthropic-api-key", "sk-ant-api03-" + (ALNUM * 3)[:93] + "AA"),
    ("huggingface-access-token", "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH"),
    ("npm-access-token", "npm_" + ALNUM),
    ("databricks-api-token", "dapi" + "0123456789abcdef" * 2),
    ("shopify-access-token", "shpat_" + "0123456789abcdef" * 2),
    ("sendgrid-api-token", "SG." + ALNUM[:22] + "." + (ALNUM * 2)[:43]),
]


def test_rules_are_data_with_their_source() -> None:
    """The vendored file names gitleaks' version, commit and licence, and why each left-out rule is out."""
    data = json.loads(
        resources.files("airflow_retry_provider.policy").joinpath("data/gitleaks.json").read_text("utf-8")
    )
    assert (
        data["version"].startswith("v8.") and len(data["commit"]) == 40 and data["licence"].startswith("MIT")
    )
    assert len(data["rules"]) >= 100
    assert all(item["reason"] for item in data["dropped"])
    assert {item["id"] for item in data["dropped"]} >= {"generic-api-key"}


def test_every_rule_compiles_in_re2_and_has_keywords() -> None:
    """Each vendored rule compiles in RE2 as it is written upstream and is gated by at least one keyword."""
    for rule in vendor.rule_set().rules:
        rule.pattern.check()
        assert rule.keywords and all(word == word.lower() for word in rule.keywords), rule.id


@pytest.mark.parametrize(("rule_id", "token"), TOKENS, ids=[rule for rule, _ in TOKENS])
def test_vendor_token_is_found_by_its_rule(rule_id: str, token: str) -> None:
    """A token of each major vendor's shape is found by gitleaks' rule for it, and redact hides it."""
    text = f"request failed with {token} for job etl"
    rule = next(rule for rule in vendor.rule_set().rules if rule.id == rule_id)
    assert rule.pattern.search(text) is not None
    assert any(text[start:end] in token and end - start >= 16 for start, end in vendor.find(text))
    assert token not in redact(text) and redact(text).endswith("for job etl")


def test_a_plain_message_runs_no_rule() -> None:
    """A message without any rule's keyword runs no rule: one pass over the text, nothing found."""
    text = "connection to server at db (10.0.0.5), port 5432 failed: timeout expired"
    assert vendor.rule_set().keywords.found(text) == frozenset() or vendor.find(text) == []
    assert vendor.find(text) == []


def test_entropy_is_shannons() -> None:
    """The entropy a rule's threshold is checked against is Shannon's, in bits per character."""
    assert vendor.entropy("aaaa") == 0.0
    assert vendor.entropy("abcd") == pytest.approx(2.0)


def test_rules_stay_fast_on_a_text_of_their_keywords() -> None:
    """A bounded text made of every rule's keywords runs every rule, in time linear in the text."""
    import time

    words = sorted({word for rule in vendor.rule_set().rules for word in rule.keywords})
    text = (" ".join(f"{word}_key = '{word}" for word in words) * 20)[:16_384]
    started = time.process_time()
    vendor.find(text)
    assert time.process_time() - started < 1.0
