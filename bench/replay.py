"""How long a strategy replay takes, and where its time goes.

Run from the project root:

    .venv/bin/python bench/replay.py [--days N] [--quick] [--keep] [--paths plain,fast] [--instruments N]
                                     [--workers N] [--scale [NxY ...]] [--baseline COMMIT]

One strategy over the 12 demo instruments (``seed_demo``), replayed over the last N sessions of the
demo (default 250, about a year; ``--quick`` 30) with the offline model, approval policy ``all``
and next-open fills, exactly as ``manage.py replay`` does. Everything happens in a throwaway SQLite
database under a fresh temp directory (removed at the end unless ``--keep``).

Printed: wall time, sessions/second, what the replay produced (pipeline runs, theses, positions,
reviews, realised PnL), and the split of the wall time:

- the replay's own steps, timed by wrapping the functions the loop calls (module attributes
  replaced in this process only): the daily book pass ``positions_mark`` (with its fills, closes
  and the reviews written at each close), ``pipeline_run_create``, ``pipeline_run_execute``,
  approvals (``thesis_approve``, which places the order) and the decision
  (``strategy_run_decide``); what is left is the loop's own queries and rows;
- inside ``pipeline_run_execute``, the pipeline stages from ``StageRun.started_at/finished_at``
  summed per stage name, and the time between stages;
- the drift: seconds per session over the first and the last tenth of the sessions, since rows
  pile up day after day (model calls, memory, marks, audit events);
- month by month (21 sessions each): ms per session, the model calls' mean input tokens and the
  risk-approved theses, to tell a cost that grows with the stored history from one that follows
  the replay's own state (its memory filling up, the market's setups).

Both paths are timed in the same run, plain (before) then fast (after), on the same window: the
comparison prints each one's wall time, runs per second and ms per session in the first and the
last month, and the speed-up. ``--scale`` replays synthetic universes (instruments x years) on the
fast path, each in a fresh process, and prints wall time and peak memory per point. ``--workers N``
runs each day's pipeline runs of the fast path (and of the scaling points) in N worker processes;
their steps are then timed inside the workers, so the split shows the parent's share only, and the
peak memory adds the largest worker's.

After the fast path (SQLite), the window's last month is replayed again by a second strategy on the
same universe, five times in turns on a copy of the database made before any replay and on the
bench's database as the paths left it: the same work with and without a year of stored rows, to
tell a cost that grows with the history from one that follows the month's own work
(``--no-history-probe`` skips it).

``--baseline COMMIT`` first replays the same number of sessions with the code of an earlier commit of
this checkout (its files exported to a temp directory, its own ``bench/replay.py`` run there in a
child process on SQLite), so a target set against the code of that day is measured on the same
machine in the same run; the comparison then prints each path's speed against it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import logging
import os
import platform
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from functools import wraps
from pathlib import Path
from types import ModuleType
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from bench.pipeline import (  # noqa: E402 - needs the project root on sys.path
    budget_read_ms,
    cpu_count,
    cpu_model,
    load_average,
    use_throwaway_database,
)

STRATEGY_NAME = "bench-replay"
QUICK_DAYS = 30
STAGES = ("features", "context", "analysts", "debate", "trader", "risk")
BETWEEN_STAGES = "between stages"  # claim, model choice, run budget, events, finish


# --- timing the loop's steps ----------------------------------------------------------------------


@dataclass
class StepTimes:
    """Inclusive seconds and calls per wrapped function (a step that calls another counts both),
    and each call's seconds keyed by its first positional argument (the run id for the pipeline)."""

    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    calls: Counter[str] = field(default_factory=Counter)
    samples: dict[str, list[tuple[Any, float]]] = field(default_factory=lambda: defaultdict(list))
    failures: list[tuple[str, dict[str, Any], Exception]] = field(default_factory=list)
    _originals: list[tuple[ModuleType, str, Callable[..., Any]]] = field(default_factory=list)

    def wrap(self, module: ModuleType, name: str, label: str, tolerate: tuple[type[Exception], ...] = ()) -> None:
        """Time every call of ``module.name``. A ``tolerate`` error is recorded and the call
        returns None, so the replay goes on; any other error goes through."""
        original = getattr(module, name)

        @wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            except tolerate as error:
                self.failures.append((label, kwargs, error))
                return None
            finally:
                elapsed = time.perf_counter() - started
                self.seconds[label] += elapsed
                self.calls[label] += 1
                self.samples[label].append((args[0] if args else None, elapsed))

        setattr(module, name, timed)
        self._originals.append((module, name, original))

    def restore(self) -> None:
        for module, name, original in reversed(self._originals):
            setattr(module, name, original)
        self._originals.clear()


@contextmanager
def timed_steps(strict: bool) -> Iterator[StepTimes]:
    """Wrap what ``replay_strategy`` calls, where it looks each function up at call time.

    Unless ``strict``, a review that raises ValueError is recorded and skipped instead of ending
    the replay: the position is already closed (committed) when its review runs, as a live review
    task failing would leave it."""
    from reviews import receivers as review_receivers
    from trading.book import approvals, broker
    from trading.strategies import replay

    times = StepTimes()
    times.wrap(replay, "replay_clear", "setup")
    times.wrap(replay, "_policy_user", "setup")
    times.wrap(replay, "ReplayCache", "setup")  # the fast path reads its window once, before its first day
    times.wrap(broker, "positions_mark", "book pass")
    times.wrap(broker, "order_try_fill", "fills")
    times.wrap(broker, "position_close", "closes")
    tolerate = () if strict else (ValueError,)
    times.wrap(review_receivers, "position_review", "reviews", tolerate)  # the replay's review receiver
    times.wrap(replay, "pipeline_run_create", "pipeline_run_create")
    times.wrap(replay, "pipeline_run_execute", "pipeline_run_execute")
    times.wrap(replay, "_runs_in_workers", "runs in workers")
    times.wrap(replay, "thesis_approve", "approvals")
    times.wrap(approvals, "thesis_staleness", "staleness check")
    times.wrap(broker, "order_place", "order placement")
    times.wrap(replay, "strategy_run_decide", "decision")
    times.wrap(replay, "strategy_run_open", "critique pre-step")
    try:
        yield times
    finally:
        times.restore()


