"""The offline model: a rules-based stand-in for an LLM that reads the evidence, not the prompt.

It answers every role with a schema-valid, evidence-citing JSON object, the same way every time.
It never looks at ``request.prompt``, so a hostile headline can only move it through the numbers
code computed for that headline (its sentiment and class), never through its words. For the same
reason it cites headlines by their number in the prompt (h1, h2, …) and never quotes their text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel

from agents.domain.llm import ModelError
from agents.domain.prompts import SELF_CRITIQUE_REASON, fmt, signed
from agents.domain.schemas import (
    AnalystNote,
    BearCase,
    BullCase,
    DebateResult,
    ModelReply,
    ModelRequest,
    TradeReviewDraft,
    TradeThesis,
)

__all__ = ["OFFLINE_MODEL", "OfflineModel", "reviewer_draft"]

OFFLINE_MODEL = "offline-rules"
HORIZON_SESSIONS = 10
NEUTRAL_BAND = 0.15
ABSTAIN_CONFIDENCE = 0.15
MAX_POINT_CHARS = 400

Evidence = Mapping[str, Any]


class OfflineModel:
    provider = "offline"

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        rules = _RULES.get(request.role)
        if rules is None:
            raise ModelError(f"the offline model has no rules for role {request.role!r}")
        output = rules(request.symbol, request.evidence)
        text = json.dumps(output.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return ModelReply(
            text=text,
            provider=self.provider,
            model=OFFLINE_MODEL,
            input_tokens=(len(request.system) + len(request.prompt)) // 4,
            output_tokens=len(text) // 4,
            latency_ms=0.0,
        )


# --- shared helpers ------------------------------------------------------------------------------


def _clamp(value: float, low: float = -1.0, high: float = 1.0) -> float:
    return max(low, min(high, value))


def _sign(value: float) -> float:
    return 1.0 if value > 0 else -1.0 if value < 0 else 0.0


def _short(text: str, limit: int = MAX_POINT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _lean(stance: float) -> str:
    if stance >= NEUTRAL_BAND:
        return "bullish"
    if stance <= -NEUTRAL_BAND:
        return "bearish"
    return "neutral"


def _compare(left: float, right: float) -> str:
    return ">" if left > right else "<" if left < right else "="


@dataclass(frozen=True)
class _Factor:
    """One scored reading: its score in [-1, 1], its weight in the stance, and what it cites."""

    name: str
    score: float
    weight: float
    point: str
    evidence: tuple[str, ...]


def _blend(factors: Sequence[_Factor]) -> tuple[float, float]:
    """Weighted stance, and agreement: 1 when every factor points the same way, near 0 when they cancel."""
    total_weight = sum(factor.weight for factor in factors)
    if total_weight <= 0:
        return 0.0, 0.0
    weighted = sum(factor.weight * factor.score for factor in factors)
    magnitude = sum(factor.weight * abs(factor.score) for factor in factors)
    agreement = abs(weighted) / magnitude if magnitude > 0 else 0.0
    return weighted / total_weight, agreement


def _confidence(agreement: float, coverage: float, stance: float, *, cap: float = 0.85) -> float:
    # Agreement between factors earns most of the confidence; a clear lean earns the rest.
    raw = 0.15 + 0.5 * agreement * coverage + 0.2 * min(1.0, abs(stance) / 0.5)
    return round(_clamp(raw, 0.1, cap), 2)


def _ranked(factors: Sequence[_Factor]) -> list[_Factor]:
    return sorted(factors, key=lambda factor: (-factor.weight * abs(factor.score), factor.name))


def _note(
    role: str,
    symbol: str,
    *,
    stance: float,
    confidence: float,
    summary: str,
    key_points: Sequence[str],
    subscores: Mapping[str, float],
    evidence: Sequence[str],
    time_horizon: str,
) -> AnalystNote:
    return AnalystNote(
        role=role,  # type: ignore[arg-type]
        symbol=symbol,
        stance=round(_clamp(stance), 2),
        confidence=confidence,
        summary=_short(summary, 1000),
        key_points=[_short(point) for point in key_points][:8],
        subscores={name: round(_clamp(score), 2) for name, score in subscores.items()},
        evidence=[_short(item) for item in evidence][:12],
        time_horizon=time_horizon,
        model_used=OFFLINE_MODEL,
    )


def _note_from_factors(
    role: str,
    symbol: str,
    factors: Sequence[_Factor],
    weights: Mapping[str, float],
    *,
    label: str,
    time_horizon: str,
    cap: float = 0.85,
) -> AnalystNote:
    stance, agreement = _blend(factors)
    coverage = sum(factor.weight for factor in factors) / sum(weights.values())
    ranked = _ranked(factors)
    leaders = "; ".join(factor.point for factor in ranked[:2])
    return _note(
        role,
        symbol,
        stance=stance,
        confidence=_confidence(agreement, coverage, stance, cap=cap),
        summary=f"{label} stance {signed(round(stance, 2))} ({_lean(stance)}): {leaders}.",
        key_points=[factor.point for factor in ranked],
        subscores={factor.name: factor.score for factor in factors},
        evidence=[item for factor in ranked for item in factor.evidence],
        time_horizon=time_horizon,
    )


def _empty_note(role: str, symbol: str, summary: str, evidence: Sequence[str]) -> AnalystNote:
    return _note(
        role,
        symbol,
        stance=0.0,
        confidence=ABSTAIN_CONFIDENCE,
        summary=summary,
        key_points=[summary],
        subscores={},
        evidence=evidence,
        time_horizon="",
    )


def _macro_evidence(macro: Sequence[Mapping[str, Any]], limit: int = 2) -> list[str]:
    return [
        f"{reading['code']}={fmt(reading['value'])} (change {signed(reading['change'])})" for reading in macro[:limit]
    ]


# --- technical -----------------------------------------------------------------------------------

TECHNICAL_WEIGHTS: dict[str, float] = {
    "trend": 0.35,
    "macd": 0.2,
    "rsi": 0.15,
    "bollinger": 0.1,
    "levels": 0.1,
    "forecast": 0.1,
}
_MOVING_AVERAGES = (("sma_20", "SMA20"), ("sma_50", "SMA50"), ("sma_200", "SMA200"))


def _trend(tech: Evidence) -> _Factor | None:
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
    return _Factor("trend", score, TECHNICAL_WEIGHTS["trend"], f"Trend {direction}: {cited[0]}", tuple(cited))


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


def _rsi(tech: Evidence) -> _Factor | None:
    rsi = tech.get("rsi_14")
    if rsi is None:
        return None
    score, reading = _rsi_reading(rsi)
    cited = f"RSI(14)={fmt(rsi)}"
    return _Factor("rsi", score, TECHNICAL_WEIGHTS["rsi"], f"{cited}: {reading}", (cited,))


def _macd(tech: Evidence) -> _Factor | None:
    hist, line, signal = tech.get("macd_hist"), tech.get("macd_line"), tech.get("macd_signal")
    if hist is None or line is None:
        return None
    score = 0.7 * _sign(hist) + 0.3 * _sign(line)
    cited = f"MACD hist {signed(hist)} (line {signed(line)}, signal {signed(signal)})"
    side = "above" if hist > 0 else "below" if hist < 0 else "on"
    return _Factor("macd", score, TECHNICAL_WEIGHTS["macd"], f"MACD {side} its signal: {cited}", (cited,))


def _bollinger(tech: Evidence) -> _Factor | None:
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
    return _Factor("bollinger", score, TECHNICAL_WEIGHTS["bollinger"], f"Close {reading}: {cited}", (cited,))


def _levels(tech: Evidence) -> _Factor | None:
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
    return _Factor("levels", score, TECHNICAL_WEIGHTS["levels"], f"{reading}: {cited[0]}", tuple(cited))


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


def _forecast(forecast: Evidence | None) -> _Factor | None:
    if not forecast:
        return None
    expected = forecast["expected_move_pct"]
    cited = (
        f"forecast expected move {signed(expected)}% (band {signed(forecast['low_move_pct'])}% to "
        f"{signed(forecast['high_move_pct'])}%) over {forecast['horizon_sessions']} sessions"
    )
    score = _clamp(expected / 5.0)
    return _Factor(
        "forecast", score, TECHNICAL_WEIGHTS["forecast"], f"Baseline drift: {cited} (evidence only)", (cited,)
    )


def technical_note(symbol: str, evidence: Evidence) -> AnalystNote:
    tech = evidence["technical"]
    forecast = evidence.get("forecast")
    readers: tuple[Callable[[Evidence], _Factor | None], ...] = (_trend, _macd, _rsi, _bollinger, _levels)
    factors = [factor for factor in (*(read(tech) for read in readers), _forecast(forecast)) if factor]
    if not factors:
        return _empty_note(
            "technical", symbol, "Not enough price history for any indicator.", [f"bars_used={tech['bars_used']}"]
        )
    note = _note_from_factors(
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
    return note


# --- news and sentiment --------------------------------------------------------------------------

# Results and broker actions move a stock more than background macro news does.
CLASS_WEIGHTS: dict[str, float] = {
    "earnings": 1.5,
    "rating": 1.5,
    "guidance": 1.3,
    "regulatory": 1.3,
    "other": 1.0,
    "macro": 0.7,
}
MARKET_SCOPE_WEIGHT = 0.5
MAX_CITED_HEADLINES = 6


def _item_weight(item: Evidence) -> float:
    scope = MARKET_SCOPE_WEIGHT if item["scope"] == "market" else 1.0
    return item["recency_weight"] * scope * CLASS_WEIGHTS.get(item["event_class"], 1.0)


def _headline_citation(index: int, item: Evidence) -> str:
    # Cited by number, class and score, never by text: the words are the feed's, not evidence.
    return (
        f"h{index}: {item['event_class']}, sentiment {signed(item['sentiment'])}, "
        f"recency_weight {fmt(item['recency_weight'])}, {str(item['published_at'])[:10]}"
    )


def _class_factors(items: Sequence[Evidence]) -> list[_Factor]:
    factors: list[_Factor] = []
    for event_class in sorted({item["event_class"] for item in items}):
        members = [item for item in items if item["event_class"] == event_class]
        weight = sum(_item_weight(item) for item in members)
        if weight <= 0:
            continue
        score = sum(_item_weight(item) * item["sentiment"] for item in members) / weight
        point = (
            f"{event_class.capitalize()} news leans {_lean(score)} "
            f"({len(members)} {'item' if len(members) == 1 else 'items'}, weighted {signed(round(score, 2))})"
        )
        factors.append(_Factor(event_class, score, weight, point, ()))
    return factors


def _news_citations(news: Evidence) -> list[str]:
    """The totals, then the headlines that moved the score most (by weight × |sentiment|)."""
    counts = " ".join(f"{name}={count}" for name, count in sorted(news["by_class"].items()) if count)
    numbered = list(enumerate(news["items"], start=1))
    strongest = sorted(numbered, key=lambda pair: (-_item_weight(pair[1]) * abs(pair[1]["sentiment"]), pair[0]))
    headlines = [_headline_citation(index, item) for index, item in strongest[:MAX_CITED_HEADLINES]]
    return [_news_totals(news), f"by_class {counts}", *headlines]


def _news_totals(news: Evidence) -> str:
    return (
        f"net_sentiment={signed(news['net_sentiment'])} over {news['unique_count']} unique items "
        f"({news['raw_count']} raw)"
    )


def news_note(symbol: str, evidence: Evidence) -> AnalystNote:
    news = evidence["news"]
    if not news["items"]:
        return _empty_note("news", symbol, "No news in the lookback window.", [_news_totals(news)])
    classes = _class_factors(news["items"])
    if not classes:  # every recency weight has decayed to zero
        return _empty_note("news", symbol, "The news in the window is too old to weigh.", [_news_totals(news)])
    net = news["net_sentiment"]
    event_weighted, agreement = _blend(classes)
    stance = 0.5 * net + 0.5 * event_weighted
    # More unique stories that agree make a surer read; one headline is a thin one.
    depth = min(1.0, news["unique_count"] / 5)
    confidence = round(_clamp(0.1 + 0.6 * depth * (0.4 + 0.6 * agreement), 0.1, 0.8), 2)
    ranked = _ranked(classes)
    return _note(
        "news",
        symbol,
        stance=stance,
        confidence=confidence,
        summary=f"News stance {signed(round(stance, 2))} ({_lean(stance)}): {ranked[0].point}.",
        key_points=[*[factor.point for factor in ranked][:6], f"Recency-weighted {_news_totals(news)}"],
        subscores={"net_sentiment": net, "event_weighted": event_weighted} | {f.name: f.score for f in classes},
        evidence=_news_citations(news),
        time_horizon="days",
    )


def sentiment_note(symbol: str, evidence: Evidence) -> AnalystNote:
    """Positioning only. News tone is the news analyst's vote; reading it again here would count one
    signal family twice in calibration. The bundle carries no positioning figures yet, so this note
    stays neutral (and without a wired feed the analyst abstains before any model is asked)."""
    sentiment = evidence["sentiment"]
    wired = f"positioning_feed_wired={fmt(sentiment['positioning_feed_wired'])}"
    return _empty_note(
        "sentiment",
        symbol,
        "No positioning figures to read; news tone is the news analyst's vote and is not re-counted.",
        [wired, *_macro_evidence(evidence.get("macro", []))],
    )


# --- fundamentals --------------------------------------------------------------------------------

FUNDAMENTAL_WEIGHTS: dict[str, float] = {"valuation": 0.4, "growth": 0.35, "margin": 0.25}


def _pe_score(pe: float) -> float:
    # A sector-agnostic band: under 15 is cheap, 15-30 fair, over 40 rich; a loss (P/E ≤ 0) is a minus.
    if pe <= 0:
        return -0.5
    if pe < 15:
        return 0.6
    if pe <= 30:
        return 0.0
    if pe <= 40:
        return -0.3
    return -0.6


def _valuation(data: Evidence) -> _Factor | None:
    readings: list[tuple[float, str]] = []
    if data.get("pe") is not None:
        readings.append((_pe_score(data["pe"]), f"P/E {fmt(data['pe'])}"))
    if data.get("pb") is not None:
        pb = data["pb"]
        readings.append((0.3 if pb < 1.5 else -0.3 if pb > 6 else 0.0, f"P/B {fmt(pb)}"))
    if data.get("ev_ebitda") is not None:
        multiple = data["ev_ebitda"]
        readings.append((0.4 if 0 < multiple < 10 else -0.4 if multiple > 25 else 0.0, f"EV/EBITDA {fmt(multiple)}"))
    if not readings:
        return None
    score = sum(value for value, _ in readings) / len(readings)
    label = "cheap" if score > 0.1 else "rich" if score < -0.1 else "fair"
    cited = tuple(text for _, text in readings)
    return _Factor(
        "valuation", score, FUNDAMENTAL_WEIGHTS["valuation"], f"Valuation looks {label}: {', '.join(cited)}", cited
    )


def _growth(data: Evidence) -> _Factor | None:
    growth = data.get("revenue_growth_pct")
    if growth is None:
        return None
    score = 0.6 if growth > 10 else 0.2 if growth >= 0 else -0.6
    label = "strong" if growth > 10 else "modest" if growth >= 0 else "shrinking"
    cited = f"revenue growth {signed(growth)}%"
    return _Factor("growth", score, FUNDAMENTAL_WEIGHTS["growth"], f"Growth is {label}: {cited}", (cited,))


def _margin(data: Evidence) -> _Factor | None:
    margin = data.get("net_margin_pct")
    if margin is None:
        return None
    score = 0.5 if margin > 15 else 0.1 if margin >= 5 else -0.4
    label = "high" if margin > 15 else "middling" if margin >= 5 else "thin"
    cited = f"net margin {fmt(margin)}%"
    return _Factor("margin", score, FUNDAMENTAL_WEIGHTS["margin"], f"Margins are {label}: {cited}", (cited,))


def fundamental_note(symbol: str, evidence: Evidence) -> AnalystNote:
    data = evidence["fundamentals"]
    if not data.get("available"):
        return _empty_note("fundamental", symbol, "No fundamentals source is wired.", ["available=false"])
    factors = [factor for factor in (_valuation(data), _growth(data), _margin(data)) if factor]
    if not factors:
        return _empty_note("fundamental", symbol, "The fundamentals source gave no ratios.", ["available=true"])
    return _note_from_factors(
        "fundamental", symbol, factors, FUNDAMENTAL_WEIGHTS, label="Fundamental", time_horizon="quarters", cap=0.75
    )


# --- debate --------------------------------------------------------------------------------------


def _voting(notes: Sequence[Evidence]) -> list[Evidence]:
    return [note for note in notes if not note.get("abstained")]


def _leaning(notes: Sequence[Evidence], side: str) -> list[Evidence]:
    """Notes on ``side``, strongest (stance × confidence) first; panel order breaks ties."""
    sign = 1.0 if side == "bull" else -1.0
    chosen = [(index, note) for index, note in enumerate(_voting(notes)) if sign * note["stance"] > 0]
    chosen.sort(key=lambda pair: (-abs(pair[1]["stance"]) * pair[1]["confidence"], pair[0]))
    return [note for _, note in chosen]


def _lead_point(note: Evidence) -> str:
    points = note.get("key_points") or [note.get("summary", "")]
    return points[0]


def _note_line(note: Evidence) -> str:
    return (
        f"{note['role']} stance {signed(note['stance'])} (confidence {fmt(note['confidence'])}): "
        f"{_short(_lead_point(note), 250)}"
    )


def _side_words(side: str) -> tuple[str, str, str]:
    """(direction, lean, the other side)."""
    return ("LONG", "bullish", "bear") if side == "bull" else ("SHORT", "bearish", "bull")


def _case(side: str, symbol: str, evidence: Evidence) -> BullCase | BearCase:
    notes = evidence.get("notes", [])
    direction, lean, other_side = _side_words(side)
    own, other = _leaning(notes, side), _leaning(notes, other_side)
    if own:
        points = [_note_line(note) for note in own]
        argument = (
            f"{direction} {symbol}: {len(own)} of {len(_voting(notes))} voting analysts lean {lean}, "
            f"led by {own[0]['role']} at stance {signed(own[0]['stance'])}."
        )
    else:
        points = [_fallback_point(side, notes)]
        argument = f"{direction} {symbol}: no analyst leans {lean}; argued from the data so the debate has two sides."
    risks = [f"{_side_words(other_side)[1].capitalize()} reading: {_note_line(note)}" for note in other]
    schema: type[BullCase] | type[BearCase] = BullCase if side == "bull" else BearCase
    return schema(
        symbol=symbol,
        argument=argument,
        supporting_points=[_short(point) for point in points][:8],
        risks=[_short(risk) for risk in risks][:8]
        or [f"No analyst argues against {direction} yet; thin evidence is itself a risk."],
    )


def _fallback_point(side: str, notes: Sequence[Evidence]) -> str:
    voting = _voting(notes)
    if not voting:
        return "No analyst took a side; this case is a default to be tested, not a signal."
    sign = 1.0 if side == "bull" else -1.0
    closest = max(enumerate(voting), key=lambda pair: (sign * pair[1]["stance"], -pair[0]))[1]
    return f"The least opposed reading is {_note_line(closest)}"


def bull_case(symbol: str, evidence: Evidence) -> BullCase:
    return _case("bull", symbol, evidence)  # type: ignore[return-value]


def bear_case(symbol: str, evidence: Evidence) -> BearCase:
    return _case("bear", symbol, evidence)  # type: ignore[return-value]


def _rebuttal(side: str, symbol: str, evidence: Evidence) -> BullCase | BearCase:
    own, other = evidence["own"], evidence["other"]
    other_side = _side_words(side)[2]
    own_points: list[str] = own["supporting_points"]
    answers = [
        f"Against the {other_side}'s '{_short(point, 150)}': {_short(own_points[index % len(own_points)], 220)}"
        for index, point in enumerate(other["supporting_points"][:2])
    ]
    argument = (
        f"{own['argument']} After rebuttal: the {other_side}'s top points are answered and its risks acknowledged."
    )
    schema: type[BullCase] | type[BearCase] = BullCase if side == "bull" else BearCase
    return schema(
        symbol=symbol,
        argument=_short(argument, 1000),
        supporting_points=[_short(point) for point in answers + own_points][:8],
        risks=own.get("risks", [])[:8],
    )


def bull_rebuttal(symbol: str, evidence: Evidence) -> BullCase:
    return _rebuttal("bull", symbol, evidence)  # type: ignore[return-value]


def bear_rebuttal(symbol: str, evidence: Evidence) -> BearCase:
    return _rebuttal("bear", symbol, evidence)  # type: ignore[return-value]


def _weighted_stance(voting: Sequence[Evidence]) -> float:
    total = sum(note["confidence"] for note in voting)
    if total <= 0:
        return 0.0
    return round(sum(note["confidence"] * note["stance"] for note in voting) / total, 6)


def _winner(mean: float, bull: Evidence, bear: Evidence) -> str:
    if mean != 0:
        return "LONG" if mean > 0 else "SHORT"
    # A dead heat goes to the side with more supporting points, then to LONG.
    return "SHORT" if len(bear["supporting_points"]) > len(bull["supporting_points"]) else "LONG"


def _falsifiers(winner: str, anchors: Evidence, notes: Sequence[Evidence], dissent: Sequence[Evidence]) -> list[str]:
    long_side = winner == "LONG"
    found: list[str] = []
    level = anchors.get("support") if long_side else anchors.get("resistance")
    if level is not None:
        found.append(f"close {'below support' if long_side else 'above resistance'} {fmt(level)}")
    if anchors.get("rsi_14") is not None:
        found.append("RSI(14) falls under 40" if long_side else "RSI(14) rises above 60")
    if any(note["role"] == "news" and not note.get("abstained") for note in notes):
        found.append(f"net news sentiment turns {'negative' if long_side else 'positive'}")
    if dissent:
        found.append(f"the strongest dissent proves right: {_note_line(dissent[0])}")
    return found


def manager_result(symbol: str, evidence: Evidence) -> DebateResult:
    notes, bull, bear = evidence["notes"], evidence["bull"], evidence["bear"]
    voting = _voting(notes)
    mean = _weighted_stance(voting)
    winner = _winner(mean, bull, bear)
    winning_sign = 1.0 if winner == "LONG" else -1.0
    agreeing = [note for note in voting if winning_sign * note["stance"] > 0]
    agreement = len(agreeing) / len(voting) if voting else 0.0
    conviction = round(_clamp(0.2 + 0.5 * min(1.0, abs(mean) / 0.5) + 0.25 * agreement, 0.05, 0.95), 2)
    winning = bull if winner == "LONG" else bear
    dissent = _leaning(notes, "bear" if winner == "LONG" else "bull")
    rationale = (
        f"{winner} wins: confidence-weighted mean stance {signed(mean)} across {len(voting)} voting analysts, "
        f"{len(agreeing)} agreeing. {_short(winning['argument'], 600)}"
    )
    disagreements = [f"Dissent: {_note_line(note)}" for note in dissent] or [f"No voting analyst opposes {winner}."]
    return DebateResult(
        symbol=symbol,
        winner=winner,  # type: ignore[arg-type]
        conviction=conviction,
        proposed_conviction=conviction,
        manager_rationale=_short(rationale, 1000),
        key_disagreements=[_short(point) for point in disagreements][:8],
        falsifiers=_falsifiers(winner, evidence.get("anchors") or {}, notes, dissent)[:8],
        rebuttals=[f"bull: {_short(bull['argument'], 380)}", f"bear: {_short(bear['argument'], 380)}"],
    )


# --- trader and self-critique --------------------------------------------------------------------


def _placeholder_levels(direction: str, entry: float, atr: float | None) -> tuple[float, float]:
    """Stop 2×ATR away, target at 2R, as a trader reading the anchors would write them; code
    re-anchors them anyway. Without an ATR there is nothing honest to write, so it refuses."""
    if not atr or atr <= 0:
        raise ModelError("the offline trader needs a positive atr_14 anchor; it invents no stop")
    distance = 2 * atr
    if direction == "LONG":
        stop = max(entry - distance, entry * 0.01)
        target = entry + 2 * (entry - stop)
    else:
        stop = entry + distance
        target = max(entry - 2 * distance, entry * 0.01)
    return round(stop, 2), round(target, 2)


def trader_thesis(symbol: str, evidence: Evidence) -> TradeThesis:
    debate, anchors = evidence["debate"], evidence["anchors"]
    entry = anchors.get("last_price")
    if not entry or entry <= 0:
        raise ModelError("the offline trader needs a positive last_price anchor")
    direction = debate["winner"]
    stop, target = _placeholder_levels(direction, entry, anchors.get("atr_14"))
    risks = debate.get("key_disagreements") or ["the debate named no disagreement; thin evidence is a risk"]
    return TradeThesis(
        symbol=symbol,
        direction=direction,
        conviction=debate["conviction"],
        entry=round(entry, 2),
        target=target,
        stop=stop,
        horizon_sessions=HORIZON_SESSIONS,
        rationale=_short(
            f"{direction} as the debate decided (conviction {fmt(debate['conviction'])}): "
            f"{debate['manager_rationale']}",
            1000,
        ),
        invalidation_conditions=[_short(point) for point in debate.get("falsifiers", [])][:8],
        key_risks=[_short(point) for point in risks][:8],
        expected_horizon=f"{HORIZON_SESSIONS} sessions",
    )


def self_critique(symbol: str, evidence: Evidence) -> AnalystNote:
    note = AnalystNote.model_validate(evidence["note"])
    reason = _short(evidence.get("reason") or SELF_CRITIQUE_REASON)
    # Keep the schema's limit of eight points: the reason replaces the last one when full.
    points = [*note.key_points[:7], reason]
    return note.model_copy(update={"key_points": points, "model_used": OFFLINE_MODEL})


# --- reviewer ------------------------------------------------------------------------------------

# The approval screen's "high debate conviction" line: a stop-out above it is a calibration lesson.
HIGH_CONVICTION = 0.75
LOW_CONVICTION = 0.45
MAX_REVIEW_LESSONS = 3
# Beyond this multiple of the planned risk the stop did not fill at its price: the market gapped.
GAP_R = Decimal("-1.05")

# The rationale is model-written text. It is read only for these fixed trend phrasings and never
# quoted, so hostile text can at most choose between canned lessons, never put words in a review.
_SMA200 = r"sma[\s_-]?200"
_AGAINST_TREND: dict[str, re.Pattern[str]] = {
    "LONG": re.compile(
        rf"(?:below|under|<)\s*(?:the\s+|its\s+|a\s+)?(?:falling\s+|declining\s+)?{_SMA200}"
        rf"|(?:falling|declining)\s+{_SMA200}|{_SMA200}\s+(?:is\s+)?(?:falling|declining|sloping\s+down)"
        r"|\bdown-?trend\b",
        re.IGNORECASE,
    ),
    "SHORT": re.compile(
        rf"(?:above|over|>)\s*(?:the\s+|its\s+|a\s+)?(?:rising\s+)?{_SMA200}"
        rf"|rising\s+{_SMA200}|{_SMA200}\s+(?:is\s+)?(?:rising|sloping\s+up)"
        r"|\bup-?trend\b",
        re.IGNORECASE,
    ),
}


@dataclass(frozen=True)
class _ClosedTrade:
    """The reviewer's evidence, read once; every number stays the string the prompt printed."""

    symbol: str
    direction: str
    conviction: float
    rationale: str
    entry: str
    stop: str
    target: str
    exit_price: str
    exit_reason: str
    outcome: str
    pnl: str
    target_pct: str
    realised_pct: str
    realised_r: str

    @property
    def r_multiple(self) -> Decimal | None:
        try:
            return Decimal(self.realised_r)
        except (InvalidOperation, ValueError):
            return None

    @property
    def high_conviction(self) -> bool:
        return self.conviction >= HIGH_CONVICTION

    @property
    def against_trend(self) -> bool:
        pattern = _AGAINST_TREND.get(self.direction)
        return bool(pattern and pattern.search(self.rationale))


