"""Signal health for the critique: which signals the desk's features carry, which family each
belongs to, and how well each one ranked the returns that followed. Pure; no Django.

**Signals.** Every number a run is shown lives in its stored ``FeatureBundle`` (``vocabulary.
features``); a *signal* is one reading of it, made comparable across instruments (a distance from
a moving average in per cent of the close rather than the average itself, ATR as a share of the
close rather than in rupees). Each signal belongs to one *family*, the kind of evidence it is:
trend, momentum, mean reversion, volatility, volume, news, sentiment, fundamentals, forecast. A
strategy whose decisions all come from one family has one idea, however many indicators it quotes.

**Rank IC.** A signal's information coefficient is the Spearman rank correlation between its
reading on a day and the instrument's forward return over the thesis horizon (close of that day
to the close ``horizon`` sessions later). Tied values share the mean of the ranks they span
(``average_ranks``), as ``scipy.stats.spearmanr`` does. Observations are pooled over the
universe and the window (a desk universe is a handful of instruments: a cross-section per day
would be too thin to rank). A forward return exists only when its end bar exists: a day whose
horizon reaches past the as-of date gives no observation, so nothing later than ``as_of`` is read.

An IC whose absolute value is under the floor (``settings.CRITIQUE["IC_FLOOR"]``, 0.03 by default)
is noise: the signal did not rank what came next.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CITATION_FAMILY",
    "FAMILIES",
    "MIN_IC_OBSERVATIONS",
    "READ_BLOCKS",
    "READ_FIELDS",
    "ROLE_FAMILY",
    "SIGNALS",
    "Observation",
    "SignalICResult",
    "SignalSpec",
    "average_ranks",
    "forward_returns",
    "observations",
    "rank_ics",
    "research_ics",
    "signal_readings",
    "spearman",
]

FAMILIES: tuple[str, ...] = (
    "trend",
    "momentum",
    "mean_reversion",
    "volatility",
    "volume",
    "news",
    "sentiment",
    "fundamentals",
    "forecast",
)

# Fewer pairs than this and a rank correlation is a coin toss (with 5 pairs a perfect ranking
# happens by chance almost 1 time in 100): the IC is reported as None, not as a number.
MIN_IC_OBSERVATIONS = 8

Bundle = Mapping[str, Any]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _field(bundle: Bundle, block: str, name: str) -> float | None:
    section = bundle.get(block)
    return _number(section.get(name)) if isinstance(section, Mapping) else None


def _ratio_pct(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator * 100


def _distance_pct(bundle: Bundle, level: str) -> float | None:
    """(close - level) / close * 100: how far the close sits above a level."""
    close, value = _field(bundle, "technical", "last_close"), _field(bundle, "technical", level)
    return None if value is None or close is None else _ratio_pct(close - value, close)


def _bollinger_position(bundle: Bundle) -> float | None:
    """Where the close sits in its band: -0.5 on the lower band, 0 on the middle, +0.5 on the upper."""
    upper, lower = _field(bundle, "technical", "bb_upper"), _field(bundle, "technical", "bb_lower")
    middle, close = _field(bundle, "technical", "bb_middle"), _field(bundle, "technical", "last_close")
    if None in (upper, lower, middle, close) or upper == lower:
        return None
    return (close - middle) / (upper - lower)  # type: ignore[operator]


def _earnings_yield(bundle: Bundle) -> float | None:
    """1 / PE in per cent: cheap ranks high, and a negative PE stays on the same scale."""
    pe = _field(bundle, "fundamentals", "pe")
    return None if pe is None or pe == 0 else 100 / pe


def _forecast_move(bundle: Bundle) -> float | None:
    return _field(bundle, "forecast", "expected_move_pct")


@dataclass(frozen=True)
class SignalSpec:
    name: str
    family: str
    read: Callable[[Bundle], float | None]
    meaning: str


SIGNALS: tuple[SignalSpec, ...] = (
    SignalSpec("close_vs_sma50", "trend", lambda b: _distance_pct(b, "sma_50"), "close above SMA50, % of close"),
    SignalSpec("close_vs_sma200", "trend", lambda b: _distance_pct(b, "sma_200"), "close above SMA200, % of close"),
    SignalSpec("rsi_14", "momentum", lambda b: _field(b, "technical", "rsi_14"), "RSI(14)"),
    SignalSpec(
        "macd_hist_pct",
        "momentum",
        lambda b: _ratio_pct(_field(b, "technical", "macd_hist"), _field(b, "technical", "last_close")),
        "MACD histogram, % of close",
    ),
    SignalSpec("bollinger_position", "mean_reversion", _bollinger_position, "close within its Bollinger band"),
    SignalSpec(
        "support_distance_pct",
        "mean_reversion",
        lambda b: _field(b, "technical", "support_distance_pct"),
        "close above support, %",
    ),
    SignalSpec(
        "atr_pct",
        "volatility",
        lambda b: _ratio_pct(_field(b, "technical", "atr_14"), _field(b, "technical", "last_close")),
        "ATR(14), % of close",
    ),
    SignalSpec("volume_vs_avg", "volume", lambda b: _field(b, "technical", "volume_vs_avg"), "volume / 20-day mean"),
    SignalSpec("news_sentiment", "news", lambda b: _field(b, "news", "net_sentiment"), "recency-weighted headlines"),
    SignalSpec("sentiment_score", "sentiment", lambda b: _field(b, "sentiment", "news_sentiment"), "sentiment reading"),
    SignalSpec("earnings_yield", "fundamentals", _earnings_yield, "1 / PE, %"),
    SignalSpec(
        "revenue_growth_pct",
        "fundamentals",
        lambda b: _field(b, "fundamentals", "revenue_growth_pct"),
        "revenue growth, %",
    ),
    SignalSpec("forecast_move_pct", "forecast", _forecast_move, "baseline forecast's expected move, %"),
)

# The family of each technical indicator a note can cite (``agents.domain.citations`` names them
# by their ``TechnicalFeatures`` field).
CITATION_FAMILY: dict[str, str] = {
    "sma_20": "trend",
    "sma_50": "trend",
    "sma_200": "trend",
    "ema_20": "trend",
    "macd_line": "momentum",
    "macd_signal": "momentum",
    "macd_hist": "momentum",
    "rsi_14": "momentum",
    "bb_upper": "mean_reversion",
    "bb_middle": "mean_reversion",
    "bb_lower": "mean_reversion",
    "support": "mean_reversion",
    "resistance": "mean_reversion",
    "support_distance_pct": "mean_reversion",
    "resistance_distance_pct": "mean_reversion",
    "swing_high": "mean_reversion",
    "swing_low": "mean_reversion",
    "atr_14": "volatility",
    "volume_vs_avg": "volume",
    "last_volume": "volume",
}

# The family an analyst's note speaks for; the technical analyst's depends on what it cites.
ROLE_FAMILY: dict[str, str] = {"news": "news", "sentiment": "sentiment", "fundamental": "fundamentals"}


# What the signals read of a stored bundle: these blocks whole, and these fields of others. A
# critique reads a bundle for every instrument and day of its window; the rest of it (headlines,
# macro readings, warnings) is most of its size and no signal's input.
READ_BLOCKS: tuple[str, ...] = ("technical", "fundamentals", "sentiment", "forecast")
READ_FIELDS: tuple[tuple[str, str], ...] = (("news", "net_sentiment"),)


def signal_readings(bundle: Bundle) -> dict[str, float]:
    """Every signal the stored bundle has a value for (a missing block or indicator gives none)."""
    readings = {spec.name: spec.read(bundle) for spec in SIGNALS}
    return {name: value for name, value in readings.items() if value is not None}


def forward_returns(closes: Sequence[tuple[dt.date, float]], horizon: int) -> dict[dt.date, float]:
    """Per cent return from each day's close to the close ``horizon`` sessions later, for the days
    whose end bar is in ``closes`` (sorted by date, as of the review's date: nothing later)."""
    if horizon < 1:
        raise ValueError(f"horizon must be at least one session, got {horizon}")
    ordered = sorted(closes)
    returns: dict[dt.date, float] = {}
    for index in range(len(ordered) - horizon):
        day, start = ordered[index]
        end = ordered[index + horizon][1]
        if start > 0:
            returns[day] = (end / start - 1) * 100
    return returns


@dataclass(frozen=True)
class Observation:
    """One instrument on one day: its signal readings and the forward return that followed."""

    symbol: str
    day: dt.date
    readings: Mapping[str, float]
    forward_return: float


def observations(
    bundles: Mapping[tuple[str, dt.date], Bundle], returns: Mapping[str, Mapping[dt.date, float]]
) -> list[Observation]:
    """Pair each stored bundle (by symbol and day) with its forward return; a day without one is left out."""
    paired = []
    for (symbol, day), bundle in sorted(bundles.items()):
        forward = returns.get(symbol, {}).get(day)
        if forward is not None:
            paired.append(Observation(symbol, day, signal_readings(bundle), forward))
    return paired


def average_ranks(values: Sequence[float]) -> list[float]:
    """Ranks from 1, ties sharing the mean of the ranks they span: [10, 20, 20, 30] -> [1, 2.5, 2.5, 4]."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        shared = (start + end) / 2 + 1
        for position in range(start, end + 1):
            ranks[order[position]] = shared
        start = end + 1
    return ranks


def _pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    spread_x = math.sqrt(sum((x - mean_x) ** 2 for x in xs))
    spread_y = math.sqrt(sum((y - mean_y) ** 2 for y in ys))
    if spread_x == 0 or spread_y == 0:
        return None  # a constant side ranks nothing
    return covariance / (spread_x * spread_y)


def spearman(xs: Sequence[float], ys: Sequence[float], *, min_pairs: int = 2) -> float | None:
    """Spearman's rank correlation (Pearson's on average ranks). None with fewer than ``min_pairs``
    pairs or when either side is constant."""
    if len(xs) != len(ys):
        raise ValueError(f"need pairs: {len(xs)} values against {len(ys)}")
    if len(xs) < max(min_pairs, 2):
        return None
    return _pearson(average_ranks(xs), average_ranks(ys))


@dataclass(frozen=True)
class SignalICResult:
    signal: str
    family: str
    ic: float | None
    observations: int

    def above(self, floor: float) -> bool:
        """The IC means something: its absolute value reaches the floor."""
        return self.ic is not None and abs(self.ic) >= floor


RESEARCH_FAMILY = "research"


def research_ics(
    readings: Mapping[tuple[str, dt.date], Mapping[str, float]],
    returns: Mapping[str, Mapping[dt.date, float]],
    *,
    min_pairs: int = MIN_IC_OBSERVATIONS,
) -> list[SignalICResult]:
    """The rank IC of each research signal a person attached to the strategy: its reading on each
    run's instrument and day (as the run was shown it) against the forward return that followed."""
    pairs: dict[str, list[tuple[float, float]]] = {}
    for (symbol, day), values in sorted(readings.items()):
        forward = returns.get(symbol, {}).get(day)
        if forward is None:
            continue
        for name, value in values.items():
            pairs.setdefault(name, []).append((value, forward))
    results = []
    for name, rows in sorted(pairs.items()):
        ic = spearman([r for r, _ in rows], [f for _, f in rows], min_pairs=min_pairs)
        results.append(SignalICResult(name, RESEARCH_FAMILY, None if ic is None else round(ic, 4), len(rows)))
    return results


def rank_ics(paired: Sequence[Observation], *, min_pairs: int = MIN_IC_OBSERVATIONS) -> list[SignalICResult]:
    """Each signal's rank IC over the observations that carry it (rounded to 4 decimals)."""
    results = []
    for spec in SIGNALS:
        rows = [(row.readings[spec.name], row.forward_return) for row in paired if spec.name in row.readings]
        ic = spearman([r for r, _ in rows], [f for _, f in rows], min_pairs=min_pairs)
        results.append(SignalICResult(spec.name, spec.family, None if ic is None else round(ic, 4), len(rows)))
    return results
