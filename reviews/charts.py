"""The retrospective's charts: plain data in, a Plotly figure (a JSON-ready dict) out. No Django.

The attribution waterfall lies on its side: one row per source of the period's result, read top to
bottom as the report lists them, the net result last as a total. Horizontal bars keep every label
readable whether there are none, a dozen or fifty rows, and the chart grows with its rows instead
of squeezing them. Each bar is labelled with the stored amount, formatted as the pages format money,
so the chart never shows a figure the report does not hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped]

from trading.market.charts import _money_axis
from vocabulary.money import DEFAULT_CURRENCY, format_money

__all__ = ["TOTAL_LABELS", "attribution_waterfall", "findings_trajectory"]

UP, DOWN, TOTAL = "#15803d", "#b91c1c", "#1d4ed8"
ROW_HEIGHT = 26  # pixels a row needs for its label and its bar
CHROME_HEIGHT = 70  # the axis, its ticks and the margins
MIN_HEIGHT = 160
INSIDE_SHARE = Decimal("0.35")  # bars at least this share of the widest carry their label inside
# A row under one of these labels is the sum of the rows before it, drawn as a total.
TOTAL_LABELS = frozenset({"Net result", "Net"})


# A short bar's label sits beside it unless that is within this share of the axis from its edge.
EDGE_SHARE = Decimal("0.22")


def attribution_waterfall(
    rows: Iterable[Mapping[str, Any]], *, currency: str = DEFAULT_CURRENCY, net_label: str = "Net result"
) -> dict[str, Any]:
    """The waterfall of ``rows`` (``{"label", "amount"}`` with money as strings or Decimals).

    No rows (a period with nothing to attribute) draws a single zero total, with a note saying so,
    rather than an empty frame; rows that are all zero get a money axis around zero instead of
    Plotly's unlabelled default."""
    parsed = [(str(row["label"]), _amount(row["amount"])) for row in rows]
    if not any(label in TOTAL_LABELS for label, _ in parsed):
        parsed.append((net_label, sum((amount for _, amount in parsed), start=Decimal("0.00"))))
    labels = [label for label, _ in parsed]
    amounts = [amount for _, amount in parsed]
    figure = go.Figure(
        go.Waterfall(
            orientation="h",
            y=labels,
            x=[float(amount) for amount in amounts],
            measure=["total" if label in TOTAL_LABELS else "relative" for label in labels],
            text=[format_money(amount, currency) for amount in amounts],
            textposition=_text_positions(amounts, [label in TOTAL_LABELS for label in labels]),
            insidetextanchor="middle",
            hovertemplate="%{y}: %{text}<extra></extra>",
            increasing={"marker": {"color": UP}},
            decreasing={"marker": {"color": DOWN}},
            totals={"marker": {"color": TOTAL}},
            connector={"line": {"color": "#94a3b8", "width": 1, "dash": "dot"}},
            cliponaxis=False,
        )
    )
    figure.update_layout(
        template="none",
        height=max(MIN_HEIGHT, CHROME_HEIGHT + ROW_HEIGHT * len(labels)),
        margin={"l": 10, "r": 20, "t": 10, "b": 40},
        showlegend=False,
        xaxis=_amount_axis(amounts, currency),
        yaxis={"type": "category", "autorange": "reversed", "automargin": True, "ticksuffix": "  "},
        plot_bgcolor="#ffffff",
        paper_bgcolor="#ffffff",
        font={"size": 12},
    )
    if all(amount == 0 for amount in amounts):
        # Above the plot, where it covers no bar's label.
        figure.update_layout(margin={"t": 34})
        figure.add_annotation(
            text="nothing to attribute in this period",
            xref="paper",
            yref="paper",
            x=0.5,
            y=1,
            yanchor="bottom",
            yshift=6,
            showarrow=False,
            font={"color": "#64748b"},
        )
    plain = figure.to_plotly_json()
    plain["layout"].pop("template", None)  # Plotly's own defaults, as the desk's other charts use
    return {"data": [_plain_trace(trace) for trace in plain["data"]], "layout": plain["layout"]}


def _text_positions(amounts: list[Decimal], totals: list[bool] | None = None) -> list[str]:
    """A long bar carries its amount inside; a short one beside it, where it stays readable (Plotly's
    "auto" drops a label it cannot fit in a narrow chart) — unless beside it is the edge of the plot,
    where the label would run over the row names (left) or off the chart (right): then inside too."""
    widest = max((abs(amount) for amount in amounts), default=Decimal(0))
    extents = _bar_extents(amounts, totals or [False] * len(amounts))
    low = min([Decimal(0), *(start for start, _ in extents)])
    high = max([Decimal(0), *(end for _, end in extents)])
    room = (high - low) * EDGE_SHARE
    positions = []
    for amount, (start, end) in zip(amounts, extents, strict=True):
        long_bar = widest and abs(amount) >= widest * INSIDE_SHARE
        at_edge = (amount < 0 and start - low < room) or (amount > 0 and high - end < room)
        positions.append("inside" if long_bar or at_edge else "outside")
    return positions


