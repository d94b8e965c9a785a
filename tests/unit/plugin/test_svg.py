"""The inline SVG line chart: scaling, gaps, labels, tooltips and escaping."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from airflow_retry_provider.plugin.svg import Point, Series, line_chart

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    """The chart as XML (it must be well-formed to be inline SVG)."""
    return ET.fromstring(svg)


def polylines(root: ET.Element) -> list[list[tuple[float, float]]]:
    """Each polyline's points."""
    return [
        [tuple(float(v) for v in pair.split(",")) for pair in line.attrib["points"].split()]  # type: ignore[misc]
        for line in root.iter(f"{SVG}polyline")
    ]


def test_a_chart_is_well_formed_svg_with_its_title_and_axis_labels():
    """The title is the accessible name and shown; the y range and the first/last x labels are drawn."""
    chart = line_chart(
        [Series("p95", (Point(0, 10), Point(60, 30), Point(120, 20)))],
        title="p95 of api",
        y_label="ms",
        x_labels=("11-30 09:00", "11-30 11:00"),
    )
    root = parse(chart)
    assert root.tag == f"{SVG}svg" and root.attrib["role"] == "img"
    assert root.find(f"{SVG}title").text == "p95 of api"  # type: ignore[union-attr]
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert texts[0] == "p95 of api"
    assert {"30 ms", "0", "11-30 09:00", "11-30 11:00"} <= set(texts)


def test_points_are_scaled_into_the_plot_left_to_right_and_bottom_to_top():
    """The smallest x is leftmost, the largest rightmost; a higher value is drawn higher (smaller y)."""
    root = parse(line_chart([Series("s", (Point(0, 0), Point(5, 10), Point(10, 5)))], title="t"))
    (line,) = polylines(root)
    xs, ys = [x for x, _ in line], [y for _, y in line]
    assert xs == sorted(xs) and xs[0] < xs[-1]
    assert ys[1] < ys[2] < ys[0]  # 10 above 5 above 0
    width, height = float(root.attrib["width"]), float(root.attrib["height"])
    assert all(0 <= x <= width and 0 <= y <= height for x, y in line)


def test_a_missing_value_breaks_the_line_and_draws_no_dot():
    """``None`` (a connector without runs in a report) splits the polyline in two; no circle for it."""
    points = (Point(0, 1), Point(1, 2), Point(2, None), Point(3, 4), Point(4, 3))
    root = parse(line_chart([Series("s", points)], title="t"))
    assert [len(run) for run in polylines(root)] == [2, 2]
    assert len(list(root.iter(f"{SVG}circle"))) == 4


def test_each_point_carries_its_tooltip():
    """Hovering a dot shows its label (an SVG ``<title>`` inside the circle)."""
    root = parse(line_chart([Series("s", (Point(0, 1, "first"), Point(1, 2, "second")))], title="t"))
    tips = [c.find(f"{SVG}title").text for c in root.iter(f"{SVG}circle")]  # type: ignore[union-attr]
    assert tips == ["first", "second"]


def test_several_series_get_a_legend_and_one_group_each():
    """Bronze, silver and gold: three groups, three legend entries with their colours."""
    series = [
        Series(name, (Point(0, i), Point(1, i + 1)), color)
        for i, (name, color) in enumerate([("bronze", "#a0522d"), ("silver", "#6b7b8c"), ("gold", "#c99700")])
    ]
    root = parse(line_chart(series, title="Open findings per layer"))
    groups = [g.attrib["data-series"] for g in root.iter(f"{SVG}g")]
    assert groups == ["bronze", "silver", "gold"]
    legend = {t.text for t in root.iter(f"{SVG}text") if t.attrib.get("class") == "chart-legend"}
    assert legend == {"bronze", "silver", "gold"}
    assert {r.attrib["fill"] for r in root.iter(f"{SVG}rect")} == {"#a0522d", "#6b7b8c", "#c99700"}


@pytest.mark.parametrize(
    "series",
    [
        [],  # no series at all
        [Series("s", ())],  # a series without points
        [Series("s", (Point(0, None), Point(1, None)))],  # a connector that never ran
    ],
)
def test_a_chart_without_values_says_no_data(series: list[Series]):
    """Nothing to plot: an empty frame that says so, and no line."""
    root = parse(line_chart(series, title="t"))
    assert "no data" in [t.text for t in root.iter(f"{SVG}text")]
    assert polylines(root) == []


@pytest.mark.parametrize(
    ("points", "expected_top"),
    [
        ((Point(0, 0), Point(1, 0)), "1"),  # all zero: a 0..1 axis rather than a division by zero
        ((Point(5, 7),), "7"),  # a single report: one dot in the middle
        ((Point(0, -2), Point(1, 3)), "3"),  # below the floor: the axis extends down to the lowest value
    ],
)
def test_degenerate_ranges_still_draw(points: tuple[Point, ...], expected_top: str):
    """Flat, single-point and negative data give a finite, labelled chart."""
    chart = line_chart([Series("s", points)], title="t")
    root = parse(chart)
    assert expected_top in [t.text for t in root.iter(f"{SVG}text")]
    assert "nan" not in chart and "inf" not in chart
    for circle in root.iter(f"{SVG}circle"):
        assert 0 <= float(circle.attrib["cx"]) <= float(root.attrib["width"])


def test_every_text_is_escaped():
    """A title, series name, label or tooltip with markup shows as text and never becomes an element."""
    evil = '<script>alert("x")</script>&'
    chart = line_chart(
        [Series(evil, (Point(0, 1, evil), Point(1, 2))), Series("b", (Point(0, 2), Point(1, 1)), '"red')],
        title=evil,
        y_label=evil,
        x_labels=(evil, evil),
    )
    assert "<script" not in chart
    root = parse(chart)
    assert not list(root.iter(f"{SVG}script"))
    assert root.find(f"{SVG}title").text == evil  # type: ignore[union-attr]
    assert re.search(r'fill="&quot;red"', chart)


def test_a_chart_too_small_to_draw_is_refused():
    """A size that leaves no room for the plot is a caller's error, said plainly."""
    with pytest.raises(ValueError, match="at least 60x40"):
        line_chart([], title="t", width=30, height=20)
