"""Stage 5, the research manager: judges the rebutted bull and bear cases against the analyst panel.

It runs on the deep tier and picks the winner, a conviction, the key disagreements and what would
falsify the call. Its conviction is only proposed: the orchestrator calibrates ``conviction``
afterwards and keeps the model's number in ``proposed_conviction`` for audit. Which cases were
judged (``rebuttals``) is written by code from those cases, never taken from the reply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import Field

from agents.domain.hygiene import fence
from agents.domain.llm import Budget, ModelChoice, ModelRequest, NullRecorder, Recorder, RetryPolicy
from agents.domain.playbook import PlaybookRule
from agents.roles._base import (
    Evidence,
    Point,
    RoleOutput,
    ShortText,
    Unit,
    ask,
    build_request,
    clamp,
    clip,
    fenced,
    first_sentence,
    fmt,
    guard,
    pairs,
    short,
    signed,
)
from agents.roles._panel_view import debate_panel, dump_notes, leaning, note_line, note_numbers, panel_points, voting
from agents.roles._playbook import codes_cited, note_drivers, with_codes
from agents.roles.analysts import AnalystNote
from agents.roles.anchors import without_forecast_anchors
from agents.roles.researchers import BearCase, BullCase, case_lines
from vocabulary.trade import Direction

JOB = (
    "You are the Research Manager. Judge the rebutted bull and bear cases against the analyst panel, "
    "pick the winner, state your conviction, the key disagreements and what would falsify the call."
)


class DebateResult(RoleOutput):
    symbol: str = Field(min_length=1, max_length=32)
    winner: Direction
    conviction: Unit = Field(description="after calibration by code")
    proposed_conviction: Unit | None = Field(default=None, description="the model's own number, kept for audit")
    manager_rationale: ShortText
    key_disagreements: list[Point] = Field(default_factory=list, max_length=8)
    falsifiers: list[Point] = Field(default_factory=list, max_length=8)
    rebuttals: list[Point] = Field(default_factory=list, max_length=4, description="the rebutted cases judged")


# --- the prompt ----------------------------------------------------------------------------------


def _note_text_lines(notes: Sequence[AnalystNote]) -> list[str]:
    return [f"{note.role} summary: {note.summary}" for note in notes] + panel_points(notes)


def manager_request(
    notes: Sequence[AnalystNote],
    bull: BullCase,
    bear: BearCase,
    *,
    anchors: Mapping[str, float | int | None] | None = None,
    memory_block: str = "",
    playbook: Sequence[PlaybookRule] = (),
) -> ModelRequest:
    """All notes and both rebutted cases; the levels (when given) let falsifiers cite real prices.
    Forecast anchors are dropped here: the forecast is the technical analyst's and the trader's."""
    panel = debate_panel(notes)
    symbol = bull.symbol
    levels = without_forecast_anchors(anchors or {})
    sections = [
        f"symbol={symbol}",
        "analyst panel:\n" + ("\n".join(note_numbers(note) for note in panel) or "(none)"),
        f"analyst summaries and key points (model-written):\n{fenced(_note_text_lines(panel))}",
        f"bull case after rebuttal (model-written):\n{fence(case_lines(bull))}",
        f"bear case after rebuttal (model-written):\n{fence(case_lines(bear))}",
        f"levels: {pairs(levels)}" if levels else "",
        f"Task: Judge the debate; winner is LONG or SHORT. Set symbol to {symbol}.",
    ]
    evidence = {
        "symbol": symbol,
        "notes": dump_notes(panel),
        "bull": bull.model_dump(mode="json"),
        "bear": bear.model_dump(mode="json"),
        "anchors": levels,
    }
    return build_request(
        "manager",
        JOB,
        symbol,
        DebateResult,
        sections,
        evidence,
        memory_block=memory_block,
        tier="deep",
        playbook=playbook,
    )


# --- the offline rules ---------------------------------------------------------------------------


def _weighted_stance(votes: Sequence[Evidence]) -> float:
    total = sum(note["confidence"] for note in votes)
    if total <= 0:
        return 0.0
    return round(sum(note["confidence"] * note["stance"] for note in votes) / total, 6)


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
        found.append(f"the strongest dissent proves right: {note_line(dissent[0])}")
    return found


def _verdict_prose(
    winner: str,
    symbol: str,
    mean: float,
    votes: Sequence[Evidence],
    agreeing: Sequence[Evidence],
    dissent: Sequence[Evidence],
    conviction: float,
) -> str:
    """The verdict in the manager's own words, from the panel's figures (never a case's sentences):
    first the call and what carried it, in one sentence (the thesis page shows it as the why), then
    how far the panel agrees and what the strongest dissent says."""
    side = "bull" if winner == "LONG" else "bear"
    lead = leaning(votes, side)
    carried = (
        f"the {lead[0]['role']} reading (stance {signed(lead[0]['stance'])}, "
        f"confidence {fmt(lead[0]['confidence'])}) carries it"
        if lead
        else "no analyst leans either way, so the call is a tie-break"
    )
    first = (
        f"{winner} {symbol}: {carried}, for a confidence-weighted mean stance of {signed(mean)} "
        f"across {len(votes)} voting analysts."
    )
    agreement = f"{len(agreeing)} of {len(votes)} agree" if votes else "No analyst voted"
    if dissent:
        against = (
            f"the strongest dissent is the {dissent[0]['role']} reading at stance {signed(dissent[0]['stance'])} "
            f"(confidence {fmt(dissent[0]['confidence'])}), which would need to grow to turn the call"
        )
    else:
        against = "no voting analyst dissents"
    return f"{first} {agreement}; {against}. Proposed conviction {fmt(conviction)}."


def manager_result(symbol: str, evidence: Evidence) -> DebateResult:
    """The confidence-weighted mean stance of the voting analysts picks the winner; agreement and
    the size of the lean set the conviction."""
    notes, bull, bear = evidence["notes"], evidence["bull"], evidence["bear"]
    votes = voting(notes)
    mean = _weighted_stance(votes)
    winner = _winner(mean, bull, bear)
    winning_sign = 1.0 if winner == "LONG" else -1.0
    agreeing = [note for note in votes if winning_sign * note["stance"] > 0]
    agreement = len(agreeing) / len(votes) if votes else 0.0
    conviction = round(clamp(0.2 + 0.5 * min(1.0, abs(mean) / 0.5) + 0.25 * agreement, 0.05, 0.95), 2)
    dissent = leaning(notes, "bear" if winner == "LONG" else "bull")
    rationale = _verdict_prose(winner, symbol, mean, votes, agreeing, dissent, conviction)
    disagreements = [f"Dissent: {note_line(note)}" for note in dissent] or [f"No voting analyst opposes {winner}."]
    # The playbook's rules tied to what drove the winning side, and to the dissent when there is one.
    drivers = [driver for note in agreeing for driver in note_drivers(note)] + (["dissent"] if dissent else [])
    return DebateResult(
        symbol=symbol,
        winner=winner,  # type: ignore[arg-type]
        conviction=conviction,
        proposed_conviction=conviction,
        manager_rationale=with_codes(short(rationale, 1000), codes_cited(evidence, drivers), 1000),
        key_disagreements=[short(point) for point in disagreements][:8],
        falsifiers=_falsifiers(winner, evidence.get("anchors") or {}, notes, dissent)[:8],
        rebuttals=[f"bull: {short(bull['argument'], 380)}", f"bear: {short(bear['argument'], 380)}"],
    )


# --- the stage -----------------------------------------------------------------------------------


def judge(
    choice: ModelChoice,
    notes: Sequence[AnalystNote],
    bull: BullCase,
    bear: BearCase,
    *,
    anchors: Mapping[str, float | int | None] | None = None,
    memory_block: str = "",
    playbook: Sequence[PlaybookRule] = (),
    recorder: Recorder | None = None,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
) -> DebateResult:
    """The research manager on the deep tier. The model's conviction is kept in both fields; the
    orchestrator calibrates ``conviction`` afterwards and leaves ``proposed_conviction`` for audit.
    ``rebuttals`` records which cases were judged, so code writes it from those cases."""
    request = manager_request(notes, bull, bear, anchors=anchors, memory_block=memory_block, playbook=playbook)
    result, _ = ask(
        choice,
        request,
        DebateResult,
        recorder=recorder or NullRecorder(),
        budget=budget,
        retry=retry,
        validate=guard(bull.symbol),
    )
    return result.model_copy(update={"proposed_conviction": result.conviction, "rebuttals": judged_cases(bull, bear)})


def judged_cases(bull: BullCase, bear: BearCase) -> list[str]:
    """One line per rebutted case the manager was handed: its side and its argument's first sentence."""
    return [clip(f"{side}: {first_sentence(case.argument)}") for side, case in (("bull", bull), ("bear", bear))]
