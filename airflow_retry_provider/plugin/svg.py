"""Small line charts as inline SVG, built on the server: no JavaScript, nothing to build or load.

Pure: stdlib only, no I/O. Every piece of text (title, labels, tooltips, series names, colours) is
XML-escaped, so a workspace or connector id can never inject markup into the page.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["Point", "Series", "line_chart"]


@dataclass(frozen=True)
class Point:
    """One point of a series.

    :param x: its position on the x axis (e.g. a POSIX timestamp); any finite number.
    :param y: its value, or ``None`` for "no value here" (the line breaks around it).
    :param label: the tooltip shown on hover (an SVG ``<title>``).
    """

    x: float
    y: float | None
    label: str = ""


@dataclass(frozen=True)
class Series:
    """A named line: its points in x order and its stroke colour."""

    name: str
    points: tuple[Point, ...]
    color: str = "#0b69a3"


_CHAR = 6.0  # the width of a character of the chart's text, roughly, in pixels


def _plain(value: float) -> str:
    return f"{value:g}"


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _text(x: float, y: float, text: str, anchor: str = "start", css: str = "") -> str:
    klass = f' class="{escape(css)}"' if css else ""
    return (
        f'<text x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}"{klass}>{escape(text, quote=False)}</text>'
    )


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    width: int = 480,
    height: int = 160,
    y_label: str = "",
    x_labels: tuple[str, str] = ("", ""),
    y_format: Callable[[float], str] = _plain,
    y_floor: float = 0.0,
    css_class: str = "chart",
) -> str:
    """An SVG line chart of ``series``, scaled to fit, with a title, axis labels and point tooltips.

    The y axis runs from ``y_floor`` (or the lowest value, if lower) to the highest value; the x
    axis from the smallest to the largest ``x``. A ``None`` value breaks its line; a series with no
    value at all draws nothing (a chart without any value says "no data").

    :param series: the lines; their names form the legend when there is more than one.
    :param title: the chart's title, shown above it and as its accessible name.
    :param y_label: the y axis' unit (e.g. "ms"), shown after its top value.
    :param x_labels: the texts under the first and the last x (e.g. the first and last dates).
    :param y_format: formats the y axis' bottom and top values.
    :param y_floor: the lowest y shown when every value is above it (0: bars of counts start at 0).
    """
    if width < 60 or height < 40:
        raise ValueError(f"a chart needs at least 60x40 pixels, got {width}x{height}")
    values = [p.y for s in series for p in s.points if p.y is not None and math.isfinite(p.y)]
    xs = [p.x for s in series for p in s.points if math.isfinite(p.x)]
    y_low = min([*values, y_floor])
    y_high = max(values) if values else y_low
    if y_high <= y_low:
        y_high = y_low + 1.0
    ticks = (f"{y_format(y_high)} {y_label}".strip(), y_format(y_low))
    left, right, top, bottom = min(8 + _CHAR * max(len(t) for t in ticks), width / 2), 8.0, 22.0, 16.0
    plot_w, plot_h = width - left - right, height - top - bottom
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{escape(css_class)}" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img">',
        f"<title>{escape(title, quote=False)}</title>",
        _text(0, 13, title, css="chart-title"),
    ]
    if len(series) > 1:  # the legend, left to right, ending at the right edge
        sizes = [11 + _CHAR * len(s.name) + 10 for s in series]
        legend_x = width - right - sum(sizes)
        for s, size in zip(series, sizes, strict=True):
            parts.append(f'<rect x="{_num(legend_x)}" y="5" width="8" height="8" fill="{escape(s.color)}"/>')
            parts.append(_text(legend_x + 11, 13, s.name, css="chart-legend"))
            legend_x += size
    axis = (
        f'<path class="chart-axis" d="M{_num(left)} {_num(top)}V{_num(top + plot_h)}H{_num(left + plot_w)}" '
        'fill="none" stroke="currentColor" stroke-opacity="0.35"/>'
    )
    parts.append(axis)
    if not values or not xs:
        parts.append(
            _text(left + plot_w / 2, top + plot_h / 2 + 4, "no data", anchor="middle", css="chart-empty")
        )
        parts.append("</svg>")
        return "".join(parts)
    x_low, x_high = min(xs), max(xs)

    def px(x: float) -> float:
        return left + plot_w / 2 if x_high == x_low else left + (x - x_low) / (x_high - x_low) * plot_w

    def py(y: float) -> float:
        return top + plot_h - (y - y_low) / (y_high - y_low) * plot_h

    parts.append(_text(left - 4, top + 8, ticks[0], anchor="end", css="chart-tick"))
    parts.append(_text(left - 4, top + plot_h, ticks[1], anchor="end", css="chart-tick"))
    parts.append(_text(left, height - 3, x_labels[0], css="chart-tick"))
    parts.append(_text(left + plot_w, height - 3, x_labels[1], anchor="end", css="chart-tick"))
    for s in series:
        color = escape(s.color)
        runs: list[list[tuple[float, float]]] = [[]]
        dots = []
        for p in s.points:
            if p.y is None or not math.isfinite(p.y) or not math.isfinite(p.x):
                if runs[-1]:
                    runs.append([])
                continue
            cx, cy = px(p.x), py(p.y)
            runs[-1].append((cx, cy))
            tooltip = f"<title>{escape(p.label, quote=False)}</title>" if p.label else ""
            dots.append(f'<circle cx="{_num(cx)}" cy="{_num(cy)}" r="2.5" fill="{color}">{tooltip}</circle>')
        parts.append(f'<g class="chart-series" data-series="{escape(s.name)}">')
        for run in runs:
            if len(run) > 1:
                coords = " ".join(f"{_num(x)},{_num(y)}" for x, y in run)
                parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        parts.extend(dots)
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)
