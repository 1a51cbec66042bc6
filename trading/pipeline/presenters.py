"""A run as a person reads it: the run page, the thesis page and ``manage.py run_pipeline``.

Read from the typed stage outputs (``trading.pipeline.outputs``), never from stored JSON by key.
Formatting only: every figure shown was computed by a stage and stored with it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agents.domain.citations import mismatch_warnings
from agents.roles import AnalystNote
from trading.models.book import Order, Position, Thesis
from trading.models.pipeline import STAGES, PipelineRun, StageRun
from trading.pipeline.outputs import DebateOutput, RiskDecisionOutput, RunOutputs
from vocabulary.money import format_money

ANALYST_ORDER = ("news", "sentiment", "technical", "fundamental")

__all__ = [
    "ANALYST_ORDER",
    "NoteCard",
    "evidence_flags",
    "interpretation_hints",
    "run_context",
    "run_outputs",
    "run_summary_lines",
    "thesis_box",
]


def run_outputs(run: PipelineRun, stages: Sequence[StageRun] | None = None) -> RunOutputs:
    """The run's finished stages, typed (old rows of no version read as version 1). ``stages``: the
    run's rows when the caller read them already (each row's output is a large JSON document)."""
    rows = run.stages.all() if stages is None else stages
    return RunOutputs.from_stored({stage.stage: stage.output for stage in rows if stage.status == StageRun.Status.DONE})


@dataclass(frozen=True)
class NoteCard:
    """One analyst's place on the page: its note, or why it has none."""

    role: str
    note: AnalystNote | None
    failure: str | None

    @property
    def stance_pct(self) -> float | None:
        """Where the stance sits on a -1..+1 bar, in percent from the left."""
        return None if self.note is None else round((self.note.stance + 1) * 50, 1)


def _note_cards(outputs: RunOutputs) -> list[NoteCard]:
    analysts = outputs.analysts
    if analysts is None:
        return []
    return [NoteCard(role, analysts.notes.get(role), analysts.failures.get(role)) for role in ANALYST_ORDER]


def _note_line(card: NoteCard) -> str:
    if card.failure:
        return f"  {card.role:<12} FAILED  {card.failure}"
    note = card.note
    if note is None:
        return f"  {card.role:<12} —"
    tag = " (abstained)" if note.abstained else ""
    return f"  {card.role:<12} stance {note.stance:+.2f}  confidence {note.confidence:.2f}{tag}  {note.summary}"


def run_summary_lines(run: PipelineRun, totals: dict) -> list[str]:
    """The plain-text summary printed by ``manage.py run_pipeline``."""
    outputs = run_outputs(run)
    lines = [f"Run {run.pk}: {run.instrument.symbol} as of {run.as_of} via {run.provider} → {run.status.upper()}"]
    if run.failure_reason:
        lines.append(f"  reason: {run.failure_reason}")
    lines.append("Stages: " + ", ".join(f"{s.stage}={s.status}" for s in run.stages.all()))
    if outputs.analysts is not None:
        lines.append("Analysts:")
        lines += [_note_line(card) for card in _note_cards(outputs)]
    if (debate := outputs.debate) is not None:
        result, cal = debate.result, debate.calibration
        lines.append(
            f"Debate: {result.winner} conviction {result.conviction:.2f} "
            f"(proposed {cal.proposed:.2f}, {cal.opposing}/{cal.side_taking} side-taking analysts opposed)"
        )
        lines.append(f"  rationale: {result.manager_rationale}")
    if (trader := outputs.trader) is not None:
        t = trader.thesis
        lines.append(
            f"Thesis: {t.direction} entry {t.entry:.2f} stop {t.stop:.2f} target {t.target:.2f} "
            f"horizon {t.horizon_sessions} sessions (levels: {t.levels_source})"
        )
    if outputs.risk is not None:
        lines += _risk_lines(outputs.risk.decision, outputs.risk.held)
    lines.append(
        f"Model calls: {totals['calls']}, tokens in/out {totals['input_tokens']:,}/{totals['output_tokens']:,}, "
        f"cost {totals['cost']}"
    )
    return lines


def _risk_lines(decision: RiskDecisionOutput | None, held: str) -> list[str]:
    if decision is None:
        return [f"Risk: {held or 'not sized'}"]
    verdict = "APPROVED" if decision.approved else "REJECTED"
    lines = [
        f"Risk: {verdict} quantity {decision.quantity} risk {decision.risk_amount:f} notional {decision.notional:f}"
    ]
    lines += [f"  {'✓' if check.passed else '✗'} {check.name}: {check.detail}" for check in decision.checks]
    return lines


def _risk_display(decision: RiskDecisionOutput | None, currency: str) -> dict[str, Any] | None:
    """Risk and notional are quantity x price, so they are in the instrument's currency."""
    if decision is None:
        return None
    return {
        **decision.model_dump(mode="json"),
        "risk_amount": format_money(decision.risk_amount, currency),
        "notional": format_money(decision.notional, currency),
    }


def evidence_flags(outputs: RunOutputs) -> dict[str, list[str]]:
    """What code flagged in a run's evidence: note citations the bundle contradicts, and headlines
    kept out of every score because they carry instructions for a model."""
    citations = outputs.analysts.citations if outputs.analysts is not None else {}
    flagged = outputs.features.bundle.news.flagged_headlines if outputs.features is not None else []
    return {"citation_warnings": mismatch_warnings(citations), "flagged_headlines": list(flagged)}


