"""The provider protocol: daily bars of one instrument, and optionally its corporate actions.

A provider answers in plain values (text prices as the files have them, so the importer's
validation treats a provider exactly like a file); the desk's symbol (``EXCHANGE:SYMBOL``) is
mapped to the provider's ticker by the provider.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol, runtime_checkable


class ProviderError(Exception):
    """The provider could not answer (a network error, an unknown ticker, a malformed payload)."""


class ProviderMissing(ProviderError):
    """The provider's optional package is not installed."""


@dataclass(frozen=True)
class ProviderBar:
    date: dt.date
    open: str
    high: str
    low: str
    close: str
    volume: str

    def as_row(self) -> dict[str, str]:
        return {
            "date": self.date.isoformat(),
            "open": self.open,
            "high": self.high,
            "low": self.low,
            "close": self.close,
            "volume": self.volume,
        }


@dataclass(frozen=True)
class ProviderAction:
    """A split or bonus (``ratio_old`` shares became ``ratio_new``) or a cash dividend (``amount``)."""

    kind: str  # split | dividend
    ex_date: dt.date
    ratio_old: int | None = None
    ratio_new: int | None = None
    amount: Decimal | None = None


@runtime_checkable
class MarketDataProvider(Protocol):
    name: str

    def ticker(self, exchange: str, symbol: str) -> str:
        """The provider's name for the desk's instrument."""
        ...

    def daily_bars(self, exchange: str, symbol: str, start: dt.date, end: dt.date) -> list[ProviderBar]:
        """Unadjusted daily bars from ``start`` to ``end`` inclusive, oldest first."""
        ...

    def corporate_actions(self, exchange: str, symbol: str, start: dt.date, end: dt.date) -> list[ProviderAction]:
        """Splits and dividends with an ex-date in the range (empty when the provider has none)."""
        ...
