"""Tables a CLI prints: a secret-named column's cells are hidden, every other cell is redacted as a
text of its own (through the entry point's ``collect``), joined again across the lines it is
wrapped over; tabulate's plain tables by their header's columns; and SQL's own table, an
``INSERT INTO t (columns) VALUES (row), ...`` quoted back by a driver's error: a secret-named
column's values are hidden."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from airflow_retry_provider.policy.engine import Pattern, pattern
from airflow_retry_provider.policy.redactor.assignments import _KEY
from airflow_retry_provider.policy.redactor.judge import _looks_secret, _not_secret, _secret_column
from airflow_retry_provider.policy.redactor.spans import (
    MASK,
    MAX_TABLE_LINES,
    Collect,
    Span,
    _matches,
)

# tables a CLI prints (airflow connections get / list: rich's ASCII_DOUBLE_HEAD, "id | conn_id |
# ... | password | ..." over "===+===", its cells wrapped over lines; -o plain: tabulate's columns)
_TABLE_RULE = pattern(r"(?m)^[ \t]*[=+|:-]*(?:={3,}|-{3,})[=+|: -]*\r?$")


_PLAIN_HEADER = pattern(rf"(?m)^(?:[^\r\n]*?[ \t]{{2,}})?({_KEY})(?:[ \t]{{2,}}|\r?$)", ignore_case=True)


MAX_TABLES = 8
"""At most this many tables of one text are read cell by cell (each at most MAX_TABLE_LINES)."""


MAX_CELLS = 48
"""At most this many cells of a text's tables are redacted as texts of their own (each wrapped cell
joined again costs a pass of every family); past them a table's secret-named columns are still
hidden, and the whole text was redacted anyway."""


MAX_MATCH_LINE = 1 << 20
"""The last column of a table runs to its line's end."""


def _line_at(text: str, start: int) -> tuple[int, int]:
    """The line that starts at ``start``: its start and its end (without ``\r``)."""
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    return start, end - 1 if end > start and text[end - 1] == "\r" else end


def _table_rows(text: str, start: int, bars: list[int]) -> Iterator[list[Span]]:
    """The rows below a table's rule, each the lines it is wrapped over (a line whose first cell is
    blank continues the row above); the table ends at a line whose bars are not under the rule's
    (the end of the table, or a row redacted already: its cells no longer line up)."""
    row: list[Span] = []
    for _ in range(MAX_TABLE_LINES):
        if start >= len(text):
            break
        line = _line_at(text, start)
        bar = line[0] + bars[0]
        if bar >= line[1] or any(text[line[0] + b] != "|" for b in bars if line[0] + b < line[1]):
            break
        if row and text[line[0] : bar].strip():
            yield row
            row = []
        row.append(line)
        start = line[1] + 1 + (text[line[1] : line[1] + 1] == "\r")
    if row:
        yield row


def _cell_spans(text: str, pieces: list[Span], depth: int, spans: list[Span], collect: Collect) -> None:
    """The secrets of one cell wrapped over ``pieces`` (one slice per line), found in the cell's
    text joined again: with a space where the line was padded (rich wrapped at a space), without
    one where the piece filled its column (a word cut in two)."""
    joined: list[str] = []
    offsets: list[int] = []  # where each joined character is in ``text``
    for start, end in pieces:
        content = text[start:end]
        stripped = content.strip(" ")
        if not stripped:
            continue
        lead = start + len(content) - len(content.lstrip(" "))
        joined.append(stripped)
        offsets.extend(range(lead, lead + len(stripped)))
        if content.endswith(" "):  # padded: the line was broken at a space
            joined.append(" ")
            offsets.append(lead + len(stripped))
    cell = "".join(joined).rstrip(" ")
    if len(cell) < 6:
        return
    for begin, finish in collect(cell, depth + 1):
        run_start = previous = offsets[begin]
        for index in range(begin + 1, finish):
            if offsets[index] != previous + 1:
                spans.append((run_start, previous + 1))
                run_start = offsets[index]
            previous = offsets[index]
        spans.append((run_start, previous + 1))


