"""The Celery app, configured from Django settings (``CELERY_`` namespace)."""

from __future__ import annotations

import logging
import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

logger = logging.getLogger(__name__)

app = Celery("desk")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Each concept keeps its tasks in a `tasks` module of its own package.
app.autodiscover_tasks(
    [
        "trading.market",
        "trading.pipeline",
        "trading.book",
        "trading.strategies",
        "trading.health",
        "reviews",
        "research",
    ]
)


@app.on_after_configure.connect
def _schedule_outbox(sender: Celery, **kwargs: object) -> None:
    # Here rather than in CELERY_BEAT_SCHEDULE: the sweep's period is a Celery-section setting.
    from django.conf import settings

    sender.add_periodic_task(
        float(settings.OUTBOX_SWEEP_SECONDS),
        sender.signature("trading.send_unsent_runs"),
        name="send-unsent-runs",
        expires=float(settings.OUTBOX_SWEEP_SECONDS),  # a sweep nobody ran in time is replaced by the next
    )


@worker_ready.connect
def _requeue_runs_of_dead_workers(sender: object, **kwargs: object) -> None:
    """A starting worker takes back, at once, the runs its host's killed predecessor held (with
    the embedded broker their messages died with it) and any whose lease expired, instead of
    leaving them to the stale sweep. It only sends itself a task: the database work runs in a pool
    process, never in this main process the pool forks from."""
    queues = list(sender.app.amqp.queues.consume_from) or [sender.app.conf.task_default_queue]
    try:
        sender.app.send_task(
            "trading.requeue_runs_of_dead_workers", kwargs={"queue": queues[0]}, queue=queues[0], ignore_result=True
        )
    except Exception:  # the broker refused: the stale sweep still finds them later
        logger.warning("could not ask for the runs of dead workers to be requeued", exc_info=True)
