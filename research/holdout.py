"""The sacred holdout: the latest part of the data, set aside when a session starts and scored once.

Isolation is structural, not a convention. ``reserve`` splits the bars once: the search receives a
``SearchData`` built from truncated copies of the bars that end before the holdout (new arrays, so
nothing reachable from them leads to a later bar), and the full bars go into a ``Holdout`` that
exposes no bars at all: only the date it starts and ``score_once``, which the final step calls with
the shortlist and which refuses a second call. A test changes every holdout bar and shows the whole
search trajectory unchanged.

The holdout is scored as the search scored its windows: positions computed over the full history
(a position reads bars up to its own, so the holdout's first positions have their warm-up and
nothing later), the holdout window backtested from flat, returns averaged across symbols.

Several symbols are aligned first on the dates they all have, so a fold or the holdout is the same
sessions for each of them. Pure: no Django.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from research.backtest import BacktestConfig, backtest
from research.signals import Bars
from research.signals.base import SignalStrategy
from research.walkforward import WindowResult, window_metrics

__all__ = ["Holdout", "HoldoutEntry", "HoldoutSpent", "SearchData", "align", "reserve"]

MIN_HOLDOUT_BARS = 20
_ARRAYS = ("dates", "open", "high", "low", "close", "volume")


class HoldoutSpent(RuntimeError):
    """The holdout has been scored already: a second look would make it one more search step."""


@dataclass(frozen=True)
class SearchData:
    """All the search may read: per symbol, copies of the bars before the holdout, aligned by date."""

    bars: Mapping[str, Bars]

    @property
    def symbols(self) -> list[str]:
        return list(self.bars)

    def __len__(self) -> int:
        return len(next(iter(self.bars.values())))

    @property
    def dates(self) -> np.ndarray:
        return next(iter(self.bars.values())).dates

    def fingerprint(self) -> str:
        """SHA-256 over every array of every symbol: a journal names the very data it searched."""
        digest = hashlib.sha256()
        for symbol in sorted(self.bars):
            digest.update(symbol.encode())
            for name in _ARRAYS:
                digest.update(np.ascontiguousarray(getattr(self.bars[symbol], name)).tobytes())
        return digest.hexdigest()


@dataclass(frozen=True)
class HoldoutEntry:
    """One shortlisted trial for the final exam: its number, its strategy class and parameters."""

    trial: int
    strategy: type[SignalStrategy]
    params: Mapping[str, Any]


def _select(bars: Bars, mask: np.ndarray) -> Bars:
    arrays: dict[str, Any] = {name: np.array(getattr(bars, name)[mask]) for name in _ARRAYS}
    return dataclasses.replace(bars, **arrays)


def align(bars: Mapping[str, Bars]) -> dict[str, Bars]:
    """Each symbol's bars on the dates every symbol has (copies)."""
    if not bars:
        raise ValueError("no symbols to research")
    common: np.ndarray | None = None
    for symbol_bars in bars.values():
        dates = np.asarray(symbol_bars.dates)
        common = dates if common is None else np.intersect1d(common, dates)
    assert common is not None
    return {symbol: _select(symbol_bars, np.isin(symbol_bars.dates, common)) for symbol, symbol_bars in bars.items()}


class Holdout:
    """The reserved bars, readable only by ``score_once``. No attribute returns them."""

    __slots__ = ("__bars", "__config", "__cut", "__scored", "end", "start")

    def __init__(self, bars: Mapping[str, Bars], cut: int, config: BacktestConfig) -> None:
        self.__bars = {symbol: symbol_bars.window(0, len(symbol_bars)) for symbol, symbol_bars in bars.items()}
        self.__cut = cut
        self.__config = config
        self.__scored = False
        first = next(iter(self.__bars.values()))
        self.start: dt.date = _as_date(first.dates[cut])
        self.end: dt.date = _as_date(first.dates[-1])

    @property
    def scored(self) -> bool:
        return self.__scored

    def __repr__(self) -> str:
        return f"Holdout(start={self.start.isoformat()}, scored={self.__scored})"

    def __reduce__(self) -> Any:
        raise TypeError("the holdout cannot be pickled: it never leaves the session that reserved it")

    def score_once(self, shortlist: Sequence[HoldoutEntry]) -> list[dict[str, Any]]:
        """The shortlist's figures on the holdout, in the shortlist's order. Raises ``HoldoutSpent``
        on a second call, whatever the shortlist."""
        if self.__scored:
            raise HoldoutSpent("the holdout was scored already; it is scored once per session")
        self.__scored = True
        return [{"trial": entry.trial, **self.__score(entry)} for entry in shortlist]

    def __score(self, entry: HoldoutEntry) -> dict[str, Any]:
        instance = entry.strategy(**dict(entry.params))
        returns: list[np.ndarray] = []
        trades = 0
        pnls: list[float] = []
        for symbol_bars in self.__bars.values():
            positions = np.asarray(instance.positions(symbol_bars))
            result = backtest(symbol_bars.window(self.__cut, len(symbol_bars)), positions[self.__cut :], self.__config)
            returns.append(np.asarray(result.returns, dtype=float))
            trades += len(result.trades)
            pnls.extend(float(pnl) for pnl in result.trades_pnl)
        window = WindowResult(np.mean(np.vstack(returns), axis=0), trades, tuple(pnls))
        return window_metrics(window)


def _as_date(value: Any) -> dt.date:
    return dt.date.fromisoformat(str(np.datetime64(value, "D")))


def reserve(bars: Mapping[str, Bars], fraction: float, config: BacktestConfig) -> tuple[SearchData, Holdout]:
    """Split once: the search's data (before the holdout) and the holdout. The latest ``fraction``
    of the aligned sessions is the holdout (at least ``MIN_HOLDOUT_BARS``)."""
    if not 0 < fraction < 1:
        raise ValueError(f"the holdout fraction must be between 0 and 1, not {fraction}")
    aligned = align(bars)
    length = len(next(iter(aligned.values())))
    holdout_bars = max(MIN_HOLDOUT_BARS, round(length * fraction))
    cut = length - holdout_bars
    if cut < MIN_HOLDOUT_BARS:
        raise ValueError(f"{length} common sessions are too few to keep {holdout_bars} of them as the holdout")
    search = SearchData({symbol: symbol_bars.window(0, cut) for symbol, symbol_bars in aligned.items()})
    return search, Holdout(aligned, cut, config)