def _tables(text: str, depth: int, spans: list[Span], collect: Collect) -> None:
    """A table's cells, each read whole across its wrapped lines: a secret-named column's every
    cell is hidden, the other cells are redacted as texts of their own. The columns are where the
    rule under the header crosses them (``=====+=====``, psql's ``----+----``, ``|---|---|``);
    their names are the header's cells in order (a log prefix may shift the header's line)."""
    cells = MAX_CELLS  # for the whole text
    for count, rule in enumerate(_TABLE_RULE.finditer(text)):
        if count == MAX_TABLES or rule.start() == 0:
            return
        line = _line_at(text, rule.start())
        crossings = "+" if "+" in text[line[0] : line[1]] else "|"
        bars = [i - line[0] for i in range(*line) if text[i] == crossings]
        header = _line_at(text, text.rfind("\n", 0, rule.start() - 1) + 1)
        names = [cell.strip() for cell in text[header[0] : header[1]].split("|")]
        if crossings == "|":  # |---|---|: the cells are between the outer bars
            bars, names = bars[1:-1], names[1:-1]
        if not bars or len(names) != len(bars) + 1:
            continue
        columns = list(zip([0, *(b + 1 for b in bars)], [*bars, MAX_MATCH_LINE], strict=True))
        secret = [_secret_column(name) for name in names]
        for row in _table_rows(text, line[1] + 1 + (text[line[1] : line[1] + 1] == "\r"), bars):
            for (a, b), hidden in zip(columns, secret, strict=True):
                pieces = [(line[0] + a, min(line[0] + b, line[1])) for line in row if line[0] + a < line[1]]
                if hidden:
                    for start, end in pieces:
                        value = text[start:end].strip(" ")
                        if value and not _not_secret(value):
                            lead = start + text[start:end].index(value)
                            spans.append((lead, lead + len(value)))
                elif cells > 0 and len(pieces) > 1:  # wrapped (a one-line cell was redacted with the text)
                    cells -= 1
                    _cell_spans(text, pieces, depth, spans, collect)


def _plain_tables(text: str, spans: list[Span]) -> None:
    """tabulate's plain table: a header of 4+ names apart by 2+ spaces; a secret-named column's
    values are below it, from where its name starts to where the next name starts."""
    for match in _matches(_PLAIN_HEADER, text, spans, limit=MAX_TABLES):
        name_start, name_end = match.span(1)
        header = _line_at(text, text.rfind("\n", 0, name_start) + 1)
        line = text[header[0] : header[1]]
        if line.count("  ") < 4 or len(line.split()) < 4 or not _secret_column(match.group(1)):
            continue
        column = name_start - header[0]
        following = name_end
        while following < header[1] and text[following] in " \t":
            following += 1
        width = following - name_start if following < header[1] else MAX_MATCH_LINE
        start = header[1] + 1
        # a flag names no column: arguments one per line (Sqoop's "command arguments :"), its value the next
        for _ in range(1 if match.group(1).startswith("-") else MAX_TABLE_LINES):
            row = _line_at(text, start)
            if row[0] >= len(text) or not text[row[0] : row[1]].strip():
                break
            cell_start, cell_end = row[0] + column, min(row[0] + column + width, row[1])
            value = text[cell_start:cell_end].strip()
            if value and not value.startswith(MASK) and not _not_secret(value):  # not redacted already
                lead = text.index(value, cell_start)
                spans.append((lead, lead + len(value)))
            start = row[1] + 1 + (text[row[1] : row[1] + 1] == "\r")


# a CSV table's header: three or more names apart by commas, ending its line (xCAT's tabdump
# "#key,username,password,...", psql --csv, a credential report), after a log's prefix or a comment's #
_CSV_HEADER = pattern(r"(?m)(?:^|[ \t#])([A-Za-z_][\w.-]*(?:,[A-Za-z_][\w.-]*){2,})\r?$")


