from __future__ import annotations

from celery import shared_task

from trading.strategies import runs


@shared_task(name="trading.run_due_strategies")
def run_due_strategies() -> list[int]:
    """Beat calls this every few minutes; each strategy starts when its own schedule says so."""
    started = []
    for strategy in runs.strategies_due():
        try:
            started.append(runs.strategy_run_start(strategy=strategy).pk)
        except ValueError:
            continue  # no bars for its universe yet: nothing to run on
    return started
