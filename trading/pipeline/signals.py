"""What a pipeline run announces, for the concepts built on runs to act on without the pipeline
importing them (a strategy run decides HOLD or REBALANCE once its last pipeline run has ended)."""

from __future__ import annotations

from django.dispatch import Signal

# Sent with ``run`` (a PipelineRun that has just finished, failed or been given up).
run_finished = Signal()
