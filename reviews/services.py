"""Stage 12: when a position closes, write its review and a tagged memory record."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction

from agents import recording
from agents.domain import roles
from agents.domain.memory import format_memory_block
from agents.domain.pricing import PriceTable
from agents.domain.roles import ReviewFacts
from agents.models import MemoryEntry
from reviews.models import TradeReview
from trading.audit import audit_record
from trading.domain.outcomes import classify_outcome, signal_evolution, thesis_vs_outcome
from trading.models import Position
from trading.pipeline import model_choice


def review_facts(position: Position) -> ReviewFacts:
    """Everything the review states as fact, computed here from stored rows."""
    thesis = position.thesis
    outcome = classify_outcome(position.realised_pnl, notional=position.entry_price * position.quantity)
    return ReviewFacts(
        symbol=position.instrument.symbol,
        direction=position.direction,
        entry=position.entry_price,
        stop=position.stop,
        target=position.target,
        conviction=thesis.conviction,
        rationale=thesis.payload.get("rationale", ""),
        exit_price=position.exit_price,
        exit_reason=position.exit_reason,
        outcome=outcome,
        realised_pnl=position.realised_pnl,
        signal_evolution=signal_evolution(outcome),
        thesis_vs_outcome=thesis_vs_outcome(
            direction=position.direction,
            entry=position.entry_price,
            stop=position.stop,
            target=position.target,
            exit_price=position.exit_price,
        ),
    )


def position_review(*, position: Position) -> TradeReview:
    """Idempotent: a position has at most one review."""
    existing = TradeReview.objects.filter(position=position).first()
    if existing is not None:
        return existing
    if position.status != Position.Status.CLOSED:
        raise ValueError("only a closed position can be reviewed")
    facts = review_facts(position)
    provider = position.thesis.run.provider
    recorder = recording.BufferedRecorder(
        run_id=position.thesis.run_id, prices=PriceTable.from_mapping(settings.LLM["PRICES"])
    )
    hits = recording.memory_search(
        f"{facts.symbol} {facts.direction} {position.exit_reason}", symbol=facts.symbol, as_of=position.closed_on
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
            memory = MemoryEntry.objects.create(
                kind="review",
                symbol=facts.symbol,
                text=review.memory_text,
                tags=review.memory_tags,
                created_on=position.closed_on,
            )
            stored = TradeReview.objects.create(
                position=position,
                outcome=facts.outcome,
                realised_pnl=Decimal(position.realised_pnl),
                signal_evolution=facts.signal_evolution,
                thesis_vs_outcome=facts.thesis_vs_outcome,
                critique=review.critique,
                lessons=review.lessons,
                model_used=review.model_used,
                memory_entry=memory,
            )
            audit_record(
                action="position_reviewed",
                target=f"position {position.pk}",
                details={"outcome": facts.outcome, "signal": facts.signal_evolution, "memory": memory.pk},
            )
    except IntegrityError:
        return TradeReview.objects.get(position=position)
    return stored
