"""Stage 5, the researchers: the bull builds the case for LONG and the bear the case for SHORT, then
each rebuts the other once.

Pass 1 (``build_cases``): each side sees its own analysts' numbers and the panel's key points; both
run at once, and either failing fails the stage. Pass 2 (``rebut_cases``): each side sees both cases
and answers the other's strongest points; a side whose rebuttal fails keeps its first case. The
offline rules argue from the panel's stances and never quote a headline.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from agents.domain.hygiene import fence
from agents.domain.llm import Budget, ModelChoice, ModelRequest, NullRecorder, Recorder, RetryPolicy, StageFailed
from agents.domain.playbook import PlaybookRule
from agents.roles._base import (
    Evidence,
    Point,
    RoleOutput,
    ShortText,
    ask,
    base_evidence,
    build_request,
    fenced,
    guard,
    header,
    pair,
    short,
    signed,
)
from agents.roles._panel_view import (
    Side,
    debate_panel,
    dump_notes,
    is_on_side,
    leaning,
    note_line,
    note_numbers,
    panel_points,
    voting,
)
from agents.roles._playbook import codes_cited, note_drivers, with_codes
from agents.roles.analysts import AnalystNote
from vocabulary.features import FeatureBundle

JOBS: dict[str, str] = {
    "bull": "You are the Bull Researcher. Build the strongest case for LONG, and acknowledge the real risks.",
    "bear": "You are the Bear Researcher. Build the strongest case for SHORT, and acknowledge the real upside risks.",
    "bull_rebuttal": (
        "You are the Bull Researcher in the rebuttal round. Sharpen your case so its points answer the "
        "bear's strongest points directly."
    ),
    "bear_rebuttal": (
        "You are the Bear Researcher in the rebuttal round. Sharpen your case so its points answer the "
        "bull's strongest points directly."
    ),
}


ARGUMENT_LIMIT = 1000  # the schema's limit on an argument


class BullCase(RoleOutput):
    symbol: str = Field(min_length=1, max_length=32)
    argument: ShortText = Field(description="the case for LONG")
    supporting_points: list[Point] = Field(min_length=1, max_length=8)
    risks: list[Point] = Field(default_factory=list, max_length=8, description="risks acknowledged even as a bull")


class BearCase(RoleOutput):
    symbol: str = Field(min_length=1, max_length=32)
    argument: ShortText = Field(description="the case for SHORT")
    supporting_points: list[Point] = Field(min_length=1, max_length=8)
    risks: list[Point] = Field(default_factory=list, max_length=8, description="upside risks acknowledged as a bear")


# --- the prompts ---------------------------------------------------------------------------------


def case_request(
    side: Side,
    notes: Sequence[AnalystNote],
    bundle: FeatureBundle,
    *,
    memory_block: str = "",
    playbook: Sequence[PlaybookRule] = (),
) -> ModelRequest:
    """Pass 1: one side's notes with their numbers, and up to two key points from every analyst."""
    panel = debate_panel(notes)
    own = [note for note in panel if is_on_side(note, side)]
    lean = "bullish (stance > 0)" if side == "bull" else "bearish (stance < 0)"
    own_text = "\n".join(note_numbers(note) for note in own) or "(none: argue from the panel's data anyway)"
    direction = "LONG" if side == "bull" else "SHORT"
    sections = [
        header(bundle),
        f"{lean} analyst notes:\n{own_text}",
        f"panel key points (model-written):\n{fenced(panel_points(panel))}",
        f"Task: Build the case for {direction}. Set symbol to {bundle.symbol}.",
    ]
    evidence = {
        **base_evidence(bundle),
        "side": side,
        "side_notes": dump_notes(own),
        "notes": dump_notes(panel),
    }
    schema: type[BaseModel] = BullCase if side == "bull" else BearCase
    return build_request(
        side, JOBS[side], bundle.symbol, schema, sections, evidence, memory_block=memory_block, playbook=playbook
    )


