"""The letters a request may see and touch: read through :class:`LetterViews`, checked against
the user's access, a refused action audited.

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request, status

from airflow_retry_provider.dlq import DEFAULT_SELECTION_LIMIT, Letter, LetterFilter
from airflow_retry_provider.hooks.airflow_api import AirflowApiError
from airflow_retry_provider.plugin.access import Access, AccessDep, audit
from airflow_retry_provider.plugin.deps import StoreDep, TimeZoneDep, api_for
from airflow_retry_provider.plugin.models import SelectionBody
from airflow_retry_provider.plugin.queries import LetterViews, Try, task_instance_tries
from airflow_retry_provider.policy import redact


class Letters:
    """The letters of a request: reads through :class:`LetterViews`, checked against the user's access."""

    def __init__(self, request: Request, store: StoreDep, tz: TimeZoneDep) -> None:
        self.request = request
        self.store = store
        self.tz = tz

    def views(self) -> LetterViews:
        return LetterViews(self.store.db)

    def readable(self, access: Access, q: LetterViews | None = None) -> set[str]:
        """The DAGs with letters whose task instances the user may read."""
        return access.permitted((q or self.views()).dag_ids(), "GET")

    def letter_for(self, letter_id: int, access: Access) -> Letter:
        """One letter, if the user may read its DAG; 404 if none, and the same 404 if they may not
        (the answer must not tell that a letter exists in a DAG they cannot see)."""
        letter = self.store.get(letter_id)
        if letter is None or not access.permitted([letter.dag_id], "GET"):
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no letter {letter_id}")
        return letter

    def select(self, access: Access, body: SelectionBody, event: str | None = None) -> list[Letter]:
        """The letters an action takes, refused (403) unless the user may edit every DAG among them.

        :param event: the action's Audit Log event: a refusal is audited under it (outcome ``refused``).
        """
        if body.all_matching:
            where = body.filter.to_letter_filter(self.tz)
            letters = self.views().letters(where, self.readable(access), DEFAULT_SELECTION_LIMIT)
        else:
            if not body.ids:
                raise HTTPException(status.HTTP_400_BAD_REQUEST, "select at least one letter")
            ids = sorted(set(body.ids))[:DEFAULT_SELECTION_LIMIT]
            found = self.store.list(LetterFilter(ids=ids), limit=len(ids))
            readable = access.permitted({letter.dag_id for letter in found}, "GET")
            letters = [letter for letter in found if letter.dag_id in readable]  # others: as if missing
        if not letters:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "no letter matches the selection")
        try:
            access.require({letter.dag_id for letter in letters}, "PUT")
        except HTTPException:
            if event:
                audit(access.actor, event, letters, outcome="refused", reason=getattr(body, "reason", ""))
            raise
        return letters

    def tries(self, dag_id: str, run_id: str, task_id: str, map_index: int) -> tuple[list[Try], str | None]:
        """The task instance's tries as Airflow's REST API reports them, or why they could not be read."""
        try:
            with api_for(self.request) as api:
                return task_instance_tries(api, dag_id, run_id, task_id, map_index), None
        except AirflowApiError as exc:
            return [], redact(str(exc))[:300]

    def ti_history(self, dag_id: str, run_id: str, task_id: str, map_index: int) -> dict[str, Any]:
        """A task instance's letter, its replays and its tries."""
        letter = self.views().letter_of_ti(dag_id, run_id, task_id, map_index)
        tries, tries_error = self.tries(dag_id, run_id, task_id, map_index)
        return {
            "dag_id": dag_id,
            "run_id": run_id,
            "task_id": task_id,
            "map_index": map_index,
            "letter": letter,
            "replays": self.store.replays(letter.id) if letter else [],
            "tries": tries,
            "tries_error": tries_error,
        }


LettersDep = Annotated[Letters, Depends()]


def selected(model: type[SelectionBody], event: str) -> Callable[..., tuple[list[Letter], Any]]:
    """A dependency reading a ``model`` body and selecting its letters (see :meth:`Letters.select`);
    a refusal is audited as ``event``."""

    def dependency(body: model, access: AccessDep, letters: LettersDep) -> tuple[list[Letter], Any]:  # type: ignore[valid-type]
        return letters.select(access, body, event), body

    return dependency
