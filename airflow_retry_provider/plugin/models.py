"""The plugin's request models: filters of the letters and the bodies of the actions.

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

from datetime import date, datetime, time, timedelta, timezone
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo

from fastapi import Depends, HTTPException, Path, Query, status
from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from airflow_retry_provider.dlq import LetterFilter
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


class Filters(BaseModel):
    """Which letters: every empty field means "any". Dates are days in the UI's time zone, or ISO instants."""

    model_config = ConfigDict(extra="forbid")

    dag_id: FilterText = None
    task_id: FilterText = None
    category: FilterText = None
    failure_class: FilterText = None
    status: FilterText = None
    workspace_id: FilterText = None
    fingerprint: FilterText = None
    newer_version: Annotated[
        Literal["yes"] | None,
        Field(default=None, description='"yes": only letters whose DAG has a newer version deployed'),
    ] = None
    since: Annotated[
        str | None,
        Field(default=None, max_length=64, description="from this day (inclusive) or instant"),
        Storable,
    ] = None
    until: Annotated[
        str | None,
        Field(default=None, max_length=64, description="to this day (inclusive) or before this instant"),
        Storable,
    ] = None

    def cleaned(self) -> dict[str, str]:
        return {k: v.strip() for k, v in self.model_dump().items() if isinstance(v, str) and v.strip()}

    def to_letter_filter(self, tz: ZoneInfo) -> LetterFilter:
        values: dict[str, Any] = self.cleaned()
        try:
            since = instant(values.pop("since", None), tz, end=False)
            until = instant(values.pop("until", None), tz, end=True)
        except (ValueError, OverflowError) as exc:  # not a date, or outside the supported range
            raise HTTPException(status.HTTP_400_BAD_REQUEST, f"bad date: {exc}") from None
        newer_version = values.pop("newer_version", None) == "yes"
        return LetterFilter(**values, since=since, until=until, newer_version=newer_version)


def filters_from_query(
    dag_id: str | None = None,
    task_id: str | None = None,
    category: str | None = None,
    failure_class: str | None = None,
    status: str | None = None,
    workspace_id: str | None = None,
    fingerprint: str | None = None,
    newer_version: Annotated[
        str | None, Query(description='"yes": only letters whose DAG has a newer version deployed')
    ] = None,
    since: Annotated[str | None, Query(description="from this day (inclusive) or instant")] = None,
    until: Annotated[str | None, Query(description="to this day (inclusive) or before this instant")] = None,
) -> Filters:
    """The filters from the query string (each field is its own parameter); too long a value is a 422."""
    try:
        return Filters(
            dag_id=dag_id,
            task_id=task_id,
            category=category,
            failure_class=failure_class,
            status=status,
            workspace_id=workspace_id,
            fingerprint=fingerprint,
            newer_version=newer_version or None,  # type: ignore[arg-type] # pydantic checks it: a 422 naming the field
            since=since,
            until=until,
        )
    except ValidationError as exc:
        raise query_error(exc) from None


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
