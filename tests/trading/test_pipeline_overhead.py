"""The live pipeline's fixed costs: events through one long-lived loop, one thread pool for the
model-call fan-outs, fewer queries per stage, and the hygiene and memory shortcuts; each keeps the
outputs it had."""

from __future__ import annotations

import itertools
import random
import threading
import unicodedata

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import recording
from agents.domain import hygiene
from agents.models import MemoryEntry
from agents.roles import _base
from trading import events
from trading.models import PipelineRun, StageRun
from trading.pipeline.orchestrator import STAGES, pipeline_run_create, pipeline_run_execute


def _sender_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "desk-events"]


def test_publishes_from_plain_sync_code_share_one_loop_and_reach_the_group():
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)("run-overhead", channel)
    try:
        for number in range(3):
            events.publish(events.DeskEvent(kind="stage.started", data={"n": number}), group="run-overhead")
        received = [async_to_sync(layer.receive)(channel)["event"]["data"]["n"] for _ in range(3)]
    finally:
        async_to_sync(layer.group_discard)("run-overhead", channel)
    assert received == [0, 1, 2]
    assert len(_sender_threads()) == 1


def test_a_failing_channel_layer_never_raises_into_the_caller(monkeypatch, caplog):
    layer = get_channel_layer()

    async def broken(group, message):
        raise ConnectionError("layer down")

    monkeypatch.setattr(layer, "group_send", broken)
    events.publish(events.DeskEvent(kind="run.finished"), group="run-0")
    assert "could not publish run.finished" in caplog.text


def test_the_sender_loop_starts_again_after_a_fork():
    events.publish(events.DeskEvent(kind="bench"), group="run-0")
    events._sender.forget()  # what a forked child does first: the parent's loop thread is not there
    events.publish(events.DeskEvent(kind="bench"), group="run-0")
    assert all(thread.is_alive() for thread in _sender_threads())


def test_fan_outs_reuse_the_pools_threads():
    _base.pair(lambda: 1, lambda: 2)
    before = {thread.ident for thread in threading.enumerate()}
    results = [_base.pair(lambda n=n: n, lambda n=n: -n) for n in range(20)]
    started = {thread.ident for thread in threading.enumerate()} - before
    assert results == [(n, -n) for n in range(20)]
    assert len(started) <= 1  # at most the pool's second thread, once


def test_a_pair_waits_for_both_calls_before_raising():
    finished = threading.Event()

    def fails():
        raise ValueError("bull failed")

    def slow():
        finished.wait(0.2)
        finished.set()
        return "bear"

    with pytest.raises(ValueError, match="bull failed"):
        _base.pair(fails, slow)
    assert finished.is_set()


def test_a_fan_out_inside_a_fan_out_runs_in_place():
    # Waiting on the pool from one of its own threads could wait forever once it is full.
    assert _base.pair(lambda: _base.pair(lambda: 1, lambda: 2), lambda: 3) == ((1, 2), 3)


def test_the_schema_text_is_the_schema_dumped_once():
    from agents.roles import AnalystNote

    first = _base.system_text("job", AnalystNote)
    assert _base.system_text("job", AnalystNote) is not None
    assert _base._schema_text(AnalystNote) is _base._schema_text(AnalystNote)
    assert first.endswith(_base._schema_text.__wrapped__(AnalystNote))


def _strip_by_character(text: str) -> str:
    """The definition: each character judged on its own (the path before the shortcut)."""
    for line_break, newline in hygiene._LINE_BREAKS.items():
        text = text.replace(line_break, newline)
    return "".join(
        char for char in text if char in hygiene._KEPT_CONTROLS or unicodedata.category(char) not in {"Cc", "Cf", "Cs"}
    )


