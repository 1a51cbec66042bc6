"""Research's reader for the desk: the current reading of an attached signal, from bars trading hands over.

Trading may not import research, so research registers this function with
``trading.market.research_signals`` when its app is ready; the pipeline then asks that registry for
the readings of a strategy's attached signals. Only built-in signal strategies are read (attaching
refuses generated code), and only from the bars given, which trading cuts at the run's date.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from research.signals import SIGNALS, Bars
from trading.market.research_signals import BAR_FIELDS, BarSeries

__all__ = ["read_signal"]


def read_signal(key: str, params: Mapping[str, Any], series: BarSeries) -> dict[str, Any]:
    """The signal's latest position and indicator values on ``series``. An unknown key raises
    KeyError and parameters outside the strategy's ranges ValueError (the registry reports both)."""
    if key not in SIGNALS:
        raise KeyError(f"no built-in signal strategy {key!r}")
    strategy = SIGNALS[key](**dict(params))
    rows = [dict(zip(BAR_FIELDS, row, strict=True)) for row in series.rows]
    bars = Bars.from_rows(series.symbol, rows, tick=series.tick, lot_size=series.lot_size, currency=series.currency)
    return strategy.reading(bars)
