"""Sending run messages: an outbox on PipelineRun.enqueued_at.

A run row is committed first and its message sent after; a send is claimed by a conditional update
of ``enqueued_at`` (so two senders never both send) and undone when the broker refuses, leaving the
row for the outbox sweep. A request fails fast (one connection attempt, no publish retries) and says
why; nothing it created is lost or half-sent.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db.models import Q
from django.utils import timezone

from trading.audit import audit_record
from trading.models import PipelineRun

logger = logging.getLogger(__name__)

# One sweep sends at most this many: a long outage's backlog drains over a few sweeps.
SWEEP_BATCH = 500
# Unsent rows younger than this may still be sent by the request that made them (or, for runs a
# strategy queued, be picked up by a worker, which stamps them): the sweep leaves them alone.
DEFAULT_GRACE = dt.timedelta(minutes=1)


class QueueUnavailable(Exception):
    """The broker refused the message; the run is kept, unsent, for the outbox sweep."""


def _publish(run_id: int, *, queue: str | None, fail_fast: bool) -> None:
    from trading.pipeline.tasks import run_pipeline

    # A web request tries once and answers; a sweep may use the publish retry policy.
    run_pipeline.apply_async((run_id,), queue=queue, retry=not fail_fast)


def run_send(
    run_id: int,
    *,
    expect: Q | None = None,
    queue: str | None = None,
    fail_fast: bool = False,
    action: str = "run_enqueued",
    reason: str = "",
) -> bool:
    """Send the run's message once. ``expect`` is the state the caller saw (by default: never
    sent); the send is claimed by stamping ``enqueued_at`` only while that still holds. Returns
    whether this call sent it; raises ``QueueUnavailable`` (stamp undone) when the broker refused."""
    stamp = timezone.now()
    claimed = PipelineRun.objects.filter(pk=run_id).filter(expect if expect is not None else Q(enqueued_at=None))
    previous = claimed.values_list("enqueued_at", flat=True).first()
    if not claimed.filter(enqueued_at=previous).update(enqueued_at=stamp):
        return False
    try:
        _publish(run_id, queue=queue, fail_fast=fail_fast)
    except Exception as error:
        PipelineRun.objects.filter(pk=run_id, enqueued_at=stamp).update(enqueued_at=previous)
        problem = f"the task queue is unreachable ({error})"
        audit_record(action="run_enqueue_failed", target=f"run {run_id}", reason=problem)
        logger.warning("run %s not sent: %s", run_id, problem)
        raise QueueUnavailable(problem) from error
    audit_record(action=action, target=f"run {run_id}", reason=reason, details={"queue": queue or ""})
    return True


def runs_unsent_send(*, older_than: dt.timedelta = DEFAULT_GRACE, queue: str | None = None) -> list[int]:
    """The outbox sweep: send the queued runs whose message was never sent. Stops at the first
    refusal (the broker is still down; the rest wait for the next sweep)."""
    cutoff = timezone.now() - older_than
    unsent = PipelineRun.objects.filter(
        status=PipelineRun.Status.QUEUED, enqueued_at__isnull=True, created_at__lte=cutoff
    ).order_by("pk")
    sent: list[int] = []
    for run_id in unsent.values_list("pk", flat=True)[:SWEEP_BATCH]:
        try:
            if run_send(run_id, queue=queue, reason="sent by the outbox sweep: its first send never happened"):
                sent.append(run_id)
        except QueueUnavailable:
            break
    return sent
