"""The plugin's request models: filters of the letters and the bodies of the actions.

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

import inspect
from datetime import date, datetime, time, timedelta, timezone
from typing import TYPE_CHECKING, Annotated, Any, Literal
from zoneinfo import ZoneInfo

from fastapi import Depends, HTTPException, Path, Query, status
from fastapi.exceptions import RequestValidationError
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
)

from airflow_retry_provider.dlq import LETTER_FILTERS, FilterField, LetterFilter
from airflow_retry_provider.policy.text import storable

PAGE_SIZE = 50
GROUP_PAGE_SIZE = 50
COUNT_CAP = 10_000
MAX_IDS = 1_000
MAX_REASON = 500
MAX_VERSION = 200
MAX_FILTER = 500
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
MAX_IDENTIFIER = 2_000
"""Longest DAG, run or task id a query may name (Airflow's own columns are 250 characters)."""


def stored_text(value: str | None) -> str | None:
    """A text field PostgreSQL can take: NUL and unpaired surrogates are refused (422 naming the field)."""
    if value is not None and storable(value) != value:
        raise ValueError("holds a character that cannot be stored (NUL or an unpaired surrogate)")
    return value


Storable = AfterValidator(stored_text)
LetterId = Annotated[int, Field(ge=1, le=INT64_MAX)]
FilterText = Annotated[str | None, Field(default=None, max_length=MAX_FILTER), Storable]

# the path and query values of the routes: a bigint id, a map index (integer), a cursor, a name
PathLetterId = Annotated[int, Path(ge=1, le=INT64_MAX, description="a letter id")]
PathJobId = Annotated[int, Path(ge=1, le=INT64_MAX, description="a replay job id")]
CursorId = Annotated[int | None, Query(ge=1, le=INT64_MAX, description="the id of the last row of the page")]
CursorCount = Annotated[
    int | None, Query(ge=0, le=INT64_MAX, description="the letters of the last group of the page")
]
CursorText = Annotated[str | None, Query(max_length=MAX_FILTER), Storable]


def letters_cursor(
    before_created: datetime | None = None, before_id: CursorId = None
) -> tuple[datetime, int] | None:
    """The last letter of the previous page (``before_created``, ``before_id``), None without both."""
    return (before_created, before_id) if before_created and before_id is not None else None


def groups_cursor(
    after_letters: CursorCount = None, after_fingerprint: CursorText = None
) -> tuple[int, str] | None:
    """The last group of the previous page (``after_letters``, ``after_fingerprint``), None without a count."""
    return (after_letters, after_fingerprint or "") if after_letters is not None else None


LettersCursor = Annotated[tuple[datetime, int] | None, Depends(letters_cursor)]
GroupsCursor = Annotated[tuple[int, str] | None, Depends(groups_cursor)]
QueryIds = Annotated[list[int], Query(max_length=MAX_IDS)]
MapIndex = Annotated[int, Query(ge=-1, le=INT32_MAX)]
Identifier = Annotated[str, Query(min_length=1, max_length=MAX_IDENTIFIER), Storable]


PAGE_FILTERS = tuple(field for field in LETTER_FILTERS if field.page)
"""The letter filters of the pages, the JSON API and the exports (``dlq/filters.py``)."""
MAX_DATE = 64
"""Longest day or instant a date filter takes."""


def _blank_is_none(value: Any) -> Any:
    """An empty flag (``newer_version=`` in a query string) is the flag not given."""
    return None if value == "" else value


def _field(field: FilterField) -> Any:
    """The type and the bounds of a filter's value on the pages: a 422 names the field beyond them."""
    about = field.query_description()
    if field.kind == "flag":
        return Annotated[
            Literal["yes"] | None, BeforeValidator(_blank_is_none), Field(default=None, description=about)
        ]
    longest = MAX_DATE if field.kind == "date" else MAX_FILTER
    return Annotated[str | None, Field(default=None, max_length=longest, description=about), Storable]


class FilterValues(BaseModel):
    """Which letters: every empty field means "any". Dates are days in the UI's time zone, or ISO instants.

    The methods of :data:`Filters`, the model whose fields are :data:`PAGE_FILTERS`'s (a flag is ``yes``
    or absent).
    """

    model_config = ConfigDict(extra="forbid")

    def cleaned(self) -> dict[str, str]:
        """The fields given, stripped: what a link or a form carries on to the next page."""
        return {k: v.strip() for k, v in self.model_dump().items() if isinstance(v, str) and v.strip()}

    def to_letter_filter(self, tz: ZoneInfo) -> LetterFilter:
        """The filter the store runs; a date that cannot be read is a 400 saying so."""
        given = self.cleaned()
        values: dict[str, Any] = {}
        for field in PAGE_FILTERS:
            value = given.get(field.name)
            try:
                if field.kind == "date":
                    values[field.name] = instant(value, tz, end=field.end)
                elif field.kind == "flag":
                    values[field.name] = value == "yes"
                else:
                    values[field.name] = value
            except (ValueError, OverflowError) as exc:  # not a date, or outside the supported range
                raise HTTPException(status.HTTP_400_BAD_REQUEST, f"bad date: {exc}") from None
        return LetterFilter(**values)


if TYPE_CHECKING:  # type checkers see the methods; the fields come from the declaration
    Filters = FilterValues
else:
    Filters = create_model(
        "Filters",
        __base__=FilterValues,
        __doc__=FilterValues.__doc__,
        **{field.name: _field(field) for field in PAGE_FILTERS},
    )


def filters_from_query(**values: str | None) -> Filters:
    """The filters from the query string, each field its own parameter (its signature is
    :data:`PAGE_FILTERS`'s, below); too long a value is a 422 naming it."""
    try:
        return Filters(**values)
    except ValidationError as exc:
        raise query_error(exc) from None


# FastAPI reads a dependency's query parameters from its signature: one per declared filter, described.
# (A pydantic model as the parameters, ``Annotated[Filters, Query()]``, is one parameter named ``filters``
# in the OpenAPI schema of a route with other query parameters.)
filters_from_query.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        inspect.Parameter(
            field.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[str | None, Query(description=field.query_description())],
        )
        for field in PAGE_FILTERS
    ],
    return_annotation=Filters,
)


