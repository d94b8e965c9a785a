"""The letter filter, declared once: which letters a list, a count, a replay's selection or an export takes.

Each :class:`FilterField` of :data:`LETTER_FILTERS` is a field of :class:`LetterFilter`. From the
declaration come the CLI's flags and their help (``commands/dlq.py``), the pages', the JSON API's and
the exports' query parameters and the filter of an action's body (``plugin/models.py``), and the form
of the Dead letters page (``plugin/templates/letters.html``). Its SQL is its clause, named by the
field, in ``letter_filter`` of ``dlq/sql/fragments.sql`` (``tests/unit/dlq/test_filters.py`` holds
the three together).

Pure: no Airflow, no web framework, no database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from airflow_retry_provider.policy.rules import FAILURE_CLASSES
from airflow_retry_provider.states import LetterStatus

FilterKind = Literal["text", "date", "flag", "ids"]


@dataclass(frozen=True)
class FilterField:
    """One filter of the letters.

    :param name: the field of :class:`LetterFilter`, the SQL parameter of its clause and the query parameter.
    :param label: its label in the Dead letters page's form.
    :param help: the CLI flag's help, and the query parameter's description unless ``description`` is given.
    :param kind: ``text`` (one value, matched as is), ``date`` (an instant; on the pages also a day),
        ``flag`` (on or off; ``yes`` in a query string) or ``ids`` (letter ids; a repeatable flag).
    :param flag: the CLI flag, without ``--``; None: the CLI has none.
    :param choices: the only values allowed: the CLI refuses another, the page offers them in a list.
    :param description: the query parameter's description, when the pages read the value unlike the CLI.
    :param end: a date that ends the range (exclusive; on the pages a day counts to its end).
    :param page: a query parameter of the pages, the JSON API and the exports (the pages select letters
        by id otherwise).
    """

    name: str
    label: str
    help: str
    kind: FilterKind = "text"
    flag: str | None = None
    choices: tuple[str, ...] = ()
    description: str | None = None
    end: bool = False
    page: bool = True

    def cli_help(self) -> str:
        """The CLI flag's help: ``help`` and the allowed values."""
        return f"{self.help}: {'|'.join(self.choices)}" if self.choices else self.help

    def query_description(self) -> str:
        """The query parameter's description (OpenAPI)."""
        return self.description or self.cli_help()


LETTER_FILTERS: tuple[FilterField, ...] = (
    FilterField("dag_id", "DAG", "DAG id", flag="dag"),
    FilterField("task_id", "Task", "task id", flag="task"),
    FilterField("category", "Category", "stable category, e.g. not-found", flag="category"),
    FilterField("failure_class", "Failure class", "failure class", flag="class", choices=FAILURE_CLASSES),
    FilterField("status", "Status", "letter status", flag="status", choices=LetterStatus.values()),
    FilterField("fingerprint", "Fingerprint", "root-cause fingerprint", flag="fingerprint"),
    FilterField("workspace_id", "Workspace", "workspace id", flag="workspace"),
    FilterField(
        "since",
        "Filed from",
        "created at or after (ISO 8601 with offset)",
        "date",
        flag="since",
        description="from this day (inclusive) or instant",
    ),
    FilterField(
        "until",
        "Filed until",
        "created before (ISO 8601 with offset)",
        "date",
        flag="until",
        description="to this day (inclusive) or before this instant",
        end=True,
    ),
    FilterField("ids", "Letter id", "letter id (repeatable)", "ids", flag="id", page=False),
    FilterField(
        "newer_version",
        "a newer version is deployed",
        "only letters whose DAG has a newer version deployed",
        "flag",
        description='"yes": only letters whose DAG has a newer version deployed',
    ),
)
"""Every filter of the letters, in the order the CLI's help and the page's form show them."""


@dataclass(frozen=True)
class LetterFilter:
    """Which letters: every field None (or False) means "any". Its fields are :data:`LETTER_FILTERS`'s."""

    dag_id: str | None = None
    task_id: str | None = None
    category: str | None = None
    failure_class: str | None = None
    status: str | None = None
    fingerprint: str | None = None
    workspace_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    ids: Sequence[int] | None = None
    #: only letters whose DAG has a newer version deployed than the one they failed on (the sweeper's
    #: ``retry_dag_versions``); a letter whose version is unknown never matches
    newer_version: bool = False

    def as_params(self) -> dict[str, Any]:
        """The parameters of ``letter_filter``'s clauses, one per field."""
        params = dict(self.__dict__)
        params["ids"] = list(self.ids) if self.ids is not None else None
        return params
