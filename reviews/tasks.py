"""The reviews app's Celery tasks: a live position's review and retrospective, and the scheduled
retrospectives (beat entries ``review-daily``, ``review-weekly``, ``review-epoch`` in settings).

Each takes ids or ISO dates, re-fetches, and calls the services; each is safe to deliver twice (a
review is keyed once, ``reviews.triggers``) and retries on a database error with backoff, as the
pipeline's tasks do. ``acks_late`` is the desk's default (``CELERY_TASK_ACKS_LATE``): a worker that
dies mid-review has its task delivered again, and the retry finishes the review it left RUNNING.
"""

from __future__ import annotations

import datetime as dt

from celery import shared_task
from django.conf import settings
from django.db import OperationalError

from reviews import triggers
from reviews.services import position_review
from trading.models import Position

RETRY = {
    "autoretry_for": (OperationalError,),
    "retry_backoff": 5,
    "retry_backoff_max": 120,
    "max_retries": 5,
    "acks_late": True,
}


def _day(value: str | None) -> dt.date | None:
    return dt.date.fromisoformat(value) if value else None


@shared_task(name="reviews.review_position", **RETRY)
def review_position(position_id: int) -> dict:
    """A live close (sent by the broker): the stage-12 review, then the position's retrospective
    and, for a large loss, the immediate loss review."""
    position = Position.objects.select_related("instrument", "account", "thesis__run").filter(pk=position_id).first()
    if position is None:
        return {"status": "gone", "position_id": position_id}
    review = position_review(position=position)
    triggers.on_position_closed(position)
    return {"status": "ok", "position_id": position_id, "review_id": review.pk, "outcome": review.outcome}


@shared_task(name="reviews.daily_reviews", **RETRY)
def daily_reviews(day: str | None = None) -> list[int]:
    """The previous session's review of each active account (``RETROSPECTIVE["DAILY_ENABLED"]``)."""
    if not settings.RETROSPECTIVE["DAILY_ENABLED"]:
        return []
    return [report.pk for report in triggers.daily_reviews(day=_day(day))]


@shared_task(name="reviews.weekly_reviews", **RETRY)
def weekly_reviews(day: str | None = None) -> list[int]:
    """The week ending ``day`` (today), per account and live strategy (``["WEEKLY_ENABLED"]``)."""
    if not settings.RETROSPECTIVE["WEEKLY_ENABLED"]:
        return []
    return [report.pk for report in triggers.weekly_reviews(day=_day(day))]


@shared_task(name="reviews.epoch_reviews", **RETRY)
def epoch_reviews(day: str | None = None) -> list[int]:
    """Each account's epochs due by ``day`` (today) (``["EPOCH_ENABLED"]``)."""
    if not settings.RETROSPECTIVE["EPOCH_ENABLED"]:
        return []
    return [report.pk for report in triggers.epoch_reviews(day=_day(day))]


@shared_task(name="reviews.refit_calibration", **RETRY)
def refit_calibration(day: str | None = None) -> dict[str, int]:
    """Refit each subject's isotonic calibration that is due (beat entry ``review-calibration``):
    subject → the resolved calls its new fit was made on; empty when none was due."""
    from reviews.calibration_service import refit_calibration as refit

    return {fit.subject: fit.samples for fit in refit(end=_day(day))}


@shared_task(name="reviews.run_critique", **RETRY)
def run_critique(critique_id: int) -> dict:
    """A live strategy run's critique (sent by ``reviews.critique.trigger``): the critic's review, then
    its end written on the strategy run, which proceeds at once if its deadline has not passed."""
    from reviews.critique.trigger import critique_execute

    critique = critique_execute(critique_id)
    if critique is None:
        return {"status": "gone", "critique_id": critique_id}
    return {"status": critique.status, "critique_id": critique_id, "sequence": critique.sequence}
