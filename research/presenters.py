"""What the research pages show, shaped from stored rows: trials with their folds, the charts'
points, the shortlist with its holdout scores, and the signals attached to the desk.

Every figure is the one the session stored (computed by the walk-forward and the holdout scoring);
nothing is recomputed here. Each function reads a fixed number of queries whatever the number of
trials, so a session of five hundred trials loads like one of five.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from research.charts import DsrPoint, FoldPoint, TrialFolds, dsr_figure, folds_figure
from research.models import ResearchCandidate, ResearchSession, ResearchTrial
from trading.models.market import ResearchSignal

__all__ = [
    "FINISHED",
    "FoldRow",
    "TrialRow",
    "attached_signals",
    "candidates_of",
    "config_file",
    "data_texts",
    "session_charts",
    "trial_rows",
]

FINISHED = frozenset({ResearchSession.Status.DONE, ResearchSession.Status.FAILED, ResearchSession.Status.CANCELLED})
# The figures a fold row and a shortlist row show, by their key in the stored metrics.
SHARPE = "sharpe_per_period"


def _number(metrics: Mapping[str, Any], key: str) -> float | None:
    value = metrics.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class FoldRow:
    fold: int
    in_sample_window: str
    out_of_sample_window: str
    params: dict[str, Any]
    in_sample: dict[str, Any]
    out_of_sample: dict[str, Any]

    @property
    def in_sample_sharpe(self) -> float | None:
        return _number(self.in_sample, SHARPE)

    @property
    def out_of_sample_sharpe(self) -> float | None:
        return _number(self.out_of_sample, SHARPE)


def _window(bounds: Any) -> str:
    if isinstance(bounds, Mapping) and bounds.get("start"):
        return f"{bounds.get('start')} → {bounds.get('end')}"
    return ""


def fold_rows(folds: Iterable[Any]) -> list[FoldRow]:
    """The trial's stored folds (``research.walkforward``'s records); anything unreadable is skipped."""
    rows = []
    for index, fold in enumerate(folds):
        if not isinstance(fold, Mapping):
            continue
        rows.append(
            FoldRow(
                fold=int(fold.get("fold", index)),
                in_sample_window=_window(fold.get("in_sample")),
                out_of_sample_window=_window(fold.get("out_of_sample")),
                params=dict(fold.get("params") or {}),
                in_sample=dict(fold.get("is_metrics") or {}),
                out_of_sample=dict(fold.get("oos_metrics") or {}),
            )
        )
    return rows


@dataclass(frozen=True)
class TrialRow:
    trial: ResearchTrial
    folds: list[FoldRow] = field(default_factory=list)

    @property
    def trades(self) -> float | None:
        return _number(self.trial.oos_metrics, "trades")

    @property
    def max_drawdown(self) -> float | None:
        return _number(self.trial.oos_metrics, "max_drawdown")


def trial_rows(session: ResearchSession, *, after: int = 0) -> list[TrialRow]:
    """The session's trials numbered above ``after``, in order, with their folds (one query)."""
    trials = session.trials.filter(number__gt=after).order_by("number")
    return [TrialRow(trial, fold_rows(trial.folds)) for trial in trials]


def session_charts(session: ResearchSession, rows: Sequence[TrialRow] | None = None) -> dict[str, dict[str, Any]]:
    """The DSR against the trial count, and each trial's folds in-sample against out-of-sample."""
    rows = list(rows) if rows is not None else trial_rows(session)
    points = [
        DsrPoint(row.trial.number, row.trial.n_trials_at_eval or row.trial.number, row.trial.dsr, row.trial.decision)
        for row in rows
        if row.trial.dsr is not None
    ]
    folds = [
        TrialFolds(
            row.trial.number,
            row.trial.strategy,
            tuple(
                FoldPoint(fold.fold, fold.in_sample_sharpe, fold.out_of_sample_sharpe)
                for fold in row.folds
                if fold.in_sample_sharpe is not None and fold.out_of_sample_sharpe is not None
            ),
        )
        for row in rows
    ]
    return {"dsr": dsr_figure(points, min_dsr=min_dsr_of(session)), "folds": folds_figure(folds)}


def min_dsr_of(session: ResearchSession) -> float:
    """The DSR gate the session ran under (its stored config), else the one in force now."""
    config = session.config if isinstance(session.config, Mapping) else {}
    gates = config.get("gates") if isinstance(config.get("gates"), Mapping) else config
    value = gates.get("min_dsr") if isinstance(gates, Mapping) else None
    return float(value) if isinstance(value, int | float) else float(str(settings.RESEARCH["MIN_DSR"]))


def candidates_of(session: ResearchSession) -> list[ResearchCandidate]:
    """The shortlist by rank, each with its trial (one query)."""
    return list(session.candidates.select_related("trial", "session").order_by("rank"))


def attached_signals(*, candidate_ids: Sequence[int] | None = None) -> QuerySet[ResearchSignal]:
    """Signals attached now, newest first, with their strategy and who attached them; only those
    made from ``candidate_ids`` when given."""
    signals = ResearchSignal.objects.filter(detached_at__isnull=True).select_related("strategy", "attached_by")
    if candidate_ids is not None:
        signals = signals.filter(candidate_ref__in=list(candidate_ids))
    return signals.order_by("-attached_at", "-id")


def config_file(candidate: ResearchCandidate) -> tuple[str, str]:
    """The candidate's config file as a person downloads it: its name and its JSON text."""
    body = json.dumps(candidate.config, indent=2, sort_keys=True, default=str) + "\n"
    return f"research-session-{candidate.session_id}-candidate-{candidate.rank}.json", body


def data_texts(session: ResearchSession) -> dict[str, str]:
    """The session's data span and its holdout, in words (known once the session has started)."""

    def day(value: Any) -> str:
        return value.strftime("%d %b %Y")

    data = f"{day(session.data_start)} → {day(session.data_end)}" if session.data_start and session.data_end else "—"
    holdout = (
        f"from {day(session.holdout_start)}: never seen by the search, scored once on the shortlist"
        if session.holdout_start
        else "reserved when the session starts (the latest bars)"
    )
    return {"data_text": data, "holdout_text": holdout}
