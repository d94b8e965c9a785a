"""What an alert says: what happened, where (with links), why, the impact and the next step.

Pure: built from values the caller already holds (a letter, its id, what it blocks), no I/O.
A ``NewLetter`` or a stored ``Letter`` (a subclass) may be passed.
Every value from a failure is already redacted when it gets here (letters store redacted text);
the HTML form escapes it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode

from airflow_retry_provider.breaker.announce import Outage
from airflow_retry_provider.dlq import FixNotice, NewLetter, node_of
from airflow_retry_provider.policy.impact import Delivery as DeliveryAtRisk
from airflow_retry_provider.policy.impact import Impact as Blocked
from airflow_retry_provider.states import ITEM_CLEARED, DeliveryStatus

PLUGIN_PREFIX = "/retry-provider"


@dataclass(frozen=True)
class Impact:
    """What a failure blocks: downstream tasks of its run and the delivery deadline, when known."""

    downstream: tuple[str, ...] | None = None
    deadline: datetime | None = None
    blocked: Blocked | None = None
    """What the letter blocks as read from Airflow's REST API (issue 48), when it was computed."""

    def lines(self, run_id: str) -> list[str]:
        if self.blocked is not None:  # the run's own downstream (from the task), then the rest
            own = self._own(run_id)[:1] if self.downstream is not None else []
            return own + (self.blocked.summary() or ["no delivery deadline on the blocked path"])
        return self._own(run_id)

    def _own(self, run_id: str) -> list[str]:
        if self.downstream is None:
            blocked = "downstream tasks unknown (filed without the task's context)"
        elif self.downstream:
            shown = ", ".join(sorted(self.downstream)[:20])
            more = f" and {len(self.downstream) - 20} more" if len(self.downstream) > 20 else ""
            blocked = f"{len(self.downstream)} downstream task(s) of run {run_id} blocked: {shown}{more}"
        else:
            blocked = f"no downstream task in run {run_id}"
        deadline = (
            f"delivery deadline {self.deadline.isoformat()}" if self.deadline else "no delivery deadline"
        )
        return [blocked, deadline]