def bull_request(
    notes: Sequence[AnalystNote],
    bundle: FeatureBundle,
    *,
    memory_block: str = "",
    playbook: Sequence[PlaybookRule] = (),
) -> ModelRequest:
    return case_request("bull", notes, bundle, memory_block=memory_block, playbook=playbook)


def bear_request(
    notes: Sequence[AnalystNote],
    bundle: FeatureBundle,
    *,
    memory_block: str = "",
    playbook: Sequence[PlaybookRule] = (),
) -> ModelRequest:
    return case_request("bear", notes, bundle, memory_block=memory_block, playbook=playbook)


def case_lines(case: BullCase | BearCase) -> list[str]:
    """A case as fenced lines: it is model-written, wherever it is shown next."""
    return (
        [f"argument: {case.argument}"]
        + [f"point: {point}" for point in case.supporting_points]
        + [f"risk: {risk}" for risk in case.risks]
    )


def rebuttal_request(
    side: Side,
    own: BullCase | BearCase,
    other: BullCase | BearCase,
    *,
    memory_block: str = "",
    playbook: Sequence[PlaybookRule] = (),
) -> ModelRequest:
    """Pass 2: a side sees its own case and the other's, and answers the other's best points."""
    other_side = "bear" if side == "bull" else "bull"
    sections = [
        f"symbol={own.symbol}",
        f"your {side} case (model-written):\n{fence(case_lines(own))}",
        f"the {other_side} case (model-written):\n{fence(case_lines(other))}",
        f"Task: Return your sharpened {side} case; its supporting points answer the {other_side}'s strongest "
        f"points. Set symbol to {own.symbol}.",
    ]
    evidence = {
        "symbol": own.symbol,
        "side": side,
        "own": own.model_dump(mode="json"),
        "other": other.model_dump(mode="json"),
    }
    role = f"{side}_rebuttal"
    schema: type[BaseModel] = BullCase if side == "bull" else BearCase
    return build_request(
        role, JOBS[role], own.symbol, schema, sections, evidence, memory_block=memory_block, playbook=playbook
    )


def bull_rebuttal_request(
    bull: BullCase, bear: BearCase, *, memory_block: str = "", playbook: Sequence[PlaybookRule] = ()
) -> ModelRequest:
    return rebuttal_request("bull", bull, bear, memory_block=memory_block, playbook=playbook)


def bear_rebuttal_request(
    bear: BearCase, bull: BullCase, *, memory_block: str = "", playbook: Sequence[PlaybookRule] = ()
) -> ModelRequest:
    return rebuttal_request("bear", bear, bull, memory_block=memory_block, playbook=playbook)


# --- the offline rules ---------------------------------------------------------------------------


def _side_words(side: str) -> tuple[str, str, str]:
    """(direction, lean, the other side)."""
    return ("LONG", "bullish", "bear") if side == "bull" else ("SHORT", "bearish", "bull")


def _case(side: str, symbol: str, evidence: Evidence) -> BullCase | BearCase:
    notes = evidence.get("notes", [])
    direction, lean, other_side = _side_words(side)
    own, other = leaning(notes, side), leaning(notes, other_side)
    if own:
        points = [note_line(note) for note in own]
        argument = (
            f"{direction} {symbol}: {len(own)} of {len(voting(notes))} voting analysts lean {lean}, "
            f"led by {own[0]['role']} at stance {signed(own[0]['stance'])}."
        )
    else:
        points = [_fallback_point(side, notes)]
        argument = f"{direction} {symbol}: no analyst leans {lean}; argued from the data so the debate has two sides."
    risks = [f"{_side_words(other_side)[1].capitalize()} reading: {note_line(note)}" for note in other]
    # The playbook's rules tied to what drove this side's notes.
    codes = codes_cited(evidence, [driver for note in own for driver in note_drivers(note)])
    schema: type[BullCase] | type[BearCase] = BullCase if side == "bull" else BearCase
    return schema(
        symbol=symbol,
        argument=with_codes(argument, codes, ARGUMENT_LIMIT),
        supporting_points=[short(point) for point in points][:8],
        risks=[short(risk) for risk in risks][:8]
        or [f"No analyst argues against {direction} yet; thin evidence is itself a risk."],
    )