def _closed_trade(symbol: str, evidence: Evidence) -> _ClosedTrade:
    moves: Mapping[str, Any] = evidence.get("thesis_vs_outcome") or {}
    return _ClosedTrade(
        symbol=symbol,
        direction=str(evidence.get("direction", "")),
        conviction=float(evidence.get("conviction") or 0.0),
        rationale=str(evidence.get("rationale") or ""),
        entry=str(evidence.get("entry", "n/a")),
        stop=str(evidence.get("stop", "n/a")),
        target=str(evidence.get("target", "n/a")),
        exit_price=str(evidence.get("exit_price", "n/a")),
        exit_reason=str(evidence.get("exit_reason") or "unknown"),
        outcome=str(evidence.get("outcome", "")),
        pnl=str(evidence.get("realised_pnl", "n/a")),
        target_pct=str(moves.get("predicted_target_pct", "n/a")),
        realised_pct=str(moves.get("realised_pct", "n/a")),
        realised_r=str(moves.get("realised_r", "n/a")),
    )


_EXIT_WORDS: dict[str, tuple[str, str]] = {
    "target": ("reached its target", "target"),
    "stop": ("was stopped out", "stop"),
    "horizon": ("was closed at the end of its horizon", "target"),
    "manual": ("was closed by hand", "stop"),
}


