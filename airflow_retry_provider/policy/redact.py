"""Remove secrets from text before it is stored, logged or shown (retry reasons, dead letters, ledger).

Redaction errs on the side of hiding too much: a value after ``token=`` is hidden even when it
was harmless. Each secret is replaced by ``***``; the text around it is kept. The families
covered, and which patterns come from detect-secrets' plugins, are in docs/CLASSIFICATION.md
("Redaction").

How it works: the text is bounded first (``engine.bounded``: the first and last 8 KiB of a
longer text), then each family whose literal is in the text (``://``, ``cookie``, a key word, a
tool's name...) finds the *spans* of its secrets with an RE2 pattern (``engine.pattern``: linear
in the text, compiled on first use, so importing this module compiles nothing). The spans of all
families are merged and each becomes ``***``; only then is the result cut for storage
(``redact(text, limit)``), so no cut can leave the start of a secret that was no longer
recognisable. Percent-encoded text is decoded, its spans found in the decoded text and mapped
back onto the encoded one: the decoded secret is never shown. A plain error message holds none of
the literals and costs a few substring checks.

The families live in ``policy/redactor/``, one module per kind of structure (``urls``,
``assignments``, ``commands``, ``tables``, ``shapes``), each with its patterns and a ``find()``
that adds the spans it finds; ``judge`` says whether a value found is a secret, ``spans`` holds
what they share. This module runs them and owns the public API: :func:`redact`, :func:`redaction`,
:class:`Redacted`, :func:`cut`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate

from airflow_retry_provider.policy import secret_words
from airflow_retry_provider.policy.engine import LiteralSet, Pattern, bounded
from airflow_retry_provider.policy.redactor import assignments, commands, judge, shapes, tables, urls
from airflow_retry_provider.policy.redactor.commands import _DEVICE_WORDS
from airflow_retry_provider.policy.redactor.judge import (
    _FOREIGN_WORDS,
    _HASH_WORDS,
    _key_before,
    _looks_secret,
)
from airflow_retry_provider.policy.redactor.spans import MASK, Span
from airflow_retry_provider.policy.text import storable

__all__ = ["MASK", "PATTERNS", "Redacted", "cut", "redact", "redaction"]

ELLIPSIS = "…"


_GATES = LiteralSet(
    (*_FOREIGN_WORDS, *_DEVICE_WORDS, *secret_words.CODE_WORDS, "echo", "printf", "connect", "/u")
)
"""The literals that gate the families below a plain message's cost, found in one pass of the
lowered text (one search per word would scan it once per word)."""


PATTERNS: tuple[Pattern, ...] = (
    *judge.PATTERNS,
    *urls.PATTERNS,
    *assignments.PATTERNS,
    *commands.PATTERNS,
    *tables.PATTERNS,
    *shapes.PATTERNS,
)
"""Every pattern redaction runs (the linear-time test runs each on adversarial input)."""


_ESCAPED = {
    f"{high}{low}": chr(int(high + low, 16))
    for high in "0123456789abcdefABCDEF"
    for low in "0123456789abcdefABCDEF"
}
"""Each %XX's two hex digits, in either case, and the character they stand for."""


def _percent(text: str, depth: int, spans: list[Span]) -> None:
    """Decode %XX, find the spans in the decoded text, and map them back onto ``text``.

    Each %XX becomes one character (its byte), so a decoded index maps back by counting the
    escapes before it; what is shown is ``text`` with its encoded secret masked, never decoded.
    """
    parts = text.split("%")  # no pattern: a text of escapes would cost a match object per escape
    pieces = [parts[0]]
    decoded_at: list[int] = []  # the decoded index of each escape
    size = len(parts[0])  # of the decoded text so far
    for part in parts[1:]:
        character = _ESCAPED.get(part[:2])
        if character is not None:
            decoded_at.append(size)
            pieces += (character, part[2:])
            size += len(part) - 1
        else:
            pieces += ("%", part)
            size += len(part) + 1
    if not decoded_at:
        return
    # a form's + is a space (urlencode, as Airflow writes a connection's __extra__: {"k":+"v"}):
    # one character for one, so the indices still map back
    decoded = "".join(pieces).replace("+", " ")
    for start, end in _collect(decoded, depth + 1):
        spans.append((start + 2 * bisect_left(decoded_at, start), end + 2 * bisect_left(decoded_at, end)))


