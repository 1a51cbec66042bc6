"""Stage 5, the researchers: the bull builds the case for LONG and the bear the case for SHORT, then
each rebuts the other once.

Pass 1 (``build_cases``): each side sees its own analysts' numbers and the panel's key points; both
run at once, and either failing fails the stage. Pass 2 (``rebut_cases``): each side sees both cases
and answers the other's strongest points; a side whose rebuttal fails keeps its first case. The
offline rules argue from the panel's stances and never quote a headline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, Field

from agents.domain.hygiene import fence
from agents.domain.llm import Budget, ModelChoice, ModelRequest, NullRecorder, Recorder, RetryPolicy, StageFailed
from agents.domain.playbook import PlaybookRule, cited_codes
from agents.roles._base import (
    Evidence,
    Point,
    RoleOutput,
    ShortText,
    ask,
    base_evidence,
    build_request,
    fenced,
    fmt,
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


MAX_EVIDENCE = 3  # the strongest pieces of evidence a case names in its prose


def in_words(point: str) -> str:
    """A note's point as it reads in a sentence: comparisons spelt out, no trailing stop, and a
    lower-case start (unless it starts with an indicator's name: "RSI(14)", "MACD")."""
    text = " ".join(point.split()).rstrip(".;")
    text = text.replace(" > ", " above ").replace(" < ", " below ").replace(" >= ", " at or above ")
    first = text.split(" ", 1)[0]
    if first[:1].isupper() and not any(ch.isupper() for ch in first[1:]) and not any(ch.isdigit() for ch in first):
        text = text[:1].lower() + text[1:]
    return text


def reading(note: Evidence) -> str:
    """'the technical analyst (stance +0.68, confidence 0.85)': who, and how strongly, in words."""
    return f"the {note['role']} analyst (stance {signed(note['stance'])}, confidence {fmt(note['confidence'])})"


def strongest_evidence(notes: Sequence[Evidence], limit: int = MAX_EVIDENCE) -> list[str]:
    """Up to ``limit`` points from the notes, strongest note first, each note's lead point before any
    note's second: the two or three facts a person should read, in the notes' own figures."""
    leads = [note.get("key_points") or [note.get("summary", "")] for note in notes]
    chosen: list[str] = []
    for depth in range(max((len(points) for points in leads), default=0)):
        for points in leads:
            if depth < len(points) and points[depth].strip() and len(chosen) < limit:
                words = in_words(points[depth])
                if words not in chosen:
                    chosen.append(words)
    return chosen


def _joined(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{'; '.join(items[:-1])}; and {items[-1]}"


def case_prose(side: str, symbol: str, notes: Sequence[Evidence]) -> str:
    """The case as a person scans it, in a few short sentences: the claim (who leans this way and how
    strongly), the strongest evidence in words with its figures, and the main risk. Every figure is
    a note's: nothing here is invented, and no headline is quoted."""
    direction, lean, other_side = _side_words(side)
    own, other, votes = leaning(notes, side), leaning(notes, other_side), voting(notes)
    if own:
        claim = (
            f"{direction} {symbol}: {len(own)} of {len(votes)} voting analysts lean {lean}, led by {reading(own[0])}."
        )
        evidence = f"The evidence: {_joined(strongest_evidence(own))}."
    else:
        claim = (
            f"{direction} {symbol}: no analyst leans {lean}, so this case is argued from the data to give the "
            "debate two sides."
        )
        evidence = f"The least opposed reading is {_least_opposed(side, notes)}."
    if other:
        risk = f"The risk: {reading(other[0])} reads it {_side_words(other_side)[1]}: {in_words(_lead(other[0]))}."
    else:
        risk = f"The risk: no analyst argues against {direction} yet, and thin evidence is itself a risk."
    return " ".join((claim, evidence, risk))


def _lead(note: Evidence) -> str:
    points = note.get("key_points") or [note.get("summary", "")]
    return points[0]


def _least_opposed(side: str, notes: Sequence[Evidence]) -> str:
    votes = voting(notes)
    if not votes:
        return "none: no analyst took a side, so this case is a default to be tested, not a signal"
    sign = 1.0 if side == "bull" else -1.0
    closest = max(enumerate(votes), key=lambda pair: (sign * pair[1]["stance"], -pair[0]))[1]
    return f"{reading(closest)}: {in_words(_lead(closest))}"


def _case(side: str, symbol: str, evidence: Evidence) -> BullCase | BearCase:
    """The argument is prose for a person; the points and risks stay one note each (role, stance,
    confidence, lead point), the citations the debate and the manager are checked against."""
    notes = evidence.get("notes", [])
    direction, _, other_side = _side_words(side)
    own, other = leaning(notes, side), leaning(notes, other_side)
    points = [note_line(note) for note in own] if own else [_fallback_point(side, notes)]
    risks = [f"{_side_words(other_side)[1].capitalize()} reading: {note_line(note)}" for note in other]
    # The playbook's rules tied to what drove this side's notes.
    codes = codes_cited(evidence, [driver for note in own for driver in note_drivers(note)])
    schema: type[BullCase] | type[BearCase] = BullCase if side == "bull" else BearCase
    return schema(
        symbol=symbol,
        argument=with_codes(short(case_prose(side, symbol, notes), ARGUMENT_LIMIT), codes, ARGUMENT_LIMIT),
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


# A point as the offline rules write it: "technical stance +0.68 (confidence 0.85): Trend up: …".
_NOTE_POINT = re.compile(
    r"^(?:[A-Z][a-z]+ reading: )?(?P<role>[a-z]+) "
    r"stance (?P<stance>[+-]?\d+\.\d+) \(confidence (?P<confidence>\d+\.\d+)\)"
)


def _point_reading(point: str) -> tuple[str, float, float] | None:
    """(role, stance, confidence) of a point that cites a note, or None for any other text."""
    match = _NOTE_POINT.match(point)
    if match is None:
        return None
    return match["role"], float(match["stance"]), float(match["confidence"])


def _answer(other_side: str, their_point: str, our_point: str) -> str:
    """One answer to one of the other side's points, by the weight (|stance| × confidence) of the two
    readings the points cite; a point that cites no note is named, not quoted at length."""
    theirs, ours = _point_reading(their_point), _point_reading(our_point)
    if theirs is None:
        return (
            f"Against the {other_side}'s point '{short(their_point, 120)}': our case rests on {short(our_point, 200)}"
        )
    their_role, their_stance, their_confidence = theirs
    named = (
        f"Against the {other_side}'s {their_role} reading "
        f"(stance {signed(their_stance)}, confidence {fmt(their_confidence)})"
    )
    if ours is None:
        return f"{named}: no analyst reading of ours answers it; it stands as a risk."
    our_role, our_stance, our_confidence = ours
    their_weight, our_weight = abs(their_stance) * their_confidence, abs(our_stance) * our_confidence
    verdict = "outweighs it" if our_weight > their_weight else "does not outweigh it"
    return (
        f"{named}: our {our_role} reading (stance {signed(our_stance)}, confidence {fmt(our_confidence)}) "
        f"{verdict}, {fmt(our_weight)} against {fmt(their_weight)} in stance times confidence."
    )


def _rebuttal(side: str, symbol: str, evidence: Evidence) -> BullCase | BearCase:
    own, other = evidence["own"], evidence["other"]
    other_side = _side_words(side)[2]
    own_points: list[str] = own["supporting_points"]
    answers = [
        _answer(other_side, point, own_points[index % len(own_points)])
        for index, point in enumerate(other["supporting_points"][:2])
    ]
    # The first case's prose, then one sentence on how its strongest point meets the other side's;
    # its playbook codes stay at the end, where they were.
    codes = list(cited_codes([own["argument"]]))
    prose = own["argument"].split(" Playbook: ")[0]
    if answers:
        prose = f"{prose} {_rebuttal_sentence(other_side, answers[0])}"
    schema: type[BullCase] | type[BearCase] = BullCase if side == "bull" else BearCase
    return schema(
        symbol=symbol,
        argument=with_codes(short(prose, ARGUMENT_LIMIT), codes, ARGUMENT_LIMIT),
        supporting_points=[short(point) for point in answers + own_points][:8],
        risks=own.get("risks", [])[:8],
    )


def _rebuttal_sentence(other_side: str, answer: str) -> str:
    """The first answer as the rebuttal's closing sentence: 'After the rebuttal: against the bear's …'."""
    body = answer.rstrip(".")
    return f"After the rebuttal: {body[:1].lower()}{body[1:]}."


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