def _what_happened(trade: _ClosedTrade) -> str:
    verb, level = _EXIT_WORDS.get(trade.exit_reason, (f"was closed ({trade.exit_reason})", "target"))
    level_price = trade.target if level == "target" else trade.stop
    return (
        f"{trade.direction} {trade.symbol} {verb}: exit {trade.exit_price} against entry {trade.entry} "
        f"({level} {level_price}), a {trade.realised_pct}% move ({trade.realised_r}R) for a realised P&L "
        f"of ₹{trade.pnl}."
    )


def _verdict(trade: _ClosedTrade) -> str:
    conviction = f"conviction {fmt(trade.conviction)}"
    if trade.outcome == "win":
        return f"The thesis ({conviction}) was realised: price moved the way the rationale said."
    if trade.outcome == "loss":
        reason = " and the rationale itself placed the entry against the SMA200 trend" if trade.against_trend else ""
        return f"The thesis ({conviction}) was falsified: price went against it{reason}."
    return (
        f"The thesis ({conviction}) neither worked nor failed: price moved {trade.realised_pct}% where the "
        f"target needed {trade.target_pct}%."
    )


def _win_lessons(trade: _ClosedTrade) -> list[str]:
    if trade.exit_reason == "target":
        lessons = [
            f"What worked: the target {trade.target_pct}% from entry was reached for {trade.realised_r}R; keep "
            f"this stop and target geometry for similar {trade.direction} setups."
        ]
    else:
        lessons = [
            f"The direction was right but the move ({trade.realised_pct}%) fell short of the target "
            f"({trade.target_pct}%) before the {trade.exit_reason} exit; set targets the horizon can reach."
        ]
    if trade.conviction < LOW_CONVICTION:
        lessons.append(
            f"A low-conviction call ({fmt(trade.conviction)}) won; one win is not a reason to raise conviction "
            "on this setup."
        )
    return lessons


