"""The time of each layer printed at the end of a run (tests/layer_times.py)."""

from __future__ import annotations

import pytest

from tests.layer_times import LayerTimes, layer_of, table


@pytest.mark.parametrize(
    ("nodeid", "layer"),
    [
        ("tests/e2e/test_demo.py::test_demo_once", "e2e"),
        ("tests/unit/policy/test_decide.py::test_x[a/b::c]", "unit"),
        ("tests/test_top.py::test_x", "tests"),
        ("integration/test_sql.py::test_x", "integration"),  # run from inside tests/
    ],
)
def test_a_test_belongs_to_the_top_level_directory_under_tests(nodeid, layer):
    """The layer is the first directory under tests/, whatever the rest of the id holds."""
    assert layer_of(nodeid) == layer


def test_the_table_sums_every_phase_per_layer_slowest_first():
    """Setup, call and teardown add up per layer; tests are counted once; the total, wall time and slowest modules close it."""
    times = LayerTimes()
    for when, seconds in (("setup", 30.0), ("call", 5.0), ("teardown", 2.5)):
        times.add("tests/e2e/test_a.py::test_one", when, seconds)
    for name in ("test_one", "test_two"):
        for when in ("setup", "call", "teardown"):
            times.add(f"tests/unit/test_b.py::{name}", when, 0.25)
    assert times.seconds == {"e2e": 37.5, "unit": 1.5} and times.tests == {"e2e": 1, "unit": 2}
    assert table(times, wall=40.0) == [
        "layer           tests   seconds   share",
        "e2e                 1      37.5     96%",
        "unit                2       1.5      4%",
        "all layers          3      39.0",
        "wall time                  40.0",
        "the 2 slowest modules:",
        "      37.5  tests/e2e/test_a.py",
        "       1.5  tests/unit/test_b.py",
    ]
    assert table(times, wall=40.0, slowest_modules=1)[-2:] == [
        "the 1 slowest modules:",
        "      37.5  tests/e2e/test_a.py",
    ]


def test_a_run_prints_the_time_of_each_layer_at_the_end(pytester: pytest.Pytester):
    """A real pytest run with the plugin: a slow fixture counts for its layer, and the table closes the output."""
    pytester.makepyfile(
        **{
            "e2e/test_stack.py": """
                import time, pytest

                @pytest.fixture(scope="module")
                def stack():
                    time.sleep(0.3)

                def test_uses_the_stack(stack):
                    pass
            """,
            "unit/test_fast.py": "def test_one():\n    pass\n\ndef test_two():\n    pass\n",
        }
    )
    result = pytester.runpytest("-p", "tests.layer_times", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    start = next(i for i, line in enumerate(result.outlines) if "time per layer" in line)
    lines = result.outlines[start:]
    e2e = next(line for line in lines if line.startswith("e2e "))
    assert e2e.split()[1] == "1" and float(e2e.split()[2]) >= 0.3
    assert next(line for line in lines if line.startswith("unit ")).split()[1] == "2"
    assert any(line.startswith("all layers") and line.split()[2] == "3" for line in lines)
    assert any(line.startswith("wall time") for line in lines)
