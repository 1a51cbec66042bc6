"""Plotly figures of a research session, from plain data (no query here): the deflated Sharpe ratio
of each trial against the number of trials the session had run when it was judged, and each
trial's folds, in-sample against out-of-sample.

The DSR chart shows what multiple testing does: the more configurations a session has tried, the
higher the bar a Sharpe ratio must clear, so a later trial needs more to count. The folds chart
shows overfitting directly: a fold far below the diagonal did well on the data it was fitted on
and badly on the next window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DsrPoint", "FoldPoint", "TrialFolds", "dsr_figure", "folds_figure"]

DECISION_COLOURS = {
    "kept": "#15803d",
    "discarded": "#64748b",
    "rejected": "#b91c1c",
    "failed": "#d97706",
}
MAX_LEGEND_TRIALS = 12  # beyond this the legend hides: hover names each trial


@dataclass(frozen=True)
class DsrPoint:
    number: int
    n_trials: int
    dsr: float
    decision: str


@dataclass(frozen=True)
class FoldPoint:
    fold: int
    in_sample: float
    out_of_sample: float


@dataclass(frozen=True)
class TrialFolds:
    number: int
    label: str
    folds: tuple[FoldPoint, ...]


def _layout(x_title: str, y_title: str) -> dict[str, Any]:
    return {
        "margin": {"l": 70, "r": 20, "t": 20, "b": 60},
        "height": 360,
        "xaxis": {"title": {"text": x_title}},
        "yaxis": {"title": {"text": y_title}},
        "legend": {"orientation": "h", "y": -0.3},
    }


def dsr_figure(points: Sequence[DsrPoint], *, min_dsr: float) -> dict[str, Any]:
    """One marker per evaluated trial (coloured by its decision) at the session's trial count when
    it was judged, and the promotion gate as a dashed line."""
    by_decision: dict[str, list[DsrPoint]] = {}
    for point in points:
        by_decision.setdefault(point.decision, []).append(point)
    traces: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": decision,
            "x": [point.n_trials for point in group],
            "y": [point.dsr for point in group],
            "text": [f"trial {point.number}" for point in group],
            "hovertemplate": "%{text}<br>trials so far %{x}<br>DSR %{y:.3f}<extra></extra>",
            "marker": {"size": 9, "color": DECISION_COLOURS.get(decision, "#1d4ed8")},
        }
        for decision, group in sorted(by_decision.items())
    ]
    most = max((point.n_trials for point in points), default=1)
    traces.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"gate (DSR {min_dsr:g})",
            "x": [0, most],
            "y": [min_dsr, min_dsr],
            "hoverinfo": "skip",
            "line": {"color": "#b91c1c", "dash": "dash", "width": 1},
        }
    )
    layout = _layout("trials evaluated in the session", "deflated Sharpe ratio")
    layout["yaxis"]["range"] = [0, 1.05]  # a probability
    return {"data": traces, "layout": layout}


def folds_figure(trials: Sequence[TrialFolds]) -> dict[str, Any]:
    """In-sample Sharpe (x) against out-of-sample Sharpe (y), one marker per fold, one trace per
    trial, with the diagonal where both agree."""
    traces: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": f"#{trial.number} {trial.label}",
            "x": [fold.in_sample for fold in trial.folds],
            "y": [fold.out_of_sample for fold in trial.folds],
            "text": [f"trial {trial.number} fold {fold.fold}" for fold in trial.folds],
            "hovertemplate": "%{text}<br>in-sample %{x:.3f}<br>out-of-sample %{y:.3f}<extra></extra>",
            "marker": {"size": 8},
        }
        for trial in trials
        if trial.folds
    ]
    values = [value for trial in trials for fold in trial.folds for value in (fold.in_sample, fold.out_of_sample)]
    low, high = (min(values), max(values)) if values else (-1.0, 1.0)
    traces.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": "in-sample = out-of-sample",
            "x": [low, high],
            "y": [low, high],
            "hoverinfo": "skip",
            "line": {"color": "#94a3b8", "dash": "dot", "width": 1},
        }
    )
    layout = _layout("in-sample Sharpe (per fold)", "out-of-sample Sharpe (per fold)")
    layout["showlegend"] = len(trials) <= MAX_LEGEND_TRIALS
    layout["legend"] = {"orientation": "v", "x": 1.02, "y": 1, "font": {"size": 11}}
    layout["margin"] = {**layout["margin"], "r": 170 if layout["showlegend"] else 20}
    return {"data": traces, "layout": layout}
