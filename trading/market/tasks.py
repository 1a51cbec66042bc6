from __future__ import annotations

import datetime as dt

from celery import shared_task

from trading.events import DeskEvent, publish
from trading.market import services
from trading.market.domain.features import NoPriceData
from trading.models import Instrument


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
