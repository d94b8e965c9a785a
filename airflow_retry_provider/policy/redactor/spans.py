"""Redaction's reading primitives: a span, the mask, a quoted value at any depth, bounded matching.

Every family of ``policy/redactor/`` finds the *spans* of its secrets with these; names with a
leading ``_`` are shared between the package's modules and used nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from airflow_retry_provider.policy.engine import Pattern

MASK = "***"


Span = tuple[int, int]


Collect = Callable[[str, int], list[Span]]
"""How a cell of a table is redacted as a text of its own: the entry point's family run (its depth one more)."""


def _quoted_at(depth_backslashes: int, quote: str) -> str:
    """A string opened by ``quote`` after exactly ``depth_backslashes`` backslashes (0, 1, 3, 7: JSON
    escaped 0-3 times): it closes at a quote after exactly as many; one after more is its content."""
    lead = "\\\\" * depth_backslashes
    more = f"\\\\{{{depth_backslashes + 1},}}"
    return rf"{lead}{quote}(?:[^{quote}\\\r\n]|\\+[^{quote}\\\r\n]|{more}{quote})*"


# No groups inside: each pattern captures a whole value in one group and _content() finds what is
# inside the quotes (RE2's Python binding costs a few microseconds per group looked at)
_QUOTED = "(?:" + "|".join(_quoted_at(depth, quote) for depth in (7, 3, 1, 0) for quote in "\"'") + ")"


MAX_MATCHES = 64
"""Past this many matches of one pattern in one text, the rest of the text is hidden: a text made
of secrets' shapes is hidden whole at no cost, where judging each match would cost time."""


def _matches(pattern_: Pattern, text: str, spans: list[Span], limit: int = MAX_MATCHES) -> Iterator[Any]:
    """The matches of ``pattern_`` in ``text``, at most ``limit``; past it, the rest is one span."""
    for count, match in enumerate(pattern_.finditer(text)):
        if count == limit:
            spans.append((match.start(), len(text)))
            return
        yield match


def _quoted_content(text: str, start: int, end: int) -> Span:
    """:func:`_content` of a value matched with its closing quote (``'x'``, ``"x"``): before that quote too."""
    start, end = _content(text, start, end)
    if text[end - 1 : end] in ("'", '"') and end - 1 > start:
        end -= 1
    return start, end


def _content(text: str, start: int, end: int) -> Span:
    """What is inside a matched value: after its opening quote (and the backslashes escaping it, or
    the ``b`` of Python's bytes) or brace, before its closing brace; in a list (``["x"``), its first item's; a bare value is all content."""
    if end - start > 1 and text[start] in "bB" and text[start + 1] in "\"'":
        start += 1  # Python's bytes: b'x'
    lead = start
    if text[start : start + 1] == "[":
        item = start + 1
        while item < end and text[item] in " \t":
            item += 1
        if item < end and text[item] in "\"'\\":
            lead = start = item
    while lead < end and text[lead] == "\\":
        lead += 1
    if text[lead : lead + 3] in ('"""', "'''"):
        return lead + 3, end  # a string in triple quotes
    if lead < end and text[lead] in "\"'":
        return lead + 1, end
    if start < end and text[start] == "{":
        return start + 1, end - 1 if end - start > 1 and text[end - 1] == "}" else end
    return start, end


def _spans_of(pattern_: Pattern, text: str, spans: list[Span], groups: int = 1) -> None:
    """Add the first taking-part group of every match (a pattern whose ``groups`` are all secrets)."""
    for match in _matches(pattern_, text, spans):
        _first_group(text, match, range(1, groups + 1), spans)


def _first_group(text: str, match: Any, indexes: Iterable[int], spans: list[Span]) -> None:
    """Add the content of the first of ``match``'s groups ``indexes`` that took part (not an earlier mask)."""
    for index in indexes:
        start, end = match.span(index)
        if start >= 0:
            start, end = _content(text, start, end)
            if end > start and text[start:end] != MASK:
                spans.append((start, end))
            return


def _escaped_line_end(text: str, start: int, end: int) -> int:
    """Where a value ends before a repr's escaped line end (``\\r\\n`` in ``send: b'...'``), else ``end``."""
    found = [i for i in (text.find("\\r", start, end), text.find("\\n", start, end)) if i >= 0]
    return min(found) if found else end


MAX_TABLE_LINES = 64
