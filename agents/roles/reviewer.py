"""Stage 12, the reviewer: critiques a closed trade against what happened and writes its lessons.

The facts (outcome, realised P&L, signal evolution, the predicted-vs-realised moves) are computed
by code before the reviewer runs (``reviews.domain.outcomes``). A model writes only a critique and
lessons (``TradeReviewDraft`` has no field that could carry an outcome); code assembles the review
around them (``assemble_review``) and writes the one memory line and its tags. The reviewer never
fails: without a valid draft the offline rules write one, because a closed position must always
leave a lesson in memory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import Field

from agents.domain.hygiene import neutralise
from agents.domain.llm import Budget, ModelChoice, ModelRequest, NullRecorder, Recorder, RetryPolicy, StageFailed
from agents.roles._base import (
    OFFLINE_MODEL,
    Evidence,
    Point,
    RoleOutput,
    ShortText,
    ask,
    build_request,
    fenced,
    first_sentence,
    fmt,
    guard,
    pairs,
    short,
)
from vocabulary.trade import Direction, Outcome, SignalEvolution

JOB = (
    "You are the Reviewer. A position has closed. Critique the thesis against what happened: what it "
    "got right, what it got wrong, and write one to five short, actionable lessons for future runs. "
    "The outcome, the realised P&L and the predicted-vs-realised moves are facts computed by code: "
    "reason from them, never dispute them, and restate no other outcome or P&L."
)
MODEL_USED_CHARS = 200


class TradeReviewDraft(RoleOutput):
    """All a model may author about a closed trade. No outcome, P&L or signal field on purpose:
    those are facts, and ``extra="forbid"`` rejects a reply that tries to supply them."""

    symbol: str = Field(min_length=1, max_length=32)
    critique: ShortText = Field(description="what the thesis got right and wrong, against the given outcome")
    lessons: list[Point] = Field(min_length=1, max_length=5, description="short, actionable takeaways")


class TradeReview(RoleOutput):
    """The review as code assembles it: facts copied from code, critique and lessons from the draft."""

    symbol: str = Field(min_length=1, max_length=32)
    direction: Direction
    outcome: Outcome
    realised_pnl: str = Field(min_length=1, max_length=32, description="rupees, as a decimal string")
    signal_evolution: SignalEvolution
    thesis_vs_outcome: dict[str, str] = Field(default_factory=dict)
    critique: ShortText
    lessons: list[Point] = Field(min_length=1, max_length=5)
    memory_text: str = Field(min_length=1, max_length=1500, description="the one line written to memory")
    memory_tags: dict[str, str] = Field(default_factory=dict)
    model_used: str = Field(default="", max_length=200)


@dataclass(frozen=True)
class ReviewFacts:
    """A closed trade as code knows it. Outcome, P&L and signal are computed from numbers
    (``reviews.domain.outcomes``) before the reviewer runs, and no model output can change them."""

    symbol: str
    direction: Direction
    entry: Decimal
    stop: Decimal
    target: Decimal
    conviction: Decimal | float
    rationale: str
    exit_price: Decimal
    exit_reason: str
    outcome: Outcome
    realised_pnl: Decimal
    signal_evolution: SignalEvolution
    thesis_vs_outcome: dict[str, str] = field(hash=False)  # a dict cannot be hashed


# --- the prompt ----------------------------------------------------------------------------------


def _money(value: Decimal | float) -> str:
    """Prices and rupees at two decimals, so Decimal rows and float theses print alike."""
    return f"{Decimal(str(value)):.2f}"


def reviewer_request(
    *,
    symbol: str,
    direction: str,
    entry: Decimal | float,
    stop: Decimal | float,
    target: Decimal | float,
    conviction: Decimal | float,
    rationale: str,
    exit_price: Decimal | float,
    exit_reason: str,
    outcome: str,
    realised_pnl: Decimal | float,
    thesis_vs_outcome: Mapping[str, str],
    memory_block: str = "",
) -> ModelRequest:
    """The closed trade: the thesis numbers, its rationale (model-written, so fenced) and the outcome
    facts. Every number is handed over; the model writes only a critique and lessons."""
    levels = {"entry": _money(entry), "stop": _money(stop), "target": _money(target)}
    closed = {
        "outcome": outcome,
        "exit_reason": exit_reason or "unknown",
        "exit_price": _money(exit_price),
        "realised_pnl": _money(realised_pnl),
    }
    # Computed by code, but typed as free strings: neutralised like any text printed outside a fence.
    moves = {neutralise(str(key)): neutralise(str(value)) for key, value in thesis_vs_outcome.items()}
    sections = [
        f"symbol={symbol}",
        f"thesis: direction={direction} conviction={fmt(float(conviction))} {pairs(levels)}",
        f"thesis rationale (model-written):\n{fenced([rationale] if rationale.strip() else [])}",
        f"outcome (facts computed by code; realised_pnl in rupees, net of costs): {pairs(closed)}",
        f"predicted vs realised (% price moves from entry; realised_r in multiples of the risk): {pairs(moves)}",
        "Task: Critique the thesis against this outcome and give one to five lessons. Cite only the numbers "
        f"above; do not restate the outcome or the P&L as anything else. Set symbol to {symbol}.",
    ]
    evidence = {
        "symbol": symbol,
        "direction": direction,
        **levels,
        "conviction": float(conviction),
        "rationale": rationale,
        **closed,
        "thesis_vs_outcome": dict(moves),
    }
    return build_request("reviewer", JOB, symbol, TradeReviewDraft, sections, evidence, memory_block=memory_block)


# --- the offline rules ---------------------------------------------------------------------------

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
        critique=short(f"{_what_happened(trade)} {_verdict(trade)}", 1000),
        lessons=[short(lesson) for lesson in lessons][:MAX_REVIEW_LESSONS],
    )


# --- the stage -----------------------------------------------------------------------------------


def review_trade(
    choice: ModelChoice,
    *,
    facts: ReviewFacts,
    memory_block: str = "",
    recorder: Recorder | None = None,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
) -> TradeReview:
    """The reviewer writes a critique and lessons; code assembles the review around them.

    Never fails: a model that cannot give a valid, on-ticker draft (or a spent budget) falls back
    to the offline rules, because a closed position must always leave a lesson in memory."""
    request = review_request(facts, memory_block)
    try:
        draft, model = ask(
            choice,
            request,
            TradeReviewDraft,
            recorder=recorder or NullRecorder(),
            budget=budget,
            retry=retry,
            validate=guard(facts.symbol),
        )
    except StageFailed as failure:
        draft = reviewer_draft(facts.symbol, request.evidence)
        model = _fallback_label(failure.reason)
    return assemble_review(facts, draft, model_used=model)


def review_request(facts: ReviewFacts, memory_block: str = "") -> ModelRequest:
    """The reviewer's call for one closed trade: the facts code computed, and the recalled lessons."""
    return reviewer_request(
        symbol=facts.symbol,
        direction=facts.direction,
        entry=facts.entry,
        stop=facts.stop,
        target=facts.target,
        conviction=facts.conviction,
        rationale=facts.rationale,
        exit_price=facts.exit_price,
        exit_reason=facts.exit_reason,
        outcome=facts.outcome,
        realised_pnl=facts.realised_pnl,
        thesis_vs_outcome=facts.thesis_vs_outcome,
        memory_block=memory_block,
    )