def _fallback_point(side: str, notes: Sequence[Evidence]) -> str:
    votes = voting(notes)
    if not votes:
        return "No analyst took a side; this case is a default to be tested, not a signal."
    sign = 1.0 if side == "bull" else -1.0
    closest = max(enumerate(votes), key=lambda pair: (sign * pair[1]["stance"], -pair[0]))[1]
    return f"The least opposed reading is {note_line(closest)}"


def bull_case(symbol: str, evidence: Evidence) -> BullCase:
    return _case("bull", symbol, evidence)  # type: ignore[return-value]


def bear_case(symbol: str, evidence: Evidence) -> BearCase:
    return _case("bear", symbol, evidence)  # type: ignore[return-value]


def _rebuttal(side: str, symbol: str, evidence: Evidence) -> BullCase | BearCase:
    own, other = evidence["own"], evidence["other"]
    other_side = _side_words(side)[2]
    own_points: list[str] = own["supporting_points"]
    answers = [
        f"Against the {other_side}'s '{short(point, 150)}': {short(own_points[index % len(own_points)], 220)}"
        for index, point in enumerate(other["supporting_points"][:2])
    ]
    argument = (
        f"{own['argument']} After rebuttal: the {other_side}'s top points are answered and its risks acknowledged."
    )
    schema: type[BullCase] | type[BearCase] = BullCase if side == "bull" else BearCase
    return schema(
        symbol=symbol,
        argument=short(argument, 1000),
        supporting_points=[short(point) for point in answers + own_points][:8],
        risks=own.get("risks", [])[:8],
    )


def bull_rebuttal(symbol: str, evidence: Evidence) -> BullCase:
    return _rebuttal("bull", symbol, evidence)  # type: ignore[return-value]


def bear_rebuttal(symbol: str, evidence: Evidence) -> BearCase:
    return _rebuttal("bear", symbol, evidence)  # type: ignore[return-value]


# --- the stage -----------------------------------------------------------------------------------


def build_cases(
    choice: ModelChoice,
    notes: Sequence[AnalystNote],
    bundle: FeatureBundle,
    *,
    memory_block: str = "",
    playbook: Sequence[PlaybookRule] = (),
    recorder: Recorder | None = None,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
) -> tuple[BullCase, BearCase]:
    """Bull and bear build their cases at the same time; either failing fails the stage."""
    recorder = recorder or NullRecorder()
    validate = guard(bundle.symbol)

    def bull() -> BullCase:
        request = bull_request(notes, bundle, memory_block=memory_block, playbook=playbook)
        return ask(choice, request, BullCase, recorder=recorder, budget=budget, retry=retry, validate=validate)[0]

    def bear() -> BearCase:
        request = bear_request(notes, bundle, memory_block=memory_block, playbook=playbook)
        return ask(choice, request, BearCase, recorder=recorder, budget=budget, retry=retry, validate=validate)[0]

    return pair(bull, bear)


def rebut_cases(
    choice: ModelChoice,
    bull: BullCase,
    bear: BearCase,
    *,
    memory_block: str = "",
    playbook: Sequence[PlaybookRule] = (),
    recorder: Recorder | None = None,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
) -> tuple[BullCase, BearCase]:
    """One bounded rebuttal round; a side whose rebuttal fails keeps its initial case."""
    recorder = recorder or NullRecorder()
    validate = guard(bull.symbol)

    def sharpened_bull() -> BullCase:
        request = bull_rebuttal_request(bull, bear, memory_block=memory_block, playbook=playbook)
        try:
            return ask(choice, request, BullCase, recorder=recorder, budget=budget, retry=retry, validate=validate)[0]
        except StageFailed:
            return bull

    def sharpened_bear() -> BearCase:
        request = bear_rebuttal_request(bear, bull, memory_block=memory_block, playbook=playbook)
        try:
            return ask(choice, request, BearCase, recorder=recorder, budget=budget, retry=retry, validate=validate)[0]
        except StageFailed:
            return bear

    return pair(sharpened_bull, sharpened_bear)
