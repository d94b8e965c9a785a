"""The suite in two processes (``make test``: ``pytest -n 2 --dist loadscope``, pytest-xdist).

Under ``--dist loadscope`` the whole e2e layer is one scope, so one worker runs every e2e test
in order (one Airflow stack at a time, the shared one started once) while the other worker
runs the cheaper layers, module by module. The e2e layer is handed out first (it is the
longest) and mostly waits on Airflow's scheduler, so the two overlap well on 2 cores.
(``--dist loadgroup`` would say the same with a mark, but pytest-xdist 3.8 cannot add its group
to a pytest 9 test id, so it silently does nothing.)
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.layer_times import layer_of


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class LayerScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """loadscope, with every e2e test in one scope, handed out first (it is the longest)."""

        def _split_scope(self, nodeid: str) -> str:
            return "e2e" if layer_of(nodeid) == "e2e" else str(super()._split_scope(nodeid))

        def _assign_work_unit(self, node: Any) -> None:
            if "e2e" in self.workqueue:
                self.workqueue.move_to_end("e2e", last=False)
            super()._assign_work_unit(node)

    return LayerScheduling(config, log)
