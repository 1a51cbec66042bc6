"""Stage 6, the trader: turns the debate result into a trade thesis.

The thesis it returns carries prices, but they are placeholders: the orchestrator re-anchors entry,
stop and target from the ATR (``trading.pipeline.domain.levels``), calibrates the conviction and
runs the validator. A high-conviction debate earns the deep model. The offline trader refuses
rather than invent a stop when it was handed no ATR.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Literal

from pydantic import Field

from agents.domain.hygiene import fence
from agents.domain.llm import Budget, ModelChoice, ModelError, ModelRequest, NullRecorder, Recorder, RetryPolicy, Tier
from agents.domain.playbook import PlaybookRule
from agents.roles._base import (
    Evidence,
    Point,
    RoleOutput,
    ShortText,
    Unit,
    ask,
    build_request,
    fmt,
    guard,
    pairs,
    short,
)
from agents.roles._panel_view import note_numbers, ordered
from agents.roles._playbook import codes_cited, with_codes
from agents.roles.analysts import AnalystNote
from agents.roles.manager import DebateResult
from vocabulary.trade import Direction

JOB = (
    "You are the Trader. Turn the debate result into a trade thesis: direction, conviction, entry, "
    "stop, target, horizon, rationale, invalidation conditions and key risks. Prices are re-anchored "
    "by code from the anchors given."
)
DEEP_CONVICTION = 0.75
HORIZON_SESSIONS = 10


class TradeThesis(RoleOutput):
    symbol: str = Field(min_length=1, max_length=32)
    direction: Direction
    conviction: Unit
    entry: float = Field(gt=0)
    target: float = Field(gt=0)
    stop: float = Field(gt=0)
    horizon_sessions: int = Field(ge=1, le=250)
    rationale: ShortText
    invalidation_conditions: list[Point] = Field(default_factory=list, max_length=8)
    key_risks: list[Point] = Field(default_factory=list, max_length=8)
    expected_horizon: str = Field(default="", max_length=100)
    levels_source: Literal["model", "atr-anchor"] = Field(
        default="model", description="atr-anchor once code has overwritten the prices"
    )


# --- the prompt ----------------------------------------------------------------------------------


def _debate_lines(debate: DebateResult) -> list[str]:
    return (
        [f"rationale: {debate.manager_rationale}"]
        + [f"disagreement: {point}" for point in debate.key_disagreements]
        + [f"falsifier: {point}" for point in debate.falsifiers]
    )


def trader_request(
    debate: DebateResult,
    notes: Sequence[AnalystNote],
    anchors: Mapping[str, float | int | None],
    *,
    tier: Tier = "default",
    memory_block: str = "",
    playbook: Sequence[PlaybookRule] = (),
) -> ModelRequest:
    """The debate result, the deterministic anchors and every analyst's stance and confidence."""
    panel = ordered(notes)
    symbol = debate.symbol
    levels = dict(anchors)
    sections = [
        f"symbol={symbol}",
        f"debate: winner={debate.winner} conviction={fmt(debate.conviction)}",
        f"debate text (model-written):\n{fence(_debate_lines(debate))}",
        f"anchors (forecast values are evidence only): {pairs(levels)}",
        "analyst panel:\n" + ("\n".join(note_numbers(note) for note in panel) or "(none)"),
        f"Task: Propose the trade thesis in the debate's direction. Set symbol to {symbol}.",
    ]
    evidence = {
        "symbol": symbol,
        "debate": debate.model_dump(mode="json"),
        "notes": [
            {"role": note.role, "stance": note.stance, "confidence": note.confidence, "abstained": note.abstained}
            for note in panel
        ],
        "anchors": levels,
    }
    return build_request(
        "trader", JOB, symbol, TradeThesis, sections, evidence, memory_block=memory_block, tier=tier, playbook=playbook
    )


# --- the offline rules ---------------------------------------------------------------------------


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
    """The debate's direction and conviction at the last price, with the debate's falsifiers as
    invalidation conditions and its disagreements as risks."""
    debate, anchors = evidence["debate"], evidence["anchors"]
    entry = anchors.get("last_price")
    if not entry or entry <= 0:
        raise ModelError("the offline trader needs a positive last_price anchor")
    direction = debate["winner"]
    stop, target = _placeholder_levels(direction, entry, anchors.get("atr_14"))
    risks = debate.get("key_disagreements") or ["the debate named no disagreement; thin evidence is a risk"]
    # The stop comes from the ATR (volatility); a voting analyst against the direction is dissent.
    dissent = any(
        not note.get("abstained") and (note["stance"] > 0 if direction == "SHORT" else note["stance"] < 0)
        for note in evidence.get("notes", [])
    )
    codes = codes_cited(evidence, ["volatility", *(["dissent"] if dissent else [])])
    return TradeThesis(
        symbol=symbol,
        direction=direction,
        conviction=debate["conviction"],
        entry=round(entry, 2),
        target=target,
        stop=stop,
        horizon_sessions=HORIZON_SESSIONS,
        rationale=with_codes(
            short(
                f"{direction} as the debate decided (conviction {fmt(debate['conviction'])}): "
                f"{debate['manager_rationale']}",
                1000,
            ),
            codes,
            1000,
        ),
        invalidation_conditions=[short(point) for point in debate.get("falsifiers", [])][:8],
        key_risks=[short(point) for point in risks][:8],
        expected_horizon=f"{HORIZON_SESSIONS} sessions",
    )


# --- the stage -----------------------------------------------------------------------------------


def propose_thesis(
    choice: ModelChoice,
    debate: DebateResult,
    notes: Sequence[AnalystNote],
    anchors: Mapping[str, float | int | None],
    *,
    other_symbols: Collection[str] = (),
    memory_block: str = "",
    playbook: Sequence[PlaybookRule] = (),
    recorder: Recorder | None = None,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
) -> TradeThesis:
    """The trader; a high-conviction debate earns the deep model. With ``other_symbols`` (the rest
    of the universe) the thesis text may not name another instrument either."""
    tier: Tier = "deep" if debate.conviction >= DEEP_CONVICTION else "default"
    request = trader_request(debate, notes, anchors, tier=tier, memory_block=memory_block, playbook=playbook)
    thesis, _ = ask(
        choice,
        request,
        TradeThesis,
        recorder=recorder or NullRecorder(),
        budget=budget,
        retry=retry,
        validate=guard(debate.symbol, other_symbols=other_symbols),
    )
    return thesis
