"""Yahoo Finance through the ``yfinance`` package, an optional extra (requirements-data.txt).

The package is imported only when a Yahoo provider is first asked for data, so the desk runs and
its tests pass without it; asking without it installed is a ``ProviderMissing`` that says how to
install it. ``ticker_factory`` is the seam the tests use to hand in a recorded payload: anything
with ``history(start=, end=, auto_adjust=False, actions=True)`` returning yfinance's DataFrame
(Open, High, Low, Close, Volume, Dividends, Stock Splits; a date index), and ``splits`` (every split
of the ticker, a Series by ex-date).

Yahoo's prices are adjusted for splits (its "Close" too, not only "Adj Close"); the desk stores
what traded and adjusts history by its own corporate actions, so ``daily_bars`` multiplies each
bar by the splits after it and divides its volume by them.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

from trading.market.providers.base import ProviderAction, ProviderBar, ProviderError, ProviderMissing

SUFFIXES = {"NSE": ".NS", "BSE": ".BO"}
INSTALL_HINT = "pip install -r requirements-data.txt (yfinance)"


def _default_factory(ticker: str) -> Any:
    try:
        import yfinance  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise ProviderMissing(f"the Yahoo provider needs the yfinance package: {INSTALL_HINT}") from None
    return yfinance.Ticker(ticker)


class YahooProvider:
    name = "yahoo"

    def __init__(self, ticker_factory: Callable[[str], Any] | None = None) -> None:
        self._factory = ticker_factory or _default_factory
        self._frames: dict[tuple[str, dt.date, dt.date], Any] = {}

    def ticker(self, exchange: str, symbol: str) -> str:
        return f"{symbol}{SUFFIXES.get(exchange.upper(), '')}"

    def _history(self, exchange: str, symbol: str, start: dt.date, end: dt.date) -> Any:
        ticker = self.ticker(exchange, symbol)
        key = (ticker, start, end)
        if key not in self._frames:
            try:
                # yfinance's end is exclusive; unadjusted prices (the desk adjusts by its own actions).
                frame = self._factory(ticker).history(
                    start=start.isoformat(),
                    end=(end + dt.timedelta(days=1)).isoformat(),
                    auto_adjust=False,
                    actions=True,
                )
            except ProviderError:
                raise
            except Exception as error:  # the package raises many kinds; all mean "no answer"
                raise ProviderError(f"Yahoo gave no data for {ticker}: {error}") from error
            self._frames[key] = frame
        return self._frames[key]

    def daily_bars(self, exchange: str, symbol: str, start: dt.date, end: dt.date) -> list[ProviderBar]:
        frame = self._history(exchange, symbol, start, end)
        missing = [name for name in ("Open", "High", "Low", "Close", "Volume") if name not in frame.columns]
        if missing:
            raise ProviderError(f"Yahoo's answer for {self.ticker(exchange, symbol)} has no {', '.join(missing)}")
        splits = self._splits(exchange, symbol, frame)
        bars = []
        for stamp, row in frame.iterrows():
            day = _day(stamp)
            values = [row["Open"], row["High"], row["Low"], row["Close"], row["Volume"]]
            if day < start or day > end or any(_blank(value) for value in values):
                continue  # Yahoo lists some days without prices (its "null" rows)
            # Yahoo's prices are adjusted for every later split; the desk stores what traded and
            # adjusts by its own corporate actions, so the adjustment is undone here.
            factor = math.prod((ratio for ex_date, ratio in splits if ex_date > day), start=Fraction(1))
            open_, high, low, close = (_text(float(value) * float(factor)) for value in values[:4])
            bars.append(ProviderBar(day, open_, high, low, close, _whole(float(values[4]) / float(factor))))
        return sorted(bars, key=lambda bar: bar.date)

    def _splits(self, exchange: str, symbol: str, frame: Any) -> list[tuple[dt.date, Fraction]]:
        """Every split Yahoo knows for the ticker (``Ticker.splits``: its whole history, later
        ones included), else the splits in the frame itself."""
        try:
            series = self._factory(self.ticker(exchange, symbol)).splits
            items = list(series.items())
        except ProviderError:
            raise
        except Exception:
            column = frame["Stock Splits"] if "Stock Splits" in frame.columns else None
            items = list(column.items()) if column is not None else []
        splits = []
        for stamp, value in items:
            ratio = float(value or 0)
            if ratio > 0 and not math.isnan(ratio) and ratio != 1:
                splits.append((_day(stamp), Fraction(str(ratio)).limit_denominator(1000)))
        return splits

    def corporate_actions(self, exchange: str, symbol: str, start: dt.date, end: dt.date) -> list[ProviderAction]:
        frame = self._history(exchange, symbol, start, end)
        actions = []
        for stamp, row in frame.iterrows():
            day = _day(stamp)
            if day < start or day > end:
                continue
            split = float(row.get("Stock Splits", 0) or 0)
            if split > 0 and not math.isnan(split) and split != 1:
                ratio = Fraction(str(split)).limit_denominator(1000)  # 5.0 is 1:5, 1.5 is 2:3
                actions.append(ProviderAction("split", day, ratio_old=ratio.denominator, ratio_new=ratio.numerator))
            dividend = float(row.get("Dividends", 0) or 0)
            if dividend > 0 and not math.isnan(dividend):
                actions.append(
                    ProviderAction("dividend", day, amount=Decimal(str(dividend)).quantize(Decimal("0.0001")))
                )
        return actions


def _day(stamp: Any) -> dt.date:
    """The session's date: yfinance indexes by midnight in the exchange's time zone (a pandas
    Timestamp is a datetime)."""
    if isinstance(stamp, dt.datetime):
        return stamp.date()
    if isinstance(stamp, dt.date):
        return stamp
    return dt.date.fromisoformat(str(stamp)[:10])


def _blank(value: Any) -> bool:
    if value is None:
        return True
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return True


def _text(value: Any) -> str:
    """A float price as the shortest text that reads back as it (the validator rounds it to 4 places)."""
    return repr(float(value))


def _whole(value: Any) -> str:
    return str(round(float(value)))
