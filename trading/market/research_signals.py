"""The current reading of the research signals a person attached to a strategy, for the analysts.

Trading sits below research (it may never import it), yet a strategy's evidence includes the
readings of research candidates attached to it (``trading.models.market.ResearchSignal``). The
dependency is inverted here: research registers one *reader* when its app is ready (a function
that turns a signal key, its parameters and a series of daily bars into a JSON-able reading), and
trading asks this module for the readings of a strategy's attached signals as of a date.

Only bars on or before ``as_of`` are handed to the reader, so a reading never sees the future. A
signal that cannot be read (no reader registered, an unknown key, too few bars) is still listed,
with the reason in ``error``: the analysts see that a signal is attached and why it is silent.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings

from trading.market.selectors import adjusted_bar_rows
from trading.models.market import DailyBar, Instrument, ResearchSignal

__all__ = ["BarSeries", "Reader", "readings", "register_reader", "registered_reader"]

BAR_FIELDS = ("date", "open", "high", "low", "close", "volume")


@dataclass(frozen=True)
class BarSeries:
    """An instrument's daily bars, oldest first, each ``(date, open, high, low, close, volume)``
    with the prices as stored (Decimal)."""

    symbol: str
    tick: Decimal
    lot_size: int
    currency: str
    rows: tuple[tuple[dt.date, Decimal, Decimal, Decimal, Decimal, int], ...]

    @property
    def last_date(self) -> dt.date | None:
        return self.rows[-1][0] if self.rows else None


# (signal key, parameters, bars) -> the reading: JSON-able values only. Raises ValueError or
# KeyError for a signal it cannot read; the message becomes the entry's ``error``.
Reader = Callable[[str, Mapping[str, Any], BarSeries], Mapping[str, Any]]

_readers: list[Reader] = []


def register_reader(reader: Reader) -> None:
    """Install the one reader (research's, from its ``AppConfig.ready``). Registering again
    replaces it, so an app registry set up twice (tests) keeps one."""
    _readers[:] = [reader]


def registered_reader() -> Reader | None:
    return _readers[0] if _readers else None


def bar_series(instrument: Instrument, *, as_of: dt.date, limit: int | None = None) -> BarSeries:
    """The last ``limit`` bars on or before ``as_of`` (the features' lookback by default)."""
    count = limit if limit is not None else int(settings.DESK["FEATURE_LOOKBACK_BARS"])
    rows = list(
        DailyBar.objects.filter(instrument=instrument, date__lte=as_of)
        .order_by("-date")
        .values_list(*BAR_FIELDS)[:count]
    )
    rows.reverse()
    # In the reading day's share units, as the features see them: a split is not a crash.
    rows = adjusted_bar_rows(instrument, rows, as_of=as_of)
    return BarSeries(
        symbol=instrument.symbol,
        tick=instrument.tick_size,
        lot_size=instrument.lot_size,
        currency=instrument.currency,
        rows=tuple(rows),
    )


def attached_signals(strategy_id: int) -> list[ResearchSignal]:
    """The signals attached to the strategy now, oldest attachment first (a stable order for a prompt)."""
    return list(
        ResearchSignal.objects.filter(strategy_id=strategy_id, detached_at__isnull=True).order_by("attached_at", "id")
    )


def _read(reader: Reader | None, signal: ResearchSignal, bars: BarSeries) -> dict[str, Any]:
    if reader is None:
        return {"error": "no research reader is installed (the research app is not loaded)"}
    if not bars.rows:
        return {"error": "no bars on or before the as-of date"}
    try:
        return {"reading": dict(reader(signal.signal, signal.params, bars))}
    except (ValueError, KeyError) as problem:
        return {"error": f"{signal.signal} could not be read: {problem}"}


def readings(
    strategy_id: int,
    instrument: Instrument,
    as_of: dt.date,
    *,
    limit: int | None = None,
    signals: list[ResearchSignal] | None = None,
) -> list[dict[str, Any]]:
    """One entry per signal attached to the strategy: what it is, where it came from, its research
    figures (as computed by the session, never recomputed here) and its reading on ``instrument``
    from bars up to ``as_of``, or the reason it has none. ``signals``: ``attached_signals`` of the
    strategy as the caller read them a moment ago; else they are read here."""
    signals = attached_signals(strategy_id) if signals is None else signals
    if not signals:
        return []
    bars = bar_series(instrument, as_of=as_of, limit=limit)
    reader = registered_reader()
    entries = []
    for signal in signals:
        entry: dict[str, Any] = {
            "signal_id": signal.pk,
            "name": signal.name,
            "signal": signal.signal,
            "params": dict(signal.params),
            "source": signal.source,
            "figures": dict(signal.figures),
            "symbol": instrument.symbol,
            "as_of": as_of.isoformat(),
            "bars_through": bars.last_date.isoformat() if bars.last_date else None,
            "bars_used": len(bars.rows),
            "reading": None,
            "error": "",
        }
        entry.update(_read(reader, signal, bars))
        entries.append(entry)
    return entries
