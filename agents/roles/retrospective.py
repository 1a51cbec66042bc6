"""The retrospective's narrator: reads a review's hard part and says why the figures are what they are.

Every figure of a retrospective (attribution, accuracy, positions, the heuristic audit) is computed
by code before the narrator runs (``reviews.retrospective``). The model writes words only: what
worked, what failed, what it would do differently with hindsight, and playbook proposals. Code then
settles what a model may not decide (``settle``): the confidence is capped by the horizon (a day is
too little evidence for a confident story), and a proposal may name only a heuristic the playbook
holds. Whether each number the narrative quotes is in the hard part is checked afterwards by
``reviews.domain.grounding``.

The hard part is handed over as data inside the fence, in a digest (``digest``): the headline
figures, the best and worst positions, the ten largest positions and the heuristics that were
cited, each value verbatim, so a model can quote what it was given and nothing else. The offline
rules (``narrative_draft``) write a real narrative from the same digest, quoting its figures exactly
as they are written there.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel, Field

from agents.domain.hygiene import fence, fence_guard
from agents.domain.llm import Budget, ModelChoice, ModelRequest, NullRecorder, Recorder, RetryPolicy, Tier
from agents.roles._base import Evidence, Point, RoleOutput, ShortText, Unit, ask, build_request, short
from vocabulary.money import format_money

__all__ = [
    "CONFIDENCE_CAPS",
    "PlaybookProposal",
    "RetrospectiveNarrative",
    "cap_confidence",
    "digest",
    "narrative_draft",
    "narrative_request",
    "settle",
    "write_narrative",
]

ROLE = "retrospective"
JOB = (
    "You are the Retrospective reviewer of a trading desk. Code has computed a review's hard part: PnL "
    "attribution, actions, positions, prediction accuracy, the heuristic audit, calibration and "
    "effectiveness. Explain why the figures are what they are: what worked, what failed, what you would "
    "do differently with hindsight, and at most three proposals for the playbook of heuristics. You "
    "synthesise and explain; you do not grade: the figures are facts, never dispute or recompute them."
)
# The most a narrative may claim, by horizon: a day or a single trade is little evidence, an epoch more.
CONFIDENCE_CAPS: Mapping[str, float] = {
    "daily": 0.4,
    "position": 0.5,
    "loss": 0.5,
    "weekly": 0.6,
    "epoch": 0.8,
    "testament": 0.8,
}
DEFAULT_CAP = 0.4
DIGEST_POSITIONS = 10
DIGEST_HEURISTICS = 20
FENCE_ITEM_CHARS = 6000


class PlaybookProposal(RoleOutput):
    """A rule proposed for the playbook: its text, the analyst factor it speaks to (if any) and the
    code of the heuristic it revises (if any). A person activates it; nothing here changes the playbook."""

    text: Point
    factor: str = Field(default="", max_length=32)
    heuristic: str | None = Field(default=None, pattern=r"^H-[0-9]+$")


class RetrospectiveNarrative(RoleOutput):
    """All a model may author about a review: words and a confidence code caps. No figure field on
    purpose: the figures are the hard part's, and ``extra="forbid"`` refuses a reply that adds one."""

    what_worked: list[Point] = Field(default_factory=list, max_length=5)
    what_failed: list[Point] = Field(default_factory=list, max_length=5)
    hindsight: ShortText
    proposals: list[PlaybookProposal] = Field(default_factory=list, max_length=3)
    confidence: Unit


# --- code's decisions ----------------------------------------------------------------------------


def cap_confidence(horizon: str, confidence: float) -> float:
    """The model's confidence, never above its horizon's cap (``CONFIDENCE_CAPS``)."""
    return min(float(confidence), CONFIDENCE_CAPS.get(horizon, DEFAULT_CAP))