# --- setting up the strategy ----------------------------------------------------------------------


def demo_strategy() -> object:
    from trading.market.demo_seed import seed_demo
    from trading.models import Instrument, Strategy

    seed_demo()
    strategy = Strategy.objects.create(
        name=STRATEGY_NAME, philosophy="Trend swings on the demo's large caps, 2R targets.", provider="offline"
    )
    strategy.universe.set(Instrument.objects.filter(is_active=True))
    return strategy


def last_sessions(strategy: object, days: int) -> list[dt.date]:
    from trading.market.domain.demo import DEMO_END, DEMO_START
    from trading.strategies.replay import replay_sessions

    return replay_sessions(strategy, DEMO_START, DEMO_END)[-days:]


def use_replay_settings() -> None:
    """Next-open fills and a model that answers at once, whatever the environment says."""
    from django.conf import settings

    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open"}
    settings.LLM = {**settings.LLM, "OFFLINE_LATENCY_MS": 0.0}
    # Each approval queues a fill task on the embedded file-system broker (in the temp dir; no
    # worker reads it, the next day's book pass fills the order), and kombu warns every time.
    logging.getLogger("kombu.connection").setLevel(logging.ERROR)


# --- running -------------------------------------------------------------------------------------


@dataclass
class ReplayResult:
    wall_s: float
    cpu_s: float  # this process's and its finished workers' user + system seconds: what load does not inflate
    day_seconds: list[float]
    approved: int
    refused: Counter[str]
    decisions: Counter[str]
    steps: StepTimes
    budget_before_ms: float
    day_queries: list[int] = field(default_factory=list)  # the replaying thread's, each day
    day_cpu: list[float] = field(default_factory=list)  # this process's CPU seconds (all its threads), each day


def refusal_kind(text: str) -> str:
    """'SYMBOL: stale: the close of ...' -> 'stale'; the first words of other reasons."""
    reason = text.split(": ", 1)[-1]
    return reason.split(":", 1)[0] if ":" in reason else " ".join(reason.split()[:6])