def _loss_lessons(trade: _ClosedTrade) -> list[str]:
    lessons: list[str] = []
    if trade.against_trend:
        trend = "a falling" if trade.direction == "LONG" else "a rising"
        lessons.append(
            f"Trend filter: a {trade.direction} taken against {trend} SMA200 was falsified; take "
            f"{trade.direction} trades with price on the trend's side of the SMA200, or cut conviction for "
            "counter-trend entries."
        )
    if trade.high_conviction:
        lessons.append(
            f"Conviction {fmt(trade.conviction)} was not earned: a high-conviction {trade.direction} that ended at "
            f"{trade.realised_r}R calls for a recheck of the evidence behind the score, not a larger size."
        )
    lessons.append(_loss_exit_lesson(trade))
    return lessons


def _loss_exit_lesson(trade: _ClosedTrade) -> str:
    r_multiple = trade.r_multiple
    if trade.exit_reason == "stop" and r_multiple is not None and r_multiple < GAP_R:
        return (
            f"The exit at {trade.realised_r}R was worse than the planned -1.00R: price gapped through the "
            f"stop {trade.stop}, so gap risk belongs in the position size."
        )
    if trade.exit_reason == "stop":
        return (
            f"The stop {trade.stop} capped the loss at {trade.realised_r}R as planned; the entry needs one more "
            "confirming signal before this setup is repeated."
        )
    if trade.exit_reason == "manual":
        return (
            f"Closed by hand at {trade.realised_r}R before the stop; write down why, so the reason can become a rule."
        )
    return (
        f"Price drifted {trade.realised_pct}% against the thesis without reaching the stop or the target; cut a "
        "thesis that shows no progress toward its target before the horizon runs out."
    )


