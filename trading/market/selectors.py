"""Reads of market data, always bounded by an as-of date so nothing can look ahead."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, TypedDict
from zoneinfo import ZoneInfo

import pandas as pd
from django.conf import settings
from django.db.models import Count, Max, Min, OuterRef, Q, QuerySet, Subquery
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils import timezone

from trading.market.calendar import last_completed_session, sessions_between
from trading.market.domain.adjust import ShareChange, adjust_frame, cumulative_factors
from trading.market.domain.freshness import Staleness, staleness
from trading.models.market import (
    CorporateAction,
    DailyBar,
    FundamentalsSnapshot,
    Instrument,
    MacroIndicator,
    NewsItem,
)
from vocabulary.features import FundamentalsInput, MacroReading, NewsInput

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

BAR_COLUMNS = ["open", "high", "low", "close", "volume"]


def desk_tz() -> ZoneInfo:
    return ZoneInfo(settings.TIME_ZONE)


def instrument_by_symbol(symbol: str) -> Instrument:
    """``EXCH:SYM`` or a bare symbol (the first exchange alphabetically when listed twice). A
    symbol no instrument could have (a NUL character, which PostgreSQL refuses to compare, or
    longer than any exchange and symbol) is not found, without asking the database."""
    if "\x00" in symbol or len(symbol) > 64:
        raise Http404(f"no instrument {symbol[:64]!r}")
    exchange, _, bare = symbol.upper().rpartition(":")
    queryset = Instrument.objects.filter(symbol=bare)
    if exchange:
        queryset = queryset.filter(exchange=exchange)
    return get_object_or_404(queryset.order_by("exchange")[:1])


def share_changes(instrument: Instrument | int, *, as_of: dt.date | None = None) -> list[ShareChange]:
    """The instrument's splits and bonuses with an ex-date on or before ``as_of`` (all when None)."""
    actions = CorporateAction.objects.filter(
        instrument=instrument, kind__in=[CorporateAction.Kind.SPLIT, CorporateAction.Kind.BONUS]
    )
    if as_of is not None:
        actions = actions.filter(ex_date__lte=as_of)
    return [
        ShareChange(ex_date=ex_date, ratio_old=old, ratio_new=new)
        for ex_date, old, new in actions.order_by("ex_date").values_list("ex_date", "ratio_old", "ratio_new")
        if old and new
    ]


BarRow = tuple[dt.date, Decimal, Decimal, Decimal, Decimal, int]
_STORED_PRICE = Decimal("0.0001")


def adjusted_bar_rows(instrument: Instrument | int, rows: Sequence[BarRow], *, as_of: dt.date | None) -> list[BarRow]:
    """Stored bar rows ``(date, open, high, low, close, volume)``, oldest first, in the share units
    of the reading day: the same split and bonus adjustment as ``bars_frame``, kept in Decimal for
    readers that take the stored prices. One query for the instrument's share changes."""
    if not rows:
        return list(rows)
    changes = share_changes(instrument, as_of=as_of)
    if not changes:
        return list(rows)
    factors = cumulative_factors([row[0] for row in rows], changes, as_of=as_of)
    adjusted: list[BarRow] = []
    for (day, *prices, volume), factor in zip(rows, factors, strict=True):
        if factor == 1.0:
            adjusted.append((day, *prices, volume))  # type: ignore[arg-type]
            continue
        scale = Decimal(repr(factor))
        bar_open, high, low, close = ((price / scale).quantize(_STORED_PRICE) for price in prices)
        adjusted.append((day, bar_open, high, low, close, round(volume * factor)))
    return adjusted


def bars_frame(
    instrument: Instrument, *, as_of: dt.date | None = None, limit: int | None = None, adjusted: bool = True
) -> pd.DataFrame:
    """Bars on or before ``as_of`` (the last ``limit`` of them), oldest first, as floats.

    Adjusted for the splits and bonuses known on the reading day (``as_of``, else the last bar):
    a bar before an ex-date reads in the new share units (``trading.market.domain.adjust``), so
    features, ATR, levels and charts never see a split as a crash. ``adjusted=False`` reads the
    prices as stored (what the exchange printed that day)."""
    queryset = DailyBar.objects.filter(instrument=instrument)
    if as_of is not None:
        queryset = queryset.filter(date__lte=as_of)
    queryset = queryset.order_by("-date")
    if limit is not None:
        queryset = queryset[:limit]
    rows = list(queryset.values_list("date", *BAR_COLUMNS))
    rows.reverse()
    frame = pd.DataFrame(rows, columns=["date", *BAR_COLUMNS])
    frame = frame.set_index("date").astype(float)
    if not adjusted or frame.empty:
        return frame
    reading_day = as_of if as_of is not None else rows[-1][0]
    return adjust_frame(frame, share_changes(instrument, as_of=reading_day), as_of=reading_day)


