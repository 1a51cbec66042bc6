"""A strategy run decides once its last pipeline run has ended."""

from __future__ import annotations

from django.dispatch import receiver

from trading.models import PipelineRun
from trading.pipeline.signals import run_finished
from trading.strategies.runs import strategy_run_decide


@receiver(run_finished, dispatch_uid="strategy_run_decides_when_a_run_ends")
def _decide(sender: type[PipelineRun], *, run: PipelineRun, **kwargs: object) -> None:
    strategy_run = run.strategy_run  # None (and no query) for a run outside any strategy run
    if strategy_run is not None:
        strategy_run_decide(strategy_run)  # its strategy run may have been waiting for this one