def _collect(text: str, depth: int = 0) -> list[Span]:
    """The spans of every secret in ``text``: each family runs only when its literal is there."""
    spans: list[Span] = []
    readable: list[Span] = []  # where the entropy catch-all hides nothing (a URL's path beside its secret,
    # the user of a user:secret pair)
    lowered = text.replace("İ", "I").lower()  # one character for one: "İ".lower() is two, which would
    # shift every index of lowered after it from the text's (Turkish's BİLGİ)
    gates = _GATES.found(lowered)
    urls.find(text, lowered, spans, readable)
    assignments.find(text, lowered, gates, spans)
    commands.find(text, lowered, gates, spans, readable)
    tables.find(text, lowered, depth, spans, _collect)
    if "%" in text and depth < 3:
        _percent(text, depth, spans)
    shapes.find(text, lowered, spans, readable)  # after urls and commands: what is readable is known
    if "PRIVATE KEY" in text:
        spans = shapes.unarmoured(text, spans)
    if "id" in lowered and spans:  # an id the text shows under its key stays wherever else it stands
        shown = assignments.shown_ids(text, spans)
        if shown:
            spans = [
                (start, end) for start, end in spans if not assignments.echoed_id(text, start, end, shown)
            ]
    return spans


ECHOES_PER_TEXT = 64
"""Values whose other occurrences are looked for, and occurrences of each, at most (bounded work)."""


_OPENING_QUOTES = frozenset("'\"`«「“‘")