def run_replay(
    strategy: object, sessions: list[dt.date], progress: bool, strict: bool, fast: bool = False, workers: int = 1
) -> ReplayResult:
    """The replay through ``replay_strategy``: the plain path (``fast`` False: each run reads and
    writes as a live run does) or the fast one (inputs read once, each day in one transaction, or,
    with ``workers`` > 1, the day's runs side by side in that many processes)."""
    from django.db import connection

    from trading.strategies.replay import ApprovalPolicy, replay_strategy

    approved, refused, decisions, day_seconds, day_queries, day_cpu = 0, Counter(), Counter(), [], [], []
    budget_before_ms, _ = budget_read_ms()
    cpu_before = cpu_seconds()
    queries = [0]

    def count(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        queries[0] += 1
        return execute(sql, params, many, context)

    with timed_steps(strict) as steps, connection.execute_wrapper(count):
        started = last = time.perf_counter()
        last_cpu = time.process_time()
        days = replay_strategy(
            strategy=strategy,
            start=sessions[0],
            end=sessions[-1],
            policy=ApprovalPolicy.parse("all"),
            fast=fast,
            atomic_days=fast and workers <= 1,
            workers=workers if fast else 1,
        )
        for index, day in enumerate(days, start=1):
            now = time.perf_counter()
            # The first day's wall holds the replay's start-up (clearing the previous replay, reading
            # the window): timed apart as "setup", it is not the day's own cost.
            day_seconds.append(now - last - (steps.seconds["setup"] if index == 1 else 0.0))
            day_queries.append(queries[0])
            now_cpu = time.process_time()
            day_cpu.append(now_cpu - last_cpu)
            last, last_cpu, queries[0] = now, now_cpu, 0
            approved += day.approved
            refused.update(refusal_kind(text) for text in day.refused)
            decisions[day.decision] += 1
            if progress and index % 25 == 0:
                print(f"  ... {index}/{len(sessions)} sessions, {now - started:.0f} s", file=sys.stderr, flush=True)
        wall = time.perf_counter() - started
    cpu = cpu_seconds() - cpu_before  # the workers are joined (and counted) when the replay ends
    return ReplayResult(
        wall, cpu, day_seconds, approved, refused, decisions, steps, budget_before_ms, day_queries, day_cpu
    )


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


# --- reading the record back -----------------------------------------------------------------------


@dataclass
class ReplayRecord:
    runs: Counter[str]
    theses: int
    risk_approved: int
    theses_by_status: Counter[str]
    working_orders: int
    opened: int
    closed: int
    still_open: int
    exits: Counter[str]
    reviews: int
    realised: Decimal
    stages_by_run: dict[int, dict[str, float]]
    # Per replay day: the mean input tokens of its model calls and its risk-approved theses.
    tokens_by_day: dict[dt.date, float] = field(default_factory=dict)
    approvable_by_day: Counter[dt.date] = field(default_factory=Counter)
    # Per replay day: the critiques its pre-step ran (each reads a lookback of strategy runs).
    critiques_by_day: Counter[dt.date] = field(default_factory=Counter)

    def stage_total(self, stage: str) -> float:
        return sum(stages.get(stage, 0.0) for stages in self.stages_by_run.values())


def read_record(strategy: object) -> ReplayRecord:
    from django.db.models import Avg

    from agents.models import ModelCall
    from reviews.models import Critique, TradeReview
    from trading.book.accounts import replay_account
    from trading.models import Order, PipelineRun, Position, StageRun, Thesis

    account = replay_account(strategy.name)
    runs = PipelineRun.objects.filter(strategy_run__strategy=strategy, is_replay=True)
    theses = Thesis.objects.filter(run__in=runs)
    positions = Position.objects.filter(account=account)
    closed = positions.filter(status=Position.Status.CLOSED)
    return ReplayRecord(
        runs=Counter(runs.values_list("status", flat=True)),
        theses=theses.count(),
        risk_approved=theses.filter(risk_approved=True).count(),
        theses_by_status=Counter(theses.values_list("status", flat=True)),
        working_orders=Order.objects.filter(account=account, status=Order.Status.WORKING).count(),
        opened=positions.count(),
        closed=closed.count(),
        still_open=positions.filter(status=Position.Status.OPEN).count(),
        exits=Counter(closed.values_list("exit_reason", flat=True)),
        reviews=TradeReview.objects.filter(position__in=positions).count(),
        realised=sum(closed.values_list("realised_pnl", flat=True), start=Decimal(0)),
        stages_by_run=stages_by_run(StageRun.objects.filter(run__in=runs)),
        tokens_by_day=dict(
            ModelCall.objects.filter(run__in=runs)
            .values_list("run__as_of")
            .annotate(tokens=Avg("input_tokens"))
            .values_list("run__as_of", "tokens")
        ),
        approvable_by_day=Counter(theses.filter(risk_approved=True).values_list("run__as_of", flat=True)),
        critiques_by_day=Counter(
            Critique.objects.filter(strategy=strategy, is_replay=True).values_list("as_of", flat=True)
        ),
    )


def stages_by_run(stage_runs: object) -> dict[int, dict[str, float]]:
    """Seconds per stage of each run, from the stage rows' own timestamps."""
    by_run: dict[int, dict[str, float]] = defaultdict(dict)
    for run_id, stage, started, finished in stage_runs.values_list("run_id", "stage", "started_at", "finished_at"):
        if finished is not None:
            by_run[run_id][stage] = (finished - started).total_seconds()
    return by_run


# --- printing ---------------------------------------------------------------------------------------


def share_line(label: str, seconds: float, wall: float, calls: int | None = None, indent: int = 2) -> str:
    per_call = f"{seconds * 1000 / calls:9.1f} ms x {calls:>5,}" if calls else f"{'':>19}"
    return f"{' ' * indent}{label:<{34 - indent}} {seconds:8.2f} s {seconds / wall:6.1%}   {per_call}"


def print_outcome(result: ReplayResult, record: ReplayRecord, sessions: list[dt.date]) -> None:
    runs = sum(record.runs.values())
    print(
        f"\nReplayed {len(sessions)} sessions ({sessions[0]} to {sessions[-1]}) in {result.wall_s:.1f} s: "
        f"{len(sessions) / result.wall_s:.2f} sessions/second, {runs / result.wall_s:.1f} pipeline runs/second"
    )
    print(f"  pipeline runs      {runs:>6,}  by status {dict(record.runs.most_common())}")
    print(
        f"  theses             {record.theses:>6,}  risk-approved {record.risk_approved:,}; "
        f"by status {dict(record.theses_by_status.most_common())}"
    )
    print(
        f"  approvals          {result.approved:>6,}  refused {sum(result.refused.values()):,}"
        f"{' ' + str(dict(result.refused.most_common())) if result.refused else ''}"
    )
    print(
        f"  positions opened   {record.opened:>6,}  closed {record.closed:,} "
        f"(exits {dict(record.exits.most_common())}), still open {record.still_open:,}; "
        f"orders still working {record.working_orders:,}"
    )
    print(f"  reviews written    {record.reviews:>6,}")
    print_failures(result.steps.failures)
    print(f"  realised PnL       ₹{record.realised:,.2f} net of costs")
    print(f"  decisions          {dict(result.decisions.most_common())}")


def describe_position(position: object) -> str:
    thesis = position.thesis
    return (
        f"position #{position.pk} {position.instrument.symbol} {position.direction}: thesis entry {thesis.entry}, "
        f"filled {position.entry_price} on {position.opened_on}, stop {position.stop}, target {position.target}; "
        f"closed {position.closed_on} by {position.exit_reason} at {position.exit_price}"
    )


def print_failures(failures: list[tuple[str, dict[str, Any], Exception]]) -> None:
    """Errors the bench caught so the replay could finish; ``manage.py replay`` would stop at the first."""
    if not failures:
        return
    print(
        f"  REVIEWS FAILED     {len(failures):>6,}  the replay command would stop at the first; "
        f"this bench skips them (--strict to stop)"
    )
    for label, kwargs, error in failures:
        where = describe_position(kwargs["position"]) if "position" in kwargs else label
        print(f"    {type(error).__name__}: {error}\n      {where}")


def print_split(result: ReplayResult, record: ReplayRecord) -> None:
    wall, seconds, calls = result.wall_s, result.steps.seconds, result.steps.calls
    print(f"\nWhere the {wall:.1f} s go (inclusive; indented lines are inside the line above):")
    print(f"  {'step':<32} {'seconds':>10} {'share':>6}   {'per call':>19}")
    print(share_line("setup (clear, policy user, window read)", seconds["setup"], wall))
    print(share_line("book pass (positions_mark)", seconds["book pass"], wall, calls["book pass"]))
    for label in ("fills", "closes"):
        print(share_line(label, seconds[label], wall, calls[label], indent=4))
    print(share_line("reviews", seconds["reviews"], wall, calls["reviews"], indent=6))
    marks = seconds["book pass"] - seconds["fills"] - seconds["closes"]
    print(share_line("marks and exit checks", marks, wall, indent=4))
    print(share_line("pipeline_run_create", seconds["pipeline_run_create"], wall, calls["pipeline_run_create"]))
    execute = seconds["pipeline_run_execute"]
    runs = len(record.stages_by_run)
    if calls["runs in workers"]:  # created and executed in the workers: the parent only waits
        execute = seconds["runs in workers"]
        print(share_line("runs in workers (waited for)", execute, wall, calls["runs in workers"]))
        print("    (stages summed over the workers, which overlap: shares of the wall, not of it)")
        for stage in STAGES:
            print(share_line(f"stage {stage}", record.stage_total(stage), wall, runs, indent=4))
    else:
        print(share_line("pipeline_run_execute", execute, wall, calls["pipeline_run_execute"]))
        for stage in STAGES:
            print(share_line(f"stage {stage}", record.stage_total(stage), wall, runs, indent=4))
        between = execute - sum(record.stage_total(stage) for stage in STAGES)
        print(share_line(BETWEEN_STAGES, between, wall, runs, indent=4))
    print(share_line("approvals (thesis_approve)", seconds["approvals"], wall, calls["approvals"]))
    for label in ("staleness check", "order placement"):
        print(share_line(label, seconds[label], wall, calls[label], indent=4))
    print(share_line("decision (strategy_run_decide)", seconds["decision"], wall, calls["decision"]))
    critiques = sum(record.critiques_by_day.values())
    pre_step = seconds["critique pre-step"]
    print(share_line(f"critique pre-step ({critiques} critiques)", pre_step, wall, calls["critique pre-step"]))
    timed = sum(seconds[k] for k in ("setup", "book pass", "pipeline_run_create", "critique pre-step")) + execute
    timed += seconds["approvals"] + seconds["decision"]
    print(share_line("rest of the loop", wall - timed, wall))
    print("  (rest: the day's strategy run row and transaction, the approval window, the thesis fetch, the policy)")


def tenths(values: list[float]) -> tuple[float, float]:
    """Mean of the first and of the last tenth of ``values`` (at least one each)."""
    tenth = max(1, len(values) // 10)
    first, last = values[:tenth], values[-tenth:]
    return sum(first) / len(first), sum(last) / len(last)


def run_pieces(result: ReplayResult, record: ReplayRecord) -> dict[str, list[float]]:
    """Per pipeline run, in the order they ran: execute wall, each stage, and between stages."""
    executes = result.steps.samples["pipeline_run_execute"]
    pieces: dict[str, list[float]] = {"pipeline_run_execute": [seconds for _, seconds in executes]}
    for stage in STAGES:
        pieces[f"  stage {stage}"] = [record.stages_by_run[run_id].get(stage, 0.0) for run_id, _ in executes]
    pieces[f"  {BETWEEN_STAGES}"] = [
        seconds - sum(record.stages_by_run[run_id].values()) for run_id, seconds in executes
    ]
    return pieces


def print_drift(result: ReplayResult, record: ReplayRecord) -> None:
    """Rows pile up day after day: a step that reads them all grows from the first days to the last."""
    tenth = max(1, len(result.day_seconds) // 10)
    print(f"\nDrift: mean ms over the first and the last {tenth} sessions (and their pipeline runs)")
    print(f"  {'':<34} {'first':>9} {'last':>9} {'last/first':>10}")
    rows = {"session (whole day)": result.day_seconds}
    rows["book pass (positions_mark)"] = [seconds for _, seconds in result.steps.samples["book pass"]]
    rows.update(run_pieces(result, record))
    rows["runs in workers (waited for)"] = [seconds for _, seconds in result.steps.samples["runs in workers"]]
    for label, values in rows.items():
        if not values:
            continue
        first, last = tenths(values)
        ratio = f"{last / first:10.2f}" if first > 0 else f"{'-':>10}"
        print(f"  {label:<34} {first * 1000:9.1f} {last * 1000:9.1f} {ratio}")
    slowest = max(range(len(result.day_seconds)), key=result.day_seconds.__getitem__)
    print(f"  slowest session: #{slowest + 1} of {len(result.day_seconds)}, {result.day_seconds[slowest]:.2f} s")
    print_budget_read(result.budget_before_ms)


def day_cost_by_range_ms() -> float:
    """Today's model-call cost summed over a created_at range (the index can serve it), best of 3:
    what the run budget's ``created_at__date=today`` read costs without a date cast per row."""
    from django.db.models import Sum
    from django.utils import timezone

    from agents.models import ModelCall

    start = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    calls = ModelCall.objects.filter(created_at__gte=start, created_at__lt=start + dt.timedelta(days=1))
    times = []
    for _ in range(3):
        started = time.perf_counter()
        calls.aggregate(c=Sum("cost"))
        times.append((time.perf_counter() - started) * 1000)
    return min(times)


def print_budget_read(before_ms: float) -> None:
    """The suspect between stages: RunBudget() sums the cost of today's model calls once per run,
    and in a replay every call made so far is today's."""
    budget_ms, rows = budget_read_ms()
    print(
        f"  RunBudget() alone, best of 3: {before_ms:.1f} ms before the replay, {budget_ms:.1f} ms at the end with "
        f"{rows:,} model-call rows, all of them today's; the same sum over a created_at range instead of "
        f"created_at__date: {day_cost_by_range_ms():.1f} ms"
    )


def print_critique_evidence(strategy: object, sessions: list[dt.date]) -> None:
    """What a critique's evidence pack costs at the last session over a full lookback: read afresh,
    and with the pack of a critique five sessions earlier kept in the process (its finished runs
    and the bundles it read), as a replay's next critique finds it. Best of 3 each; the packs are
    compared, and must be equal."""
    from reviews.critique.evidence import evidence_forget, evidence_pack
    from reviews.critique.signal_ics import bundles_forget

    if len(sessions) < 6:
        return

    def forget() -> None:
        evidence_forget(strategy)
        bundles_forget(strategy)

    def pack(*, kept_from: dt.date | None) -> tuple[float, dict[str, Any]]:
        forget()
        if kept_from is not None:
            evidence_pack(strategy, as_of=kept_from, is_replay=True)
        started = time.perf_counter()
        built = evidence_pack(strategy, as_of=sessions[-1], is_replay=True)
        return (time.perf_counter() - started) * 1000, built

    afresh = [pack(kept_from=None) for _ in range(3)]
    carried = [pack(kept_from=sessions[-6]) for _ in range(3)]
    forget()
    same = all(built == afresh[0][1] for _, built in afresh + carried)
    print(
        f"  critique evidence pack at the last session, best of 3: {min(ms for ms, _ in afresh):.0f} ms read afresh, "
        f"{min(ms for ms, _ in carried):.0f} ms with the pack of five sessions earlier kept; "
        f"{'the same pack' if same else 'THE PACKS DIFFER'}"
    )


def row_counts() -> dict[str, int]:
    """The rows a replay leaves behind: what the later days read past."""
    from agents.models import MemoryEntry, ModelCall
    from trading.models import AuditEvent, PositionMark, StageRun

    return {
        "model calls": ModelCall.objects.count(),
        "stage runs": StageRun.objects.count(),
        "memory entries": MemoryEntry.objects.count(),
        "position marks": PositionMark.objects.count(),
        "audit events": AuditEvent.objects.count(),
    }


def row_counts_text() -> str:
    """``row_counts`` as one line: "model calls 18,445, stage runs 12,666, ..."."""
    return ", ".join(f"{name} {count:,}" for name, count in row_counts().items())


def print_row_counts() -> None:
    print(f"  rows at the end: {row_counts_text()}")


def print_header(data_dir: Path, strategy: object, args: argparse.Namespace) -> None:
    from django.conf import settings
    from django.db import connection

    from trading.book.accounts import replay_account

    account = replay_account(strategy.name)
    if connection.vendor == "postgresql":
        version = connection.cursor().connection.info.server_version  # 150020 is 15.20
        engine = f"PostgreSQL {version // 10000}.{version % 10000}"
        database = f"{connection.settings_dict['NAME']} on {connection.settings_dict['HOST'] or 'the socket'}"
    else:
        engine, database = f"SQLite {sqlite3.sqlite_version} (WAL, synchronous=NORMAL)", data_dir / "desk.sqlite3"
    print(
        f"Machine: {cpu_count()} cores ({cpu_model()}), Python {platform.python_version()}, {engine}; {load_average()}"
    )
    print(
        f"Settings: throwaway DB {database}; provider offline (latency 0 ms); policy all; "
        f"fill policy {settings.BROKER['FILL_POLICY']}; feature lookback {settings.DESK['FEATURE_LOOKBACK_BARS']} "
        f"bars; {args.days} sessions{' (--quick)' if args.quick else ''}"
    )
    symbols = ", ".join(strategy.universe.order_by("symbol").values_list("symbol", flat=True))
    print(f"Strategy {strategy.name!r}: {strategy.universe.count()} demo instruments ({symbols})")
    print(
        f"Replay account: capital ₹{account.capital:,.0f}, risk {account.risk_per_trade_pct}% per trade, "
        f"max {account.max_positions} positions, max notional {account.max_notional_pct}%, "
        f"exposure cap {account.exposure_cap_pct}% (the desk defaults)"
    )


# --- the same month on an empty and on a full database ---------------------------------------------

PROBE_NAME = "bench-replay-probe"
PROBE_ROUNDS = 5


@dataclass
class HistoryProbe:
    """A second strategy over the same universe, and a copy of the database made before any replay."""

    strategy: object
    empty: Path


def history_probe_prepare(strategy: object, data_dir: Path) -> HistoryProbe | None:
    """The probe's strategy, and the database copied as it stands now (seeded, nothing replayed);
    None on PostgreSQL, whose database this bench does not copy."""
    from django.db import connection

    from trading.models import Strategy

    if connection.vendor != "sqlite":
        return None
    probe = Strategy.objects.create(name=PROBE_NAME, philosophy=strategy.philosophy, provider=strategy.provider)
    probe.universe.set(strategy.universe.all())
    empty = data_dir / "before-any-replay.sqlite3"
    connection.ensure_connection()
    target = sqlite3.connect(empty)
    try:
        connection.connection.backup(target)  # SQLite's online backup: what is committed, WAL included
    finally:
        target.close()
    return HistoryProbe(probe, empty)


@contextmanager
def database_file(path: Path) -> Iterator[None]:
    """Django's database is the SQLite file ``path`` for the block, then the bench's own again."""
    from django.db import connection

    own = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = str(path)
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["NAME"] = own


def work_done(record: ReplayRecord) -> tuple[Any, ...]:
    """What a replay produced, to tell two replays of the same work from two that differ."""
    return (record.runs, record.theses_by_status, record.opened, record.closed, record.realised, record.reviews)


def print_history_probe(probe: HistoryProbe | None, sessions: list[dt.date], data_dir: Path) -> None:
    """Whether a session costs more because rows are stored, with the work held the same: the last
    month replayed by the probe's strategy (its own fresh account) on the fast path, on a copy of
    the database from before any replay and on this database after the paths above, in turns so
    that a shared machine's drift falls on both alike. Same sessions, same account, same answers
    (checked): the only difference is the stored history. Means over the month's sessions after
    its first (which holds the replay's start-up), in wall and in CPU milliseconds, and the queries;
    unlike times, a count does not move with the machine."""
    if probe is None:
        print("\nThe same month on an empty and on a full database: SQLite only (the bench copies its file)")
        return
    month = sessions[-min(SESSIONS_PER_MONTH, len(sessions)) :]
    if len(month) < 2:
        return
    print(
        f"\nThe same month on an empty and on a full database: the last {len(month)} sessions ({month[0]} to "
        f"{month[-1]}), replayed by a second strategy on the same universe with its own fresh account (fast path), "
        f"in turns on a copy of the database from before any replay and on this one ({row_counts_text()}); "
        "per session after the first:"
    )
    print(
        f"  {'round':<6} {'wall ms empty':>14} {'full':>6} {'full/empty':>11} {'CPU ms empty':>13} {'full':>6} "
        f"{'full/empty':>11} {'queries empty / full':>21}"
    )
    wall_ratios, cpu_ratios, records = [], [], []

    def per_session(values: list[float]) -> float:
        return sum(values[1:]) * 1000 / (len(values) - 1)

    for round_number in range(1, PROBE_ROUNDS + 1):
        fresh = data_dir / f"probe-{round_number}.sqlite3"
        shutil.copyfile(probe.empty, fresh)
        with database_file(fresh):
            empty = run_replay(probe.strategy, month, progress=False, strict=False, fast=True)
            records.append(read_record(probe.strategy))
        fresh.unlink()
        full = run_replay(probe.strategy, month, progress=False, strict=False, fast=True)
        records.append(read_record(probe.strategy))
        walls = [per_session(result.day_seconds) for result in (empty, full)]
        cpus = [per_session(result.day_cpu) for result in (empty, full)]
        queries = [sum(result.day_queries[1:]) / (len(month) - 1) for result in (empty, full)]
        wall_ratios.append(walls[1] / walls[0])
        cpu_ratios.append(cpus[1] / cpus[0])
        print(
            f"  {round_number:<6} {walls[0]:14.0f} {walls[1]:6.0f} {wall_ratios[-1]:11.2f} {cpus[0]:13.0f} "
            f"{cpus[1]:6.0f} {cpu_ratios[-1]:11.2f} {f'{queries[0]:.0f} / {queries[1]:.0f}':>21}"
        )
    identical = all(work_done(record) == work_done(records[0]) for record in records[1:])
    print(
        f"  median full/empty: {statistics.median(wall_ratios):.2f} wall, {statistics.median(cpu_ratios):.2f} CPU; "
        "runs, theses, positions, reviews and realised PnL "
        f"{'identical in every replay' if identical else 'DIFFER between the replays'} (₹{records[0].realised:,.2f})"
    )


# --- the plain path as an earlier commit had it ------------------------------------------------------


@dataclass(frozen=True)
class Baseline:
    """What an earlier commit's own ``bench/replay.py`` printed for its replay of the same window."""

    revision: str
    wall_s: float
    cpu_s: float  # the child process's user + system seconds, seeding and migrations included
    first: str
    last: str
    runs: int
    realised: str  # as printed, with its currency sign


_REPLAYED = re.compile(r"^Replayed \d+ sessions \((\S+) to (\S+)\) in ([\d.]+) s", re.MULTILINE)
_RUNS = re.compile(r"^\s+pipeline runs\s+([\d,]+)", re.MULTILINE)
_REALISED = re.compile(r"^\s+realised PnL\s+(\S+) net of costs", re.MULTILINE)


def baseline_read(revision: str, printed: str, cpu_s: float) -> Baseline | None:
    """What a bench's printed outcome says of its replay (the lines ``print_outcome`` prints, in
    every version of this bench), or None when a line is missing."""
    replayed, runs, realised = (pattern.search(printed) for pattern in (_REPLAYED, _RUNS, _REALISED))
    if replayed is None or runs is None or realised is None:
        return None
    return Baseline(
        revision=revision,
        wall_s=float(replayed.group(3)),
        cpu_s=cpu_s,
        first=replayed.group(1),
        last=replayed.group(2),
        runs=int(runs.group(1).replace(",", "")),
        realised=realised.group(1),
    )


def run_baseline(revision: str, days: int) -> Baseline:
    """Replay the last ``days`` demo sessions with the code of ``revision`` (a commit of this
    checkout): its files are exported to a temp directory and its own ``bench/replay.py`` runs there
    in a child process, on a throwaway SQLite database of its own. Run before this bench's paths,
    on the same machine, it gives the "before" of a target set against the code of that day."""
    found = subprocess.run(
        ["git", "-C", str(PROJECT_ROOT), "rev-parse", "--verify", "--short", f"{revision}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        raise SystemExit(f"--baseline {revision}: not a commit of this checkout ({found.stderr.strip()})")
    short = found.stdout.strip()
    tree = Path(tempfile.mkdtemp(prefix=f"desk-bench-baseline-{short}-"))
    try:
        exported = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), "archive", "--format=tar", short], capture_output=True, check=True
        )
        with tarfile.open(fileobj=io.BytesIO(exported.stdout)) as archive:
            archive.extractall(tree, filter="data")
        script = tree / "bench" / "replay.py"
        if not script.exists():
            raise SystemExit(f"--baseline {short}: that commit has no bench/replay.py")
        # Its own throwaway database, whatever this process was pointed at.
        env = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "REDIS_URL")}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(f"Replaying the same {days} sessions with the code of {short} (its own bench/replay.py) ...", flush=True)
        options = ["--days", str(days), "--no-progress"]
        # A bench that knows them runs its plain path only, without the history probe; an older one
        # has nothing else to run.
        source = script.read_text(encoding="utf-8")
        options += ["--paths", "plain"] if '"--paths"' in source else []
        options += ["--no-history-probe"] if '"--no-history-probe"' in source else []
        ran = subprocess.run(
            [sys.executable, str(script), *options],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    baseline = baseline_read(short, ran.stdout, cpu) if ran.returncode == 0 else None
    if baseline is None:
        tail = "\n".join((ran.stdout + ran.stderr).splitlines()[-15:])
        raise SystemExit(f"--baseline {short}: its bench failed (exit {ran.returncode}):\n{tail}")
    print(
        f"  {short}: {baseline.first} to {baseline.last}, {baseline.runs:,} pipeline runs in {baseline.wall_s:.1f} s "
        f"({baseline.cpu_s:.1f} s CPU with its seeding); realised PnL {baseline.realised}"
    )
    return baseline


# --- entry point -----------------------------------------------------------------------------------


def use_throwaway_postgres(data_dir: Path, server: str) -> str:
    """A new database on the PostgreSQL server of ``server`` (a URL of any database there, such as
    its ``postgres``), named for this process, and Django pointed at it; its name, for the drop."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg
    from psycopg import sql

    name = f"desk_bench_replay_{os.getpid()}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    use_throwaway_database(data_dir, urlunsplit(urlsplit(server)._replace(path=f"/{name}")))
    return name


def drop_throwaway_postgres(server: str, name: str) -> None:
    import psycopg
    from django.db import connections
    from psycopg import sql

    connections.close_all()
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=250, help="sessions replayed, the last of the demo")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_DAYS} sessions")
    parser.add_argument("--strict", action="store_true", help="a failing review ends the replay (as manage.py replay)")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (its path is printed)")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="replay on PostgreSQL instead of SQLite: a URL of the server (e.g. postgres://postgres@127.0.0.1:5432/"
        "postgres); the bench creates a database of its own there and drops it at the end",
    )
    parser.add_argument(
        "--paths",
        help="which replay paths to time, in order (plain = each run as live, fast = inputs read once, workers = "
        "the fast path with --workers processes); default plain,fast, and workers too when --workers N > 1",
    )
    parser.add_argument("--instruments", type=int, default=0, help="only the first N demo instruments (default all 12)")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes for each day's pipeline runs on the fast path (default 1)",
    )
    parser.add_argument(
        "--scale",
        nargs="*",
        metavar="NxY",
        help="scaling points, instruments x years on the fast path (e.g. 12x0.2 24x0.2 12x0.4); "
        "with no value: 6x0.1 12x0.1 6x0.2; big sizes such as 100x2 only when asked",
    )
    parser.add_argument(
        "--no-history-probe",
        dest="history_probe",
        action="store_false",
        help="skip the last month replayed again on an empty and on a full database (SQLite, after the fast path)",
    )
    parser.add_argument(
        "--baseline",
        metavar="COMMIT",
        help="first replay the same sessions with the code of COMMIT (its own bench/replay.py, in a child process "
        "on SQLite; all 12 instruments) and compare each path with it",
    )
    parser.add_argument("--scale-point", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.paths is None:
        args.paths = "plain,fast,workers" if args.workers > 1 else "plain,fast"
    args.paths = [path.strip() for path in args.paths.split(",") if path.strip()]
    if set(args.paths) - {"plain", "fast", "workers"}:
        parser.error("--paths takes plain, fast and/or workers")
    if "workers" in args.paths and args.workers < 2:
        parser.error("the workers path needs --workers N (at least 2)")
    if args.scale is not None and not args.scale:
        args.scale = ["6x0.1", "12x0.1", "6x0.2"]
    if args.quick:
        args.days = QUICK_DAYS
    if args.days < 1:
        parser.error("--days must be at least 1")
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.baseline and (args.postgres or args.instruments or not args.paths):
        parser.error(
            "--baseline compares the demo's 12 instruments on SQLite: not with --postgres, --instruments "
            "or an empty --paths"
        )
    return args


def bench(args: argparse.Namespace, data_dir: Path, baseline: Baseline | None = None) -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    use_replay_settings()
    seeded = time.perf_counter()
    strategy = demo_strategy()
    seed_s = time.perf_counter() - seeded
    if args.instruments:
        from trading.models import Instrument

        strategy.universe.set(Instrument.objects.filter(is_active=True).order_by("symbol")[: args.instruments])
    sessions = last_sessions(strategy, args.days)
    probe = history_probe_prepare(strategy, data_dir) if args.history_probe and "fast" in args.paths else None
    print_header(data_dir, strategy, args)
    print(f"Demo seeded in {seed_s:.1f} s (not counted)")
    walls: dict[str, ReplayResult] = {}
    records: dict[str, ReplayRecord] = {}
    for path in args.paths:
        print(f"\n=== the {path} path{f' ({args.workers} processes)' if path == 'workers' else ''} ===")
        workers = args.workers if path == "workers" else 1
        result = run_replay(
            strategy, sessions, progress=not args.no_progress, strict=args.strict, fast=path != "plain", workers=workers
        )
        record = read_record(strategy)
        walls[path], records[path] = result, record
        print_outcome(result, record, sessions)
        print_split(result, record)
        print_drift(result, record)
        print_months(result, record, sessions)
        print_critique_evidence(strategy, sessions)
        print_row_counts()
    print_comparison(walls, records, sessions, baseline)
    if args.history_probe and "fast" in args.paths:
        print_history_probe(probe, sessions, data_dir)


SESSIONS_PER_MONTH = 21


def month_means(day_seconds: list[float]) -> tuple[float, float]:
    """Mean seconds per session over the first and the last month (21 sessions) of the replay."""
    month = min(SESSIONS_PER_MONTH, max(1, len(day_seconds) // 2))
    first, last = day_seconds[:month], day_seconds[-month:]
    return sum(first) / len(first), sum(last) / len(last)


def print_months(result: ReplayResult, record: ReplayRecord, sessions: list[dt.date]) -> None:
    """Month by month (21 sessions each): ms per session, the model calls' mean input tokens, the
    risk-approved theses (each one an approval to try), the critiques run (each reads its lookback
    of strategy runs) and the queries per session of the replaying process (its workers' are not
    counted). A cost that grows with the stored history climbs month after month; one that follows
    the replay's own state (its memory filling up to the recall limit, the critique's lookback
    filling and its cadence, the market giving more setups) levels off or moves with it. The
    queries are counted, not timed: a shared machine's speed does not move them."""
    print(
        "\nMonth by month (21 sessions each): ms per session / mean input tokens per call / risk-approved theses"
        " / critiques / queries per session"
    )
    cells = []
    for start in range(0, len(sessions), SESSIONS_PER_MONTH):
        days = sessions[start : start + SESSIONS_PER_MONTH]
        seconds = result.day_seconds[start : start + SESSIONS_PER_MONTH]
        tokens = [record.tokens_by_day[day] for day in days if day in record.tokens_by_day]
        mean_tokens = sum(tokens) / len(tokens) if tokens else 0.0
        approvable = sum(record.approvable_by_day[day] for day in days)
        critiques = sum(record.critiques_by_day[day] for day in days)
        queries = result.day_queries[start : start + SESSIONS_PER_MONTH]
        per_session = f"/{sum(queries) / len(queries):.0f}" if queries else ""
        ms = 1000 * sum(seconds) / len(seconds)
        cells.append(f"{ms:.0f}/{mean_tokens:,.0f}/{approvable}/{critiques}{per_session}")
    for start in range(0, len(cells), 6):
        print("  " + "  ".join(f"{cell:>22}" for cell in cells[start : start + 6]))


