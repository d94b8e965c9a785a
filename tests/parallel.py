"""The suite in two processes (``make test``: ``pytest -n 2 --dist loadscope``, pytest-xdist).

Under ``--dist loadscope`` every module is a unit of work, except the end-to-end layer, which
goes in two lanes, one per worker, handed out first because they are the longest:

- the **main lane** (scope ``e2e``): every e2e module but those below, in order, one Airflow stack
  at a time, the shared stack started once and used last (tests/e2e/conftest.py);
- the **second lane** (:data:`SECOND_LANE`, one scope per module): end-to-end modules with a stack
  of their own that nothing else uses, which run beside the main lane on the other worker.

Each worker then takes the cheaper layers module by module as it comes free. Two stacks run at
once on the machine for as long as the second lane lasts; a stack mostly waits on its scheduler,
so they overlap well on 2 cores. (``--dist loadgroup`` would say the same with a mark, but
pytest-xdist 3.8 cannot add its group to a pytest 9 test id, so it silently does nothing.)
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.layer_times import layer_of

# The CeleryExecutor stack (Redis, two schedulers, two workers) is the heaviest module of the suite
# and shares nothing with the others: alone it lasts about as long as the rest of the e2e layer.
SECOND_LANE = ("tests/e2e/test_distributed.py",)


def scope_of(nodeid: str, module_scope: str) -> str:
    """The unit of work of a test: its second-lane module, the main e2e lane, or its own module's scope."""
    module = nodeid.split("::", 1)[0]
    if any(module.endswith(path) for path in SECOND_LANE):
        return f"e2e:{module}"
    return "e2e" if layer_of(nodeid) == "e2e" else module_scope


def first_out(scopes: list[str]) -> list[str]:
    """The order scopes are handed out in: the main e2e lane, then the second lane, then the rest as collected."""
    main = [scope for scope in scopes if scope == "e2e"]
    second = [scope for scope in scopes if scope.startswith("e2e:")]
    return main + second + [scope for scope in scopes if scope not in main and scope not in second]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class LaneScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """loadscope, with the e2e layer in two lanes handed out first (tests/parallel.py)."""

        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid, str(super()._split_scope(nodeid)))

        def _assign_work_unit(self, node: Any) -> None:
            for scope in reversed(first_out(list(self.workqueue))):
                self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return LaneScheduling(config, log)
