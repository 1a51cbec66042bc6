"""The fast replay path is the plain one, read once: the same window replayed both ways leaves the
same theses, orders, positions, PnL to the paisa, reviews and days; and it stays strictly as of
each day (data changed after a day leave everything up to that day as it was)."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest

from tests.trading.test_replay_jobs import replay_record
from trading.book.accounts import default_account
from trading.market.demo_seed import seed_demo
from trading.market.domain.demo import DEMO_END, DEMO_START
from trading.models import (
    Account,
    AnalystNoteRecord,
    CorporateAction,
    DailyBar,
    DebateRecord,
    HeuristicCitation,
    Instrument,
    PipelineRun,
    StageRun,
    Strategy,
)
from trading.strategies.replay import ApprovalPolicy, replay_sessions, replay_strategy

SYMBOLS = 3
SESSIONS = 30
WORKER_SESSIONS = 12


@pytest.fixture
def demo_strategy(db, settings) -> Strategy:
    return _demo_strategy(settings)


def _demo_strategy(settings) -> Strategy:
    """Three demo instruments (bars, news, fundamentals, macro readings) over a month of sessions,
    with room for every idea, so approvals, fills, exits and reviews all happen."""
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open"}
    settings.LLM = {**settings.LLM, "OFFLINE_LATENCY_MS": 0.0}
    seed_demo()
    live = default_account()
    Account.objects.filter(pk=live.pk).update(max_notional_pct=Decimal("60"), exposure_cap_pct=Decimal("300"))
    strategy = Strategy.objects.create(name="fast", philosophy="Trend swings on the demo's large caps, 2R targets.")
    strategy.universe.set(Instrument.objects.filter(is_active=True).order_by("symbol")[:SYMBOLS])
    return strategy


def window(strategy: Strategy) -> list[dt.date]:
    return replay_sessions(strategy, DEMO_START, DEMO_END)[-SESSIONS:]


def replay(strategy: Strategy, days: list[dt.date], *, fast: bool) -> dict[str, list]:
    list(
        replay_strategy(
            strategy=strategy,
            start=days[0],
            end=days[-1],
            policy=ApprovalPolicy.parse("all"),
            fast=fast,
            atomic_days=fast,
        )
    )
    return full_record(strategy)


def full_record(strategy: Strategy) -> dict[str, list]:
    """``replay_record`` and what each run computed: its status and why, the bundle it read (the
    feature snapshot's digest) and what it used (limits, directives, models), its stages, each
    analyst's stance, the debate's calibrated conviction and the playbook rules each role cited
    (tied to its note, or to the thesis)."""
    runs = PipelineRun.objects.filter(strategy_run__strategy=strategy, is_replay=True)
    record = replay_record(strategy)
    record["runs"] = list(
        runs.order_by("as_of", "instrument__symbol").values_list(
            "as_of", "instrument__symbol", "status", "failure_reason", "feature_snapshot__digest", "attempts", "used"
        )
    )
    record["stages"] = list(
        StageRun.objects.filter(run__in=runs)
        .order_by("run__as_of", "run__instrument__symbol", "position")
        .values_list("run__as_of", "stage", "status", "error", "output")
    )
    record["citations"] = list(
        HeuristicCitation.objects.filter(run__in=runs)
        .order_by("run__as_of", "run__instrument__symbol", "role", "code")
        .values_list("run__as_of", "role", "code", "accepted", "note__role", "thesis__direction", "cited_on")
    )
    record["notes"] = list(
        AnalystNoteRecord.objects.filter(run__in=runs)
        .order_by("run__as_of", "run__instrument__symbol", "role")
        .values_list("run__as_of", "role", "stance", "confidence", "abstained", "summary", "citations")
    )
    record["debates"] = list(
        DebateRecord.objects.filter(run__in=runs)
        .order_by("run__as_of", "run__instrument__symbol")
        .values_list("run__as_of", "winner", "proposed_conviction", "conviction", "rationale")
    )
    return record


def test_the_fast_path_leaves_every_row_of_the_plain_path(demo_strategy):
    days = window(demo_strategy)
    # A split inside the window: both paths read each day's bars adjusted as known that day.
    split_of = demo_strategy.universe.order_by("symbol").first()
    CorporateAction.objects.create(
        instrument=split_of, kind="split", ex_date=days[12], ratio_old=Decimal(1), ratio_new=Decimal(2)
    )

    plain = replay(demo_strategy, days, fast=False)
    fast = replay(demo_strategy, days, fast=True)

    assert len(plain["runs"]) == SYMBOLS * SESSIONS
    assert plain["theses"] and plain["orders"] and plain["positions"] and plain["reviews"], "a replay that trades"
    assert any(position[6] == "closed" for position in plain["positions"])
    for part in plain:
        assert without_ids(fast[part]) == without_ids(plain[part]), part


def test_the_fast_path_decides_each_day_strictly_as_of_that_day(demo_strategy):
    days = window(demo_strategy)
    pivot = days[15]
    before = _up_to(replay(demo_strategy, days, fast=True), pivot)

    for bar in DailyBar.objects.filter(date__gt=pivot):
        bar.open, bar.high, bar.low, bar.close = bar.open / 2, bar.high / 2, bar.low / 2, bar.close / 2
        bar.save()
    after = _up_to(replay(demo_strategy, days, fast=True), pivot)

    assert before["theses"] and without_ids(after) == without_ids(before)


def without_ids(value: object) -> object:
    """Rows as a person compares them: a second replay's rows have new ids ("position #8" where the
    first said "position #1"), and nothing else may differ."""
    if isinstance(value, str):
        return re.sub(r"#\d+", "#", value)
    if isinstance(value, list | tuple):
        return [without_ids(item) for item in value]
    if isinstance(value, dict):
        return {key: _id_free(key, item) for key, item in value.items()}
    return value


def _id_free(key: str, value: object) -> object:
    """A stored snapshot's ids (the account's, a directive's, the lessons recalled) as how many."""
    if key == "id" or key.endswith("_id"):
        return "id"
    if key.endswith("_ids") and isinstance(value, list):
        return len(value)
    return without_ids(value)


