"""Reads for the position lifecycle page: a closed position's retrospective, its review, and the
reasoning it was entered on, each call checked against how the price actually moved.

Every figure comes from stored rows and the pure module ``reviews.domain.lifecycle``; nothing here
is taken from a model's words except the texts shown as texts (rationales, the critique).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import cast

from django.conf import settings

from reviews.domain.lifecycle import ClosedPosition, HindsightFill, Lifecycle, position_lifecycle
from reviews.models import TradeReview
from trading.book.broker import cost_model
from trading.models import AnalystNoteRecord, DailyBar, DebateRecord, Position, PositionMark, Thesis
from vocabulary.refusals import StateConflict
from vocabulary.trade import as_direction

__all__ = [
    "AnalystCall",
    "EntryReasoning",
    "PositionNotClosed",
    "PositionRecordInconsistent",
    "entry_reasoning_for",
    "exit_session_of",
    "position_lifecycle_for",
    "session_dates_for",
    "trade_review_for",
]


class PositionNotClosed(StateConflict):
    """A lifecycle is read back only once the position is closed (409): an open one has no exit."""


class PositionRecordInconsistent(StateConflict):
    """The book's rows for a position do not add up (a missing mark, a realised PnL that does not
    match its prices): shown as a refusal rather than as a retrospective built on bad rows."""


@dataclass(frozen=True)
class AnalystCall:
    """One analyst's stance at entry and how it resolved: ``right`` is None when the analyst took
    no side (abstained or a stance of zero) or the price did not move."""

    role: str
    stance: Decimal
    confidence: Decimal
    abstained: bool
    summary: str
    right: bool | None


@dataclass(frozen=True)
class EntryReasoning:
    """What the position was entered on: the thesis, the debate and the analysts' calls, with the
    realised move (``move``: +1 up, -1 down, 0 flat, from the entry fill to the exit fill)."""

    thesis: Thesis
    rationale: str
    debate: DebateRecord | None
    winner_right: bool | None
    calls: tuple[AnalystCall, ...]
    move: int


def position_lifecycle_for(position: Position) -> Lifecycle:
    """The retrospective of a closed ``position``, read from its daily marks in date order.

    Sessions are counted as the broker counts them: the exit session is the number of the
    instrument's sessions after the fill day up to the close day. Hindsight exits pay the desk's
    costs and slippage on the instrument's tick, as the real exit did. An open position is refused
    (409); rows that do not add up are refused too, naming what is wrong.
    """
    if position.status != Position.Status.CLOSED or position.exit_price is None or position.realised_pnl is None:
        raise PositionNotClosed(
            f"position {position.pk} in {position.instrument.symbol} is still open: "
            "its lifecycle is shown once it closes"
        )
    closes = tuple(PositionMark.objects.filter(position=position).order_by("date").values_list("close", flat=True))
    try:
        record = ClosedPosition(
            direction=as_direction(position.direction),
            quantity=position.quantity,
            entry_price=position.entry_price,
            entry_costs=position.entry_costs,
            exit_price=position.exit_price,
            exit_costs=position.exit_costs,
            exit_session=exit_session_of(position),
            closes=closes,
            realised_pnl=position.realised_pnl,
        )
    except ValueError as problem:
        raise PositionRecordInconsistent(
            f"the book's rows for position {position.pk} do not add up, so no lifecycle is shown: {problem}"
        ) from problem
    fill = HindsightFill(Decimal(str(settings.BROKER["SLIPPAGE_BPS"])), position.instrument.tick_size)
    configured = cast(Sequence[int], settings.RETROSPECTIVE["TRAJECTORY_CHECKPOINTS"])
    checkpoints = tuple(int(session) for session in configured)
    return position_lifecycle(record, checkpoints=checkpoints, cost_model=cost_model(), fill=fill)


def exit_session_of(position: Position) -> int:
    """Sessions from the fill day to the close day, counted on the instrument's bars as the broker
    counts ``sessions_held`` (the fill day is session 0)."""
    if position.closed_on is None:
        raise PositionNotClosed(f"position {position.pk} has no close date")
    return DailyBar.objects.filter(
        instrument_id=position.instrument_id, date__gt=position.opened_on, date__lte=position.closed_on
    ).count()


def session_dates_for(position: Position, sessions: int) -> list[dt.date]:
    """The trading day of each session 0..``sessions`` (the fill day first, the close day last),
    for labelling the trajectory; the instrument's bars decide what a session is."""
    days = list(
        DailyBar.objects.filter(
            instrument_id=position.instrument_id, date__gte=position.opened_on, date__lte=position.closed_on
        )
        .order_by("date")
        .values_list("date", flat=True)[: sessions + 1]
    )
    return days


def trade_review_for(position: Position) -> TradeReview | None:
    """The stage-12 review of ``position``, or None while it is not written yet."""
    return TradeReview.objects.filter(position=position).first()


def entry_reasoning_for(position: Position) -> EntryReasoning:
    """The thesis, debate and analyst notes of the run the position came from, each side-taking
    call marked right when its sign matched the realised move (entry fill to exit fill)."""
    thesis = position.thesis
    move = _move_sign(position)
    notes = AnalystNoteRecord.objects.filter(run_id=thesis.run_id).order_by("role")
    calls = tuple(
        AnalystCall(
            role=note.get_role_display(),
            stance=note.stance,
            confidence=note.confidence,
            abstained=note.abstained,
            summary=note.summary,
            right=None if note.abstained else _resolved(_sign(note.stance), move),
        )
        for note in notes
    )
    debate = DebateRecord.objects.filter(run_id=thesis.run_id).first()
    winner_right = None if debate is None else _resolved(1 if debate.winner == "LONG" else -1, move)
    return EntryReasoning(
        thesis=thesis,
        rationale=str(thesis.payload.get("rationale", "")),
        debate=debate,
        winner_right=winner_right,
        calls=calls,
        move=move,
    )


def _move_sign(position: Position) -> int:
    exit_price = position.exit_price if position.exit_price is not None else position.entry_price
    return _sign(exit_price - position.entry_price)


def _sign(value: Decimal) -> int:
    return (value > 0) - (value < 0)


def _resolved(call: int, move: int) -> bool | None:
    """A call with no side, or a move with no direction, resolves neither way."""
    if call == 0 or move == 0:
        return None
    return call == move