def _fallback_label(reason: str) -> str:
    label = f"{OFFLINE_MODEL} (fallback: {' '.join(reason.split())})"
    # The stored column holds 200 characters; the full reason is in the recorded calls.
    return label if len(label) <= MODEL_USED_CHARS else label[: MODEL_USED_CHARS - 2] + "…)"


def assemble_review(facts: ReviewFacts, draft: TradeReviewDraft, *, model_used: str) -> TradeReview:
    """Facts from ``facts``, words from ``draft``: the draft has no field that could carry an outcome."""
    return TradeReview(
        symbol=facts.symbol,
        direction=facts.direction,
        outcome=facts.outcome,
        realised_pnl=format(facts.realised_pnl, "f"),
        signal_evolution=facts.signal_evolution,
        thesis_vs_outcome=dict(facts.thesis_vs_outcome),
        critique=draft.critique,
        lessons=list(draft.lessons),
        memory_text=memory_text(draft),
        memory_tags=memory_tags(facts),
        model_used=model_used,
    )


def memory_text(draft: TradeReviewDraft) -> str:
    """One line for the memory store: the critique's first sentence, then the first lesson."""
    return f"{_sentence(first_sentence(draft.critique))} Lesson: {_sentence(draft.lessons[0])}"


def memory_tags(facts: ReviewFacts) -> dict[str, str]:
    """The tags hybrid retrieval matches a similar setup on; every value is a fact, none is the model's."""
    return {
        "direction": facts.direction,
        "symbol": facts.symbol,
        "outcome": facts.outcome,
        "signal": facts.signal_evolution.lower(),
        "exit": facts.exit_reason or "unknown",
    }


def _sentence(text: str) -> str:
    flat = " ".join(text.split())
    return flat if flat.endswith((".", "!", "?")) else f"{flat}."
