"""The shortcuts that make a replay (and a live run) cheaper leave exactly what the long way
leaves: a day marked twice keeps one mark with the later close; a replay's run is claimed in one
write only when nobody could have had it, and looked at first otherwise; one made in a replay day's
transaction is inserted claimed and ends as the long way's row; the features stage cuts
a history running past its day to the same bars, whatever the shape of its dates."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from django.utils import timezone

from tests.trading.book_rows import instrument_at, next_session
from tests.trading.test_broker import _approve_and_fill, _bar, long_thesis  # noqa: F401 - a fixture
from trading.book import broker
from trading.market.domain.features import build_feature_bundle
from trading.models import DailyBar, PipelineRun, Position, PositionMark
from trading.pipeline.orchestrator import ReplayRuns, pipeline_run_create, pipeline_run_execute, replay_runs
from vocabulary.features import FeatureBundle

FINISHED = {"completed", "held", "failed", "degraded"}


def test_a_day_marked_twice_keeps_one_mark_with_the_later_close(long_thesis, approver, settings):  # noqa: F811
    position = _approve_and_fill(long_thesis, approver, settings)
    day = next_session(position.opened_on)
    bar = _bar(long_thesis, day, open_="101.00", high="104.00", low="100.00", close="101.00")

    assert broker.positions_mark(as_of=day) == {"filled": 0, "closed": 0, "marked": 1}
    DailyBar.objects.filter(pk=bar.pk).update(close=Decimal("103.00"))  # a corrected bar, marked again
    assert broker.positions_mark(as_of=day) == {"filled": 0, "closed": 0, "marked": 1}

    marks = list(PositionMark.objects.filter(position=position).values_list("date", "close", "unrealised_pnl"))
    position.refresh_from_db()
    assert marks == [(day, Decimal("103.00"), position.unrealised_pnl)]
    assert position.status == Position.Status.OPEN and position.last_mark == Decimal("103.00")
    # 100 shares filled at 100.10 (the open, 100.00, plus 10 bps of slippage): at 103 they are up 290.
    assert position.unrealised_pnl == Decimal("290.00")


@pytest.fixture
def replay_instrument(db, settings):
    settings.LLM = {**settings.LLM, "OFFLINE_LATENCY_MS": 0.0}
    return instrument_at("FASTCLAIM")


def test_a_fresh_replay_run_is_claimed_once_and_left_without_a_lease(replay_instrument):
    run = pipeline_run_create(instrument=replay_instrument, as_of=dt.date(2026, 3, 2), provider="offline")

    with replay_runs(ReplayRuns(exclusive=True)):
        pipeline_run_execute(run.pk)

    run.refresh_from_db()
    assert run.attempts == 1 and run.status in FINISHED
    assert run.lease_owner == "" and run.lease_expires_at is None and run.started_at is not None
    assert run.enqueued_at is not None  # a claimed run's message counts as sent, as on the long way


def test_a_replay_run_someone_holds_is_not_taken_by_the_short_claim(replay_instrument):
    run = pipeline_run_create(instrument=replay_instrument, as_of=dt.date(2026, 3, 2), provider="offline")
    until = timezone.now() + dt.timedelta(minutes=5)
    PipelineRun.objects.filter(pk=run.pk).update(
        status=PipelineRun.Status.RUNNING, attempts=1, lease_owner="other-host:1:abc", lease_expires_at=until
    )

    with replay_runs(ReplayRuns(exclusive=True)):
        pipeline_run_execute(run.pk)

    run.refresh_from_db()
    assert (run.status, run.attempts, run.lease_owner) == (PipelineRun.Status.RUNNING, 1, "other-host:1:abc")
    assert not run.stages.exists()


def test_a_replay_run_out_of_attempts_is_given_up_not_claimed(replay_instrument, settings):
    settings.RUN_MAX_ATTEMPTS = 0
    run = pipeline_run_create(instrument=replay_instrument, as_of=dt.date(2026, 3, 2), provider="offline")

    with replay_runs(ReplayRuns(exclusive=True)):
        pipeline_run_execute(run.pk)

    run.refresh_from_db()
    assert run.status == PipelineRun.Status.FAILED and run.attempts == 0
    assert "gave up after 0 attempts" in run.failure_reason


RUN_ROW = ("status", "failure_reason", "attempts", "lease_owner", "lease_expires_at", "used")


def _run_row(run: PipelineRun) -> dict:
    row = {name: getattr(run, name) for name in RUN_ROW}
    row["bundle"] = run.feature_snapshot.digest if run.feature_snapshot else None
    row["stamped"] = all((run.started_at, run.enqueued_at, run.finished_at))
    return row


def test_a_replay_run_made_in_the_days_transaction_is_inserted_claimed_and_ends_as_the_long_way(
    replay_instrument,
):
    day = dt.date(2026, 3, 2)
    long_way = pipeline_run_create(instrument=replay_instrument, as_of=day, provider="offline", is_replay=True)
    with replay_runs(ReplayRuns(exclusive=True)):
        pipeline_run_execute(long_way.pk)
        made = pipeline_run_create(instrument=replay_instrument, as_of=day, provider="offline", is_replay=True)
        inserted = PipelineRun.objects.get(pk=made.pk)
        pipeline_run_execute(made.pk)

    # Inserted as the first attempt's claim leaves a run, held by the attempt that executes it.
    assert (inserted.status, inserted.attempts) == (PipelineRun.Status.RUNNING, 1)
    assert inserted.lease_owner and inserted.lease_expires_at and inserted.started_at and inserted.enqueued_at
    long_way.refresh_from_db()
    made.refresh_from_db()
    assert long_way.status in FINISHED and long_way.feature_snapshot is not None and long_way.used
    # Its snapshot and bundle link, kept for its ending, are written with it: the same row.
    assert _run_row(made) == _run_row(long_way)


def test_a_claimed_replay_run_stopped_after_a_stage_keeps_what_that_stage_wrote(replay_instrument):
    with replay_runs(ReplayRuns(exclusive=True)):
        run = pipeline_run_create(
            instrument=replay_instrument, as_of=dt.date(2026, 3, 2), provider="offline", is_replay=True
        )
        pipeline_run_execute(run.pk, stop_after="features")

    run.refresh_from_db()
    assert run.status == PipelineRun.Status.RUNNING and run.finished_at is None
    assert run.feature_snapshot is not None and run.used and run.used["provider"] == "offline"


def _history(index: list) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    close = 100 + np.cumsum(rng.normal(0, 1, len(index)))
    return pd.DataFrame(
        {"open": close, "high": close + 1, "low": close - 1, "close": close, "volume": 1000.0},
        index=pd.Index(index, name="date"),
    )


@pytest.mark.parametrize("shape", ["dates", "timestamps"])
def test_a_history_running_past_the_day_gives_the_bundle_of_the_history_cut_at_the_day(shape):
    days = [dt.date(2025, 1, 1) + dt.timedelta(days=n) for n in range(120)]
    as_of = days[89]
    index: list = [pd.Timestamp(day) for day in days] if shape == "timestamps" else list(days)
    history = _history(index)
    cut = history[[pd.Timestamp(day).date() <= as_of for day in history.index]]

    def bundle(bars: pd.DataFrame) -> FeatureBundle:
        return build_feature_bundle(symbol="X", as_of=as_of, bars=bars, news=[], fundamentals=None)

    assert bundle(history) == bundle(cut)
    assert bundle(history).technical.last_close == pytest.approx(float(history["close"].iloc[89]))