def print_comparison(
    results: dict[str, ReplayResult],
    records: dict[str, ReplayRecord],
    sessions: list[dt.date],
    baseline: Baseline | None = None,
) -> None:
    """Before (plain, and the code of ``baseline`` when given) and after (fast), measured in this
    run on this machine, and whether the per-session time stays flat from the first month to the last."""
    print("\nBefore and after (same machine, same run, same window):")
    print(
        f"  {'path':<11} {'wall s':>9} {'cpu s':>8} {'runs/s':>8} {'ms/session 1st month':>21} {'last month':>11} "
        f"{'last/first':>10}"
    )
    if baseline is not None:
        print(
            f"  {'at ' + baseline.revision:<11} {baseline.wall_s:9.1f} {'':>8} {baseline.runs / baseline.wall_s:8.1f}"
            f"   (its CPU, seeding included: {baseline.cpu_s:.1f} s)"
        )
    for path, result in results.items():
        runs = sum(records[path].runs.values())
        first, last = month_means(result.day_seconds)
        print(
            f"  {path:<11} {result.wall_s:9.1f} {result.cpu_s:8.1f} {runs / result.wall_s:8.1f} {first * 1000:21.0f} "
            f"{last * 1000:11.0f} {last / first:10.2f}"
        )
    if baseline is not None:
        window = (sessions[0].isoformat(), sessions[-1].isoformat())
        # Its demo may have had another holiday calendar: the same number of sessions, ending on
        # the same day, may then start on another.
        where = (
            "the same window"
            if window == (baseline.first, baseline.last)
            else f"as many sessions by its own calendar, {baseline.first} to {baseline.last}"
        )
        for path, result in results.items():
            print(
                f"  {path} path: {baseline.wall_s / result.wall_s:.2f}x the speed of {baseline.revision}'s plain path "
                f"({where}; its realised PnL {baseline.realised}, this path's ₹{records[path].realised:,.2f})"
            )
    if "plain" not in results:
        return
    plain = records["plain"]
    for path in [path for path in results if path != "plain"]:
        speedup = results["plain"].wall_s / results[path].wall_s
        cpu_ratio = results["plain"].cpu_s / results[path].cpu_s
        same = records[path].realised == plain.realised and records[path].runs == plain.runs
        print(
            f"  {path} path: {speedup:.2f}x the plain path's speed ({cpu_ratio:.2f}x less CPU); realised PnL and "
            "run statuses "
            f"{'identical' if same else 'DIFFER'} (₹{records[path].realised:,.2f})"
        )


