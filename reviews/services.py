"""Stage 12: when a position closes, write its review and a tagged memory record.

Where the lesson goes is decided from the position:

- a live position's lesson is live memory, recalled by every live run;
- a replay's lesson is tagged ``replay=true`` and scoped to its replay account
  (``replay:<account id>``): only that replay's runs recall it, unless the replay was started with
  ``lessons_to_live`` (``manage.py replay --lessons-to-live``), which writes it to live memory,
  still tagged ``replay=true``;
- a manual exit writes no memory at all: a person chose the exit price, so the trade says
  nothing about the market. Its review says so in the facts and the critique.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction

from agents import recording, roles
from agents.clients import model_choice
from agents.domain.memory import LIVE_SCOPE, format_memory_block, replay_scope
from agents.domain.pricing import PriceTable
from agents.models import MemoryEntry
from agents.roles import ReviewFacts
from reviews.domain.outcomes import classify_outcome, signal_evolution, thesis_vs_outcome
from reviews.models import TradeReview
from trading.audit import audit_record
from trading.models import AuditEvent, Position
from vocabulary.trade import as_direction

MANUAL_EXIT = "manual"


def review_facts(position: Position) -> ReviewFacts:
    """Everything the review states as fact, computed here from stored rows."""
    thesis = position.thesis
    exit_price, realised_pnl = position.exit_price, position.realised_pnl
    if exit_price is None or realised_pnl is None:
        raise ValueError(f"position {position.pk} has no exit yet: only a closed position can be reviewed")
    direction = as_direction(position.direction)
    outcome = classify_outcome(realised_pnl, notional=position.entry_price * position.quantity)
    return ReviewFacts(
        symbol=position.instrument.symbol,
        direction=direction,
        entry=position.entry_price,
        stop=position.stop,
        target=position.target,
        conviction=thesis.conviction,
        rationale=thesis.payload.get("rationale", ""),
        exit_price=exit_price,
        exit_reason=position.exit_reason,
        outcome=outcome,
        realised_pnl=realised_pnl,
        signal_evolution=signal_evolution(outcome),
        thesis_vs_outcome=_with_exit_fact(
            position,
            thesis_vs_outcome(
                direction=direction,
                entry=position.entry_price,
                stop=position.stop,
                target=position.target,
                exit_price=exit_price,
            ),
        ),
    )


def _manual_exit_note(position: Position) -> str:
    """Who closed it by hand and why, from the position and the audit log."""
    closed_by = (
        AuditEvent.objects.filter(action="position_closed", target=f"position {position.pk}")
        .values_list("actor_label", flat=True)
        .first()
    )
    who = f" by {closed_by}" if closed_by and closed_by != "system" else ""
    reason = position.exit_comment or "no reason recorded"
    return f"closed by hand{who} (a person's exit, not the market's): {reason}"


def _with_exit_fact(position: Position, facts: dict[str, str]) -> dict[str, str]:
    if position.exit_reason != MANUAL_EXIT:
        return facts
    return {**facts, "exit": _manual_exit_note(position)}


def _critique(position: Position, critique: str) -> str:
    """A manual exit's critique opens with the fact that a person chose the exit, whatever the model wrote."""
    if position.exit_reason != MANUAL_EXIT:
        return critique
    reason = " ".join((position.exit_comment or "no reason recorded").split()).rstrip(".")
    return f"Closed by hand (a person's exit, not the market's): {reason}. {critique}"


def _memory_scope(position: Position, *, lessons_to_live: bool) -> str:
    if position.is_replay and not lessons_to_live:
        return replay_scope(position.account_id)
    return LIVE_SCOPE


def _reading_scopes(position: Position) -> tuple[str, ...]:
    """What the reviewer recalls: live lessons, and for a replay its own as well."""
    return recording.memory_scopes(replay_account_id=position.account_id if position.is_replay else None)


def _memory_entry(
    position: Position, facts: ReviewFacts, review: roles.TradeReview, *, closed_on: dt.date, lessons_to_live: bool
) -> MemoryEntry | None:
    if position.exit_reason == MANUAL_EXIT:
        return None  # a person's exit is no market lesson
    tags = dict(review.memory_tags)
    if position.is_replay:
        tags["replay"] = "true"
    return MemoryEntry.objects.create(
        kind="review",
        symbol=facts.symbol,
        text=review.memory_text,
        tags=tags,
        created_on=closed_on,
        scope=_memory_scope(position, lessons_to_live=lessons_to_live),
    )


def _configured_prices() -> object:
    """LLM_PRICES as configured. The checker sees settings.LLM's values only as objects; PriceTable
    refuses anything that is not a table of prices (a ValueError naming the problem)."""
    return settings.LLM["PRICES"]


def position_review(*, position: Position, lessons_to_live: bool = False) -> TradeReview:
    """Idempotent: a position has at most one review. ``lessons_to_live`` (replays only) writes a
    replay's lesson into live memory instead of the replay's own scope."""
    existing = TradeReview.objects.filter(position=position).first()
    if existing is not None:
        return existing
    closed_on = position.closed_on
    if position.status != Position.Status.CLOSED or closed_on is None:
        raise ValueError("only a closed position can be reviewed")
    facts = review_facts(position)
    provider = position.thesis.run.provider
    recorder = recording.BufferedRecorder(
        run_id=position.thesis.run_id, prices=PriceTable.from_mapping(_configured_prices())
    )
    hits = recording.memory_search(
        f"{facts.symbol} {facts.direction} {position.exit_reason}",
        symbol=facts.symbol,
        as_of=closed_on,
        scopes=_reading_scopes(position),
    )
    review = roles.review_trade(
        model_choice(provider, symbol=facts.symbol),
        facts=facts,
        memory_block=format_memory_block(hits),
        recorder=recorder,
    )
    try:
        with transaction.atomic():
            recorder.flush()
            memory = _memory_entry(position, facts, review, closed_on=closed_on, lessons_to_live=lessons_to_live)
            stored = TradeReview.objects.create(
                position=position,
                outcome=facts.outcome,
                realised_pnl=Decimal(facts.realised_pnl),
                signal_evolution=facts.signal_evolution,
                thesis_vs_outcome=facts.thesis_vs_outcome,
                critique=_critique(position, review.critique),
                lessons=review.lessons,
                model_used=review.model_used,
                memory_entry=memory,
            )
            audit_record(
                action="position_reviewed",
                target=f"position {position.pk}",
                details={
                    "outcome": facts.outcome,
                    "signal": facts.signal_evolution,
                    "memory": memory.pk if memory else None,
                    "scope": memory.scope if memory else None,
                },
            )
    except IntegrityError:
        return TradeReview.objects.get(position=position)
    return stored
