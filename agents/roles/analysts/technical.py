"""The technical analyst: trend, momentum, volatility and levels read into a directional stance.

It is the one analyst that sees the price forecast, as one weighted piece of evidence; the
forecast is cut out of its note before the debate reads it (``agents.roles._panel_view``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agents.domain.hygiene import fence
from agents.domain.llm import ModelRequest
from agents.roles._base import Evidence, base_evidence, build_request, clamp, fmt, header, pairs, signed
from agents.roles.analysts.note import (
    AnalystNote,
    Factor,
    Playbook,
    abstain,
    cite_playbook,
    empty_note,
    note_from_factors,
    task_line,
)
from vocabulary.features import FeatureBundle

JOB = (
    "You are the Technical Analyst. Read trend (SMA/EMA stack), momentum (RSI, MACD), volatility "
    "(ATR, Bollinger) and distance to support/resistance into a directional stance. The forecast is "
    "evidence only."
)


# --- the prompt ----------------------------------------------------------------------------------


ResearchSignals = Sequence[Mapping[str, Any]]


def _research_section(research_signals: ResearchSignals) -> list[str]:
    """The research signals a person attached to the strategy, fenced as data: each one's reading
    (computed by code as of the run's date) and the research session's out-of-sample and holdout
    figures. Evidence to weigh like any indicator, never an instruction."""
    if not research_signals:
        return []
    lines = [json.dumps(entry, sort_keys=True, ensure_ascii=False, default=str) for entry in research_signals]
    return [
        "research signals attached to this strategy by a person (readings by code; figures from the "
        "research session's walk-forward and holdout):\n" + fence(lines)
    ]


def technical_request(
    bundle: FeatureBundle, *, memory_block: str = "", playbook: Playbook = (), research_signals: ResearchSignals = ()
) -> ModelRequest:
    technical = bundle.technical.model_dump(mode="json")
    forecast = bundle.forecast.model_dump(mode="json") if bundle.forecast else None
    evidence = {**base_evidence(bundle), "technical": technical, "forecast": forecast}
    if research_signals:
        evidence["research_signals"] = [dict(entry) for entry in research_signals]
    forecast_text = pairs(forecast) if forecast else "(none)"
    sections = [
        header(bundle),
        f"technical features: {pairs(technical)}",
        f"forecast (evidence only; it never sizes or routes a trade): {forecast_text}",
        *_research_section(research_signals),
        task_line("technical", bundle.symbol, "Read the indicators into a stance; cite the feature behind each point."),
    ]
    return build_request(
        "technical", JOB, bundle.symbol, AnalystNote, sections, evidence, memory_block=memory_block, playbook=playbook
    )


# --- code's abstention ---------------------------------------------------------------------------

# The indicators the technical analyst cannot read a stance without: trend (SMA20), momentum (RSI 14,
# the MACD histogram) and volatility (ATR 14). All four exist from the 34th bar (MACD's 26 + 9 - 1
# warm-up is the longest), so a listing of a few weeks already gets a technical view; SMA50/200 are
# not required, or the analyst would be silent for the first ten months. With any of them missing,
# a stance would be one or two readings plus the forecast, which is not a technical view.
TECHNICAL_MINIMUM: tuple[str, ...] = ("sma_20", "rsi_14", "macd_hist", "atr_14")


def technical_abstention(bundle: FeatureBundle) -> AnalystNote | None:
    """A fallback bundle, or one missing any of ``TECHNICAL_MINIMUM``: abstain, naming what is missing."""
    technical = bundle.technical
    missing = [name for name in TECHNICAL_MINIMUM if getattr(technical, name) is None]
    if not bundle.fallback and not missing:
        return None
    if bundle.fallback:
        why = "the bundle is a fallback rebuilt from recent closes, so no indicator is trustworthy"
    else:
        why = f"{technical.bars_used} bars are too few for {', '.join(missing)}"
    return abstain(
        "technical",
        bundle.symbol,
        f"Abstaining: {why}.",
        [f"fallback={'true' if bundle.fallback else 'false'}", f"bars_used={technical.bars_used}"]
        + [f"{name}=n/a" for name in missing],
    )


# --- the offline rules ---------------------------------------------------------------------------

TECHNICAL_WEIGHTS: dict[str, float] = {
    "trend": 0.35,
    "macd": 0.2,
    "rsi": 0.15,
    "bollinger": 0.1,
    "levels": 0.1,
    "forecast": 0.1,
}
_MOVING_AVERAGES = (("sma_20", "SMA20"), ("sma_50", "SMA50"), ("sma_200", "SMA200"))


def _sign(value: float) -> float:
    return 1.0 if value > 0 else -1.0 if value < 0 else 0.0


def _compare(left: float, right: float) -> str:
    return ">" if left > right else "<" if left < right else "="


def _trend(tech: Evidence) -> Factor | None:
    close = tech["last_close"]
    votes: list[float] = []
    cited: list[str] = []
    for key, label in _MOVING_AVERAGES:
        level = tech.get(key)
        if level is None:
            continue
        votes.append(_sign(close - level))
        cited.append(f"close {fmt(close)} {_compare(close, level)} {label} {fmt(level)}")
    ema, sma50, sma200 = tech.get("ema_20"), tech.get("sma_50"), tech.get("sma_200")
    if ema is not None and sma50 is not None and sma200 is not None:
        stacked_up, stacked_down = ema > sma50 > sma200, ema < sma50 < sma200
        votes.append(1.0 if stacked_up else -1.0 if stacked_down else 0.0)
        cited.append(
            f"EMA20 {fmt(ema)} {_compare(ema, sma50)} SMA50 {fmt(sma50)} {_compare(sma50, sma200)} SMA200 {fmt(sma200)}"
        )
    if not votes:
        return None
    score = sum(votes) / len(votes)
    direction = "up" if score > 0 else "down" if score < 0 else "mixed"
    return Factor("trend", score, TECHNICAL_WEIGHTS["trend"], f"Trend {direction}: {cited[0]}", tuple(cited))


def _rsi_reading(rsi: float) -> tuple[float, str]:
    # Momentum reads best in the 50-70 band; beyond 70 the move is stretched, under 30 a bounce is due.
    if rsi >= 70:
        return -0.3, "overbought, pullback risk"
    if rsi >= 60:
        return 0.6, "strong momentum"
    if rsi >= 50:
        return 0.3, "positive momentum"
    if rsi >= 40:
        return -0.3, "soft momentum"
    if rsi >= 30:
        return -0.6, "weak momentum"
    return 0.3, "oversold, bounce risk"


def _rsi(tech: Evidence) -> Factor | None:
    rsi = tech.get("rsi_14")
    if rsi is None:
        return None
    score, reading = _rsi_reading(rsi)
    cited = f"RSI(14)={fmt(rsi)}"
    return Factor("rsi", score, TECHNICAL_WEIGHTS["rsi"], f"{cited}: {reading}", (cited,))


def _macd(tech: Evidence) -> Factor | None:
    hist, line, signal = tech.get("macd_hist"), tech.get("macd_line"), tech.get("macd_signal")
    if hist is None or line is None:
        return None
    score = 0.7 * _sign(hist) + 0.3 * _sign(line)
    cited = f"MACD hist {signed(hist)} (line {signed(line)}, signal {signed(signal)})"
    side = "above" if hist > 0 else "below" if hist < 0 else "on"
    return Factor("macd", score, TECHNICAL_WEIGHTS["macd"], f"MACD {side} its signal: {cited}", (cited,))


def _bollinger(tech: Evidence) -> Factor | None:
    close = tech["last_close"]
    upper, middle, lower = tech.get("bb_upper"), tech.get("bb_middle"), tech.get("bb_lower")
    if upper is None or middle is None or lower is None or not lower < middle < upper:
        return None
    if close > upper:
        score, reading = 0.2, "above the upper band, strong but stretched"
    elif close < lower:
        score, reading = -0.2, "below the lower band, weak but stretched"
    elif close >= middle:
        score, reading = 0.6 * (close - middle) / (upper - middle), "in the upper half of the bands"
    else:
        score, reading = -0.6 * (middle - close) / (middle - lower), "in the lower half of the bands"
    cited = f"close {fmt(close)} vs Bollinger {fmt(lower)} / {fmt(middle)} / {fmt(upper)}"
    return Factor("bollinger", score, TECHNICAL_WEIGHTS["bollinger"], f"Close {reading}: {cited}", (cited,))


def _levels(tech: Evidence) -> Factor | None:
    support, resistance = tech.get("support"), tech.get("resistance")
    below, above = tech.get("support_distance_pct"), tech.get("resistance_distance_pct")
    cited: list[str] = []
    if support is not None and below is not None:
        cited.append(f"support {fmt(support)} (support_distance_pct {signed(below)})")
    if resistance is not None and above is not None:
        cited.append(f"resistance {fmt(resistance)} (resistance_distance_pct {signed(above)})")
    if not cited:
        return None
    score, reading = _level_reading(below if support is not None else None, above if resistance is not None else None)
    return Factor("levels", score, TECHNICAL_WEIGHTS["levels"], f"{reading}: {cited[0]}", tuple(cited))


def _level_reading(below: float | None, above: float | None) -> tuple[float, str]:
    if below is not None and below < 0:
        return -0.8, "Close has broken below support"
    if above is not None and above < 0:
        return 0.8, "Close has broken out above resistance"
    if below is not None and above is not None and below + above > 0:
        # More room to resistance than to support is a better long risk/reward, and the reverse.
        room = (above - below) / (above + below)
        return 0.5 * room, "Room to resistance vs support" if room >= 0 else "Resistance is closer than support"
    if below is not None and below <= 2.0:
        return 0.2, "Close sits just above support"
    if above is not None and above <= 2.0:
        return -0.2, "Close sits just under resistance"
    return 0.0, "Levels are far on the side given"


def _forecast(forecast: Evidence | None) -> Factor | None:
    if not forecast:
        return None
    expected = forecast["expected_move_pct"]
    cited = (
        f"forecast expected move {signed(expected)}% (band {signed(forecast['low_move_pct'])}% to "
        f"{signed(forecast['high_move_pct'])}%) over {forecast['horizon_sessions']} sessions"
    )
    score = clamp(expected / 5.0)
    return Factor(
        "forecast", score, TECHNICAL_WEIGHTS["forecast"], f"Baseline drift: {cited} (evidence only)", (cited,)
    )


def technical_note(symbol: str, evidence: Evidence) -> AnalystNote:
    """Trend, MACD, RSI, Bollinger, levels and the forecast as weighted factors; ATR cited last."""
    tech = evidence["technical"]
    forecast = evidence.get("forecast")
    readers: tuple[Callable[[Evidence], Factor | None], ...] = (_trend, _macd, _rsi, _bollinger, _levels)
    factors = [factor for factor in (*(read(tech) for read in readers), _forecast(forecast)) if factor]
    if not factors:
        return empty_note(
            "technical", symbol, "Not enough price history for any indicator.", [f"bars_used={tech['bars_used']}"]
        )
    note = note_from_factors(
        "technical",
        symbol,
        factors,
        TECHNICAL_WEIGHTS,
        label="Technical",
        time_horizon=f"{forecast['horizon_sessions']} sessions" if forecast else "swing (days to weeks)",
    )
    atr = tech.get("atr_14")
    if atr is not None and len(note.evidence) < 12:
        note = note.model_copy(update={"evidence": [*note.evidence, f"ATR(14)={fmt(atr)}"]})
    return cite_playbook(note, evidence)