MAX_CSV_CHARS = 16384
"""At most this many characters of CSV rows are read, all of a text's tables together (a row's fields
are read character by character); past them the other families still judge the rows."""


def _csv_fields(text: str, start: int, end: int) -> list[Span]:
    """The fields of the CSV line ``text[start:end]``, a quoted field's commas within it."""
    fields: list[Span] = []
    field, quoted = start, False
    for at in range(start, end):
        if text[at] == '"' and (quoted or at == field):
            quoted = not quoted
        elif text[at] == "," and not quoted:
            fields.append((field, at))
            field = at + 1
    fields.append((field, end))
    return fields


def _csv_tables(text: str, spans: list[Span]) -> None:
    """A CSV table: a secret-named column's cell in each row below its header. A row's fields are
    counted from its end, so a log's prefix before them (``[2025-01-22, 05:02:45] INFO - ``) is
    none; the table ends at a line of fewer fields. A column named ``key`` alone names its rows
    (``"ipmi"``) unless a cell looks like a secret."""
    read = 0  # characters of rows read
    end = 0  # where the last table ended: a header-shaped line inside it was one of its rows
    for match in _matches(_CSV_HEADER, text, spans, limit=MAX_TABLES):
        if match.start() < end:
            continue
        names = match.group(1).split(",")
        # the name's last word names what the column holds (api_token; not password_last_used)
        secret = [
            index
            for index, name in enumerate(names)
            if _secret_column(name.replace("-", "_").replace(".", "_").rpartition("_")[2])
        ]
        start = match.end() + 1
        width = 0  # a row's fields, the log's prefix's included: the same in each row of the table
        for _ in range(MAX_TABLE_LINES if secret else 0):
            row = _line_at(text, start)
            read += row[1] - row[0]
            if row[0] >= len(text) or read > MAX_CSV_CHARS:
                break
            fields = _csv_fields(text, *row)
            width = width or len(fields)
            if len(fields) < len(names) or len(fields) != width:
                break
            for index in secret:
                cell_start, cell_end = fields[len(fields) - len(names) + index]
                if index == 0:  # the row's first field holds the log's prefix too: its last word is the cell
                    cell_start = max(cell_start, text.rfind(" ", cell_start, cell_end) + 1)
                value = text[cell_start:cell_end].strip('"')
                if names[index].lower() == "key" and not _looks_secret(value):
                    continue
                if value and not _not_secret(value):
                    cell_start += text[cell_start] == '"'
                    spans.append((cell_start, cell_start + len(value)))
            start = row[1] + 1 + (text[row[1] : row[1] + 1] == "\r")
        end = start


# INSERT INTO t (c1, c2) VALUES (: the columns, then the rows are read in Python (_sql_rows)
_SQL_INSERT = pattern(
    r"\binsert[ \t]+(?:ignore[ \t]+)?into[ \t]+[^\s(]{1,128}[ \t]*\(([^()\r\n]{1,1000})\)\s{0,8}values\s{0,8}\(",
    ignore_case=True,
)

MAX_SQL_VALUES = 4096
"""An INSERT's rows are read at most this far (characters) after its VALUES."""


def _sql_rows(text: str, start: int, closing: str = ")", reach: int = MAX_SQL_VALUES) -> Iterator[list[Span]]:
    """The rows of an INSERT's VALUES from ``start`` (after its first ``(``): each row's items, a
    quoted item without its quotes (``''`` is a quote inside one); a row ends at its ``closing`` at
    depth 0 (a list of bound values ends at its ``]`` or ``}``, and is one row)."""
    limit = min(len(text), start + reach)
    items: list[Span] = []
    depth, item, index, quote = 0, start, start, ""
    while index < limit:
        char = text[index]
        if quote:
            if char == quote and text[index + 1 : index + 2] == quote:
                index += 1  # '' inside a quoted item
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")" and depth:
            depth -= 1
        elif (char == "," or char == closing) and not depth:
            items.append(_sql_item(text, item, index))
            item = index + 1
            if char == closing:
                yield items
                if closing != ")":
                    return
                items = []
                rest = text[index + 1 : index + 16].lstrip()
                if not rest.startswith(","):
                    return
                index = text.index(",", index + 1)
                following = text[index + 1 : limit].lstrip()
                if not following.startswith("("):
                    return
                index = text.index("(", index + 1)
                item = index + 1
        index += 1
    if index > item:  # cut short (a message's limit): what is there is still a row
        items.append(_sql_item(text, item, index))
        yield items


