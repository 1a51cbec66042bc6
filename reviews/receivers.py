"""The reviews app's answers to what the book announces (see ``trading.book.signals``)."""

from __future__ import annotations

from django.dispatch import receiver

from agents.models import MemoryEntry
from reviews.models import TradeReview
from reviews.services import position_review
from trading.book.signals import replay_account_clearing, replay_position_closed
from trading.models import Account, Position, Strategy


@receiver(replay_position_closed, dispatch_uid="review_a_replay_close_at_once")
def _review_now(sender: type[Position], *, position: Position, lessons_to_live: bool, **kwargs: object) -> None:
    position_review(position=position, lessons_to_live=lessons_to_live)


@receiver(replay_account_clearing, dispatch_uid="clear_a_replay_accounts_reviews")
def _clear_reviews(sender: type[Strategy], *, account: Account, **kwargs: object) -> None:
    """A replay account starts again: its reviews go, and the lessons they wrote (to its own memory
    scope, or to live memory when it was told to write there)."""
    reviews = TradeReview.objects.filter(position__account=account)
    memory_ids = list(reviews.exclude(memory_entry=None).values_list("memory_entry_id", flat=True))
    reviews.delete()
    MemoryEntry.objects.filter(pk__in=memory_ids).delete()