def test_stripping_invisible_characters_outside_ascii_matches_the_character_by_character_rule():
    rng = random.Random(20_240_601)
    alphabet = [chr(code) for code in range(0x3000)]
    alphabet += ["\u200b", "\u202e", "\ufeff", "\ud800", "\U0001d173", "\U000e0001", "‹", "›", "…", "\r\n", "\u2028"]
    for _ in range(2_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        assert hygiene._strip_invisible(text) == _strip_by_character(text)
    assert hygiene.neutralise("a\u200b<b>\u202e é…") == "a‹b› é..."  # NFKC spells the ellipsis out


@pytest.mark.django_db
def test_a_memory_search_with_nothing_new_reads_one_row_and_sees_changes():
    recording.memory_cache.reset()
    MemoryEntry.objects.create(symbol="RELIANCE", text="breakout held on volume", created_on=_today())
    recording.memory_search("breakout", symbol="RELIANCE", as_of=_today())
    with CaptureQueriesContext(connection) as queries:
        hits = recording.memory_search("breakout", symbol="RELIANCE", as_of=_today())
    assert len(queries.captured_queries) == 1 and len(hits) == 1
    MemoryEntry.objects.create(symbol="RELIANCE", text="breakout failed at resistance", created_on=_today())
    assert len(recording.memory_search("breakout", symbol="RELIANCE", as_of=_today())) == 2
    MemoryEntry.objects.filter(text__startswith="breakout held").delete()
    assert [hit.record.text for hit in recording.memory_search("breakout", symbol="RELIANCE", as_of=_today())] == [
        "breakout failed at resistance"
    ]


def _today():
    from django.utils import timezone

    return timezone.localdate()


def _stage_row_reads(queries: CaptureQueriesContext) -> list[str]:
    return [
        query["sql"]
        for query in queries.captured_queries
        if query["sql"].startswith("SELECT") and 'FROM "trading_stagerun"' in query["sql"]
    ]


def test_a_fresh_run_reads_its_stage_rows_once_and_inserts_each_stage(instrument_with_bars):
    run = pipeline_run_create(
        instrument=instrument_with_bars, as_of=instrument_with_bars.bars.latest("date").date, provider="offline"
    )
    with CaptureQueriesContext(connection) as queries:
        pipeline_run_execute(run.pk)
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.COMPLETED
    assert len(_stage_row_reads(queries)) == 1  # what earlier attempts left, read once
    assert list(StageRun.objects.filter(run=run).order_by("position").values_list("stage", "status")) == [
        (stage, StageRun.Status.DONE) for stage in STAGES
    ]


@pytest.mark.django_db(transaction=True)
def test_a_run_outside_a_transaction_opens_no_empty_write_transaction(instrument_with_bars):
    # Each write transaction (SQLite's BEGIN IMMEDIATE takes its write lock) costs a round trip
    # and, on SQLite, blocks every other writer: a flush with nothing pending must not open one.
    run = pipeline_run_create(
        instrument=instrument_with_bars, as_of=instrument_with_bars.bars.latest("date").date, provider="offline"
    )
    with CaptureQueriesContext(connection) as queries:
        pipeline_run_execute(run.pk)
    sql = [query["sql"] for query in queries.captured_queries]
    begin = "BEGIN IMMEDIATE" if connection.vendor == "sqlite" else "BEGIN"
    assert begin in sql
    assert [pair for pair in itertools.pairwise(sql) if pair == (begin, "COMMIT")] == []


def test_a_resumed_run_finds_the_stage_row_its_earlier_attempt_left(instrument_with_bars):
    run = pipeline_run_create(
        instrument=instrument_with_bars, as_of=instrument_with_bars.bars.latest("date").date, provider="offline"
    )
    pipeline_run_execute(run.pk, stop_after="context")
    PipelineRun.objects.filter(pk=run.pk).update(lease_owner="", lease_expires_at=None)
    # The analysts stage was started by the earlier attempt, which died before finishing it.
    StageRun.objects.create(run=run, stage="analysts", position=STAGES.index("analysts"), status="failed")
    pipeline_run_execute(run.pk)
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.COMPLETED
    assert StageRun.objects.filter(run=run).count() == len(STAGES)
    assert StageRun.objects.get(run=run, stage="analysts").status == StageRun.Status.DONE
