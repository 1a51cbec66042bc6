"""The reviews app's answers to what the book and the strategies announce (see ``trading.book.signals``
and ``trading.strategies.signals``)."""

from __future__ import annotations

from django.dispatch import receiver

from agents.models import MemoryEntry
from reviews.critique.trigger import on_strategy_run_opened, replay_critiques_clear
from reviews.models import RetrospectiveReport, TradeReview
from reviews.services import position_review
from reviews.triggers import on_position_closed
from trading.book.signals import replay_account_clearing, replay_position_closed
from trading.models import Account, Position, Strategy, StrategyRun
from trading.strategies.signals import replay_cleared, strategy_run_opened


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


@receiver(strategy_run_opened, dispatch_uid="critique_pre_step_of_a_strategy_run")
def _critique_pre_step(sender: type[StrategyRun], *, strategy_run: StrategyRun, replay: bool, **kwargs: object) -> None:
    """Whether the new strategy run is critiqued, and the critique itself (see ``reviews.critique.trigger``)."""
    on_strategy_run_opened(strategy_run, replay=replay)


@receiver(replay_cleared, dispatch_uid="clear_a_replays_critiques")
def _clear_critiques(sender: type[Strategy], *, strategy: Strategy, **kwargs: object) -> None:
    """A replay starts again: its critiques go with its runs and directives."""
    replay_critiques_clear(strategy)