def _quoted_in_prose(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a whole word right after an opening quote, and that quoted word is
    neither a key's value (``: '``, ``= '``) nor a key (``'...':``): a sentence quoting it."""
    if text[start - 1 : start] not in _OPENING_QUOTES or text[end : end + 1].isalnum():
        return False
    before = text[max(0, start - 4) : start - 1].rstrip()
    after = text[end : end + 3].lstrip("'\"`»」”’ ")
    return not before.endswith((":", "=")) and not after.startswith((":", "="))


def _quoted_under_key(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a whole quoted value under a key that names neither an id nor a
    hash (the words that name a random run one, :data:`_HASH_WORDS`): an API's answer giving back the
    key it hands out (USGS M2M's login ``"data": "<key>"``, sent after as its ``X-Auth-Token``). A key
    naming an id or a hash keeps its value (Typeform's ``response_id``, equal to the response's
    ``token``; Keeper's ``record_uid``; Dropbox Sign's ``event_hash``, compared with what was computed)."""
    quote = text[start - 1 : start]
    if quote not in ("'", '"') or text[end : end + 1] != quote:
        return False
    key = _key_before(text, start)
    return key is not None and not _HASH_WORDS.found(f"{key.lower()}=")


_PARSER_STOPS = "%#"
"""Where a parser stops reading a value and quotes the rest of it: configparser's interpolation at ``%``
(``'%' must be followed by '%' or '(', found: '%mQ9w@rabbit:5672'``, the rest of a URI's password), a
URL's fragment at ``#``."""


def _rests(value: str) -> list[str]:
    """The rest of ``value`` from the first of each character a parser stops at, when it still looks like a
    secret."""
    starts = (value.find(stop, 1) for stop in _PARSER_STOPS)
    return [value[at:] for at in starts if at > 0 and _looks_secret(value[at:])]


def _echoes(text: str, spans: list[Span]) -> list[Span]:
    """Where else ``text`` quotes back a secret found once: an error repeating, in quotes, the value it
    refused (wpa_supplicant's ``Invalid passphrase length 6 ... 'Dock7!"'``, a line before its ``psk``).
    Only a value that looks like a secret (digits, symbols or inner capitals, not a word of a sentence)
    is looked for, as a whole word quoted in a sentence (:func:`_quoted_in_prose`) or as the quoted value
    of a key naming neither an id nor a hash (:func:`_quoted_under_key`): ``password=airflow`` hides no
    other ``airflow``, an id hidden once for its shape is not hidden again where a sentence names it, nor
    where an id's key gives it (Typeform's response ``token`` is its ``response_id``). The rest of a value
    from where a parser stopped (:func:`_rests`) is looked for at any quote's opening: no sentence holds
    half a secret; its bytes in hex anywhere (:func:`_hex_echoes`)."""
    found: list[Span] = []
    values: set[str] = set()
    ordered = sorted(spans)  # where the text is hidden already: an occurrence there needs no judging
    starts, reach = [start for start, _ in ordered], list(accumulate((end for _, end in ordered), max))
    for start, end in spans:
        value = text[start:end].strip("\"'")
        if value in values or value == MASK or not _looks_secret(value):
            continue
        values.add(value)
        if len(values) > ECHOES_PER_TEXT:
            break
        for whole, piece in [(True, value), *((False, rest) for rest in _rests(value))]:
            for at, after in _occurrences(text, piece):
                if not _covered(starts, reach, at) and (
                    _quoted_in_prose(text, at, after) or _quoted_under_key(text, at, after)
                    if whole
                    else text[at - 1 : at] in _OPENING_QUOTES and not text[after : after + 1].isalnum()
                ):
                    found.append((at, after))
        _hex_echoes(text, value, found)
    return found


def _occurrences(text: str, piece: str) -> Iterator[Span]:
    """Where ``piece`` stands in ``text``, the first :data:`ECHOES_PER_TEXT` times (bounded work)."""
    at = text.find(piece)
    for _ in range(ECHOES_PER_TEXT):
        if at < 0:
            return
        yield at, at + len(piece)
        at = text.find(piece, at + len(piece))


def _covered(starts: list[int], reach: list[int], at: int) -> bool:
    """Whether ``at`` is inside a span, given the spans' sorted ``starts`` and the furthest end ``reach``ed
    by the spans up to each."""
    index = bisect_right(starts, at) - 1
    return index >= 0 and reach[index] > at


def _hex_echoes(text: str, value: str, found: list[Span]) -> None:
    """Where ``text`` shows ``value``'s bytes in hex, in either case: a protocol's packet dumped in a debug
    log (python-smpplib's ``>>b'...<password's hex>00...'``, a bind PDU after the parameters that name
    the password)."""
    encoded = value.encode().hex()
    for form in {encoded, encoded.upper()}:
        found.extend(_occurrences(text, form))


def _masked(text: str, spans: list[Span]) -> tuple[str, int]:
    """``text`` with each span (merged where they overlap or touch) replaced by ``***``, and how
    many ``***`` were put in."""
    if not spans:
        return text, 0
    parts: list[str] = []
    kept = 0
    hidden = 0
    for start, end in sorted(spans):
        if end <= kept:
            continue
        start = max(start, kept)
        if start > kept or not parts:
            parts.append(text[kept:start])
            parts.append(MASK)
            hidden += 1
        kept = end
    parts.append(text[kept:])
    return "".join(parts), hidden


def cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``…`` when anything was cut.

    The last word of a cut text is dropped whole unless it is longer than half the limit: a text
    of one huge word keeps its start. :func:`redact` cuts only text it has already redacted.
    """
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    if len(head) - space - 1 <= limit // 2:
        head = head[: space + 1]
    return head + ELLIPSIS


@dataclass(frozen=True)
class Redacted:
    """A redacted text and how many values were hidden in it.

    :param text: the text with each secret replaced by ``***`` (cut to the limit, when one was given).
    :param hidden: how many values were hidden (each one ``***``), counted before any cut.
    """

    text: str
    hidden: int


def redaction(text: str, limit: int | None = None) -> Redacted:
    """Redact ``text`` as :func:`redact` does, and say how many values were hidden.

    :param limit: when set, the redacted text is then cut (see :func:`cut`) to at most ``limit``
        characters: cutting comes after redaction, so no prefix of a secret is kept.
    """
    # cut first, then clean: storable() on 10 MB costs far more than on 16 KiB (one for one, so
    # the cut's count stays right); RE2 matches UTF-8: a lone surrogate becomes U+FFFD
    text = storable(bounded(text))
    spans = _collect(text)
    redacted, hidden = _masked(text, spans + _echoes(text, spans))
    return Redacted(redacted if limit is None else cut(redacted, limit), hidden)


def redact(text: str, limit: int | None = None) -> str:
    """Return ``text`` with secrets (passwords, tokens, keys, signatures, cookies) replaced by ``***``.

    A text longer than ``engine.MAX_MATCH_CHARS`` is bounded first (its first and last 8 KiB, with a
    mark saying how much was left out); the bounded text is redacted whole. :func:`redaction` also
    says how many values were hidden.

    :param limit: when set, the redacted text is then cut (see :func:`cut`) to at most ``limit``
        characters: cutting comes after redaction, so no prefix of a secret is kept.
    """
    return redaction(text, limit).text