def settle(narrative: RetrospectiveNarrative, *, horizon: str, known_codes: Collection[str]) -> RetrospectiveNarrative:
    """What code decides about a narrative: the confidence capped by the horizon, and a proposal's
    heuristic code kept only when the playbook has that heuristic."""
    proposals = [
        proposal
        if proposal.heuristic is None or proposal.heuristic in known_codes
        else proposal.model_copy(update={"heuristic": None})
        for proposal in narrative.proposals
    ]
    return narrative.model_copy(
        update={"confidence": cap_confidence(horizon, narrative.confidence), "proposals": proposals}
    )


# --- the request ---------------------------------------------------------------------------------


def _magnitude(row: Mapping[str, Any]) -> Decimal:
    value = row.get("realised_pnl") if row.get("realised_pnl") is not None else row.get("unrealised_pnl")
    return abs(_decimal(value))


def digest(hard: Mapping[str, Any]) -> dict[str, Any]:
    """The part of the hard part a model is shown, every value verbatim: the headline blocks, the
    ten largest positions, the cited heuristics, calibration's headline and a lifecycle without
    its full path."""
    positions = sorted(hard.get("positions") or [], key=_magnitude, reverse=True)[:DIGEST_POSITIONS]
    heuristics = [row for row in hard.get("heuristics") or [] if row.get("citations")]
    heuristics.sort(key=lambda row: abs(_decimal(row.get("total_pnl"))), reverse=True)
    view: dict[str, Any] = {
        key: hard[key]
        for key in (
            "currency",
            "period",
            "attribution",
            "actions",
            "inaction",
            "effectiveness",
            "best_position",
            "worst_position",
            "accuracy",
        )
        if key in hard
    }
    view["positions"] = positions
    view["heuristics"] = heuristics[:DIGEST_HEURISTICS]
    calibration = hard.get("calibration")
    if isinstance(calibration, Mapping):
        view["calibration"] = {
            key: calibration[key]
            for key in ("analyst_ece", "debate_ece", "samples", "alarm", "threshold")
            if key in calibration
        }
    lifecycle = hard.get("lifecycle")
    if isinstance(lifecycle, Mapping):
        view["lifecycle"] = {key: value for key, value in lifecycle.items() if key != "path"}
    return view


def narrative_request(
    *, horizon: str, hard: Mapping[str, Any], tier: Tier = "default", symbol: str = ""
) -> ModelRequest:
    """The narrator's call: the digest of the hard part fenced as data, and the task."""
    view = digest(hard)
    period = view.get("period") or {}
    lines = [f"{key}: {json.dumps(value, sort_keys=True, ensure_ascii=False)}" for key, value in view.items()]
    sections = [
        f"review: horizon={horizon} from {period.get('start', '?')} to {period.get('end', '?')} "
        f"({period.get('sessions', '?')} sessions), money in {view.get('currency', 'INR')}",
        "hard part (figures computed by code; money as signed contributions, rates as fractions):\n"
        + fence(lines, max_item_chars=FENCE_ITEM_CHARS),
        "Task: write what worked and what failed (up to five points each), one hindsight paragraph, and up to "
        "three playbook proposals (a rule's text, the analyst factor it speaks to, and the code of the "
        "heuristic it revises, or null). Quote every figure exactly as it is written above and cite no number "
        "that is not there. Give a confidence in [0, 1]; it should be low for a short horizon.",
    ]
    evidence = {"horizon": horizon, "hard": view}
    return build_request(ROLE, JOB, symbol, RetrospectiveNarrative, sections, evidence, memory_block="", tier=tier)


def _validate(output: BaseModel) -> None:
    fence_guard(output)


def write_narrative(
    choice: ModelChoice,
    *,
    horizon: str,
    hard: Mapping[str, Any],
    known_codes: Collection[str] = (),
    tier: Tier = "default",
    symbol: str = "",
    recorder: Recorder | None = None,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
) -> tuple[RetrospectiveNarrative, str]:
    """The narrative and the model that wrote it, settled by code (``settle``). Raises
    ``StageFailed`` when no valid narrative came after one repair (or the budget is spent): the
    caller keeps the hard part and notes the failure."""
    request = narrative_request(horizon=horizon, hard=hard, tier=tier, symbol=symbol)
    narrative, model = ask(
        choice,
        request,
        RetrospectiveNarrative,
        recorder=recorder or NullRecorder(),
        budget=budget,
        retry=retry,
        validate=_validate,
    )
    return settle(narrative, horizon=horizon, known_codes=known_codes), model