def query_error(exc: ValidationError) -> RequestValidationError:
    """A model built from the query string was refused: the same 422 as a bad body, located in the query."""
    return RequestValidationError(
        [{**e, "loc": ("query", *e["loc"])} for e in exc.errors(include_url=False, include_context=False)]
    )


QueryFilters = Annotated[Filters, Depends(filters_from_query)]


def instant(value: str | None, tz: ZoneInfo, end: bool) -> datetime | None:
    """A day (the start of it, or of the next one for ``end``) in ``tz``, or an ISO instant."""
    if not value:
        return None
    if len(value) == 10:
        day = date.fromisoformat(value) + (timedelta(days=1) if end else timedelta())
        return datetime.combine(day, time(), tzinfo=tz)
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    moment = moment if moment.tzinfo else moment.replace(tzinfo=tz)
    moment.astimezone(timezone.utc)  # OverflowError at the edges of the range (year 1 or 9999)
    return moment


class SelectionBody(BaseModel):
    """Which letters an action takes: the listed ``ids``, or with ``all_matching`` every letter of ``filter``."""

    model_config = ConfigDict(extra="forbid")

    ids: list[LetterId] = Field(default_factory=list, max_length=MAX_IDS)
    all_matching: bool = False
    filter: Filters = Field(default_factory=Filters)


class PreviewBody(SelectionBody):
    downstream: bool = Field(
        default=True,
        description="also the task instances downstream of each letter's in its run that did not succeed",
    )
    run_on_latest_version: bool | None = Field(
        default=None,
        description="run the cleared tasks on the DAG's latest version and bundle version (true), on their "
        "run's own (false), or as Airflow decides (absent: the DAG's, then [core] rerun_with_latest_version)",
    )


class ReplayBody(PreviewBody):
    reason: Annotated[
        str,
        Field(min_length=1, max_length=MAX_REASON, description="why the letters should run again"),
        Storable,
    ]
    fix_version: Annotated[
        str | None,
        Field(
            default=None,
            min_length=1,
            max_length=MAX_VERSION,
            description="the code or data version that fixes the cause (with run_on_latest_version: true, "
            "the DAG's latest version when not given)",
        ),
        Storable,
    ] = None
    processing_version: Annotated[
        str | None,
        Field(default=None, max_length=MAX_VERSION, description="ask for a new work-unit identity"),
        Storable,
    ] = None
    source: Literal["ui", "api"] = Field(default="api", description="the Dead letters pages send ui")
    canary: bool | Annotated[int, Field(ge=1)] = Field(
        default=True,
        description="clear one letter first and wait for its outcome (true: the newest; a letter id: that "
        "one; false: no canary)",
    )


class ParkBody(SelectionBody):
    reason: Annotated[str, Field(max_length=MAX_REASON), Storable] = ""


class DismissBody(SelectionBody):
    reason: Annotated[
        str,
        Field(min_length=1, max_length=MAX_REASON, description="why the letters are closed without a replay"),
        Storable,
    ]