def _sql_item(text: str, start: int, end: int) -> Span:
    """One item of a row without its spaces and, when quoted, its quotes."""
    while start < end and text[start] in " \t\r\n":
        start += 1
    while end > start and text[end - 1] in " \t\r\n":
        end -= 1
    if end - start >= 2 and text[start] in "'\"" and text[end - 1] == text[start]:
        return start + 1, end - 1
    if end > start and text[start] in "'\"":
        return start + 1, end  # a quoted item cut short
    return start, end


def _placeholder(value: str) -> bool:
    """A bind parameter, not a value: ``?``, ``$1``, ``:name``, ``@name``, ``%s``, ``%(name)s``."""
    if value in ("?", "%s") or (value[:1] == "$" and value[1:].isdigit()):
        return True
    if value[:1] in (":", "@") and value[1:].replace("_", "").isalnum():
        return True
    return value.startswith("%(") and value.endswith(")s")


def _sql_inserts(text: str, spans: list[Span]) -> None:
    """The values of an INSERT's secret-named columns (``client_secret``, ``password_hash``)."""
    for match in _matches(_SQL_INSERT, text, spans, limit=MAX_TABLES):
        columns = [name.strip(' \t`"[]') for name in match.group(1).split(",")]
        secret = [_secret_column(name) for name in columns]
        if not any(secret):
            continue
        for row in _sql_rows(text, match.end()):
            for (start, end), hidden in zip(row, secret, strict=False):
                value = text[start:end]
                if (
                    hidden
                    and value
                    and value.upper() not in ("NULL", "DEFAULT")
                    and not _placeholder(value)
                    and not _not_secret(value)
                ):
                    spans.append((start, end))


# a statement that takes bind parameters, and each parameter, perhaps after the column it is set to
# or compared with (UPDATE t SET api_token = $1 WHERE id = $2)
_STATEMENT = pattern(
    r"\b(?:insert[ \t]+(?:ignore[ \t]+)?into|update|delete[ \t]+from|select|merge[ \t]+into)[ \t]",
    ignore_case=True,
)
_PARAMETER = pattern(r"(?:([\w.`\"\[\]]{1,128})[ \t]*=[ \t]*)?(\?|\$[0-9]{1,3})(?:[^\w]|$)")


MAX_PARAMETERS = 32
"""At most this many parameters of one statement are matched to the values bound to them."""


MAX_STATEMENTS = 4
"""At most this many statements of one text are matched to their bound values."""


BOUND_REACH = 256
"""The values bound to a statement open at most this far (characters) after its last parameter."""


MAX_STATEMENT = 2048
"""A statement's parameters are read at most this far (characters) from its start, on its line."""


MAX_BOUND_VALUES = 1024
"""A list of bound values is read at most this far (characters)."""


def _parameter_columns(statement: str) -> tuple[list[tuple[int, str]], int]:
    """Each bind parameter of a ``statement``: the index of the value bound to it (``$2``'s is 1, the
    third ``?``'s is 2) and the column it stands for (the column set to it, or an INSERT's column in
    its place among the VALUES), and where the last parameter ends."""
    insert = _SQL_INSERT.match(statement)
    names = (
        [name.strip(' \t`"[]').rpartition(".")[2] for name in insert.group(1).split(",")] if insert else []
    )
    parameters: list[tuple[int, str]] = []
    questions = in_row = 0
    last = -1
    for count, match in enumerate(_PARAMETER.finditer(statement)):
        if count == MAX_PARAMETERS:
            break
        token = match.group(2)
        index = questions if token == "?" else int(token[1:]) - 1
        questions += token == "?"
        if index < 0:
            continue  # $0 stands for no bound value
        column = (match.group(1) or "").strip('`"[]').rpartition(".")[2]
        if insert is not None and match.start(2) >= insert.end() and not column:
            column = names[in_row] if in_row < len(names) else ""
            in_row += 1
        parameters.append((index, column))
        last = match.end(2)
    return parameters, last


