from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from trading import charts, presenters, selectors, services
from trading.domain.features import NoPriceData


def dashboard(request: HttpRequest) -> HttpResponse:
    return render(request, "trading/dashboard.html", {"rows": selectors.instrument_rows()})


def _requested_as_of(request: HttpRequest, last: dt.date | None) -> tuple[dt.date | None, str | None]:
    text = request.GET.get("as_of", "").strip()
    if not text:
        return last, None
    try:
        return dt.date.fromisoformat(text), None
    except ValueError:
        return last, f"“{text}” is not a date (YYYY-MM-DD); showing the latest bar instead."


def instrument_detail(request: HttpRequest, symbol: str) -> HttpResponse:
    instrument = selectors.instrument_by_symbol(symbol)
    first, last = selectors.bar_dates(instrument)
    as_of, problem = _requested_as_of(request, last)
    bundle = chart = None
    if as_of is not None:
        try:
            bundle = services.feature_bundle_for(instrument=instrument, as_of=as_of)
        except NoPriceData:
            problem = f"No bars on or before {as_of:%d %b %Y}; the first bar is on {first:%d %b %Y}."
        else:
            bars = selectors.bars_frame(
                instrument, as_of=as_of, limit=settings.DESK["FEATURE_LOOKBACK_BARS"] + 260
            )
            chart = charts.price_chart(bars, symbol=instrument.symbol)
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
            **(presenters.bundle_context(bundle) if bundle else {}),
        },
    )
