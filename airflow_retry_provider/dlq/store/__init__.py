"""The queue's store: the one owner of ``dlq/sql/queries.sql``; every statement on letters, replays, jobs and items.

By table: ``letters`` (:class:`DeadLetterStore`: filing, reading, settling a letter, the sweeper's
reads), ``replays`` (:class:`ReplayStore`: the claim, its clear's answer, a late clear, the sync's
pages of claims), ``jobs`` (:class:`JobStore`: jobs and their items) and ``deliveries``
(:class:`DeliveryStore`: the letters by the deliveries they block, ``sql/deliveries.sql``). Each public method is one
transaction, or takes the caller's cursor (``record``) so an atomic step stays one transaction.
The loops above (``replay``, ``sync``, ``driver``, ``sweeper``) run no SQL of their own.
"""

from airflow_retry_provider.dlq.store.deliveries import DeliveryStore
from airflow_retry_provider.dlq.store.jobs import JobError, JobStore, JobTurn, JobView, Verdict
from airflow_retry_provider.dlq.store.letters import (
    DeadLetterStore,
    FailedTry,
    FileResult,
    FilingListener,
    LetterFilter,
    StoredImpact,
)
from airflow_retry_provider.dlq.store.replays import ReplayStore

__all__ = [
    "DeadLetterStore",
    "DeliveryStore",
    "FailedTry",
    "FileResult",
    "FilingListener",
    "JobError",
    "JobStore",
    "JobTurn",
    "JobView",
    "LetterFilter",
    "ReplayStore",
    "StoredImpact",
    "Verdict",
]