_CLOSING = {"[": "]", "(": ")", "{": "}"}


def _bound_list(text: str, start: int) -> list[Span]:
    """The items of the first list, tuple or braces after ``start`` (within ``BOUND_REACH``) that holds
    any and is no label's (``[]interface {}{1, "x"}``'s third, ``[parameters: (1, 'x')]``'s tuple)."""
    limit = min(len(text), start + BOUND_REACH)
    index = start
    while index < limit:
        opening = min((i for i in (text.find(c, index, limit) for c in _CLOSING) if i >= 0), default=-1)
        if opening < 0:
            return []
        closing = _CLOSING[text[opening]]
        content = text[opening + 1 : opening + 64].lstrip(" ")
        label, colon, _ = content.partition(": ")
        if content[:1] != closing and not (colon and label.isidentifier()):
            return next(_sql_rows(text, opening + 1, closing, MAX_BOUND_VALUES), [])
        index = opening + 1  # empty ([]interface {}), or a label's ([parameters: ...]): the next one
    return []


def _bound_values(text: str, spans: list[Span]) -> None:
    """The values a driver logs as bound to a statement's parameters (xorm's ``INSERT ... VALUES
    (?,?,?) []interface {}{1, "https://x", "whsk_..."}``, Slonik's ``{"sql":"UPDATE t SET api_token = $1
    ...","values":["ptk_live_...", ...]}``): the value bound to a secret-named column's parameter is
    hidden, when every parameter has its value."""
    # the first few statements only: past them nothing is hidden for it (a word such as "select" is
    # common in a log, unlike a secret's shape, so _matches' rest-of-the-text span does not apply)
    for match in islice(_STATEMENT.finditer(text), MAX_STATEMENTS):
        end = min(len(text), match.start() + MAX_STATEMENT)
        line_end = text.find("\n", match.start(), end)
        parameters, last = _parameter_columns(text[match.start() : end if line_end < 0 else line_end])
        if not any(_secret_column(column) for _, column in parameters):
            continue
        items = _bound_list(text, match.start() + last)
        if len(items) <= max(index for index, _ in parameters):
            continue
        for index, column in parameters:
            value = text[items[index][0] : items[index][1]]
            if _secret_column(column) and value and not _placeholder(value) and not _not_secret(value):
                spans.append(items[index])


PATTERNS: tuple[Pattern, ...] = (_TABLE_RULE, _PLAIN_HEADER, _CSV_HEADER, _SQL_INSERT, _STATEMENT, _PARAMETER)
"""This module's patterns (the linear-time test runs each on adversarial input)."""


def find(text: str, lowered: str, depth: int, spans: list[Span], collect: Collect) -> None:
    """The secrets of the tables in ``text`` (``lowered`` is ``text.lower()``); a table inside a
    table's cell is read too, two deep at most."""
    if "|" in text and ("===" in text or "---" in text) and depth < 2:
        _tables(text, depth, spans, collect)
    if "   " in text and "\n" in text:
        _plain_tables(text, spans)
    if "," in text and "\n" in text:
        _csv_tables(text, spans)
    if "insert" in lowered and "(" in text:
        _sql_inserts(text, spans)
    if ("?" in text or "$" in text) and (
        "insert" in lowered
        or "update" in lowered
        or "select" in lowered
        or "delete" in lowered
        or "merge" in lowered
    ):
        _bound_values(text, spans)