@dataclass(frozen=True)
class Alert:
    """One message, ready for any notifier: a title, a plain-text and an HTML body, and its links."""

    kind: str
    subject_key: str
    title: str
    text: str
    html: str
    links: dict[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """What is stored in the outbox row and handed to notifiers (with the title)."""
        return {"text": self.text, "html": self.html, "links": self.links}


def _compose(
    kind: str, key: str, title: str, sections: Sequence[tuple[str, Sequence[str]]], links: dict[str, str]
) -> Alert:
    text_parts = [title, ""]
    html_parts = [f"<h3>{html.escape(title)}</h3>"]
    for label, lines in sections:
        text_parts.append(f"{label}:")
        text_parts.extend(f"  {line}" for line in lines)
        items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        html_parts.append(f"<p><b>{html.escape(label)}</b></p><ul>{items}</ul>")
    if links:
        text_parts.append("Links:")
        text_parts.extend(f"  {name}: {url}" for name, url in links.items())
        anchors = "".join(
            f'<li><a href="{html.escape(url, quote=True)}">{html.escape(name)}</a></li>'
            for name, url in links.items()
        )
        html_parts.append(f"<p><b>Links</b></p><ul>{anchors}</ul>")
    return Alert(kind, key, title[:300], "\n".join(text_parts), "".join(html_parts), links)


def letter_links(base_url: str, letter: NewLetter, letter_id: int) -> dict[str, str]:
    """The task instance in Airflow's UI, the letter's page and the replay preview."""
    ti = f"{base_url}/dags/{quote(letter.dag_id, safe='')}/runs/{quote(letter.run_id, safe='')}/tasks/{quote(letter.task_id, safe='')}"
    if letter.map_index >= 0:
        ti += f"/mapped/{letter.map_index}"
    return {
        "task instance": ti,
        "letter": f"{base_url}{PLUGIN_PREFIX}/letters/{letter_id}",
        "replay preview": f"{base_url}{PLUGIN_PREFIX}/preview?{urlencode({'ids': letter_id})}",
        "same root cause": f"{base_url}{PLUGIN_PREFIX}/?{urlencode({'fingerprint': letter.fingerprint})}",
    }


def _where(letter: NewLetter) -> list[str]:
    task = letter.task_id if letter.map_index < 0 else f"{letter.task_id}[{letter.map_index}]"
    return [f"DAG {letter.dag_id}", f"run {letter.run_id}", f"task {task}, try {letter.try_number}"]


def _why(letter: NewLetter) -> list[str]:
    return [f"{letter.failure_class} / {letter.category}", f"{letter.exception_type}: {letter.message[:500]}"]


def root_cause(
    letter: NewLetter, letter_id: int, count: int, base_url: str, impact: Impact | None = None
) -> Alert:
    """The first letter of a root cause in a window (``count`` 1), or the summary of ``count`` letters."""
    impact = impact or Impact()
    if count <= 1:
        kind = "new-root-cause"
        if letter.category == "deadline-infeasible":
            title = f"Delivery deadline cannot be met: {letter.dag_id}.{letter.task_id}"
        elif node := node_of(letter):  # issue 57: every task lost on one worker or node is this root cause
            title = f"Worker or node {node}: tasks lost ({letter.failure_class}/{letter.category})"
        else:
            title = f"New root cause: {letter.failure_class}/{letter.category} in {letter.dag_id}.{letter.task_id}"
        what = [
            f"letter {letter_id} is the first dead letter of root cause {letter.fingerprint} in this window"
        ]
    else:
        kind = "root-cause-summary"
        title = (
            f"{count} letters, 1 root cause: {letter.failure_class}/{letter.category} ({letter.fingerprint})"
        )
        if node := node_of(letter):
            title = f"{count} letters, 1 root cause: worker or node {node} ({letter.failure_class})"
        what = [
            f"{count} dead letters of root cause {letter.fingerprint} since the last message; latest: letter {letter_id}"
        ]
    sections = [
        ("What happened", what),
        ("Where (latest)", _where(letter)),
        ("Why", _why(letter)),
        ("Impact", impact.lines(letter.run_id)),
        (
            "Next step",
            ["fix the cause, then preview the replay (link below) and replay from the letter page"],
        ),
    ]
    return _compose(kind, letter.fingerprint, title, sections, letter_links(base_url, letter, letter_id))


def letter_parked(
    letter: NewLetter,
    letter_id: int,
    replay_count: int,
    base_url: str,
    impact: Impact | None = None,
    reason: str | None = None,
) -> Alert:
    """A letter was parked for a person: at the replay cap, or for ``reason`` (e.g. its run was deleted)."""
    impact = impact or Impact()
    if reason is None:
        title = f"Dead letter {letter_id} parked after {replay_count} failed replays: {letter.dag_id}.{letter.task_id}"
        what = f"letter {letter_id} failed again after {replay_count} replays and is parked"
    else:
        title = f"Dead letter {letter_id} parked: {letter.dag_id}.{letter.task_id}"
        what = f"letter {letter_id} is parked: {reason}"
    sections = [
        ("What happened", [what]),
        ("Where", _where(letter)),
        ("Why", _why(letter)),
        ("Impact", impact.lines(letter.run_id)),
        (
            "Next step",
            ["replays stopped: investigate the letter, then replay it or dismiss it with a reason"],
        ),
    ]
    return _compose(
        "letter-parked", f"letter:{letter_id}", title, sections, letter_links(base_url, letter, letter_id)
    )


def replay_job_failed(
    job_id: int,
    actor: str,
    reason: str,
    dag_ids: Sequence[str],
    counts: dict[str, int],
    base_url: str,
    stop_reason: str | None = None,
) -> Alert:
    """A replay job ended and some of its letters were not cleared (refused, lost, abandoned, stopped)."""
    failed = {outcome: n for outcome, n in counts.items() if outcome not in ITEM_CLEARED}
    total = sum(counts.values())
    title = f"Replay job {job_id} ended with {sum(failed.values())} of {total} letters not cleared"
    if stop_reason:
        title = f"Replay job {job_id} stopped: {stop_reason}"[:300]
    sections = [
        (
            "What happened",
            [
                f"replay job {job_id} by {actor} ended: "
                + ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
            ],
        ),
        ("Where", [f"DAGs: {', '.join(sorted(dag_ids)) or 'none'}"]),
        (
            "Why",
            [f"the operator's reason: {reason}", "each letter's history names why its clear did not happen"]
            + ([f"the job stopped: {stop_reason}"] if stop_reason else []),
        ),
        (
            "Impact",
            ["the letters not cleared are back in dlq (or wait as unknown until the sync decides)"]
            + (
                ["letters the stopped job did not reach stay in dlq untouched: no replay counted"]
                if stop_reason
                else []
            ),
        ),
        ("Next step", ["open the job, read each failed letter's history, then preview and replay again"]),
    ]
    links = {"job": f"{base_url}{PLUGIN_PREFIX}/jobs/{job_id}"}
    return _compose("replay-job-failed", f"job:{job_id}", title, sections, links)


def fix_deployed(notice: FixNotice, base_url: str) -> Alert:
    """A newer version of a DAG is deployed while a root-cause group of its letters failed on an older one."""
    title = (
        f"Version {notice.version_number} of {notice.dag_id} deployed: it may fix "
        f"{notice.letters} dead letter{'' if notice.letters == 1 else 's'} of one root cause"
    )
    group = {"dag_id": notice.dag_id, "fingerprint": notice.fingerprint, "status": "dlq"}
    sections = [
        ("What happened", [f"{notice.letters} open letter(s) of {notice.dag_id} {notice.line()}"]),
        ("Where", [f"DAG: {notice.dag_id}", f"root cause: {notice.fingerprint}"]),
        ("Next step", ["nothing is replayed on its own: preview the replay of the group, then replay it"]),
    ]
    links = {
        "replay preview": f"{base_url}{PLUGIN_PREFIX}/preview?{urlencode({**group, 'all_matching': 'true'})}",
        "letters": f"{base_url}{PLUGIN_PREFIX}/?{urlencode(group)}",
    }
    key = f"fix:{notice.dag_id}:{notice.fingerprint}:v{notice.version_number}"
    return _compose("fix-deployed", key, title, sections, links)


def work_unit_parked(
    key: str, owner_ti: str | None, detail: str, letter_id: int | None, base_url: str
) -> Alert:
    """The work-unit sweeper parked a unit for a person."""
    title = f"Work unit parked for a person: {key}"[:300]
    sections = [
        ("What happened", [f"the work-unit sweeper parked {key}"]),
        ("Where", [f"held by {owner_ti or 'an unknown task instance'}"]),
        ("Why", [detail]),
        ("Impact", ["the unit is not run again until a person decides; its task's next try finds it busy"]),
        ("Next step", ["check the remote side for the unit's job, then complete, fail or forget the unit"]),
    ]
    links = {"letter": f"{base_url}{PLUGIN_PREFIX}/letters/{letter_id}"} if letter_id else {}
    return _compose("work-unit-parked", f"unit:{key}", title, sections, links)


def _reconciliation_links(base_url: str, workspace_id: str) -> dict[str, str]:
    query = urlencode({"workspace_id": workspace_id})
    return {
        "connector health": f"{base_url}{PLUGIN_PREFIX}/connector-health?{query}",
        "medallion gaps": f"{base_url}{PLUGIN_PREFIX}/medallion-gaps?{query}",
    }


def connector_status(
    workspace_id: str, connector_id: str, before: str | None, now: str | None, base_url: str
) -> Alert:
    """A connector turned ``stopped`` or ``failing`` (``now``), or recovered from ``before`` (``now`` None)."""
    if now is None:
        kind, title = "connector-recovered", f"Connector {connector_id} recovered in workspace {workspace_id}"
        what = [f"{connector_id} was {before}; it is no longer stopped or failing"]
        step = ["nothing to do; check that the gaps it left are closing (medallion gaps)"]
    else:
        kind, title = "connector-status", f"Connector {connector_id} is {now} in workspace {workspace_id}"
        what = [f"{connector_id} turned {now}" + (f" (was {before})" if before else "")]
        step = [
            "stopped: no run in the window, check its schedule and credentials; "
            "failing: most runs error, read its recent runs"
        ]
    sections = [
        ("What happened", what),
        ("Where", [f"workspace {workspace_id}", f"connector {connector_id}"]),
        ("Impact", ["bronze tables it loads go stale, and silver and gold after them"]),
        ("Next step", step),
    ]
    return _compose(
        kind,
        f"connector:{workspace_id}/{connector_id}",
        title,
        sections,
        _reconciliation_links(base_url, workspace_id),
    )


def new_findings(findings: Sequence[dict[str, Any]], as_of: str, base_url: str) -> Alert:
    """New reconciliation findings (gaps absent from each workspace's previous report)."""
    workspaces = sorted({str(f.get("workspace_id")) for f in findings})
    title = f"{len(findings)} new reconciliation finding(s) in {len(workspaces)} workspace(s)"
    shown = [
        f"{f.get('workspace_id')}: {f.get('layer')} {f.get('kind')} {f.get('subject')} -> {f.get('action')}"
        for f in findings[:20]
    ]
    if len(findings) > 20:
        shown.append(f"... and {len(findings) - 20} more")
    sections = [
        ("What happened", [f"the reconciliation as of {as_of} found gaps its previous reports did not have"]),
        ("Where", shown),
        ("Impact", ["downstream layers miss or serve stale data until the gaps close"]),
        ("Next step", ["open the medallion gaps page, fix or rerun the named source or transform"]),
    ]
    links = (
        _reconciliation_links(base_url, workspaces[0])
        if len(workspaces) == 1
        else {"medallion gaps": f"{base_url}{PLUGIN_PREFIX}/medallion-gaps"}
    )
    return _compose("reconciliation-findings", f"findings:{as_of}", title, sections, links)


def _duration(seconds: float) -> str:
    seconds = max(int(seconds), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


def _dependency_links(base_url: str, dependency: str) -> dict[str, str]:
    return {"dependencies": f"{base_url}{PLUGIN_PREFIX}/dependencies?{urlencode({'dependency': dependency})}"}


def dependency_down(outage: Outage, base_url: str) -> Alert:
    """One outage of a dependency began: what opened its breaker and how much work it holds."""
    dep = outage.dependency
    title = f"Dependency {dep} is down: {outage.held_now} task(s) in {outage.dags_now} DAG(s) held"
    opened = f"the breaker of {dep} opened at {outage.opened_at.isoformat()}"
    if outage.failures_at_open:
        opened += f": {outage.failures_at_open} unwell failures in {outage.calls_at_open} calls"
    sections = [
        ("What happened", [opened, f"opened by {outage.opened_by}: {outage.opened_reason}"[:600]]),
        (
            "Where",
            [
                f"{outage.held_now} task instance(s) of {outage.dags_now} DAG(s) held now",
                f"{outage.tasks_held} held since it opened, {outage.probes} probe(s) so far",
            ],
        ),
        (
            "Impact",
            [
                "held tasks wait without spending a try and run again when a probe succeeds",
                "a task held longer than the dependency's max_hold_seconds becomes a dead letter",
            ],
        ),
        (
            "Next step",
            [
                "check the dependency; the breaker closes itself when a probe succeeds, "
                "or force it from the Dependencies page (link below)"
            ],
        ),
    ]
    key = f"dependency:{dep}:{outage.opened_at.isoformat()}"
    return _compose("dependency-down", key, title, sections, _dependency_links(base_url, dep))


def deliveries_held(dependency: str, opened_at: datetime, held: Sequence[Any], base_url: str) -> Alert:
    """The tasks an open breaker holds put deliveries at risk: each one's latest start time (issue 48).

    ``held``: ``dlq.deliveries.HeldDelivery`` (its ``delivery`` and the held tasks on its path)."""
    first = held[0].delivery
    title = (
        f"Dependency {dependency} is down: its held tasks put {len(held)} delivery(ies) at risk; "
        f"the first must start by {first.latest_replay.isoformat()}"
    )
    lines = []
    for item in held[:20]:
        d = item.delivery
        when = (
            "can no longer be met"
            if d.status == DeliveryStatus.LOST
            else f"start by {d.latest_replay.isoformat()}"
        )
        lines.append(f"{d.name}, due {d.deadline.isoformat()}: {when} (held: {', '.join(item.held[:5])})")
    sections = [
        ("What happened", [f"the breaker of {dependency} opened at {opened_at.isoformat()} and holds tasks"]),
        ("Impact", lines),
        (
            "Next step",
            [
                "restore the dependency (or fail over) before the earliest latest start time; held tasks "
                "run again when a probe succeeds",
                "for a delivery that can no longer be met: tell its consumers",
            ],
        ),
    ]
    key = f"dependency:{dependency}:{opened_at.isoformat()}:deliveries"
    return _compose("dependency-down", key, title, sections, _dependency_links(base_url, dependency))


def dependency_recovered(outage: Outage, base_url: str) -> Alert:
    """One outage of a dependency ended: how long it lasted, what it held and released, attempts saved."""
    dep = outage.dependency
    ended = outage.closed_at or outage.now
    lasted = _duration((ended - outage.opened_at).total_seconds())
    title = (
        f"Dependency {dep} recovered after {lasted}: {outage.tasks_held} task(s) held, "
        f"{outage.holds} attempt(s) saved"
    )
    sections = [
        (
            "What happened",
            [f"{dep} was down from {outage.opened_at.isoformat()} to {ended.isoformat()} ({lasted})"],
        ),
        (
            "Where",
            [
                f"{outage.tasks_held} task instance(s) of {outage.dags_held} DAG(s) were held",
                f"{outage.released} ran again during the outage (probes included), "
                f"{outage.held_now} are released now (they run at their next check, within a cool-down)",
            ],
        ),
        (
            "Impact",
            [
                f"{outage.holds} tries held back instead of spent on a dependency that was down (attempts saved)",
                f"{outage.probes} probe(s); {outage.expired} task(s) held past max_hold_seconds became dead letters",
            ],
        ),
        (
            "Next step",
            [
                "nothing for the held work; replay the letters of this outage, if any, from the Dead letters page"
            ],
        ),
    ]
    key = f"dependency:{dep}:{outage.opened_at.isoformat()}"
    return _compose("dependency-recovered", key, title, sections, _dependency_links(base_url, dep))


def _duration_text(value: timedelta) -> str:
    minutes = int(value.total_seconds()) // 60
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def delivery_at_risk(
    letter: NewLetter, letter_id: int, delivery: DeliveryAtRisk, blocked: Blocked, base_url: str
) -> Alert:
    """A delivery on the blocked path of ``letter``: the latest replay time, or that it is lost (issue 48)."""
    lost = delivery.status == DeliveryStatus.LOST
    kind = f"delivery-{delivery.status}"  # delivery-at-risk, delivery-lost, delivery-saved
    if delivery.status == DeliveryStatus.SAVED:
        title = f"Delivery saved: {delivery.describe()}"
        step = ["nothing: the replay started by the latest replay time; watch the delivery's run"]
    elif lost:
        title = f"Delivery lost: {delivery.describe()}"
        step = [
            f"the delivery is lost: tell its consumers (DAGs: {blocked.consumer_dags.describe() or 'none'}; "
            f"workspaces: {blocked.workspaces.describe() or 'unknown'}) that the data will be late",
            "fix the cause, then replay from the letter page to deliver late",
        ]
    else:
        title = f"Delivery at risk: {delivery.describe()}"
        step = [
            f"fix the cause and replay by {delivery.latest_replay.isoformat()}: the replay path takes "
            f"{_duration_text(delivery.path_time)} (the tasks' expected durations and validation)",
            "otherwise the delivery is lost: tell its consumers",
        ]
    if delivery.unestimated.count:
        step.append(
            f"no duration is known for {delivery.unestimated.describe()}: the latest replay time is too late by theirs"
        )
    what = [
        f"letter {letter_id} (root cause {letter.fingerprint}) blocks the delivery of {delivery.name}, "
        f"due {delivery.deadline.isoformat()}"
    ]
    sections = [
        ("What happened", what),
        ("Where", _where(letter)),
        ("Why", _why(letter)),
        ("Impact", blocked.summary()),
        ("Next step", step),
    ]
    key = f"{letter.fingerprint}:{delivery.name}:{delivery.deadline.isoformat()}"
    return _compose(kind, key, title, sections, letter_links(base_url, letter, letter_id))
