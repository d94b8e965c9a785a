"""How make test shares the suite between its two processes (tests/parallel.py)."""

from __future__ import annotations

import pytest

from tests.parallel import SECOND_LANE, first_out, scope_of


@pytest.mark.parametrize(
    ("nodeid", "scope"),
    [
        # the main lane: every e2e module but the second lane's, one scope, so one worker runs them in order
        ("tests/e2e/test_demo.py::test_demo_once", "e2e"),
        ("tests/e2e/test_replay_jobs.py::test_x[a::b]", "e2e"),
        # the second lane: a scope per module, which the other worker takes
        ("tests/e2e/test_distributed.py::test_components", "e2e:tests/e2e/test_distributed.py"),
        # the cheaper layers keep loadscope's module scope
        ("tests/unit/test_cli.py::test_x", "tests/unit/test_cli.py"),
        ("tests/integration/dlq/test_jobs.py::test_x", "tests/integration/dlq/test_jobs.py"),
    ],
)
def test_each_test_falls_in_its_lane_or_its_module(nodeid, scope):
    """An e2e test is in the main lane unless its module is in the second; any other test keeps its module."""
    assert scope_of(nodeid, nodeid.split("::", 1)[0]) == scope


def test_the_second_lane_names_modules_that_exist():
    """A renamed module would silently fall back to the main lane."""
    from tests.conftest import REPO

    assert SECOND_LANE and all((REPO / path).is_file() for path in SECOND_LANE)


def test_the_lanes_are_handed_out_first_main_then_second_then_as_collected():
    """Both workers start on an e2e lane; the cheaper modules follow in collection order."""
    scopes = ["tests/unit/a.py", "e2e:tests/e2e/test_distributed.py", "tests/integration/b.py", "e2e"]
    assert first_out(scopes) == [
        "e2e",
        "e2e:tests/e2e/test_distributed.py",
        "tests/unit/a.py",
        "tests/integration/b.py",
    ]
