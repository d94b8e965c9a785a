"""Rendering: the one Jinja environment and its filters, the ``page()`` helper, query strings, links
into Airflow's UI, and the CSV / JSON exports streamed a few hundred letters at a time (with the
marker of an export cut at its maximum).
"""

import csv
import io
import json
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode
from zoneinfo import ZoneInfo

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from airflow_retry_provider.dlq import Letter
from airflow_retry_provider.plugin.access import Access, airflow_root
from airflow_retry_provider.plugin.spreadsheet import safe_cell
from airflow_retry_provider.policy import redact
from airflow_retry_provider.states import LETTER_AT_REST, DeliveryStatus, LetterStatus

TEMPLATES = Path(__file__).parent / "templates"


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f} ms"


def age(seconds: float | None) -> str:
    """Freshness as 2d 3h, 4h 5m, 6m 7s or 8s."""
    if seconds is None:
        return "–"
    left = int(round(seconds))
    days, left = divmod(left, 86400)
    hours, left = divmod(left, 3600)
    minutes, secs = divmod(left, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


# Characters that change what a page shows without being seen: C0 and C1 controls (ESC starts a
# terminal sequence), zero-width characters and the bidirectional overrides and isolates (U+202E
# turns "exe.txt" into "txt.exe" on screen: Trojan Source, CVE-2021-42574). Tab, newline and
# carriage return are layout and stay.
_INVISIBLE = (
    *range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0), 0x061C, 0x180E,
    *range(0x200B, 0x2010), *range(0x2028, 0x202F), *range(0x2060, 0x2065), *range(0x2066, 0x206A), 0xFEFF,
)  # fmt: skip
_VISIBLE = {code: f"\\u{code:04x}" for code in _INVISIBLE}
VISIBLE_JS = "[" + "".join(f"\\u{code:04x}" for code in _INVISIBLE) + "]"
"""The same characters as a JavaScript character class, for text the pages' scripts show (base.html)."""


def visible(text: str) -> str:
    """``text`` with every control, zero-width and bidi character written as its escape (``\\u202e``)."""
    return text.translate(_VISIBLE)


def _finalize(value: Any) -> Any:
    """Every value a template prints: a string (not markup the code built) shows its invisible characters as escapes."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return value


def templates(tz: ZoneInfo) -> Jinja2Templates:
    """The pages' templates, every value HTML-escaped, times shown in ``tz`` (UTC on hover)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,  # every value is HTML-escaped: an error message with <script> shows as text
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,  # a letter's text cannot disguise itself on the page (bidi overrides, ESC)
    )

    def localtime(value: datetime | str | None) -> Markup:
        if value is None:
            return Markup("&ndash;")
        if isinstance(value, str):  # ISO 8601, as the JSON API gives it
            value = datetime.fromisoformat(value)
        utc = value.astimezone(timezone.utc)
        local = value.astimezone(tz)
        return Markup('<time datetime="{}" title="{} UTC">{}</time>').format(
            utc.isoformat(), utc.strftime("%Y-%m-%dT%H:%M:%SZ"), local.strftime("%Y-%m-%d %H:%M:%S")
        )

    env.filters["localtime"] = localtime
    env.filters["redact"] = lambda text: redact(str(text)) if text is not None else ""
    env.filters.update(percent=percent, ms=ms, age=age)
    env.globals["tz_name"] = tz.key
    env.globals["invisible_js"] = Markup(VISIBLE_JS)
    env.globals.update(
        LetterStatus=LetterStatus, LETTER_AT_REST=LETTER_AT_REST, DeliveryStatus=DeliveryStatus
    )
    return Jinja2Templates(env=env)


def page(
    request: Request, name: str, access: Access | None, status_code: int = 200, **context: Any
) -> HTMLResponse:
    """Template ``name`` with the links back to this app and to Airflow, and the signed-in user."""
    context.update(
        base=str(request.scope.get("root_path", "")),
        airflow=airflow_root(request),
        user=access.actor if access else None,
        nonce=getattr(request.state, "csp_nonce", ""),
    )
    found: Jinja2Templates = request.app.state.templates
    return found.TemplateResponse(request, name, context, status_code=status_code)


def query(values: Mapping[str, Any]) -> str:
    """A query string of the non-empty values."""
    return urlencode([(k, v) for k, v in values.items() if v not in (None, "")], doseq=True)


def ti_links(root: str, letter: Letter) -> dict[str, str]:
    """Airflow UI links of a letter's task instance and of the log of its failed try."""
    path = (
        f"{root}/dags/{quote(letter.dag_id, safe='')}/runs/{quote(letter.run_id, safe='')}"
        f"/tasks/{quote(letter.task_id, safe='')}"
    )
    if letter.map_index != -1:
        path += f"/mapped/{letter.map_index}"
    return {"ti": path, "log": f"{path}?try_number={letter.try_number}", "run": path.split("/tasks/")[0]}


def csv_stream(letters: Iterator[Letter], cut_at: int | None = None) -> Iterator[str]:
    """The letters as CSV, a header first, flushed every 500 rows.

    :param cut_at: the export's maximum when more letters matched: a last comment row says so.
    """
    names = list(Letter.__dataclass_fields__)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(names)
    for n, letter in enumerate(letters, start=1):
        row = letter.to_json()
        writer.writerow([safe_cell(row[k]) for k in names])
        if n % 500 == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    if cut_at is not None:
        writer.writerow([cut_marker(cut_at)])
    yield buffer.getvalue()


def cut_marker(limit: int) -> str:
    """The last CSV row of an export cut at ``limit`` letters (a comment: it starts with ``#``)."""
    return (
        f"# cut: more letters match; this export stops at the first {limit} "
        "([retry_provider] export_max_letters); narrow the filter to see the rest"
    )


def json_lines(letters: Iterator[Letter], max_letters: int, cut: bool) -> Iterator[str]:
    """The letters as one JSON object: ``letters`` (one a line), ``count``, ``cut`` and ``max_letters``.

    :param cut: more letters matched than ``max_letters``, the export's maximum.
    """
    yield '{"letters": ['
    n = 0
    for n, letter in enumerate(letters, start=1):
        yield ("," if n > 1 else "") + "\n" + json.dumps(letter.to_json())
    yield f'\n], "count": {n}, "cut": {json.dumps(cut)}, "max_letters": {max_letters}}}\n'
