"""The time of each test layer, printed at the end of the run.

A layer is the top-level directory under tests/ (unit, integration, dags, e2e, ...). Each test's
setup, call and teardown are added to its layer, so a module fixture that starts an Airflow stack
counts for the layer of the test that first needs it. Under pytest-xdist the controller sees every
report, and the layers' sum exceeds the wall time by what ran side by side.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest


@dataclass
class LayerTimes:
    """Seconds and test counts per layer, from the reports of one run."""

    seconds: dict[str, float] = field(default_factory=dict)
    tests: dict[str, int] = field(default_factory=dict)
    modules: dict[str, float] = field(default_factory=dict)

    def add(self, nodeid: str, when: str, duration: float) -> None:
        """Add one phase (``setup``, ``call`` or ``teardown``) of one test; a test is counted at its setup."""
        layer = layer_of(nodeid)
        self.seconds[layer] = self.seconds.get(layer, 0.0) + duration
        module = nodeid.split("::", 1)[0]
        self.modules[module] = self.modules.get(module, 0.0) + duration
        if when == "setup":
            self.tests[layer] = self.tests.get(layer, 0) + 1


def layer_of(nodeid: str) -> str:
    """The layer of a test id: ``tests/e2e/test_demo.py::test_x`` -> ``e2e``; a module in tests/ itself -> ``tests``."""
    parts = nodeid.split("::", 1)[0].split("/")
    if "tests" in parts:
        parts = parts[parts.index("tests") + 1 :]
    return parts[0] if len(parts) > 1 else "tests"


def table(times: LayerTimes, wall: float, slowest_modules: int = 12) -> list[str]:
    """The lines of the summary: one per layer (slowest first), the sum of the layers, the wall time, the slowest modules."""
    lines = [f"{'layer':<14}{'tests':>7}{'seconds':>10}{'share':>8}"]
    total = sum(times.seconds.values())
    for layer, seconds in sorted(times.seconds.items(), key=lambda item: (-item[1], item[0])):
        share = seconds / total if total else 0.0
        lines.append(f"{layer:<14}{times.tests.get(layer, 0):>7}{seconds:>10.1f}{share:>8.0%}")
    lines.append(f"{'all layers':<14}{sum(times.tests.values()):>7}{total:>10.1f}")
    lines.append(f"{'wall time':<14}{'':>7}{wall:>10.1f}")
    slowest = sorted(times.modules.items(), key=lambda item: (-item[1], item[0]))[:slowest_modules]
    if slowest:
        lines.append(f"the {len(slowest)} slowest modules:")
        lines.extend(f"{seconds:>10.1f}  {module}" for module, seconds in slowest)
    return lines


class LayerTimesPlugin:
    """Collects each test report's duration by layer and prints :func:`table` in the terminal summary."""

    def __init__(self) -> None:
        self.times = LayerTimes()
        self.started = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.times.add(report.nodeid, report.when, report.duration)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.times.seconds:
            return
        terminalreporter.write_sep("=", "time per layer (setup + call + teardown)")
        for line in table(self.times, time.monotonic() - self.started):
            terminalreporter.write_line(line)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(LayerTimesPlugin(), "layer-times")
