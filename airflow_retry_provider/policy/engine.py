"""The one engine that matches failure text: RE2, whose time is linear in the text, for any pattern.

Failure text is untrusted (exception messages, command lines, HTTP bodies): a backtracking engine
(Python's ``re``) can take minutes on one crafted message. Every pattern that runs on failure
text (the default rules, redaction, a rule file's ``regex``) goes through :func:`pattern`, which
compiles with RE2 (``google-re2``, the one import of the policy core outside the standard
library). A pattern RE2 cannot express (look-around, back-references, possessive quantifiers)
is refused with an error naming the construct.

Patterns are compiled on first use, once per process: a DAG file that imports the provider pays
nothing for the patterns it never runs. Text is bounded before it is matched (:func:`bounded`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Any

from airflow_retry_provider.policy.text import storable

MAX_MATCH_CHARS = 16_384
"""Failure text longer than this is matched (and redacted) on its first and last 8 KiB only."""

CUT_MARK = "\n[… {omitted} characters omitted …]\n"
"""Put between the head and the tail of a bounded text; says how much was left out."""


_DECLARED: weakref.WeakValueDictionary[int, Pattern | LiteralSet] = weakref.WeakValueDictionary()
"""Every pattern and literal set alive in this process, for :func:`compile_declared`."""


def compile_declared() -> int:
    """Compile every pattern and literal set declared so far that is not compiled yet; return how many.

    A process that forks task processes does it once for all of them (``preload.py``): a failed try then
    compiles nothing, where each compiled the patterns its text reached (issue 58's storm profile: a
    sixth of the provider's CPU in a failing task process).
    """
    pending = [declared for declared in list(_DECLARED.values()) if declared._compiled is None]
    for declared in pending:
        declared.check()
    return len(pending)


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message names the pattern and the construct."""


_CUT_WINDOW = 256
"""How far back (for the head) or forward (for the tail) a cut looks for the end of a word."""
_SPACES = " \t\r\n"
_DELIMITERS = ",;&|{}[]()<>"


def _cut_back(text: str, at: int) -> int:
    """Where the head ends: after the last space before ``at`` (else the last delimiter, as in
    minified JSON), within ``_CUT_WINDOW`` characters; ``at`` when there is none."""
    low = max(0, at - _CUT_WINDOW)
    for stops in (_SPACES, _DELIMITERS):
        found = max(text.rfind(stop, low, at) for stop in stops)
        if found >= 0:
            return found + 1
    return at


def _cut_forward(text: str, at: int) -> int:
    """Where the tail starts: at the first space after ``at`` (else delimiter), within the window."""
    high = min(len(text), at + _CUT_WINDOW)
    for stops in (_SPACES, _DELIMITERS):
        found = [i for i in (text.find(stop, at, high) for stop in stops) if i >= 0]
        if found:
            return min(found)
    return at


def bounds(text: str, limit: int = MAX_MATCH_CHARS) -> tuple[int, int]:
    """Where :func:`bounded` ends the head of ``text`` and starts its tail (``len(text)`` twice when
    it fits): each cut at a word's end where one is near, so the mark counts exactly what is left out."""
    if len(text) <= limit:
        return len(text), len(text)
    half = (limit - len(CUT_MARK.format(omitted=len(text)))) // 2  # the result fits in ``limit``
    return _cut_back(text, half), _cut_forward(text, len(text) - half)


def bounded(text: str, limit: int = MAX_MATCH_CHARS) -> str:
    """``text``, or its head and tail (about ``limit // 2`` characters each, cut at the ends of words)
    with a mark saying exactly how many characters were left out; at most ``limit`` characters."""
    head_end, tail_start = bounds(text, limit)
    if head_end == tail_start == len(text):
        return text
    return text[:head_end] + CUT_MARK.format(omitted=tail_start - head_end) + text[tail_start:]


DFA_MEMORY = 32 << 20
"""RE2's memory cap per pattern (its default is 8 MiB). The key family's pattern, an alternation of
every language's key words, outgrows 8 MiB of DFA states on adversarial text and RE2 then falls back
to a slower engine: 18 ms instead of 2.7 ms for 16 KiB of spaces (bench/redact.py). The cap is a
ceiling, not an allocation: the process's peak memory over bench/redact.py's inputs moved by 1 MB."""


def _options(ignore_case: bool) -> Any:
    import re2

    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False
    options.max_mem = DFA_MEMORY
    return options


def _compile(source: str, ignore_case: bool) -> Any:
    import re2

    try:
        return re2.compile(source, _options(ignore_case))
    except re2.error as exc:
        construct = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(
            f"not a regex RE2 can run in linear time: {source!r} ({construct}); look-around, "
            "back-references and possessive quantifiers are not supported"
        ) from None


def _plain(literal: object) -> bool:
    """A literal a text holds exactly when RE2 sees it there: printable, and no U+FFFD (a lone
    surrogate is matched as one)."""
    return isinstance(literal, str) and literal.isprintable() and bool(literal) and "\ufffd" not in literal


class Pattern:
    """A pattern compiled with RE2 on first use; searching it never backtracks.

    :param source: the pattern, in RE2 syntax (Python's ``re`` without look-around,
        back-references and possessive quantifiers).
    :param ignore_case: match regardless of case.
    :param literals: strings one of which every match contains (case-sensitive patterns only): a
        text holding none of them cannot match, so it is not handed to RE2 (whose Python binding
        costs microseconds a call, found or not).
    """

    __slots__ = ("source", "ignore_case", "literals", "_compiled", "__weakref__")

    def __init__(self, source: str, ignore_case: bool = False, literals: tuple[str, ...] = ()) -> None:
        if not isinstance(source, str) or not source:
            raise PatternError(f"a pattern must be a non-empty string, got {source!r}")
        if literals and (ignore_case or not all(map(_plain, literals))):
            raise PatternError(
                f"literals must be printable strings of a case-sensitive pattern, got {literals!r}"
            )
        self.source = source
        self.ignore_case = ignore_case
        self.literals = tuple(literals)
        self._compiled: Any = None
        _DECLARED[id(self)] = self

    def __repr__(self) -> str:
        flag = ", ignore_case=True" if self.ignore_case else ""
        return f"Pattern({self.source!r}{flag})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pattern) and (self.source, self.ignore_case) == (
            other.source,
            other.ignore_case,
        )

    def __hash__(self) -> int:
        return hash((self.source, self.ignore_case))

    @property
    def compiled(self) -> Any:
        """The RE2 object, compiled now if it was not yet (a :class:`PatternError` if it cannot be)."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = _compile(self.source, self.ignore_case)
        return compiled

    def check(self) -> Pattern:
        """Compile now, so that a bad pattern fails where it is declared; returns ``self``."""
        _ = self.compiled
        return self

    # RE2 matches UTF-8: a lone surrogate (which cannot be encoded) is matched as U+FFFD, one
    # character for one, so positions stay right. Each call encodes the whole text once: to visit
    # every match of a long text, use finditer or sub, not search in a loop.

    def _cannot_match(self, text: str) -> bool:
        """Whether ``text`` holds none of the literals (never, without literals)."""
        literals = self.literals
        if not literals:
            return False
        for literal in literals:
            if literal in text:
                return False
        return True

    def search(self, text: str, pos: int = 0) -> Any:
        if self._cannot_match(text):
            return None
        try:
            return self.compiled.search(text, pos)
        except UnicodeEncodeError:
            return self.compiled.search(storable(text), pos)

    def match(self, text: str, pos: int = 0) -> Any:
        if self._cannot_match(text):
            return None
        try:
            return self.compiled.match(text, pos)
        except UnicodeEncodeError:
            return self.compiled.match(storable(text), pos)

    def finditer(self, text: str) -> Iterator[Any]:
        if self._cannot_match(text):
            return iter(())
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = storable(text)
        return self.compiled.finditer(text)

    def sub(self, replacement: str | Callable[[Any], str], text: str) -> str:
        if self._cannot_match(text):
            return storable(text)
        try:
            return self.compiled.sub(replacement, text)
        except UnicodeEncodeError:
            return self.compiled.sub(replacement, storable(text))


def pattern(source: str, ignore_case: bool = False, literals: tuple[str, ...] = ()) -> Pattern:
    """A :class:`Pattern` for ``source``, compiled with RE2 the first time it is used."""
    return Pattern(source, ignore_case, literals)


class LiteralSet:
    """Which of many literals a text holds, found in one pass (RE2's ``Set``: linear in the text).

    A family gated by many words (the vendor rules' keywords, the command-line tools' names) asks
    once, instead of one substring search of the whole text per word. Compiled on first use.

    :param literals: the strings looked for (matched as they are, not as patterns).
    :param ignore_case: find them in any case.
    """

    __slots__ = ("literals", "ignore_case", "_compiled", "__weakref__")

    def __init__(self, literals: tuple[str, ...], ignore_case: bool = False) -> None:
        if not literals or not all(map(_plain, literals)):
            raise PatternError(f"a literal set needs printable, non-empty strings, got {literals!r}")
        self.literals = tuple(dict.fromkeys(literals))
        self.ignore_case = ignore_case
        self._compiled: Any = None
        _DECLARED[id(self)] = self

    def check(self) -> LiteralSet:
        """Compile now; returns ``self``."""
        if self._compiled is None:
            self._compiled = self._compile()
        return self

    def _compile(self) -> Any:
        import re2

        compiled = re2.Set.SearchSet(_options(self.ignore_case))
        for literal in self.literals:
            compiled.Add(re2.escape(literal))
        compiled.Compile()
        return compiled

    def found(self, text: str) -> frozenset[str]:
        """The literals ``text`` holds."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = self._compile()
        try:
            indices = compiled.Match(text)
        except UnicodeEncodeError:
            indices = compiled.Match(storable(text))
        return frozenset(self.literals[index] for index in indices or ())
