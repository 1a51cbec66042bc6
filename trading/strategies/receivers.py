"""A strategy run decides once its last pipeline run has ended."""

from __future__ import annotations

from django.dispatch import receiver

from trading.pipeline.signals import run_finished
from trading.strategies.runs import strategy_run_decide


@receiver(run_finished, dispatch_uid="strategy_run_decides_when_a_run_ends")
def _decide(sender, *, run, **kwargs) -> None:
    if run.strategy_run_id:
        strategy_run_decide(run.strategy_run)  # its strategy run may have been waiting for this one
