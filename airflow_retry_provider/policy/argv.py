"""Command lines: the flags that take a secret, as data, and the generic rules for every other tool.

``policy/data/cli_flags.json`` lists, per row, the tools, the flag, how its value is written and
the page of the tool's documentation that says so (``mysql -pX``, ``ldapsearch -w X``,
``etcdctl --user=root:X``, ``mc alias set <alias> <url> <access> X``). A flag named as a secret
(``--password X``, ``-storepass X``) is the key family's in ``policy/redactor/assignments.py``; this table holds
the flags whose name gives nothing away, and the secret-named flags of the tools it lists (so the
table says, for a reviewer, what each tool's secret flags are).

Each row is one RE2 pattern, made on first use: the tool's name (a word, case-insensitive), then on
the same line the flag at the start of an argument (after a space, or a quote of an argv list
``['-p', 'x']``), then the value. A row runs only when its tool's name (all names are looked for in one pass) and its flag are in
the text.

The generic rule, for any tool: ``user:secret`` (or ``user%secret``) after ``--user``, ``-u``,
``-U`` or a flag named for credentials (``--creds``, ``--src-creds``, ``--*-credentials``, sqlmap's ``--auth-cred``, Mill's ``--sonatypeCreds``) hides what follows the separator, unless it is a number (``docker run -u 1000:1000``), the
user again, or a URL's rest (``beeline -u jdbc:hive2://...``); and after a user flag and its name,
a short password flag's value on the same command (``-p``, ``-P``, ``-pw``, ``-w``, ``--pass``:
``knife -U ubuntu -P x``), unless it is a port (digits) or a path; and the value of a flag the text's own
usage names a secret's (``Usage: fs_cli [-p <secret>]``, printed on a bad argument). A flag whose
value is random (high entropy) is the entropy family's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from airflow_retry_provider.policy.engine import LiteralSet, Pattern, pattern

Span = tuple[int, int]

MAX_MATCHES_PER_ROW = 16
"""A row's matches past this many in one text are not looked at (the text is bounded already)."""

# an argument: quoted, quoted with escaped quotes (a command inside a quoted string, as a log echoes
# bash -c '... -w \'x\' ...'), or a bare word (argv lists: up to the quote, comma or bracket)
_ESCAPED = r"\\+'[^'\\\r\n]*\\+'|\\+\"[^\"\\\r\n]*\\+\""
ARG = rf"(\"[^\"\r\n]*\"|'[^'\r\n]*'|{_ESCAPED}|[^\s'\",\])]+)"
# a positional argument: not a flag
POSITIONAL = rf"(\"[^\"\r\n]*\"|'[^'\r\n]*'|{_ESCAPED}|[^\s'\",\])-][^\s'\",\])]*)"
START = r"(?:^|[\s'\"\[(,=])"  # where an argument starts (a space, a quote of an argv list)
NEXT = r"(?:[ \t]+|[\"'][ \t]*,[ \t]*[\"']?)"  # the next argument: a space, or ', ' in an argv list
_SKIPPED = r"(?:\"[^\"\r\n]*\"|'[^'\r\n]*'|[^\s'\",\])]+)"

VALUES = {
    "attached": "",  # mysql -pX
    "separate": NEXT,  # ldapsearch -w X
    "either": f"{NEXT}?",  # sshpass -pX, sshpass -p X
    "equals": f"(?:=|{NEXT})",  # --password=X, --password X
    "any": f"(?:=|{NEXT})?",  # smbclient -Uuser%X, -U user%X, --user=user%X
    "positional": NEXT,  # vault login X
}
"""How a row's value is written after its flag (its ``value`` field)."""

SEPARATORS = {"all": "", "after:": ":", "after%": "%", "after,": ",", "after=": "=", "last:": ":"}
"""Which part of the value is the secret (its ``secret`` field): all of it, or what follows the
separator (``user:X``, ``user%X``, ``user,X``, ``name=X``), or the last colon (PageKite's
``proto:kite:host:port:X``)."""