def scale_point(instruments: int, years: float, workers: int = 1, seed: int = 11) -> None:
    """One point of the scaling run, in this (child) process: ``instruments`` synthetic instruments
    with a year of history before a window of ``years`` years, replayed on the fast path; prints
    one line the parent reads: wall seconds, sessions, runs, ms per session in the first and the
    last month, and the peak resident memory of this process and of its largest worker."""
    import resource

    from django.core.management import call_command

    from bench.pipeline import create_universe
    from trading.market.domain.demo import trading_sessions
    from trading.models import PipelineRun, Strategy

    call_command("migrate", verbosity=0)
    use_replay_settings()
    window = round(250 * years)
    end = dt.date(2026, 11, 20)
    sessions = trading_sessions(end - dt.timedelta(days=int((window + 260) * 1.5)), end)[-(window + 250) :]
    universe = create_universe(instruments, sessions, seed)
    strategy = Strategy.objects.create(name=STRATEGY_NAME, philosophy="Trend swings, 2R targets.", provider="offline")
    strategy.universe.set(universe)
    result = run_replay(strategy, sessions[-window:], progress=False, strict=False, fast=True, workers=workers)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    worker_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 if workers > 1 else 0
    runs = PipelineRun.objects.count()
    first, last = month_means(result.day_seconds)
    print(
        f"SCALE {instruments} {years} {result.wall_s:.2f} {window} {runs} {peak_mb:.0f} {worker_mb:.0f} "
        f"{first * 1000:.0f} {last * 1000:.0f}"
    )


