"""Impact benchmark: the time from a poison failure to the delivery-at-risk mail, beside Airflow's own
deadline alert on the same run (issue 48).

Starts PostgreSQL and one Airflow (LocalExecutor; scheduler, dag-processor, api-server, triggerer) on
``bench/impact_dags/``, and a local SMTP server both alerts go to. One run of ``impact_bench_chain``
(extract >> transform >> publish; publish delivers by a ``DeliveryDeadline`` and produces an asset a
second DAG is scheduled on) fails poison in its first task. The DAG also carries Airflow 3's
``deadline=DeadlineAlert(reference=DeadlineReference.DAGRUN_LOGICAL_DATE, interval=...,
callback=AsyncCallback(SmtpNotifier, ...))`` on the same instant as the delivery, so both alerts are
about one run and one deadline, ``--lead`` seconds after the run's logical date (set before the stack
starts; the run is triggered with that logical date).

Printed: when the failing try started (the task raises at once, so the time from its start is an
upper bound of the time from the failure; its end date is no anchor: Airflow stamps it after the
failure callback, which files the letter and sends the mail, returned), when each mail reached the
SMTP server, each one's time after the try's start and before the deadline, and the ratio. Targets:
the at-risk mail within ``MAIL_TARGET`` seconds of the failure ("within a few seconds", issue 48),
naming the latest replay time (not "lost": the deadline was far enough); Airflow's alert, by design,
only at or after the deadline.

Run: ``.venv/bin/python bench/impact.py [--lead 540]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from stacks import MAIL_NOTIFIER, bench_stack
from verdict import check, exit_code, judge

from airflow_retry_provider.states import DeliveryStatus

DAGS = Path(__file__).resolve().parent / "impact_dags"
CHAIN, REPORT = "impact_bench_chain", "impact_bench_report"
AT_RISK = "Delivery at risk:"
AIRFLOW_ALERT = "Airflow deadline missed: impact_bench_chain"
MAIL_TARGET = 10.0
"""Seconds from the failure to the at-risk mail."""
AFTER_DEADLINE = 300.0
"""How long to wait for Airflow's alert past the deadline (the scheduler checks deadlines each loop)."""


def deadline_for(logical: datetime, lead: int) -> datetime:
    """The deadline ``lead`` seconds after ``logical``, up to a whole minute (a ``DeliveryDeadline`` is ``HH:MM``)."""
    return (logical + timedelta(seconds=lead + 59)).replace(second=0, microsecond=0)


def dag_env(logical: datetime, deadline: datetime) -> dict[str, str]:
    """What ``impact_dags/impact_bench_dags.py`` reads: the same instant for the provider and for Airflow."""
    return {
        "BENCH_IMPACT_AT": f"{deadline:%H:%M}",
        "BENCH_IMPACT_DAYS_AFTER": str((deadline.date() - logical.date()).days),
        "BENCH_IMPACT_LEAD_SECONDS": str(int((deadline - logical).total_seconds())),
    }


def _stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%H:%M:%S")


def _first(smtp, text: str, timeout: float) -> int | None:
    """The index of the first mail whose subject holds ``text``, waiting up to ``timeout`` seconds."""
    until = time.monotonic() + timeout
    while True:
        for index, subject in enumerate(smtp.subjects()):
            if text in subject:
                return index
        if time.monotonic() > until:
            return None
        time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lead",
        type=int,
        default=540,
        help="seconds from the run's logical date (the bench's start) to the deadline; the stack's start "
        "and the failure must fit before the deadline less the replay path (3 min)",
    )
    args = parser.parse_args()
    if args.lead < 300:
        parser.error(f"--lead must be >= 300 s (the stack's start and the 3 min path), got {args.lead}")

    from devstack.smtp import SmtpSink

    logical = datetime.now(timezone.utc).replace(microsecond=0)
    deadline = deadline_for(logical, args.lead)
    smtp = SmtpSink().start()
    try:
        with bench_stack(
            "impact",
            "local",
            DAGS,
            [CHAIN, REPORT],
            {
                **dag_env(logical, deadline),
                "AIRFLOW_CONN_SMTP_ALERTS": smtp.connection_json(),
                "AIRFLOW__RETRY_PROVIDER__ALERT_NOTIFIERS": json.dumps([MAIL_NOTIFIER]),
            },
            celery_shape={},
        ) as bench:
            stack = bench.stack
            print(f"executor: local; {', '.join(stack.components())}", flush=True)
            run = stack.api(
                "POST", f"/api/v2/dags/{CHAIN}/dagRuns", json={"logical_date": logical.isoformat()}
            )
            ended = stack.wait_for_run(CHAIN, run["dag_run_id"], timeout=600)
            ti = stack.api("GET", f"/api/v2/dags/{CHAIN}/dagRuns/{run['dag_run_id']}/taskInstances/extract")
            failed = datetime.fromisoformat(ti["start_date"]).timestamp()  # it raises at once
            at_risk = _first(smtp, DeliveryStatus.AT_RISK, timeout=120)
            wait = deadline.timestamp() + AFTER_DEADLINE - time.time()
            airflow = _first(smtp, AIRFLOW_ALERT, timeout=max(wait, 0.0))
            print()
            print(
                f"one run of {CHAIN} ({ended['state']}): extract's failing try started at {_stamp(failed)} UTC; "
                f"the delivery of {CHAIN}.publish and Airflow's DeadlineAlert are both due "
                f"{deadline:%H:%M:%S} UTC (logical date {logical:%H:%M:%S} + {args.lead} s, to the minute)"
            )
            print(f"  {'alert':<48}{'received':>10}{'after the try start':>20}{'before the deadline':>22}")
            rows = [
                ("delivery-at-risk mail (this provider)", at_risk),
                ("Airflow's deadline alert (DeadlineAlert)", airflow),
            ]
            received = {}
            for name, index in rows:
                if index is None:
                    print(f"  {name:<48}{'never':>10}")
                    continue
                at = smtp.received_at(index)
                received[name] = at
                print(
                    f"  {name:<48}{_stamp(at):>10}{at - failed:>18.1f} s{deadline.timestamp() - at:>20.1f} s"
                )
            print()
            mail = received.get(rows[0][0])
            alert = received.get(rows[1][0])
            subject = smtp.subjects()[at_risk] if at_risk is not None else "none"
            print(f"  the at-risk mail: {subject!r}")
            if mail is not None and alert is not None:
                print(
                    f"  the at-risk mail came {alert - mail:.0f} s before Airflow's alert "
                    f"({(alert - failed) / max(mail - failed, 0.1):.0f}x sooner after the try's start)"
                )
            took = mail - failed if mail is not None else float("inf")
            print(
                f"  failing try's start -> at-risk mail {took:.1f} s   target <= {MAIL_TARGET:.0f} s   "
                f"{judge('at-risk mail within seconds of the failure', took <= MAIL_TARGET)}"
            )
            print(
                "  the mail names the latest replay time (the delivery was still at risk): "
                f"{check('at-risk, not lost', subject.startswith(DeliveryStatus.AT_RISK) and 'replay by' in subject)}"
            )
            fired = alert is not None and alert >= deadline.timestamp()
            print(
                "  Airflow's alert fired, and only at or after the deadline: "
                f"{check('Airflow alert at the deadline', fired)}"
            )
            print(f"  mails received by the SMTP server: {smtp.subjects()}")
    finally:
        smtp.stop()
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