@dataclass(frozen=True)
class Flag:
    """One row of the table.

    :param tools: the tools' names (lower case).
    :param flag: the flag as the tool spells it (``-p``, ``--server.password``, ``alias set``).
    :param value: how the value follows the flag, a key of :data:`VALUES`.
    :param secret: which part of the value is hidden, a key of :data:`SEPARATORS`.
    :param skip: for a positional value, the arguments before it (``mc alias set <alias> <url> <access>``).
    :param subcommand: a word that stands between the tool and the flag (``docker ... login -p``).
    :param ignore_case: the flag in any case (``db2 ... USING x``).
    :param source: the tool's documentation that names the flag.
    """

    tools: tuple[str, ...]
    flag: str
    value: str
    secret: str
    skip: int
    subcommand: str
    ignore_case: bool
    source: str

    @property
    def pattern(self) -> Pattern:
        """The tool, then on its line the flag and its value (the value is group 1)."""
        return _pattern_of(self)[0]

    @property
    def again(self) -> Pattern:
        """The flag and its value alone: the same flag given again later on the tool's line."""
        return _pattern_of(self)[1]


class CliTableError(ValueError):
    """A row of the flags table that cannot be read; the message names the row and the field."""


def _row(index: int, item: dict[str, Any]) -> Flag:
    value, secret = item.get("value"), item.get("secret", "all")
    if value not in VALUES:
        raise CliTableError(f"cli_flags.json rows[{index}].value: {value!r} is not one of {sorted(VALUES)}")
    if secret not in SEPARATORS:
        raise CliTableError(
            f"cli_flags.json rows[{index}].secret: {secret!r} is not one of {sorted(SEPARATORS)}"
        )
    if not item.get("tools") or not item.get("flag") or not item.get("source"):
        raise CliTableError(
            f"cli_flags.json rows[{index}]: tools, flag and source are required, got {item!r}"
        )
    return Flag(
        tools=tuple(tool.lower() for tool in item["tools"]),
        flag=item["flag"],
        value=value,
        secret=secret,
        skip=int(item.get("skip", 0)),
        subcommand=item.get("subcommand", ""),
        ignore_case=bool(item.get("ignore_case", False)),
        source=item["source"],
    )


@cache
def tool_names() -> LiteralSet:
    """Every tool's name in the table, found in one pass."""
    return LiteralSet(tuple(tool for row in table() for tool in row.tools), ignore_case=True)


@cache
def table() -> tuple[Flag, ...]:
    """The rows of ``policy/data/cli_flags.json``, read once."""
    source = resources.files("airflow_retry_provider.policy").joinpath("data/cli_flags.json")
    rows = json.loads(source.read_text(encoding="utf-8"))["rows"]
    return tuple(_row(index, item) for index, item in enumerate(rows))


_PATTERNS: dict[Flag, tuple[Pattern, Pattern]] = {}


def _pattern_of(row: Flag) -> tuple[Pattern, Pattern]:
    found = _PATTERNS.get(row)
    if found is None:
        tools = "|".join(re.escape(tool) for tool in row.tools)
        # the tool as a command's word: after a space, a quote, a path's / (not org.x.vault.y), or
        # a vendor's prefix (kyuubi-beeline wraps beeline); a Java tool as its jar, versioned or not
        # (java -jar nexus-iq-cli-1.185.0-01.jar)
        head = rf"(?i:(?:^|[\s'\"\[(/\\+=-])(?:{tools})(?:\.exe|\.sh|(?:-[0-9][\w.-]{{0,40}})?\.jar)?)"
        if row.subcommand:
            head += rf"(?:[\s'\",\]][^\r\n]*?)?(?i:\b{re.escape(row.subcommand)}\b)"
        head += r"(?:[\s'\",\]][^\r\n]*?)?"
        flag = re.escape(row.flag).replace("\\ ", "[ \t]+")
        if row.ignore_case:
            flag = f"(?i:{flag})"
        # flags before a row's positional arguments are passed over (htpasswd -b -c file user X)
        skipped = f"(?:-[^\\s'\",\\])]+{NEXT})*(?:{_SKIPPED}{NEXT}){{{row.skip}}}" if row.skip else ""
        separator = SEPARATORS[row.secret]
        within = "" if row.secret == "last:" else separator  # up to the last separator: it may stand within
        before = rf"[\"']?[^\s{within}'\"]*{re.escape(separator)}" if separator else ""
        value = POSITIONAL if row.value == "positional" and not before else ARG
        rest = f"{START}{flag}{VALUES[row.value]}{skipped}{before}{value}"
        found = _PATTERNS[row] = (pattern(f"{head}{rest}"), pattern(rest))
    return found