def _up_to(record: dict[str, list], pivot: dt.date) -> dict[str, list]:
    """What was decided on or before ``pivot``: the runs, notes, debates and theses of those days."""
    return {part: [row for row in record[part] if row[0] <= pivot] for part in ("runs", "notes", "debates", "theses")}


@pytest.fixture
def committed_demo_strategy(transactional_db, settings) -> Strategy:
    """``demo_strategy`` committed: worker processes read the database through their own
    connections, so nothing may wait in the test's transaction."""
    return _demo_strategy(settings)


def test_worker_processes_leave_every_row_of_the_sequential_fast_path(committed_demo_strategy):
    strategy = committed_demo_strategy
    days = window(strategy)[-WORKER_SESSIONS:]

    sequential = replay(strategy, days, fast=True)
    list(
        replay_strategy(
            strategy=strategy,
            start=days[0],
            end=days[-1],
            policy=ApprovalPolicy.parse("all"),
            fast=True,
            workers=2,
        )
    )
    parallel = full_record(strategy)

    assert len(sequential["runs"]) == SYMBOLS * WORKER_SESSIONS
    assert sequential["theses"] and sequential["orders"] and sequential["positions"], "a replay that trades"
    for part in sequential:
        assert without_ids(parallel[part]) == without_ids(sequential[part]), part


def test_workers_refuse_what_they_cannot_keep_identical(demo_strategy):
    days = window(demo_strategy)
    policy = ApprovalPolicy.parse("all")
    for options in ({"fast": False}, {"fast": True, "atomic_days": True}):
        with pytest.raises(ValueError, match="workers"):
            next(
                replay_strategy(
                    strategy=demo_strategy, start=days[0], end=days[-1], policy=policy, workers=2, **options
                )
            )
    with pytest.raises(ValueError, match="inside a transaction"):  # the test's own transaction
        next(replay_strategy(strategy=demo_strategy, start=days[0], end=days[-1], policy=policy, fast=True, workers=2))