# --- the offline rules ---------------------------------------------------------------------------

_POSITIVE_LINES = (("gains", "Trading gains"), ("unrealised", "The change in open marks"), ("manual", "Exits by hand"))
_NEGATIVE_LINES = (
    ("losses", "Trading losses"),
    ("slippage", "Slippage"),
    ("costs_total", "Transaction costs"),
    ("inference", "Inference"),
    ("manual", "Exits by hand"),
    ("unrealised", "The change in open marks"),
)
HALF = Decimal("0.5")


def _decimal(value: object) -> Decimal:
    try:
        return Decimal(str(value)) if value is not None else Decimal(0)
    except InvalidOperation:
        return Decimal(0)


def _rupees(value: object) -> str:
    """A money figure as the pages write it ("-₹7,421.88"): the hard part's own amount, grouped."""
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        return f"₹{value}"
    return format_money(amount) if amount.is_finite() else f"₹{value}"


def _rows(hard: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    rows = hard.get(key) or []
    return [row for row in rows if isinstance(row, Mapping)]


def _block(hard: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    block = hard.get(key)
    return block if isinstance(block, Mapping) else {}


def _position_name(row: Mapping[str, Any]) -> str:
    return f"{row.get('symbol', '?')} {row.get('direction', '')}".strip()


def _best_point(hard: Mapping[str, Any]) -> list[str]:
    best = _block(hard, "best_position")
    if best and _decimal(best.get("realised_pnl")) > 0:
        return [
            f"{_position_name(best)} was the best position: {_rupees(best['realised_pnl'])} realised on a "
            f"{best.get('exit_reason') or 'closing'} exit."
        ]
    return []


def _worst_point(hard: Mapping[str, Any]) -> list[str]:
    worst = _block(hard, "worst_position")
    if worst and _decimal(worst.get("realised_pnl")) < 0:
        return [
            f"{_position_name(worst)} was the worst position: {_rupees(worst['realised_pnl'])} on a "
            f"{worst.get('exit_reason') or 'closing'} exit."
        ]
    return []


def _largest_line(attribution: Mapping[str, Any], lines: Sequence[tuple[str, str]], positive: bool) -> list[str]:
    chosen = [(key, label) for key, label in lines if (_decimal(attribution.get(key)) > 0) == positive]
    chosen = [(key, label) for key, label in chosen if _decimal(attribution.get(key)) != 0]
    if not chosen:
        return []
    key, label = max(chosen, key=lambda pair: abs(_decimal(attribution.get(pair[0]))))
    net = attribution.get("net", "0.00")
    verb = "added" if positive else "contributed"
    return [f"{label} {verb} {_rupees(attribution[key])} to a net result of {_rupees(net)}."]


def _heuristic_points(hard: Mapping[str, Any], recommendations: Collection[str]) -> list[str]:
    points = []
    for row in _rows(hard, "heuristics"):
        if row.get("recommendation") not in recommendations:
            continue
        points.append(
            f"{row.get('code')} ({row.get('recommendation')}): {row.get('citations')} citations, "
            f"{_rupees(row.get('average_pnl'))} a citation on average, {_rupees(row.get('total_pnl'))} in all."
        )
    return points[:2]


def _accuracy_point(hard: Mapping[str, Any]) -> list[str]:
    accuracy = _block(hard, "accuracy")
    analysts = [row for row in accuracy.get("analysts") or [] if isinstance(row, Mapping) and row.get("calls")]
    scored = [row for row in analysts if row.get("rate") is not None and _decimal(row.get("rate")) >= HALF]
    if not scored:
        return []
    best = max(scored, key=lambda row: (_decimal(row.get("rate")), row.get("calls") or 0))
    return [
        f"The {best.get('role')} analyst read the move right in {best.get('right')} of {best.get('calls')} "
        f"resolved calls (rate {best.get('rate')})."
    ]


def _inaction_point(hard: Mapping[str, Any]) -> list[str]:
    inaction = _block(hard, "inaction")
    superiority = inaction.get("superiority")
    if superiority is None or _decimal(superiority) <= HALF:
        return []
    return [
        f"Doing nothing would have done better: inaction beat {inaction.get('beaten_by_inaction')} of "
        f"{inaction.get('positions')} closed positions (superiority {superiority})."
    ]


def _most_regret(hard: Mapping[str, Any]) -> Mapping[str, Any] | None:
    rows = [row for row in _rows(hard, "positions") if row.get("regret") is not None and _decimal(row["regret"]) > 0]
    return max(rows, key=lambda row: _decimal(row["regret"])) if rows else None


def _regret_point(hard: Mapping[str, Any]) -> list[str]:
    row = _most_regret(hard)
    if row is None:
        return []
    return [
        f"{_position_name(row)} gave back {_rupees(row['regret'])} from its peak before its "
        f"{row.get('exit_reason') or 'closing'} exit, ending at {_rupees(row.get('realised_pnl'))}."
    ]


def _calibration_point(hard: Mapping[str, Any]) -> list[str]:
    calibration = _block(hard, "calibration")
    if not calibration.get("alarm"):
        return []
    eces = [(name, calibration.get(name)) for name in ("analyst_ece", "debate_ece")]
    worst = [(name, value) for name, value in eces if value is not None]
    if not worst:
        return []
    name, value = max(worst, key=lambda pair: float(pair[1]))
    who = "the analysts'" if name == "analyst_ece" else "the debate's"
    return [
        f"Stated confidence is miscalibrated: {who} expected calibration error {value} is above the alarm "
        f"line {calibration.get('threshold')}."
    ]


def _lifecycle_points(hard: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    lifecycle = _block(hard, "lifecycle")
    if not lifecycle:
        return [], []
    final, peak, regret = (_decimal(lifecycle.get(key)) for key in ("final_pnl", "peak_pnl", "regret"))
    worked, failed = [], []
    if peak > 0:
        worked.append(
            f"The position was in profit at its peak: {_rupees(lifecycle.get('peak_pnl'))} at session "
            f"{lifecycle.get('peak_session')}."
        )
    if regret > 0 and final < peak:
        failed.append(
            f"It gave back {_rupees(lifecycle.get('regret'))} between its peak and its exit at "
            f"{_rupees(lifecycle.get('final_pnl'))}."
        )
    return worked, failed


def _what_worked(hard: Mapping[str, Any]) -> list[str]:
    attribution = _block(hard, "attribution")
    lifecycle_worked, _ = _lifecycle_points(hard)
    points = [
        *_best_point(hard),
        *_largest_line(attribution, _POSITIVE_LINES, positive=True),
        *_heuristic_points(hard, {"KEEP"}),
        *_accuracy_point(hard),
        *lifecycle_worked,
    ]
    if not points:
        points = [f"Nothing in the period earned money: the net result was {_rupees(attribution.get('net', '0.00'))}."]
    return [short(point) for point in points[:5]]


def _what_failed(hard: Mapping[str, Any]) -> list[str]:
    attribution = _block(hard, "attribution")
    _, lifecycle_failed = _lifecycle_points(hard)
    points = [  # the most telling first: only five are kept
        *_worst_point(hard),
        *_heuristic_points(hard, {"DEMOTE", "INVESTIGATE"}),
        *_inaction_point(hard),
        *_calibration_point(hard),
        *(lifecycle_failed or _regret_point(hard)),
        *_largest_line(attribution, _NEGATIVE_LINES, positive=False),
    ]
    if not points:
        points = ["No losing position, costly line or harmful heuristic stands out in the period."]
    return [short(point) for point in points[:5]]


def _hindsight(hard: Mapping[str, Any]) -> str:
    lifecycle = _block(hard, "lifecycle")
    optimal = lifecycle.get("optimal_exit") if lifecycle else None
    if isinstance(optimal, Mapping):
        return _lifecycle_hindsight(lifecycle, optimal)
    attribution = _block(hard, "attribution")
    net = _rupees(attribution.get("net", "0.00"))
    if _inaction_point(hard):
        return (
            f"With hindsight, most of the period's entries were not worth taking: the net result was {net}, and "
            "fewer entries with stronger evidence would have kept more of it."
        )
    regret = _most_regret(hard)
    if regret is not None:
        return (
            f"With hindsight, exits cost more than entries: {_position_name(regret)} gave back "
            f"{_rupees(regret['regret'])} after its peak. The net result was {net}."
        )
    return f"With hindsight, the period's net result of {net} holds no single lesson beyond the lines above."


def _lifecycle_hindsight(lifecycle: Mapping[str, Any], optimal: Mapping[str, Any]) -> str:
    final = _rupees(lifecycle.get("final_pnl"))
    best = f"the close of session {optimal.get('session')}, worth {_rupees(optimal.get('pnl'))}"
    if _decimal(optimal.get("pnl")) <= _decimal(lifecycle.get("final_pnl")):
        return (
            f"With hindsight, the exit was as good as any close on offer: it made {final}, against {best} "
            "at best. Keep the exit rule that took it."
        )
    return (
        f"With hindsight, the best exit was {best}; the actual exit made {final}, a regret of "
        f"{_rupees(lifecycle.get('regret'))}. The peak is known only after the fact: this measures exit timing, "
        "not what could have been foreseen."
    )


def _proposals(hard: Mapping[str, Any]) -> list[PlaybookProposal]:
    proposals = [
        PlaybookProposal(
            text=short(
                f"Revise {row.get('code')}: the trades citing it averaged {_rupees(row.get('average_pnl'))} over "
                f"{row.get('citations')} citations; narrow when it applies, or retire it."
            ),
            heuristic=str(row.get("code")),
        )
        for row in _rows(hard, "heuristics")
        if row.get("recommendation") == "DEMOTE"
    ][:2]
    inaction = _block(hard, "inaction")
    if _inaction_point(hard) and int(inaction.get("positions") or 0) >= 3:
        proposals.append(
            PlaybookProposal(
                text="Require a second confirming factor before an entry while inaction keeps beating the "
                "desk's closed positions."
            )
        )
    if _gave_back_half(hard):
        proposals.append(
            PlaybookProposal(
                text="Protect open profit: once a position has gained one risk unit, move its stop to the entry.",
                factor="exits",
            )
        )
    return proposals[:3]


def _gave_back_half(hard: Mapping[str, Any]) -> bool:
    """A position that reached a profit and gave back more than half of it."""
    lifecycle = _block(hard, "lifecycle")
    if lifecycle:
        peak, regret = _decimal(lifecycle.get("peak_pnl")), _decimal(lifecycle.get("regret"))
        return peak > 0 and regret > peak * HALF
    row = _most_regret(hard)
    if row is None:
        return False
    peak = _decimal(row.get("realised_pnl")) + _decimal(row.get("regret"))
    return peak > 0 and _decimal(row.get("regret")) > peak * HALF


def _confidence(hard: Mapping[str, Any]) -> float:
    """More evidence, more confidence: closed positions and resolved calls; code caps it by horizon."""
    inaction = _block(hard, "inaction")
    levels = _block(_block(hard, "accuracy"), "levels")
    evidence = int(inaction.get("positions") or 0) + int(levels.get("theses") or 0)
    return round(min(0.9, 0.2 + 0.02 * evidence), 2)


def narrative_draft(symbol: str, evidence: Evidence) -> RetrospectiveNarrative:
    """The offline narrative, from the digest alone, every figure quoted as the digest writes it."""
    hard = evidence.get("hard") or {}
    return RetrospectiveNarrative(
        what_worked=_what_worked(hard),
        what_failed=_what_failed(hard),
        hindsight=short(_hindsight(hard), 1000),
        proposals=_proposals(hard),
        confidence=_confidence(hard),
    )
