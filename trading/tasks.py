from __future__ import annotations

import datetime as dt

from celery import shared_task
from django.conf import settings
from django.db import OperationalError
from django.db.models import Max

from trading import broker, services, strategies
from trading.approvals import theses_expire
from trading.dispatch import runs_unsent_send
from trading.domain.features import NoPriceData
from trading.events import DeskEvent, publish
from trading.heartbeats import scheduler_tick  # noqa: F401 - Celery finds the health tick here
from trading.models import DailyBar, Instrument, Order, Position
from trading.pipeline import dead_workers_runs_requeue, pipeline_run_execute, stale_runs_requeue
from trading.portfolio import default_account


@shared_task(name="trading.compute_feature_snapshot")
def compute_feature_snapshot(instrument_id: int, as_of: str) -> dict:
    """Compute and store one instrument's feature bundle. Idempotent: a retry overwrites the same row."""
    instrument = Instrument.objects.filter(pk=instrument_id).first()
    if instrument is None:
        return {"status": "gone", "instrument_id": instrument_id}
    day = dt.date.fromisoformat(as_of)
    try:
        snapshot = services.feature_snapshot_store(instrument=instrument, as_of=day)
    except NoPriceData as error:
        return {"status": "no_data", "instrument_id": instrument_id, "reason": str(error)}
    result = {
        "status": "ok",
        "instrument_id": instrument_id,
        "symbol": instrument.symbol,
        "as_of": as_of,
        "snapshot_id": snapshot.pk,
        "fallback": snapshot.fallback,
    }
    publish(DeskEvent(kind="features.computed", data=result))
    return result


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
    if run.strategy_run_id and run.is_finished:
        strategies.strategy_run_decide(run.strategy_run)
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


@shared_task(name="trading.review_position")
def review_position(position_id: int) -> dict:
    from reviews.services import position_review

    position = Position.objects.select_related("instrument", "thesis__run").filter(pk=position_id).first()
    if position is None:
        return {"status": "gone", "position_id": position_id}
    review = position_review(position=position)
    return {"status": "ok", "position_id": position_id, "review_id": review.pk, "outcome": review.outcome}


@shared_task(name="trading.run_due_strategies")
def run_due_strategies() -> list[int]:
    """Beat calls this every few minutes; each strategy starts when its own schedule says so."""
    started = []
    for strategy in strategies.strategies_due():
        try:
            started.append(strategies.strategy_run_start(strategy=strategy).pk)
        except ValueError:
            continue  # no bars for its universe yet: nothing to run on
    return started
