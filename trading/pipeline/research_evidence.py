"""The research signals a run's strategy carries, read as of the run's date, for the technical analyst.

A person may attach a shortlisted research candidate to a strategy (the research pages write a
``ResearchSignal``). Each run of that strategy then shows the analysts the signal's reading on the
run's instrument, computed from stored bars on or before the run's as-of date (never later ones),
beside the figures the research session measured: out-of-sample, holdout and deflated Sharpe.
The figures are the session's, carried on the attachment; the reading is computed here, by code.

A run outside a strategy (started by hand) has no attached signals and gets an empty list.
"""

from __future__ import annotations

from typing import Any

from trading.market.research_signals import readings
from trading.models import PipelineRun, ResearchSignal

__all__ = ["research_evidence"]

# The figures the analysts see for each signal, by name in ResearchSignal.figures.
FIGURE_KEYS = ("oos", "holdout", "dsr", "n_trials", "pbo")


def research_evidence(run: PipelineRun, *, signals: list[ResearchSignal] | None = None) -> list[dict[str, Any]]:
    """One entry per signal attached to the run's strategy: name, key, parameters, provenance, the
    reading as of ``run.as_of`` (or ``error`` saying why there is none), and its research figures.
    ``signals``: the strategy's attached signals, when the caller has read them."""
    strategy_run = run.strategy_run  # no query when the run has none
    if strategy_run is None:
        return []
    entries = readings(strategy_run.strategy_id, run.instrument, run.as_of, signals=signals)
    for entry in entries:
        figures = entry.pop("figures")
        entry["figures"] = {key: figures[key] for key in FIGURE_KEYS if key in figures}
    return entries
