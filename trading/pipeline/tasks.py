from __future__ import annotations

import datetime as dt

from celery import shared_task
from django.conf import settings
from django.db import OperationalError

from trading.models import PipelineRun
from trading.pipeline.dispatch import runs_unsent_send
from trading.pipeline.orchestrator import dead_workers_runs_requeue, pipeline_run_execute, stale_runs_requeue
from trading.pipeline.signals import run_finished


@shared_task(
    name="trading.run_pipeline",
    # The run row is the result. Not storing one also means sending never waits on the result
    # backend (with Redis down, subscribing to it retried for 19 s before the send even began).
    ignore_result=True,
    autoretry_for=(OperationalError,),
    retry_backoff=5,
    retry_backoff_max=120,
    max_retries=5,
)
def run_pipeline(run_id: int) -> dict:
    """Run or resume one pipeline run. Safe to deliver twice: finished stages are read back and a
    finished run is left alone."""
    run = pipeline_run_execute(run_id)
    if run is None:
        return {"status": "gone", "run_id": run_id}
    if run.is_finished:
        run_finished.send(sender=PipelineRun, run=run)
    return {"status": run.status, "run_id": run_id, "reason": run.failure_reason}


@shared_task(name="trading.requeue_stale_runs")
def requeue_stale_runs() -> list[int]:
    return stale_runs_requeue(older_than=dt.timedelta(minutes=settings.STALE_RUN_MINUTES))


@shared_task(name="trading.send_unsent_runs", ignore_result=True)
def send_unsent_runs() -> list[int]:
    """The outbox sweep (beat, every DESK_OUTBOX_SWEEP_SECONDS): runs committed while the broker was down."""
    return runs_unsent_send()


@shared_task(name="trading.requeue_runs_of_dead_workers", ignore_result=True)
def requeue_runs_of_dead_workers(queue: str | None = None) -> list[int]:
    """Sent by a worker to itself as it starts (config/celery.py), so the database work happens in
    a pool process, never in the main process the pool forks from."""
    return dead_workers_runs_requeue(queue=queue)
