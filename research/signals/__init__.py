"""Signal strategies the research agent backtests: the base class, the bars they read, the built-ins.

``SIGNALS`` maps each built-in's key to its class; generated strategies never join it (they are
loaded through ``research.sandbox`` and run in their own process).
"""

from __future__ import annotations

from research.signals.base import MAX_PARAMS, Bars, ParamRange, SignalStrategy
from research.signals.builtin import (
    BUILTIN,
    BollingerReversion,
    DonchianBreakout,
    MacdMomentum,
    RsiReversion,
    SmaCrossover,
)

SIGNALS: dict[str, type[SignalStrategy]] = {strategy.key: strategy for strategy in BUILTIN}

__all__ = [
    "MAX_PARAMS",
    "SIGNALS",
    "Bars",
    "BollingerReversion",
    "DonchianBreakout",
    "MacdMomentum",
    "ParamRange",
    "RsiReversion",
    "SignalStrategy",
    "SmaCrossover",
]
