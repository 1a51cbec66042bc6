from __future__ import annotations

import datetime as dt

from celery import shared_task
from django.db.models import Max

from trading.book import broker
from trading.book.accounts import default_account
from trading.book.approvals import theses_expire
from trading.models import DailyBar, Order


@shared_task(name="trading.fill_order")
def fill_order(order_id: int) -> dict:
    order = Order.objects.select_related("instrument", "thesis__run").filter(pk=order_id).first()
    if order is None:
        return {"status": "gone", "order_id": order_id}
    position = broker.order_try_fill(order=order)
    return {"status": order.status, "order_id": order_id, "position_id": position.pk if position else None}


@shared_task(name="trading.mark_positions")
def mark_positions(as_of: str | None = None) -> dict:
    """The daily pass over the live book for every session not yet processed, up to the latest
    stored bar (or ``as_of``): a day the beat missed is caught up, in order, never skipped."""
    day = dt.date.fromisoformat(as_of) if as_of else DailyBar.objects.aggregate(last=Max("date"))["last"]
    if day is None:
        return {"status": "no_data"}
    passes = broker.book_catch_up(account=default_account(), until=day)
    return {
        "as_of": day.isoformat(),
        "sessions": len(passes),
        **{key: sum(p[key] for p in passes) for key in ("filled", "closed", "marked")},
    }


@shared_task(name="trading.expire_theses")
def expire_theses() -> int:
    return theses_expire()