# the generic rule: user:secret or user%secret after --user, -u, -U (any tool)
# (and after a flag named for credentials: crictl --creds, skopeo --src-creds, any --*-credentials, --*-cred)
USER_PAIR = pattern(
    rf"{START}(?:--user(?:name)?|-u|-U|--(?:[\w-]*-)?creds?|--(?:[\w-]*-)?credentials"
    r"|--[a-z][A-Za-z]*Cred(?:s|entials)?)"  # in camel case (Mill's --sonatypeCreds user:x)
    rf"(?:=|{NEXT})?[\"']?([^\s:%'\"/@,]+)[:%]([^\s'\"@,\])]+)"
)
# cred: --x-creds, --x-credentials, sqlmap's --auth-cred; -l: a login's flag (-l, --login) before a password's
_USER_FLAGS = ("--user", "-u", "-U", "cred", "Cred", "-l")
# an API key given as the user, with no password after the colon (curl -u KEY:, as Stripe, Mailgun and
# Dead Man's Snitch document it): the user is the secret, unless it is a name of letters (admin:)
KEY_AS_USER = pattern(rf"{START}(?:--user|-u)(?:=|{NEXT})?[\"']?([^\s:%'\"/@,]+):(?:[\s'\"]|$)")
# and a short password flag after a user flag on the same command line (knife -U ubuntu -P x,
# bolt --user ops -p x): a user's name then a password's flag is a login, whatever the tool
USER_THEN_PASSWORD = pattern(
    rf"{START}(?:--user(?:name)?|-u|-U|-l|--login)(?:=|{NEXT})[\"']?[^\s'\"-][^\s'\"]*[\"']?"
    rf"[^\r\n|;&]*?{START}(?:-p|-P|-pw|-w|--pass)(?:{NEXT}){ARG}"
)


# a tool's usage, printed on a bad argument, naming a flag's value a secret (fs_cli's "[-p <secret>]",
# "-P <password>", "--token=<token>"): that flag's value is a secret wherever the text gives it
USAGE = pattern(
    r"(?:^|[\s\[|(])(--?[A-Za-z][\w-]{0,30})[ =]<(?:secret|password|passwd|pass|pw|pwd|token|key|api[-_]?key|auth)>",
    ignore_case=True,
)
MAX_USAGE_FLAGS = 8
"""Flags a text's usage names as secrets, at most: a usage lists a handful."""


@lru_cache(maxsize=64)
def _documented(flag: str) -> Pattern:
    """The value given to ``flag``, a flag a usage named as a secret's (group 1)."""
    return pattern(rf"{START}{re.escape(flag)}(?:=|{NEXT}){ARG}")


def _usage_values(text: str, spans: list[Span]) -> None:
    """The values of the flags the text's own usage names as secrets (not the usage's ``<secret>``)."""
    flags = {match.group(1) for _, match in zip(range(MAX_USAGE_FLAGS), USAGE.finditer(text), strict=False)}
    for flag in flags:
        for count, match in enumerate(_documented(flag).finditer(text)):
            if count == MAX_MATCHES_PER_ROW:
                break
            start, end = _inside_quotes(text, *match.span(1))
            if end > start and text[start] != "<":
                spans.append((start, end))


