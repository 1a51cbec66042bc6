from __future__ import annotations

from celery import shared_task

from trading.models import Position


@shared_task(name="reviews.review_position")
def review_position(position_id: int) -> dict:
    from reviews.services import position_review

    position = Position.objects.select_related("instrument", "thesis__run").filter(pk=position_id).first()
    if position is None:
        return {"status": "gone", "position_id": position_id}
    review = position_review(position=position)
    return {"status": "ok", "position_id": position_id, "review_id": review.pk, "outcome": review.outcome}
