"""What a failed try needs, imported once by each process that forks Airflow's task processes
instead of once by every failed try.

Airflow forks its task processes (a LocalExecutor worker, a Celery pool process and, for each task,
its supervisor): a child has for free what its parent had imported. What a failed try runs in its
task process, the decision that records the try and the callback that files the letter, imports
PostgreSQL's driver, the hook, the queue's store and the alert listeners: about 110 ms of CPU, on
each failed try, of about 150 ms the provider adds to it (``bench/storm.py`` prints the CPU each
storm costs). In a storm of a thousand failures on a 2-core machine that is most of the provider's
share of the CPU, taken from the api-server on-call is using.

Airflow loads this module in every process (the ``airflow.policy`` entry point, beside
``dlq/managed.py``), where it imports nothing: it registers :func:`preload` to run before the
process's forks (``os.register_at_fork``), and it imports the failure path at the first one, once;
it also reads the redactor's tables and compiles every pattern (:func:`~airflow_retry_provider.policy.warm`)
and imports the configured notifiers' classes, which a failed try compiled and imported for itself
before (issue 58's storm profile: a third of the provider's CPU in a failing task process).
A process that never forks (a command line) pays nothing; one that forks pays it once: about
310 ms of CPU and 40 MB, shared with its children until written. Off with
``[retry_provider] preload_failure_path = false``.
"""

from __future__ import annotations

import importlib
import logging
import os

log = logging.getLogger(__name__)

FAILURE_PATH = (
    "airflow_retry_provider.retry_policy",
    "airflow_retry_provider.hooks.retry_provider",
    "airflow_retry_provider.breaker.guard",
    "airflow_retry_provider.dlq.announce",
    "airflow_retry_provider.dlq.callback",
    "airflow_retry_provider.dlq.store",
)
"""The modules a failed try's decision and callback import; the alert listeners are loaded after them."""

_preloaded = False


def preload() -> None:
    """Import :data:`FAILURE_PATH` and load the alert listeners, once per process; never raises
    (a fork must not fail for it: the failed try then imports what it needs itself)."""
    global _preloaded
    if _preloaded:
        return
    _preloaded = True
    try:
        from airflow_retry_provider import settings

        if not settings.preload_failure_path():
            return
        for name in FAILURE_PATH:
            importlib.import_module(name)
        from airflow_retry_provider import announce, policy
        from airflow_retry_provider.alerts.notifiers import load_settings

        announce.listeners()
        policy.warm()  # the redactor's tables and patterns
        load_settings()  # imports the configured notifiers' classes
    except Exception:
        log.debug("airflow-retry-provider: the failure path was not preloaded", exc_info=True)


os.register_at_fork(before=preload)
