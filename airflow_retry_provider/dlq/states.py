"""The state tables of the replay loop, declared once: every state of each entity, every transition,
the process that makes it, the guard it checks, and what ends each non-terminal state.

Pure data over the enums of :mod:`airflow_retry_provider.states`. docs/ARCHITECTURE.md's "State
tables" section is :func:`markdown` of it, and
``tests/integration/dlq/test_states.py`` checks both ways that the SQL agrees: every statement named
here exists and writes that entity's state column, with the target states it names and a ``WHERE``
guard on exactly the source states it names (or, where the write's own ``WHERE`` names only the row,
the statement whose row lock held the guard: ``held_by``); and every statement of the package's
``.sql`` files that writes a state column is named here. A statement is ``<package>:<block>``: the
named block of ``airflow_retry_provider/<package>/sql/queries.sql``.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_retry_provider.states import (
    AlertStatus,
    ItemOutcome,
    JobStatus,
    LetterStatus,
    ReplayOutcome,
    WorkUnitStatus,
)

CREATED = "(new)"
DELETED = "(purged)"


@dataclass(frozen=True)
class Transition:
    """One write: from any of ``sources`` to ``target``.

    :param sources: the states it leaves (``(CREATED,)``: the row is inserted).
    :param target: the state it writes (``DELETED``: the row is deleted).
    :param by: the processes that make it.
    :param statement: ``<package>:<block>`` of the SQL that makes it.
    :param guard: what must hold for it to land, in words.
    :param held_by: the statement whose row lock checked the sources, when this one's ``WHERE`` names only the row.
    """

    sources: tuple[str, ...]
    target: str
    by: str
    statement: str
    guard: str
    held_by: str | None = None


@dataclass(frozen=True)
class Entity:
    """One table whose rows move through states in one column."""

    name: str
    table: str
    column: str
    states: tuple[str, ...]
    exits: dict[str, str]
    """Each non-terminal state: the timeout or event that ends it."""
    transitions: tuple[Transition, ...]

    @property
    def terminal(self) -> tuple[str, ...]:
        return tuple(state for state in self.states if state not in self.exits)


LETTER = Entity(
    "letter",
    "retry_dead_letters",
    "status",
    LetterStatus.values(),
    {
        "dlq": "at rest: work for a person (replay, park, dismiss); each sweep asks Airflow once whether "
        "its task instance succeeded since (then resolved)",
        "replaying": "lease plus one sweep once Airflow answers, whatever it answers: success resolves; a newer "
        "failed try, or an end without success after the clear, goes back to dlq counted (parked at the cap); a "
        "clear that never happened goes back to dlq; a task instance gone (404) parks it; one that has not ended "
        "replay_timeout_seconds (24 h) after the clear goes back to dlq counted. Each sweep asks about every "
        "replaying letter once, longest unasked first",
        "parked": "at rest: a person dismisses it; each sweep resolves it when its task instance succeeded since",
    },
    (
        Transition(
            (CREATED,), "dlq", "failure callback, sweeper", "dlq:insert_letter", "one row per task instance"
        ),
        Transition(
            ("replaying",),
            "dlq",
            "failure callback, sweeper",
            "dlq:refile_letter",
            "a newer failed try, under the row lock: the replay failed (replay_count + 1)",
            held_by="dlq:lock_letter_by_ti",
        ),
        Transition(
            ("replaying",),
            "parked",
            "failure callback, sweeper",
            "dlq:refile_letter",
            "a newer failed try reaching the replay cap",
            held_by="dlq:lock_letter_by_ti",
        ),
        Transition(
            ("dlq", "parked", "resolved", "dismissed"),
            "dlq",
            "failure callback, sweeper",
            "dlq:refile_letter",
            "a newer failed try: dlq and parked keep their status, resolved and dismissed reopen",
            held_by="dlq:lock_letter_by_ti",
        ),
        Transition(
            ("parked",),
            "parked",
            "failure callback, sweeper",
            "dlq:refile_letter",
            "a newer failed try of a parked letter",
            held_by="dlq:lock_letter_by_ti",
        ),
        Transition(
            ("dlq",),
            "replaying",
            "replay driver",
            "dlq:claim_for_replay",
            "status dlq and under the replay cap; in a job, its item still pending and unclaimed "
            "(dlq:lock_pending_job_item); of concurrent claims one wins",
        ),
        Transition(
            ("dlq",),
            "replaying",
            "replay driver",
            "dlq:reopen_late_clear",
            "status dlq, and Airflow confirmed the clear of its last replay after another process abandoned "
            "it (its lease expired while the clear was on its way)",
        ),
        Transition(
            ("dlq",),
            "replaying",
            "replay driver",
            "dlq:claim_letter_by_ti",
            "status dlq: a letter cleared with another's downstream, or whose clear Airflow confirmed late, joins it",
        ),
        Transition(
            ("replaying",),
            "resolved",
            "success callback, driver, sweeper",
            "dlq:resolve_replaying_letter",
            "status replaying and Airflow says success",
        ),
        Transition(
            ("replaying",),
            "dlq",
            "replay driver",
            "dlq:release_failed_claim",
            "Airflow refused the clear, and this replay is still open and not cleared",
        ),
        Transition(
            ("replaying",),
            "dlq",
            "driver, sweeper",
            "dlq:abandon_claim",
            "the claim is open and not cleared, its lease expired or its answer lost, and Airflow shows the "
            "claimed try still failed",
        ),
        Transition(
            ("replaying",),
            "dlq",
            "driver, sweeper",
            "dlq:end_replay_without_success",
            "the clear happened and the task instance ended upstream_failed, skipped, removed or failed with no "
            "newer try, or has not ended replay_timeout_seconds after the clear (replay_count + 1)",
        ),
        Transition(
            ("replaying",),
            "parked",
            "driver, sweeper",
            "dlq:end_replay_without_success",
            "the same, at the replay cap",
        ),
        Transition(
            ("replaying",),
            "dlq",
            "sweeper",
            "dlq:release_unclaimed",
            "replaying with no open claim (nothing else would decide it)",
        ),
        Transition(
            ("replaying",),
            "parked",
            "driver, sweeper",
            "dlq:park_vanished_letter",
            "Airflow answers 404 for the task instance or its run",
        ),
        Transition(
            ("dlq", "replaying"),
            "parked",
            "a person (UI, API, CLI)",
            "dlq:set_status",
            "a replaying letter only when no clear is in flight (live lease), confirmed or of lost answer",
        ),
        Transition(
            ("dlq", "parked", "replaying"),
            "dismissed",
            "a person (UI, API, CLI)",
            "dlq:set_status",
            "a reason; a replaying letter only when no clear is in flight, confirmed or of lost answer",
        ),
        Transition(
            ("dlq", "parked"),
            "resolved",
            "sweeper",
            "dlq:resolve_dlq_letter",
            "Airflow says the task instance succeeded (cleared by hand)",
        ),
        Transition(
            ("resolved", "dismissed"),
            DELETED,
            "retention (CLI, maintenance DAG)",
            "dlq:delete_closed_before",
            "closed before the cut-off; the history stays",
        ),
        Transition(
            ("resolved", "dismissed"),
            DELETED,
            "retention (maintenance DAG)",
            "maintenance:retention_letters_delete",
            "closed before the cut-off",
        ),
    ),
)

REPLAY = Entity(
    "replay",
    "retry_replays",
    "outcome",
    ReplayOutcome.values(),
    {
        "pending": "before the clear: its answer (cleared_at set, clear-failed, or unknown), or its lease "
        "(at least three API timeouts) expiring, then the next driver pass or sweep (abandoned, or unknown when "
        "Airflow shows the clear happened); after a confirmed clear: the task instance's end (succeeded, failed), "
        "or replay_timeout_seconds (failed)",
        "unknown": "the next driver pass or sweep decides from Airflow's state and try number; "
        "replay_timeout_seconds after the claim at the latest (failed)",
    },
    (
        Transition((CREATED,), "pending", "replay driver", "dlq:insert_replay", "in the claim's transaction"),
        Transition(
            ("pending",),
            "unknown",
            "driver, sweeper",
            "dlq:mark_replay_unknown",
            "the clear's answer was lost, or the lease expired while Airflow shows the clear happened",
        ),
        Transition(
            ("pending", "unknown"),
            "succeeded",
            "success callback, driver, sweeper",
            "dlq:finish_pending_replays",
            "the letter went replaying -> resolved in the same transaction",
        ),
        Transition(
            ("pending", "unknown"),
            "failed",
            "failure callback, sweeper",
            "dlq:finish_pending_replays",
            "the letter was filed again at a newer try in the same transaction",
        ),
        Transition(
            ("pending", "unknown"),
            "clear-failed",
            "replay driver",
            "dlq:release_failed_claim",
            "Airflow refused the clear and it was not cleared",
        ),
        Transition(
            ("pending", "unknown"),
            "abandoned",
            "driver, sweeper",
            "dlq:abandon_claim",
            "not cleared, and Airflow shows the claimed try still failed",
        ),
        Transition(
            ("abandoned",),
            "pending",
            "replay driver",
            "dlq:reopen_late_clear",
            "Airflow confirmed its clear after it was abandoned (the lease expired while the clear was on its "
            "way), it is the letter's last replay and the letter is in dlq: open again, cleared",
        ),
        Transition(
            ("pending", "unknown"),
            "failed",
            "driver, sweeper",
            "dlq:end_replay_without_success",
            "the task instance ended without succeeding after the clear, or the replay timed out",
        ),
        Transition(
            ("pending", "unknown"),
            "failed",
            "driver, sweeper",
            "dlq:park_vanished_letter",
            "the task instance is gone (404)",
        ),
        Transition(
            ("pending",),
            "abandoned",
            "a person (UI, API, CLI)",
            "dlq:set_status",
            "the letter was parked or dismissed: only a claim whose lease expired before any clear",
        ),
    ),
)

JOB = Entity(
    "job",
    "retry_replay_jobs",
    "status",
    JobStatus.values(),
    {
        "queued": "a driver claims it: an api-server worker's within one driver interval, else the next sweep",
        "running": "its driver finishes it; a dead driver's lease expires and another driver (or the sweep) "
        "resumes it (a canary's wait too: canary_until is on the job); a person cancels it; its canary fails, "
        "stays undecided past replay_canary_timeout_seconds, or the stop rule fires (stopped)",
    },
    (
        Transition((CREATED,), "queued", "a person (UI, API, CLI)", "dlq:insert_job", "at least one letter"),
        Transition(
            ("queued", "running"),
            "running",
            "replay driver",
            "dlq:claim_job",
            "no live lease (never held, released, or expired); FOR UPDATE SKIP LOCKED: one driver",
        ),
        Transition(
            ("running",),
            "done",
            "replay driver",
            "dlq:finish_job",
            "this driver holds it and no item is pending",
        ),
        Transition(
            ("queued", "running"),
            "cancelled",
            "a person (UI, API, CLI)",
            "dlq:cancel_job",
            "still queued or running",
        ),
        Transition(
            ("running",),
            "stopped",
            "replay driver",
            "dlq:stop_job",
            "this driver holds it; its canary failed or stayed undecided, or replays failed in a row",
        ),
    ),
)

JOB_ITEM = Entity(
    "job item",
    "retry_replay_job_items",
    "outcome",
    ItemOutcome.values(),
    {
        "pending": "the job's driver (or the one resuming it after the lease) reaches it, or the job is "
        "cancelled or stopped (unclaimed: cancelled or stopped; claimed: unknown, its replay says what happened)",
    },
    (
        Transition((CREATED,), "pending", "a person (UI, API, CLI)", "dlq:insert_job_items", "with its job"),
        Transition(
            ("pending",),
            "cleared",
            "replay driver",
            "dlq:finish_job_item",
            "still pending (a cancel that landed first wins)",
        ),
        Transition(("pending",), "clear-failed", "replay driver", "dlq:finish_job_item", "still pending"),
        Transition(("pending",), "unknown", "replay driver", "dlq:finish_job_item", "still pending"),
        Transition(("pending",), "refused", "replay driver", "dlq:finish_job_item", "still pending"),
        Transition(("pending",), "included", "replay driver", "dlq:finish_job_item", "still pending"),
        Transition(
            ("pending",),
            "cancelled",
            "a person (UI, API, CLI)",
            "dlq:cancel_job",
            "its job is cancelled and the item not claimed (a claim holds the item's row lock)",
        ),
        Transition(
            ("pending",),
            "unknown",
            "a person (UI, API, CLI)",
            "dlq:cancel_job",
            "its job is cancelled while the item's clear is in flight",
        ),
        Transition(
            ("pending",),
            "stopped",
            "replay driver",
            "dlq:stop_job",
            "its job stops and the item not claimed: its letter stays in dlq, no replay counted",
        ),
        Transition(
            ("pending",),
            "unknown",
            "replay driver",
            "dlq:stop_job",
            "its job stops while the item's clear is in flight",
        ),
    ),
)

WORK_UNIT = Entity(
    "work unit",
    "retry_work_units",
    "status",
    WorkUnitStatus.values(),
    {
        "running": "its task completes or fails it; past its lease the next try takes it over, and the work "
        "sweeper finishes it, retries later, or parks it",
    },
    (
        Transition(
            (CREATED, "failed", "running", "succeeded"),
            "running",
            "a task (ledger)",
            "ledger:claim",
            "new; or failed; or running past its lease or by an earlier try; or succeeded past its dedup window",
        ),
        Transition(("running",), "succeeded", "a task (ledger)", "ledger:complete", "running and owned"),
        Transition(("running",), "failed", "a task (ledger)", "ledger:fail", "running and owned"),
        Transition(
            ("running",),
            "succeeded",
            "work sweeper",
            "maintenance:sweeper_finish_unit",
            "running past its lease, under the row lock; the remote job succeeded",
            held_by="maintenance:lock_stale_unit",
        ),
        Transition(
            ("running",),
            "failed",
            "work sweeper",
            "maintenance:sweeper_finish_unit",
            "running past its lease, under the row lock; the remote job failed",
            held_by="maintenance:lock_stale_unit",
        ),
        Transition(
            ("running",),
            "parked",
            "work sweeper",
            "maintenance:sweeper_park_unit",
            "running past its lease, under the row lock; out of sweep attempts",
            held_by="maintenance:lock_stale_unit",
        ),
    ),
)

ALERT = Entity(
    "alert",
    "retry_alerts",
    "status",
    AlertStatus.values(),
    {"pending": "the outbox sends it when due (callbacks, sweeps), or drops it when its attempts run out"},
    (
        Transition((CREATED,), "pending", "callbacks, sweeper (outbox)", "alerts:insert_alert", "always"),
        Transition(
            ("pending",),
            "sent",
            "outbox",
            "alerts:mark_alert_sent",
            "due and pending, under the row lock (SKIP LOCKED: one sender)",
            held_by="alerts:claim_due_alerts",
        ),
        Transition(
            ("pending",),
            "dropped",
            "outbox",
            "alerts:mark_alert_dropped",
            "due and pending, under the row lock; no attempts left",
            held_by="alerts:claim_due_alerts",
        ),
    ),
)

ENTITIES = (LETTER, REPLAY, JOB, JOB_ITEM, WORK_UNIT, ALERT)


def markdown() -> str:
    """The state tables as docs/ARCHITECTURE.md shows them (between its ``states`` markers)."""
    lines = [
        "<!-- states:begin (generated from airflow_retry_provider/dlq/states.py: "
        "python -m airflow_retry_provider.dlq.states) -->"
    ]
    for entity in ENTITIES:
        lines += [
            "",
            f"**{entity.name}** (`{entity.table}.{entity.column}`): "
            + ", ".join(f"`{s}`" for s in entity.states)
            + "; terminal: "
            + ", ".join(f"`{s}`" for s in entity.terminal),
            "",
            "| from | to | by | guard | statement |",
            "|---|---|---|---|---|",
        ]
        for t in entity.transitions:
            held = f" (row lock: `{t.held_by}`)" if t.held_by else ""
            sources = ", ".join(f"`{s}`" if s != CREATED else s for s in t.sources)
            target = f"`{t.target}`" if t.target != DELETED else t.target
            lines.append(f"| {sources} | {target} | {t.by} | {t.guard} | `{t.statement}`{held} |")
        lines.append("")
        lines += [f"- `{state}` ends: {exit_}" for state, exit_ in entity.exits.items()]
    lines.append("<!-- states:end -->")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
