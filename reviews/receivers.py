"""The reviews app's answers to what the book announces (see ``trading.book.signals``)."""

from __future__ import annotations

from django.dispatch import receiver

from agents.models import MemoryEntry
from reviews.models import RetrospectiveReport, TradeReview
from reviews.services import position_review
from reviews.triggers import on_position_closed
from trading.book.signals import replay_account_clearing, replay_position_closed
from trading.models import Account, Position, Strategy


@receiver(replay_position_closed, dispatch_uid="review_a_replay_close_at_once")
def _review_now(sender: type[Position], *, position: Position, lessons_to_live: bool, **kwargs: object) -> None:
    """A replay's close is reviewed in its own process, at once, so the next replayed day recalls
    the lesson; its retrospective (and a loss review when due) follows, just as synchronously."""
    position_review(position=position, lessons_to_live=lessons_to_live)
    on_position_closed(position)


@receiver(replay_account_clearing, dispatch_uid="clear_a_replay_accounts_reviews")
def _clear_reviews(sender: type[Strategy], *, account: Account, **kwargs: object) -> None:
    """A replay account starts again: its reviews go, and the lessons they wrote (to its own memory
    scope, or to live memory when it was told to write there), and its retrospectives, which name
    the positions about to be deleted."""
    reviews = TradeReview.objects.filter(position__account=account)
    memory_ids = list(reviews.exclude(memory_entry=None).values_list("memory_entry_id", flat=True))
    reviews.delete()
    MemoryEntry.objects.filter(pk__in=memory_ids).delete()
    RetrospectiveReport.objects.filter(account=account).delete()
