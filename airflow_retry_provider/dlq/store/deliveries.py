"""The deliveries' reads (``dlq/sql/deliveries.sql``): the letters blocking a deadline, a root cause's
impacts, the tasks a breaker holds, what was told at risk (``dlq/deliveries.py`` decides on them)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from airflow_retry_provider.dlq.models import Letter
from airflow_retry_provider.dlq.store.base import QueueStore


class DeliveryStore(QueueStore):
    """Reads of letters by the deliveries they block; each method is one transaction.

    :param db: the provider's database.
    """

    statements = "deliveries.sql"

    def blockers(self, start: datetime, end: datetime, limit: int) -> list[dict[str, Any]]:
        """(delivery, letter) pairs with a deadline between ``start`` and ``end``, at most ``limit``."""
        return self._rows("delivery_blockers", {"start": start, "end": end, "limit": limit})

    def group_impacts(
        self, fingerprints: Sequence[str], dag_ids: Sequence[str], per_group: int
    ) -> list[dict[str, Any]]:
        """The stored impacts of each root cause's letters still in the way, the newest ``per_group``: each
        distinct impact once, with how many of them hold it (``letters``)."""
        parameters = {"fingerprints": fingerprints, "dag_ids": dag_ids, "per_group": per_group}
        return self._rows("group_impacts", parameters)

    def held_tasks(self, dependency: str, limit: int) -> list[dict[str, Any]]:
        """The task instances ``dependency``'s breaker holds, the longest held first."""
        return self._rows("held_tasks", {"dependency": dependency, "limit": limit})

    def letters_past_latest_replay(self, now: datetime, limit: int) -> list[Letter]:
        """Open letters holding a delivery past its latest replay time."""
        return [
            Letter.from_row(row)
            for row in self._rows("letters_past_latest_replay", {"now": now, "limit": limit})
        ]

    def told_at_risk_not_settled(self, start: datetime, end: datetime, limit: int) -> list[dict[str, Any]]:
        """Deliveries told at risk, not yet told saved, with a deadline between ``start`` and ``end``."""
        return self._rows("told_at_risk_not_settled", {"start": start, "end": end, "limit": limit})
