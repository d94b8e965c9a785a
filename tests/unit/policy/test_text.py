"""storable: the characters PostgreSQL and Airflow's columns refuse are replaced, nothing else changes."""

from __future__ import annotations

import pytest

from airflow_retry_provider.policy import storable
from airflow_retry_provider.policy.text import REPLACEMENT, storable_value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("connection reset by peer", "connection reset by peer"),  # plain ASCII: returned as is
        ("ação falhou: relação não existe", "ação falhou: relação não existe"),  # valid UTF-8 kept
        ("bad\x00byte", f"bad{REPLACEMENT}byte"),  # NUL: PostgreSQL refuses it in text
        ("\x00\x00", REPLACEMENT * 2),  # each NUL its own replacement: lengths stay right
        ("lone \ud800 surrogate", f"lone {REPLACEMENT} surrogate"),  # cannot be encoded to UTF-8
        ("low \udcff half", f"low {REPLACEMENT} half"),  # surrogateescape's output for byte 0xff
        ("emoji 😀 and \x00", f"emoji 😀 and {REPLACEMENT}"),  # a real astral character is kept
        ("tab\tnew\nline\x7f", "tab\tnew\nline\x7f"),  # other control characters are storable
        ("", ""),  # empty stays empty
    ],
)
def test_storable_replaces_only_what_cannot_be_stored(text: str, expected: str):
    """NUL and lone surrogates become U+FFFD one for one; every other character is kept."""
    assert storable(text) == expected
    assert len(storable(text)) == len(text)
    storable(text).encode("utf-8")  # never raises


def test_storable_returns_the_same_object_when_nothing_changes():
    """The usual text costs no copy (the failure path runs it on every field)."""
    text = "HTTP 503 Service Unavailable" * 100
    assert storable(text) is text


def test_storable_keeps_none():
    """An optional field stays None."""
    assert storable(None) is None


def test_storable_value_cleans_strings_and_keys_at_any_depth():
    """A JSON-like result (jsonb refuses \\u0000 too) is cleaned inside dicts and lists, numbers untouched."""
    value = {"a\x00": ["x\x00", {"deep": "\ud800"}], "n": 3, "none": None}
    assert storable_value(value) == {
        f"a{REPLACEMENT}": [f"x{REPLACEMENT}", {"deep": REPLACEMENT}],
        "n": 3,
        "none": None,
    }
