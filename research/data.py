"""The bars a research session reads: each symbol's daily bars from the desk's market data.

Read through the market selectors and the market models only (research may reach nothing else of
trading). Every stored bar is read, oldest first; the session reserves its holdout from the latest
of them before any search code sees the data (``research.holdout.reserve``).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.http import Http404

from research.signals import Bars
from trading.market.selectors import adjusted_bar_rows, instrument_by_symbol
from trading.models.market import DailyBar, Instrument
from vocabulary.refusals import InputRefused

__all__ = ["bar_count", "load_bars", "resolve_instrument"]

BAR_FIELDS = ("date", "open", "high", "low", "close", "volume")


def resolve_instrument(symbol: str) -> Instrument:
    """The instrument a symbol names (``EXCH:SYM`` or bare), or ``InputRefused``."""
    try:
        return instrument_by_symbol(symbol)
    except Http404:
        raise InputRefused(f"no instrument {symbol[:64]!r}", {"symbols": [f"unknown symbol {symbol[:64]!r}"]}) from None


def bar_count(instrument: Instrument) -> int:
    return DailyBar.objects.filter(instrument=instrument).count()


def load_bars(symbols: Sequence[str]) -> dict[str, Bars]:
    """Each symbol's stored daily bars as ``Bars``, keyed by the symbol as given."""
    loaded = {}
    for symbol in symbols:
        instrument = resolve_instrument(symbol)
        stored = list(DailyBar.objects.filter(instrument=instrument).order_by("date").values_list(*BAR_FIELDS))
        # The whole history in the latest share units: a split or bonus is not read as a crash.
        rows = adjusted_bar_rows(instrument, stored, as_of=stored[-1][0] if stored else None)
        loaded[symbol] = Bars.from_rows(
            instrument.symbol,
            [dict(zip(BAR_FIELDS, row, strict=True)) for row in rows],
            tick=instrument.tick_size,
            lot_size=instrument.lot_size,
            currency=instrument.currency,
        )
    return loaded