def patterns() -> tuple[Pattern, ...]:
    """Every pattern of this family (the linear-time tests run each)."""
    return (
        *(p for row in table() for p in (row.pattern, row.again)),
        USER_PAIR,
        KEY_AS_USER,
        USER_THEN_PASSWORD,
        USAGE,
    )


def _inside_quotes(text: str, start: int, end: int) -> Span:
    if end - start >= 2 and text[start] in "\"'" and text[end - 1] == text[start]:
        return start + 1, end - 1
    if text[start : start + 1] == "\\" and text[end - 1 : end] in ("'", '"'):
        # \'x\': the value between the escaped quotes
        opening = start + len(text[start:end]) - len(text[start:end].lstrip("\\")) + 1
        closing = end - 1
        while closing > opening and text[closing - 1] == "\\":
            closing -= 1
        return opening, closing
    return start, end


def _again(row: Flag, text: str, after: int, spans: list[Span]) -> None:
    """The row's flag wherever it stands on the tool's line from ``after`` (bounded: a line of at most 4 KiB)."""
    line_end = text.find("\n", after, after + 4096)
    line = text[after : after + 4096 if line_end < 0 else line_end]
    if row.flag.split(" ")[0] not in line and not row.ignore_case:
        return
    for count, match in enumerate(row.again.finditer(line)):
        if count == MAX_MATCHES_PER_ROW:
            break
        start, end = _inside_quotes(line, *match.span(1))
        if end > start:
            spans.append((after + start, after + end))


def find(text: str, lowered: str, pairs: list[tuple[Span, Span]] | None = None) -> list[Span]:
    """The spans of the secrets of command lines in ``text`` (``lowered`` is ``text.lower()``); ``pairs``
    gets the (user, secret) spans of each ``user:secret`` pair hidden (whether its user is read is the
    redactor's judgement)."""
    spans: list[Span] = []
    present = tool_names().found(text)  # one pass for every tool's name
    for row in table() if present else ():
        if present.isdisjoint(row.tools):
            continue
        if (row.flag.lower() not in lowered) if row.ignore_case else (row.flag.split(" ")[0] not in text):
            continue
        for count, match in enumerate(row.pattern.finditer(text)):
            if count == MAX_MATCHES_PER_ROW:
                break
            start, end = _inside_quotes(text, *match.span(1))
            if end > start:
                spans.append((start, end))
            # every flag of the row on the tool's line: given again (--from-literal=a=x --from-literal=b=y),
            # and the ones before the match's (its head reaches the line's last flag: sshpass -p X ssh -p 22)
            _again(row, text, match.end() if row.subcommand else match.start(), spans)
    if "<" in text:
        _usage_values(text, spans)
    if any(map(text.__contains__, _USER_FLAGS)):
        for count, match in enumerate(USER_PAIR.finditer(text)):
            if count == MAX_MATCHES_PER_ROW:
                break
            user, secret = match.group(1), match.group(2)
            if not secret.isdigit() and secret != user and "//" not in secret:  # not a URL
                spans.append(match.span(2))
                if pairs is not None:
                    pairs.append((match.span(1), match.span(2)))
        for count, match in enumerate(KEY_AS_USER.finditer(text)):
            if count == MAX_MATCHES_PER_ROW:
                break
            if not match.group(1).isalpha():
                spans.append(match.span(1))
        for count, match in enumerate(USER_THEN_PASSWORD.finditer(text)):
            if count == MAX_MATCHES_PER_ROW:
                break
            start, end = _inside_quotes(text, *match.span(1))
            value = text[start:end]
            if value and not value.replace(":", "").isdigit() and value[0] not in "/$.~":  # a port, a path
                spans.append((start, end))
    return spans
