"""What the health page reads: the scheduler's minutely tick and the workers seen.

The tick is a beat task, so its age says whether anything scheduled runs at all (beat, the broker
and a worker each have to work for it to land). The worker that runs it then pings every worker
(a broadcast answered by each worker's main process, even when all its pool processes are busy)
and records who answered. Nothing here runs on the health page itself, which only reads rows.

No thread and no database connection is kept in any worker process for this: a thread in a pool
process makes its worker hang on a TERM sent to the whole process group (as systemd sends), and a
connection in the main process would be inherited by every pool process it forks.
"""

from __future__ import annotations

import datetime as dt
import logging

from celery import Celery, Task, shared_task
from celery.signals import beat_init
from django.utils import timezone

from trading.health.probes import SCHEDULER_NAME, heartbeat_record
from trading.models import Heartbeat

logger = logging.getLogger(__name__)

PING_TIMEOUT_S = 1.0
# Workers unseen for this long are forgotten rather than listed for ever.
FORGET_WORKERS_AFTER = dt.timedelta(days=1)


def workers_ping(app: Celery, *, timeout: float = PING_TIMEOUT_S) -> list[str]:
    """The hostnames of the workers that answered a ping within ``timeout``."""
    replies = app.control.ping(timeout=timeout) or []
    return sorted(name for reply in replies for name in reply)


@shared_task(name="trading.scheduler_tick", bind=True, ignore_result=True)
def scheduler_tick(self: Task) -> list[str]:
    """Beat sends this every minute: its age on the health page is the scheduler's, and the
    workers that answer its ping are the workers seen."""
    now = timezone.now()
    heartbeat_record(Heartbeat.Kind.SCHEDULER, SCHEDULER_NAME, at=now)
    seen = set(workers_ping(self.app))
    if self.request.hostname and not self.request.is_eager:
        seen.add(self.request.hostname)  # the worker running this is alive, whatever the ping said
    for hostname in seen:
        heartbeat_record(Heartbeat.Kind.WORKER, hostname, at=timezone.now())
    Heartbeat.objects.filter(kind=Heartbeat.Kind.WORKER, seen_at__lt=now - FORGET_WORKERS_AFTER).delete()
    return sorted(seen)


@beat_init.connect
def _tick_at_start(**kwargs: object) -> None:
    """Beat's first tick is a minute away: send one now, so a desk just started (or a scheduler just
    restarted) is not shown down meanwhile. Through the broker like the others, never blocking beat."""
    try:
        scheduler_tick.apply_async(expires=55, retry=False)
    except Exception:  # the broker may be down: the minutely ticks will say so on the health page
        logger.warning("first scheduler tick not sent", exc_info=True)