def scaling(points: list[str], workers: int = 1) -> None:
    """Each point in a fresh process (its own throwaway database, its own peak memory). Wall and
    memory should grow with the runs (instruments x years), the ms per session with the
    instruments only: the last month as slow as the first."""
    import subprocess

    print(
        f"\nScaling (fast path, {workers} worker(s), synthetic instruments, offline model; each point a fresh process):"
    )
    print(
        f"  {'instruments':>11} {'years':>5} {'sessions':>8} {'runs':>7} {'wall s':>8} {'runs/s':>7} {'peak MB':>8} "
        f"{'worker MB':>9} {'ms/session 1st month':>21} {'last month':>10}"
    )
    for point in points:
        instruments, years = point.split("x")
        completed = subprocess.run(
            [sys.executable, __file__, "--scale-point", f"{instruments}x{years}", "--workers", str(workers)],
            capture_output=True,
            text=True,
            check=False,
        )
        line = next((row for row in completed.stdout.splitlines() if row.startswith("SCALE ")), None)
        if line is None:
            print(f"  {point}: failed\n{completed.stderr[-2000:]}")
            continue
        _, count, span, wall, window, runs, peak, worker_peak, first, last = line.split()
        print(
            f"  {int(count):>11} {float(span):>5g} {int(window):>8} {int(runs):>7} {float(wall):>8.1f} "
            f"{int(runs) / float(wall):>7.1f} {float(peak):>8.0f} {float(worker_peak):>9.0f} {float(first):>21.0f} "
            f"{float(last):>10.0f}"
        )


