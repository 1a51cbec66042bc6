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


@shared_task(name="trading.refresh_market_data", acks_late=True)
def refresh_market_data() -> dict:
    """After the close: the day's bars of every active instrument from the configured provider.
    Off (a no-op) unless DESK_MARKET_DATA_PROVIDER names one; idempotent (bars already stored are
    left alone, a corrected one is updated)."""
    from trading.market.imports import market_data_settings
    from trading.market.providers import ProviderError, provider_for
    from trading.market.providers.fetch import refresh_universe

    name = market_data_settings().provider
    if not name:
        return {"status": "off"}
    try:
        results = refresh_universe(provider=provider_for(name))
    except ProviderError as error:
        return {"status": "failed", "reason": str(error)}
    summary = {
        "status": "ok" if all(result.ok for result in results) else "partial",
        "provider": name,
        "instruments": len(results),
        "written": sum(result.report.written for result in results if result.report),
        "failed": {
            result.instrument: result.error or (result.report.summary() if result.report else "")
            for result in results
            if not result.ok
        },
    }
    publish(DeskEvent(kind="market_data.refreshed", data=summary))
    return summary