def _scratch_lessons(trade: _ClosedTrade) -> list[str]:
    if trade.exit_reason == "horizon":
        lessons = [
            f"Thesis had no catalyst within the horizon: price moved {trade.realised_pct}% where the target "
            f"needed {trade.target_pct}%; require a dated catalyst or a shorter horizon."
        ]
    elif trade.exit_reason == "manual":
        lessons = [
            f"Closed by hand near flat (₹{trade.pnl}); an exit with no falsifier hit teaches little unless its "
            "reason is written down."
        ]
    else:
        lessons = [
            f"The {trade.exit_reason} exit at {trade.exit_price} left only ₹{trade.pnl} after costs; levels this "
            "close to entry are too tight for the charges."
        ]
    if trade.high_conviction:
        lessons.append(f"Conviction {fmt(trade.conviction)} was too high for a trade that went nowhere.")
    return lessons


_LESSONS_BY_OUTCOME: dict[str, Callable[[_ClosedTrade], list[str]]] = {
    "win": _win_lessons,
    "loss": _loss_lessons,
    "scratch": _scratch_lessons,
}


def reviewer_draft(symbol: str, evidence: Evidence) -> TradeReviewDraft:
    """A critique and one to three lessons from the facts alone: what happened, then the verdict."""
    trade = _closed_trade(symbol, evidence)
    lessons = _LESSONS_BY_OUTCOME.get(trade.outcome, _scratch_lessons)(trade)
    return TradeReviewDraft(
        symbol=symbol,
        critique=_short(f"{_what_happened(trade)} {_verdict(trade)}", 1000),
        lessons=[_short(lesson) for lesson in lessons][:MAX_REVIEW_LESSONS],
    )


_RULES: dict[str, Callable[[str, Evidence], BaseModel]] = {
    "news": news_note,
    "sentiment": sentiment_note,
    "technical": technical_note,
    "fundamental": fundamental_note,
    "bull": bull_case,
    "bear": bear_case,
    "bull_rebuttal": bull_rebuttal,
    "bear_rebuttal": bear_rebuttal,
    "manager": manager_result,
    "trader": trader_thesis,
    "self_critique": self_critique,
    "reviewer": reviewer_draft,
}