def news_inputs(instrument: Instrument, *, as_of: dt.date, lookback_days: int) -> list[NewsInput]:
    """Headlines about the instrument or the whole market published by the end of ``as_of``."""
    tz = desk_tz()
    end = dt.datetime.combine(as_of + dt.timedelta(days=1), dt.time.min, tzinfo=tz)
    start = end - dt.timedelta(days=lookback_days + 1)
    items = (
        NewsItem.objects.filter(Q(instrument=instrument) | Q(instrument__isnull=True))
        .filter(published_at__gte=start, published_at__lt=end)
        .order_by("published_at", "id")
        .values_list("headline", "source", "published_at", "instrument_id")
    )
    return [
        NewsInput(
            headline=headline,
            source=source,
            published_at=published_at.astimezone(tz),
            scope="market" if instrument_id is None else "instrument",
        )
        for headline, source, published_at, instrument_id in items
    ]


def _as_float(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


def fundamentals_input(instrument: Instrument, *, as_of: dt.date) -> FundamentalsInput | None:
    snapshot = FundamentalsSnapshot.objects.filter(instrument=instrument, as_of__lte=as_of).order_by("-as_of").first()
    if snapshot is None:
        return None
    return FundamentalsInput(
        as_of=snapshot.as_of,
        source=snapshot.source,
        pe=_as_float(snapshot.pe),
        pb=_as_float(snapshot.pb),
        ev_ebitda=_as_float(snapshot.ev_ebitda),
        revenue_growth_pct=_as_float(snapshot.revenue_growth_pct),
        net_margin_pct=_as_float(snapshot.net_margin_pct),
    )


def macro_readings(*, as_of: dt.date, limit: int = 5) -> list[MacroReading]:
    """The latest reading of each macro series on or before ``as_of`` with its change since the one before."""
    latest_dates = (
        MacroIndicator.objects.filter(date__lte=as_of).values("code").annotate(last=Max("date")).order_by("code")
    )[:limit]
    readings = []
    for row in latest_dates:
        last_two = list(MacroIndicator.objects.filter(code=row["code"], date__lte=row["last"]).order_by("-date")[:2])
        readings.append(macro_reading(last_two[0], last_two[1] if len(last_two) > 1 else None))
    return readings


def macro_reading(current: MacroIndicator, previous: MacroIndicator | None) -> MacroReading:
    """A series' latest reading and its change from the one before (None for a first reading)."""
    return MacroReading(
        code=current.code,
        name=current.name,
        date=current.date,
        value=float(current.value),
        unit=current.unit,
        change=float(current.value - previous.value) if previous else None,
    )


@dataclass(frozen=True)
class InstrumentRow:
    instrument: Instrument
    last_date: dt.date | None
    last_close: Decimal | None
    prev_close: Decimal | None
    bar_count: int

    @property
    def change_pct(self) -> float | None:
        if self.last_close is None or not self.prev_close:
            return None
        return float((self.last_close - self.prev_close) / self.prev_close * 100)


class _LatestBars(TypedDict):
    """What ``instrument_rows`` annotates each instrument with."""

    last_date: dt.date | None
    last_close: Decimal | None
    prev_close: Decimal | None
    bar_count: int


def instrument_rows() -> list[InstrumentRow]:
    """The dashboard's table in three queries whatever the size of the universe."""
    latest = DailyBar.objects.filter(instrument=OuterRef("pk")).order_by("-date")
    instruments: QuerySet[WithAnnotations[Instrument, _LatestBars]] = Instrument.objects.annotate(
        last_date=Subquery(latest.values("date")[:1]),
        last_close=Subquery(latest.values("close")[:1]),
        prev_close=Subquery(latest.values("close")[1:2]),
        bar_count=Count("bars"),
    ).order_by("symbol", "exchange")
    return [
        InstrumentRow(
            instrument=i,
            last_date=i.last_date,
            last_close=i.last_close,
            prev_close=i.prev_close,
            bar_count=i.bar_count,
        )
        for i in instruments
    ]


def bar_dates(instrument: Instrument) -> tuple[dt.date | None, dt.date | None]:
    bounds = DailyBar.objects.filter(instrument=instrument).aggregate(first=Min("date"), last=Max("date"))
    return bounds["first"], bounds["last"]


def stale_exchanges(now: dt.datetime | None = None) -> list[Staleness]:
    """Each exchange of the active instruments whose latest bar is older than its last completed
    session, with how many sessions it is behind."""
    now = now or timezone.now()
    latest = dict(
        DailyBar.objects.filter(instrument__is_active=True)
        .values_list("instrument__exchange")
        .annotate(last=Max("date"))
        .order_by()
    )
    exchanges = set(Instrument.objects.filter(is_active=True).values_list("exchange", flat=True).distinct())
    verdicts = []
    for exchange in sorted(exchanges):
        last_session = last_completed_session(exchange, now)
        latest_bar = latest.get(exchange)
        behind = sessions_between(exchange, latest_bar, last_session) if latest_bar else 0
        verdict = staleness(exchange, latest_bar=latest_bar, last_session=last_session, sessions_behind=behind)
        if verdict is not None:
            verdicts.append(verdict)
    return verdicts