def run_context(run: PipelineRun, totals: dict) -> dict[str, Any]:
    """Everything the run page (and the run part of the thesis page) shows, from the typed outputs."""
    rows = list(run.stages.all())
    outputs = run_outputs(run, rows)
    stages = {s.stage: s for s in rows}
    return {
        "stage_rows": [(name, stages.get(name)) for name in STAGES],
        "notes": _note_cards(outputs),
        "quorum": outputs.analysts.quorum if outputs.analysts is not None else None,
        "memory_block": outputs.context.memory_block if outputs.context is not None else "",
        "debate": outputs.debate,
        "trader": outputs.trader,
        "risk": _risk_display(outputs.risk.decision if outputs.risk else None, run.instrument.currency),
        "totals": totals,
        **evidence_flags(outputs),
    }


def interpretation_hints(context: dict, thesis: Thesis) -> list[str]:
    """The quick interpretation guide, shown only where its pattern occurs."""
    hints = []
    notes = [card.note for card in context.get("notes", []) if card.note is not None]
    side_taking = [n for n in notes if not n.abstained and abs(n.stance) > 0.05]
    if side_taking and len({n.stance > 0 for n in side_taking}) > 1:
        hints.append(
            "Mixed stances: genuine uncertainty. Conviction is already calibrated down; read the manager's "
            "rationale and the falsifiers."
        )
    abstaining = [n.role for n in notes if n.abstained]
    if abstaining:
        hints.append(
            f"{' and '.join(r.capitalize() for r in abstaining)} abstaining: no real data for that factor. The "
            "thesis rests on the other evidence; not a red flag by itself."
        )
    news = next((n for n in notes if n.role == "news" and not n.abstained), None)
    if news and news.stance <= -0.5 and news.confidence >= 0.6:
        hints.append("News is confidently bearish: event-driven risk, the thesis may be fighting headwinds.")
    conviction = float(thesis.conviction)
    if not thesis.risk_approved:
        hints.append("Risk rejected: a hard stop. The thesis breaks a portfolio rule; do not override.")
    elif conviction > 0.75:
        hints.append("High conviction and risk approved: the cleanest signal (the trader used the deep model).")
    if conviction < 0.45:
        hints.append("Low conviction: the debate was close or the panel diverged. Think twice.")
    hints.append("Stop and target come from ATR (stop ≈ 2×ATR, target 2R): that is the volatility talking.")
    return hints


# --- the thesis page's top box --------------------------------------------------------------------

HUNDRED = Decimal(100)
WHY_LIMIT = 300  # one line of why: the verdict's first sentence, cut if a model wrote a long one


def _percent_from(entry: Decimal, level: Decimal) -> Decimal:
    """The move from the entry to a level, in percent of the entry, with its sign (-5.00: 5 % below)."""
    return ((level - entry) / entry * HUNDRED).quantize(Decimal("0.01")) if entry else Decimal(0)


@dataclass(frozen=True)
class Fill:
    price: Decimal
    on: dt.date | None
    costs: Decimal


@dataclass(frozen=True)
class Exit:
    price: Decimal
    on: dt.date | None
    reason: str
    comment: str


@dataclass(frozen=True)
class ThesisBox:
    """What a person reads first on a thesis: the money at stake, the geometry, and one line of why;
    once traded, the fill, the exit and the PnL. Every figure is the stored row's or computed from it."""

    currency: str
    at_risk: Decimal
    notional: Decimal
    reward_risk: Decimal | None
    pct_to_stop: Decimal
    pct_to_target: Decimal
    why: str
    fill: Fill | None = None
    exit: Exit | None = None
    pnl: Decimal | None = None
    pnl_is_realised: bool = False
    dividends: Decimal = Decimal(0)


# A sentence ends at . ! or ? followed by a space, so "2450.50" does not split a price.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def _why(debate: DebateOutput | None) -> str:
    """The manager's verdict in one sentence (model-written: the template escapes it)."""
    if debate is None:
        return ""
    sentence = _SENTENCE_END.split(" ".join(debate.result.manager_rationale.split()), maxsplit=1)[0]
    return sentence if len(sentence) <= WHY_LIMIT else f"{sentence[: WHY_LIMIT - 1].rstrip()}…"


def thesis_box(
    thesis: Thesis, debate: DebateOutput | None, *, order: Order | None = None, position: Position | None = None
) -> ThesisBox:
    """The top box. Reward:risk is the target's distance over the stop's from the entry; the
    percentages are the price moves from the entry to each level, signed (a LONG's stop below is
    negative, a SHORT's above positive). The PnL is the realised one once closed (net of costs and
    with dividends), the marked unrealised one while open."""
    entry, stop, target = thesis.entry, thesis.stop, thesis.target
    risk = abs(entry - stop)
    box = ThesisBox(
        currency=thesis.instrument.currency,
        at_risk=thesis.risk_amount,
        notional=thesis.notional,
        reward_risk=(abs(target - entry) / risk).quantize(Decimal("0.01")) if risk else None,
        pct_to_stop=_percent_from(entry, stop),
        pct_to_target=_percent_from(entry, target),
        why=_why(debate),
    )
    if order is None or order.fill_price is None:
        return box
    fill = Fill(price=order.fill_price, on=order.filled_on, costs=order.costs_total)
    if position is None:
        return ThesisBox(**{**box.__dict__, "fill": fill})
    closed = position.status == Position.Status.CLOSED and position.exit_price is not None
    exit_ = (
        Exit(
            price=position.exit_price, on=position.closed_on, reason=position.exit_reason, comment=position.exit_comment
        )
        if closed and position.exit_price is not None
        else None
    )
    return ThesisBox(
        **{
            **box.__dict__,
            "fill": fill,
            "exit": exit_,
            "pnl": position.realised_pnl if closed else position.unrealised_pnl,
            "pnl_is_realised": closed,
            "dividends": position.dividends,
        }
    )
