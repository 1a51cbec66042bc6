"""A replay's lessons stay in the replay unless the person running it says otherwise."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.management import call_command

from agents import recording
from agents.domain.memory import LIVE_SCOPE, format_memory_block
from agents.models import MemoryEntry
from reviews.services import position_review
from tests.trading.book_rows import add_bar, next_session, open_position, round_thesis
from trading.book import broker
from trading.book.accounts import replay_account
from trading.models import PipelineRun, Strategy, StrategyRun
from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute
from trading.pipeline.presenters import run_outputs
from trading.strategies.replay import replay_clear


@pytest.fixture
def strategy(instrument_with_bars) -> Strategy:
    strategy = Strategy.objects.create(name="swing", philosophy="Trend swings.")
    strategy.universe.set([instrument_with_bars])
    return strategy


def _replay_loss(instrument, strategy):
    """A replay position stopped out, as the replay's daily pass leaves it."""
    account = replay_account(strategy.name)
    thesis = round_thesis(instrument, replay=True)
    day = next_session(instrument.bars.latest("date").date)
    add_bar(instrument, day, open_="100.00", high="101.00", low="99.00", close="100.00")
    position = open_position(thesis, account, on=day)
    exit_day = next_session(day)
    add_bar(instrument, exit_day, open_="99.00", high="99.50", low="94.00", close="96.00")
    return broker.position_close(
        position=position, price=Decimal("94.90"), on=exit_day, reason="stop", on_close=lambda p: None
    )


def _recalled(position, *, scopes: tuple[str, ...] = (LIVE_SCOPE,)) -> list[int]:
    hits = recording.memory_search(
        "RELIANCE LONG stop", symbol="RELIANCE", as_of=position.closed_on, k=10, scopes=scopes
    )
    return [hit.record.id for hit in hits]


def test_a_replays_lesson_is_recalled_by_that_replay_but_not_by_a_live_run(instrument_with_bars, strategy):
    position = _replay_loss(instrument_with_bars, strategy)
    assert _recalled(position) == []  # the index is built now, and only extended from here

    review = position_review(position=position)

    memory = review.memory_entry
    assert memory.scope == f"replay:{position.account_id}" and memory.tags["replay"] == "true"
    assert memory.pk not in _recalled(position)  # a live run's search
    replay_scopes = recording.memory_scopes(replay_account_id=position.account_id)
    assert memory.pk in _recalled(position, scopes=replay_scopes)
    assert memory.pk not in _recalled(position, scopes=recording.memory_scopes(replay_account_id=999))


def test_with_lessons_to_live_a_replays_lesson_is_recalled_live_tagged_as_a_replay(instrument_with_bars, strategy):
    position = _replay_loss(instrument_with_bars, strategy)

    review = position_review(position=position, lessons_to_live=True)

    hits = recording.memory_search("RELIANCE LONG stop", symbol="RELIANCE", as_of=position.closed_on)
    recalled = {hit.record.id: hit.record for hit in hits}
    assert review.memory_entry_id in recalled
    assert recalled[review.memory_entry_id].tags["replay"] == "true"
    assert "replay=true" in format_memory_block(hits)  # the agents read that it came from a replay


def test_a_new_replay_forgets_the_lessons_the_old_one_sent_live(instrument_with_bars, strategy):
    position = _replay_loss(instrument_with_bars, strategy)
    review = position_review(position=position, lessons_to_live=True)
    assert review.memory_entry_id in _recalled(position)

    replay_clear(strategy)

    assert not MemoryEntry.objects.exists()
    assert _recalled(position) == []  # the in-process index noticed the deletion


def test_a_live_run_never_sees_a_replays_memory_and_a_replays_run_sees_its_own(instrument_with_bars, strategy):
    as_of = instrument_with_bars.bars.latest("date").date
    account = replay_account(strategy.name)
    own = MemoryEntry.objects.create(
        kind="review",
        symbol="RELIANCE",
        text="Breakout support failed.",
        created_on=as_of,
        tags={"replay": "true"},
        scope=f"replay:{account.pk}",
    )
    other = MemoryEntry.objects.create(
        kind="review",
        symbol="RELIANCE",
        text="Breakout support held.",
        created_on=as_of,
        tags={"replay": "true"},
        scope="replay:999999",
    )
    live = MemoryEntry.objects.create(kind="review", symbol="RELIANCE", text="Breakout faded.", created_on=as_of)

    def recalled_by_run(*, replay: bool) -> set[int]:
        run = pipeline_run_create(instrument=instrument_with_bars, as_of=as_of, provider="offline")
        if replay:
            strategy_run = StrategyRun.objects.create(strategy=strategy, as_of=as_of, is_replay=True)
            PipelineRun.objects.filter(pk=run.pk).update(strategy_run=strategy_run, is_replay=True)
        pipeline_run_execute(run.pk)
        return set(run_outputs(run).context.memory_ids)

    live_run = recalled_by_run(replay=False)
    replay_run = recalled_by_run(replay=True)

    assert live.pk in live_run and own.pk not in live_run and other.pk not in live_run
    assert {live.pk, own.pk} <= replay_run and other.pk not in replay_run


def test_the_replay_command_passes_lessons_to_live_only_when_asked(strategy, instrument_with_bars, monkeypatch):
    seen: list[bool] = []

    def fake_replay(**kwargs):
        seen.append(kwargs["lessons_to_live"])
        return iter(())

    monkeypatch.setattr("trading.strategies.replay_jobs.replay_strategy", fake_replay)
    last = str(instrument_with_bars.bars.latest("date").date)

    call_command("replay", "--strategy", "swing", "--from", last, "--to", last, verbosity=0)
    call_command("replay", "--strategy", "swing", "--from", last, "--to", last, "--lessons-to-live", verbosity=0)

    assert seen == [False, True]