def _bar_extents(amounts: list[Decimal], totals: list[bool]) -> list[tuple[Decimal, Decimal]]:
    """Where each bar lies on the money axis: a relative bar from the running level, a total from 0."""
    level, extents = Decimal(0), []
    for amount, total in zip(amounts, totals, strict=True):
        if total:
            level = amount
            extents.append((min(Decimal(0), amount), max(Decimal(0), amount)))
        else:
            extents.append((min(level, level + amount), max(level, level + amount)))
            level += amount
    return extents


def _amount(value: object) -> Decimal:
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"a waterfall amount must be a number, got {value!r}") from None
    if not amount.is_finite():
        raise ValueError(f"a waterfall amount must be finite, got {value!r}")
    return amount


def _amount_axis(amounts: list[Decimal], currency: str) -> dict[str, Any]:
    """The desk's money axis (grouped whole amounts with the currency's symbol, no SI suffix) over
    the running totals the bars reach, with room around zero when every amount is zero."""
    running, reached = Decimal("0"), [0.0]
    for amount in amounts:
        running += amount
        reached.append(float(running))
    axis = _money_axis(reached, currency)
    if max(abs(value) for value in reached) == 0:
        axis["range"] = [-1, 1]
        # Whole-rupee ticks over ±1 would read ₹-1, ₹-1, ₹0, ₹1, ₹1: one tick at zero says it all.
        axis["tickvals"] = [0]
        axis["ticktext"] = [format_money(Decimal(0), currency)]
    axis["zeroline"] = True
    axis["zerolinecolor"] = "#94a3b8"
    axis["gridcolor"] = "#e2e8f0"
    return axis


def _plain_trace(trace: Mapping[str, Any]) -> dict[str, Any]:
    """Tuples (Plotly's storage) as lists, so the figure is plain JSON for ``json_script``."""
    return {key: list(value) if isinstance(value, tuple) else value for key, value in trace.items()}


# --- The critique archive: each detector's score across a strategy's critiques -----------------

DETECTOR_COLOURS = ("#1d4ed8", "#b91c1c", "#15803d", "#92400e", "#7c3aed", "#0e7490", "#be185d")
FIRED, QUIET = "circle", "circle-open"


def findings_trajectory(critiques: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One line per detector: its score (0 = no sign of the loop, 1 = the loop in full) at each of
    a strategy's critiques, in order. ``critiques`` are ``{"sequence", "as_of", "findings"}`` with
    the stored findings; a filled marker is a detector that fired, a hollow one a detector that did
    not. The scores are the stored ones, so the chart shows nothing the findings do not hold."""
    points = [(f"#{item['sequence']} · {item['as_of']}", item.get("findings") or []) for item in critiques]
    labels = [label for label, _ in points]
    detectors: dict[str, dict[str, Any]] = {}
    for index, (_, findings) in enumerate(points):
        for finding in findings:
            if not isinstance(finding, Mapping) or "detector" not in finding:
                continue
            key = str(finding["detector"])
            line = detectors.setdefault(key, {"title": str(finding.get("title") or key), "scores": {}, "fired": {}})
            line["scores"][index] = float(finding.get("score") or 0.0)
            line["fired"][index] = bool(finding.get("fired"))
    figure = go.Figure()
    for number, (key, line) in enumerate(detectors.items()):
        shown = sorted(line["scores"])
        colour = DETECTOR_COLOURS[number % len(DETECTOR_COLOURS)]
        figure.add_trace(
            go.Scatter(
                x=[labels[index] for index in shown],
                y=[line["scores"][index] for index in shown],
                mode="lines+markers",
                name=line["title"],
                meta=key,
                line={"color": colour, "width": 2},
                marker={
                    "size": 9,
                    "color": colour,
                    "symbol": [FIRED if line["fired"][index] else QUIET for index in shown],
                },
                customdata=["fired" if line["fired"][index] else "quiet" for index in shown],
                hovertemplate="%{fullData.name}<br>%{x}: %{y:.2f} (%{customdata})<extra></extra>",
            )
        )
    figure.update_layout(
        template="none",
        height=400,
        margin={"l": 50, "r": 20, "t": 10, "b": 90},
        showlegend=True,
        legend={"orientation": "h", "y": -0.22, "font": {"size": 11}},
        xaxis={"type": "category", "categoryorder": "array", "categoryarray": labels, "gridcolor": "#e2e8f0"},
        yaxis={"title": {"text": "score"}, "range": [-0.03, 1.05], "gridcolor": "#e2e8f0", "zeroline": False},
        plot_bgcolor="#ffffff",
        paper_bgcolor="#ffffff",
        font={"size": 12},
    )
    if not detectors:
        figure.add_annotation(
            text="no finished critique yet",
            xref="paper",
            yref="paper",
            x=0.5,
            y=0.5,
            showarrow=False,
            font={"color": "#64748b"},
        )
    plain = figure.to_plotly_json()
    plain["layout"].pop("template", None)
    return {"data": [_plain_trace(trace) for trace in plain["data"]], "layout": plain["layout"]}
