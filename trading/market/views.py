from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from trading import edge
from trading.health.probes import health_report
from trading.market import charts, imports, presenters, selectors, services
from trading.market.domain.features import NoPriceData
from trading.models import Instrument


def dashboard(request: HttpRequest) -> HttpResponse:
    context = {"rows": selectors.instrument_rows(), "health": health_report(market_data=selectors.stale_exchanges)}
    return render(request, "trading/dashboard.html", context)


def _requested_as_of(request: HttpRequest, last: dt.date | None) -> tuple[dt.date | None, str | None, int]:
    """The date asked for, or the latest bar with the reason why not and the status to answer."""
    text = request.GET.get("as_of", "").strip()
    if not text:
        return last, None, 200
    try:
        as_of = dt.date.fromisoformat(text)
    except ValueError:
        return last, f"“{edge.short(text)}” is not a date (YYYY-MM-DD); showing the latest bar instead.", 200
    try:
        # 0001-01-01 and 9999-12-31 overflowed the features' date arithmetic (a 500).
        return edge.check_date(as_of, "as_of"), None, 200
    except edge.InputInvalid as problem:
        return last, f"{problem}; showing the latest bar instead.", 400


def _quality_context(instrument: Instrument, last: dt.date | None) -> dict[str, object]:
    """The data-quality panel: the same checks an import reports, over the stored bars."""
    if last is None:
        return {}
    quality = imports.instrument_quality(instrument)
    threshold = imports.outlier_threshold_pct()
    return {"quality": quality, "quality_lines": quality.lines(threshold), "quality_threshold": threshold}


def instrument_detail(request: HttpRequest, symbol: str) -> HttpResponse:
    instrument = selectors.instrument_by_symbol(symbol)
    first, last = selectors.bar_dates(instrument)
    as_of, problem, status = _requested_as_of(request, last)
    bundle = chart = None
    if as_of is not None:
        try:
            bundle = services.feature_bundle_for(instrument=instrument, as_of=as_of)
        except NoPriceData:
            problem = f"No bars on or before {as_of:%d %b %Y}; the first bar is on {first:%d %b %Y}."
        else:
            bars = selectors.bars_frame(
                instrument, as_of=as_of, limit=int(settings.DESK["FEATURE_LOOKBACK_BARS"]) + 260
            )
            chart = charts.price_chart(bars, symbol=instrument.symbol, currency=instrument.currency)
    return render(
        request,
        "trading/instrument.html",
        {
            "instrument": instrument,
            "as_of": as_of,
            "first_date": first,
            "last_date": last,
            "problem": problem,
            "bundle": bundle,
            "chart": chart,
            **_quality_context(instrument, last),
            **(presenters.bundle_context(bundle, currency=instrument.currency) if bundle else {}),
        },
        status=status,
    )