def main() -> None:
    args = parse_arguments()
    if args.scale_point:
        data_dir = Path(tempfile.mkdtemp(prefix="desk-bench-replay-scale-"))
        os.environ["DEBUG"] = "0"
        try:
            use_throwaway_database(data_dir)
            instruments, years = args.scale_point.split("x")
            scale_point(int(instruments), float(years), workers=args.workers)
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)
        return
    started = time.perf_counter()
    data_dir = Path(tempfile.mkdtemp(prefix="desk-bench-replay-"))
    os.environ["DEBUG"] = "0"  # DEBUG keeps every query in memory: slower, and growing
    database = None
    try:
        # Before this process sets up its own database: the earlier code runs alone on the machine.
        baseline = run_baseline(args.baseline, args.days) if args.baseline else None
        if args.postgres:
            database = use_throwaway_postgres(data_dir, args.postgres)
        else:
            use_throwaway_database(data_dir)
        if args.paths:
            bench(args, data_dir, baseline)
        if args.scale:
            scaling(args.scale, workers=args.workers)
    finally:
        if database is not None:
            drop_throwaway_postgres(args.postgres, database)
        if args.keep:
            print(f"\nKept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    print(f"\nBench took {time.perf_counter() - started:.0f} s; {load_average()} at the end.")


if __name__ == "__main__":
    main()
