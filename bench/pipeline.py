"""How long a pipeline run takes: model latency against the critical path, and the code around it.

Run from the project root:

    .venv/bin/python bench/pipeline.py [--quick] [--keep]

Everything happens in a throwaway SQLite database under a fresh temp directory (removed at the
end unless ``--keep``), so the bench never touches the desk's own data and runs the same from a
clean state every time.

1. Concurrency vs critical path. The offline model is slowed to L ms per call (``LatencyClient``)
   and full runs go through ``pipeline_run_create`` + ``pipeline_run_execute`` on a seeded demo
   instrument with news and fundamentals, so all four analysts call the model. The critical path
   is L x the model waves a run must wait for in sequence (analysts, bull||bear, rebuttals,
   manager, trader: 5 x L); the serial sum is calls x L. A wall time near the critical path means
   the fan-outs really overlap; what is left over is code, measured on its own with L = 0.
2. Offline overhead for a 500-instrument universe (L = 0): synthetic instruments with ~300 bars
   each, news for a fraction of them, timed run by run with the split by stage, then runs/minute
   on one process and measured with worker processes sharing the same SQLite file.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import multiprocessing
import os
import platform
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import numpy as np

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

# The model waves of one run, in the order the orchestrator waits for them. Calls inside a wave
# run in threads at the same time, so a wave costs its slowest role: L x (that role's attempts).
WAVES: tuple[tuple[str, ...], ...] = (
    ("news", "sentiment", "technical", "fundamental"),
    ("bull", "bear"),
    ("bull_rebuttal", "bear_rebuttal"),
    ("manager",),
    ("trader",),
)
# Model waves inside each stage: what a stage's time is expected to be made of, besides code.
STAGE_WAVES = {"features": 0, "context": 0, "analysts": 1, "debate": 3, "trader": 1, "risk": 0}
STAGE_ORDER = tuple(STAGE_WAVES)
OUTSIDE = "outside"  # claim, model choice, budget reads, events, finish: time between stages
TARGET_RATIO = 1.15
DEMO_SYMBOL = "RELIANCE"
SYNTHETIC_TICK = 0.05


# --- setting up Django against a throwaway database -----------------------------------------------


def use_throwaway_database(data_dir: Path, database_url: str | None = None) -> None:
    """Point the settings at ``data_dir`` before Django reads them, and drop anything that would
    send the bench to a shared PostgreSQL or Redis; ``database_url`` names a database of the
    bench's own instead of the SQLite file in ``data_dir``."""
    os.environ["DESK_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    for name in ("DATABASE_URL", "REDIS_URL", "REQUIRE_SERVICES"):
        os.environ.pop(name, None)
    if database_url is not None:
        os.environ["DATABASE_URL"] = database_url
    import django

    django.setup()


def set_latency(latency_ms: float) -> None:
    from django.conf import settings

    settings.LLM = {**settings.LLM, "OFFLINE_LATENCY_MS": latency_ms}


# --- running and measuring ------------------------------------------------------------------------


@dataclass
class RunTiming:
    run_id: int
    wall_ms: float
    status: str = ""
    calls: int = 0
    roles: Counter[str] | None = None
    stages: dict[str, float] | None = None

    @property
    def critical_waves(self) -> int:
        """Model waits in sequence: per wave, the most attempts any one of its roles made."""
        roles = self.roles or Counter()
        waves = sum(max((roles[role] for role in wave), default=0) for wave in WAVES)
        # A self-critique follows its analyst in the same thread: one more wave when any fired.
        return waves + (1 if roles["self_critique"] else 0)


def execute_timed(run_id: int) -> float:
    from trading.pipeline.orchestrator import pipeline_run_execute

    started = time.perf_counter()
    pipeline_run_execute(run_id)
    return (time.perf_counter() - started) * 1000


def create_runs(instruments: Sequence[object], as_of: dt.date) -> list[int]:
    from trading.pipeline.orchestrator import pipeline_run_create

    return [pipeline_run_create(instrument=i, as_of=as_of, provider="offline").pk for i in instruments]


def describe_runs(walls: dict[int, float]) -> list[RunTiming]:
    """Status, model calls by role and stage durations of the timed runs, read back in bulk."""
    from agents.models import ModelCall
    from trading.models import PipelineRun, StageRun

    timings = {run_id: RunTiming(run_id, wall, roles=Counter(), stages={}) for run_id, wall in walls.items()}
    for run_id, status in PipelineRun.objects.filter(pk__in=walls).values_list("pk", "status"):
        timings[run_id].status = status
    for run_id, role in ModelCall.objects.filter(run_id__in=walls).values_list("run_id", "role"):
        timings[run_id].roles[role] += 1
        timings[run_id].calls += 1
    stage_rows = StageRun.objects.filter(run_id__in=walls).values_list("run_id", "stage", "started_at", "finished_at")
    for run_id, stage, started, finished in stage_rows:
        if finished is not None:
            timings[run_id].stages[stage] = (finished - started).total_seconds() * 1000
    for timing in timings.values():
        timing.stages[OUTSIDE] = timing.wall_ms - sum(timing.stages.values())
    return [timings[run_id] for run_id in walls]


def check_completed(timings: Iterable[RunTiming]) -> None:
    """A failed run is short, not fast: refuse to report it as a timing."""
    failed = Counter(t.status for t in timings if t.status != "completed")
    if failed:
        raise SystemExit(f"runs did not complete: {dict(failed)}")


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q))


# --- 1. concurrency vs critical path ---------------------------------------------------------------


def demo_instrument() -> tuple[object, dt.date]:
    from trading.market.demo_seed import seed_demo
    from trading.models import DailyBar, Instrument

    seed_demo()
    instrument = Instrument.objects.get(symbol=DEMO_SYMBOL)
    if not instrument.fundamentals.exists():
        raise SystemExit(f"{DEMO_SYMBOL} has no fundamentals in the demo seed; the fundamental analyst would abstain")
    last = DailyBar.objects.filter(instrument=instrument).latest("date").date
    return instrument, last


def latency_runs(instrument: object, as_of: dt.date, latency_ms: float, runs: int) -> list[RunTiming]:
    set_latency(latency_ms)
    run_ids = create_runs([instrument] * runs, as_of)
    timings = describe_runs({run_id: execute_timed(run_id) for run_id in run_ids})
    check_completed(timings)
    return timings


def stage_excess(timings: Sequence[RunTiming], latency_ms: float) -> dict[str, float]:
    """Median ms per stage above its model waits (L x waves inside the stage)."""
    return {
        stage: statistics.median(t.stages[stage] for t in timings) - STAGE_WAVES.get(stage, 0) * latency_ms
        for stage in (*STAGE_ORDER, OUTSIDE)
    }


def print_latency_table(results: dict[float, list[RunTiming]]) -> None:
    print(
        f"  {'L ms':>5} {'calls':>5} {'waves':>5} {'critical':>9} {'serial sum':>10} "
        f"{'wall median (min-max)':>22} {'wall/crit':>9} {'best/crit':>9} {'wall/serial':>11} {'wall-crit':>9}"
    )
    for latency, timings in results.items():
        walls = [t.wall_ms for t in timings]
        wall = statistics.median(walls)
        calls = statistics.median(t.calls for t in timings)
        waves = statistics.median(t.critical_waves for t in timings)
        critical, serial = waves * latency, calls * latency
        spread = f"{wall:.0f} ({min(walls):.0f}-{max(walls):.0f})"
        ratios = (wall / critical, min(walls) / critical) if critical else None
        over_critical = f"{ratios[0]:9.3f} {ratios[1]:9.3f}" if ratios else f"{'-':>9} {'-':>9}"
        over_serial = f"{wall / serial:11.3f}" if serial else f"{'-':>11}"
        print(
            f"  {latency:>5.0f} {calls:>5.0f} {waves:>5.0f} {critical:>9.0f} {serial:>10.0f} "
            f"{spread:>22} {over_critical} {over_serial} {wall - critical:>9.0f}"
        )
    print("  (best: the fastest run, the one least disturbed by other work on the machine)")


def print_stage_excess(results: dict[float, list[RunTiming]]) -> None:
    print("\n  Where the time above the critical path goes: median ms per stage minus L x its model waves")
    print("  (analysts 1, debate 3, trader 1); 'outside' is the time between stages (claim, events, finish).")
    print(f"  {'L ms':>5} " + " ".join(f"{stage:>9}" for stage in (*STAGE_ORDER, OUTSIDE)))
    for latency, timings in results.items():
        excess = stage_excess(timings, latency)
        print(f"  {latency:>5.0f} " + " ".join(f"{excess[stage]:>9.1f}" for stage in (*STAGE_ORDER, OUTSIDE)))


def print_verdict(results: dict[float, list[RunTiming]]) -> None:
    base = statistics.median(t.wall_ms for t in results[0.0])
    for latency, timings in results.items():
        if not latency:
            continue
        walls = [t.wall_ms for t in timings]
        wall = statistics.median(walls)
        critical = statistics.median(t.critical_waves for t in timings) * latency
        verdicts = ["met" if value <= TARGET_RATIO * critical else "MISSED" for value in (wall, min(walls))]
        print(
            f"  L={latency:.0f}: target wall <= {TARGET_RATIO} x critical: median {verdicts[0]}, best {verdicts[1]}; "
            f"median {wall - critical:.0f} ms above the critical path vs {base:.0f} ms of code at L=0"
        )


def best_ms(action: Callable[[], object], repeats: int = 5) -> float:
    """The fastest of ``repeats`` calls: the least disturbed by the rest of the machine."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return min(times)


def print_fixed_costs(symbol: str) -> None:
    """The per-run pieces of 'outside' timed alone, so the reader can tell which dominates."""
    from agents import recording
    from agents.clients import model_choice
    from agents.domain.pricing import PriceTable
    from trading.events import DeskEvent, publish

    recorder = recording.BufferedRecorder(run_id=None, prices=PriceTable.from_mapping({}))
    budget = best_ms(lambda: recording.RunBudget(run_id=0, recorder=recorder))
    choice = best_ms(lambda: model_choice("offline", symbol=symbol))
    event = best_ms(lambda: publish(DeskEvent(kind="bench", data={"run_id": 0}), group="run-0"))
    print(
        f"  per-run pieces timed alone (best of 5): RunBudget() {budget:.2f} ms, model_choice() {choice:.2f} ms, "
        f"one event publish {event:.2f} ms (13 per run, 7 of them between stages)"
    )


def concurrency_section(latencies: Sequence[float], runs: int) -> None:
    instrument, as_of = demo_instrument()
    # One unreported run pays the lazy imports and first-use caches a long-lived worker has paid.
    latency_runs(instrument, as_of, 0.0, 1)
    results = {latency: latency_runs(instrument, as_of, latency, runs) for latency in (0.0, *latencies)}
    roles = results[latencies[0]][0].roles or Counter()
    print(
        f"\n1. Concurrency vs critical path: {instrument} as of {as_of}, offline model, {runs} runs per L "
        f"(after 1 warm-up run)\n  model calls per run by role: {dict(sorted(roles.items()))}"
    )
    print_latency_table(results)
    print_stage_excess(results)
    print_verdict(results)
    print_fixed_costs(DEMO_SYMBOL)


# --- 2. a 500-instrument universe ------------------------------------------------------------------


def synthetic_prices(count: int, sessions: int, seed: int) -> dict[str, np.ndarray]:
    """OHLC random walks on the 0.05 tick and lognormal volumes, all symbols at once."""
    rng = np.random.default_rng(seed)
    start = np.exp(rng.uniform(np.log(100.0), np.log(4_000.0), (count, 1)))
    close = start * np.exp(np.cumsum(rng.normal(0.0004, 0.015, (count, sessions)), axis=1))
    previous = np.concatenate([start, close[:, :-1]], axis=1)
    open_ = previous * (1 + rng.normal(0.0, 0.004, close.shape))
    high = np.maximum(open_, close) * (1 + np.abs(rng.normal(0.0, 0.006, close.shape)))
    low = np.minimum(open_, close) * (1 - np.abs(rng.normal(0.0, 0.006, close.shape)))

    def on_tick(values: np.ndarray) -> np.ndarray:
        return np.round(np.round(values / SYNTHETIC_TICK) * SYNTHETIC_TICK, 2)

    # Rounding each price on its own can cross: keep high >= open, close >= low on the tick grid.
    o, c = on_tick(open_), on_tick(close)
    h = np.maximum(on_tick(high), np.maximum(o, c))
    lo = np.minimum(on_tick(low), np.minimum(o, c))
    volume = rng.lognormal(13.0, 0.6, close.shape).round().astype(np.int64)
    return {"open": o, "high": h, "low": lo, "close": c, "volume": volume}


def create_universe(count: int, sessions: Sequence[dt.date], seed: int) -> list[object]:
    from trading.models import DailyBar, Instrument

    sectors = ("IT", "Energy", "Financials", "FMCG", "Industrials", "Pharma", "Autos", "Metals")
    instruments = Instrument.objects.bulk_create(
        Instrument(
            symbol=f"SYM{row:03d}",
            exchange="NSE",
            name=f"Synthetic {row:03d} Ltd",
            sector=sectors[row % len(sectors)],
            tick_size=Decimal("0.05"),
        )
        for row in range(count)
    )
    prices = synthetic_prices(count, len(sessions), seed)
    # Decimal(str(x)) is exact because every price is already rounded to 2 decimals.
    columns = {name: prices[name].tolist() for name in prices}
    DailyBar.objects.bulk_create(
        (
            DailyBar(
                instrument=instrument,
                date=day,
                open=Decimal(str(columns["open"][row][col])),
                high=Decimal(str(columns["high"][row][col])),
                low=Decimal(str(columns["low"][row][col])),
                close=Decimal(str(columns["close"][row][col])),
                volume=columns["volume"][row][col],
            )
            for row, instrument in enumerate(instruments)
            for col, day in enumerate(sessions)
        ),
        batch_size=2_000,
    )
    return instruments


SYNTHETIC_HEADLINES = (
    "{symbol} wins a large order from a state utility",
    "{symbol} shares fall after a broker downgrade",
    "{symbol} board approves a share buyback",
)


def create_news(instruments: Sequence[object], sessions: Sequence[dt.date], share: float, seed: int) -> int:
    """A few headlines in the last week for ``share`` of the instruments (inside the news lookback)."""
    from zoneinfo import ZoneInfo

    from trading.market.domain.news import content_hash
    from trading.models import NewsItem

    rng = np.random.default_rng(seed)
    chosen = [i for i in instruments if rng.random() < share]
    ist = ZoneInfo("Asia/Kolkata")
    items = [
        NewsItem(
            instrument=instrument,
            headline=(headline := template.format(symbol=instrument.symbol)),
            source="Bench wire",
            published_at=dt.datetime.combine(sessions[-1 - offset], dt.time(11, 30), tzinfo=ist),
            content_hash=content_hash(headline, str(instrument)),
        )
        for instrument in chosen
        for offset, template in enumerate(SYNTHETIC_HEADLINES)
    ]
    NewsItem.objects.bulk_create(items, batch_size=2_000)
    return len(chosen)


def print_overhead(timings: Sequence[RunTiming], create_ms: float) -> float:
    walls = [t.wall_ms for t in timings]
    mean = statistics.fmean(walls)
    calls = Counter(t.calls for t in timings)
    print(
        f"  {len(timings)} runs, L = 0: mean {mean:.1f} ms, median {statistics.median(walls):.1f}, "
        f"p95 {percentile(walls, 95):.1f}, max {max(walls):.1f} ms per pipeline_run_execute "
        f"(+ {create_ms:.1f} ms mean pipeline_run_create, not counted)"
    )
    print(f"  model calls per run: {dict(sorted(calls.items()))} (runs per call count)")
    print(f"  {'stage':<10} {'mean ms':>8} {'p95 ms':>8} {'share':>6}")
    for stage in (*STAGE_ORDER, OUTSIDE):
        values = [t.stages.get(stage, 0.0) for t in timings]
        print(
            f"  {stage:<10} {statistics.fmean(values):>8.1f} {percentile(values, 95):>8.1f} "
            f"{statistics.fmean(values) / mean:>6.0%}"
        )
    return mean


def print_drift(timings: Sequence[RunTiming], budget_before: tuple[float, int]) -> None:
    """Mean of the first and last tenth of the runs: a per-run cost that grows with the rows
    already written shows up here, not in the mean. The suspect is timed on its own: the run
    budget's read of today's model-call cost, taken once per run before the first stage."""
    tenth = max(1, len(timings) // 10)
    first, last = timings[:tenth], timings[-tenth:]

    def mean_of(group: Sequence[RunTiming], stage: str | None = None) -> float:
        return statistics.fmean(t.stages[stage] if stage else t.wall_ms for t in group)

    print(
        f"  drift: first {tenth} runs {mean_of(first):.1f} ms (outside {mean_of(first, OUTSIDE):.1f}), "
        f"last {tenth} runs {mean_of(last):.1f} ms (outside {mean_of(last, OUTSIDE):.1f})"
    )
    (before_ms, before_rows), (after_ms, after_rows) = budget_before, budget_read_ms()
    print(
        f"  RunBudget() alone (sums today's ModelCall.cost): {before_ms:.1f} ms at {before_rows:,} rows, "
        f"{after_ms:.1f} ms at {after_rows:,} rows"
    )


def budget_read_ms() -> tuple[float, int]:
    """Best of three constructions of the run budget, and the model-call rows it had to read."""
    from agents import recording
    from agents.domain.pricing import PriceTable

    recorder = recording.BufferedRecorder(run_id=None, prices=PriceTable.from_mapping({}))
    times = []
    for _ in range(3):
        started = time.perf_counter()
        recording.RunBudget(run_id=0, recorder=recorder)
        times.append((time.perf_counter() - started) * 1000)
    return min(times), model_call_rows()


def print_analyst_calls(timings: Sequence[RunTiming]) -> None:
    """Which analysts reached the model: the synthetic names have no fundamentals, and sentiment
    abstains without news (the demo's market-wide headlines count as news)."""
    called = Counter(role for t in timings for role in WAVES[0] if (t.roles or Counter())[role])
    shares = ", ".join(f"{role} {called[role]}/{len(timings)}" for role in WAVES[0])
    print(f"  runs whose analyst called the model: {shares}")


@dataclass
class WorkerPass:
    elapsed_s: float
    walls: list[float]
    workers_cpu_s: float  # CPU the workers themselves used
    machine_busy: float | None  # share of all cores busy with anything, None off Linux


def machine_cpu() -> tuple[float, float] | None:
    """(busy, total) jiffies over all cores from /proc/stat, or None where there is none."""
    try:
        fields = [float(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def worker_processes(run_ids: Sequence[int], warm_up_ids: Sequence[int]) -> WorkerPass:
    """Run ``run_ids`` split over one forked process per warm-up run, all on the same SQLite file.

    Forked, not spawned: the workers share the code the parent migrated with (files edited
    while the bench runs cannot split the schema) and skip Django start-up. Each worker executes
    its warm-up run, then all start together at a barrier. Returns the seconds from the first
    start to the last finish, every run's ms, and how busy the processes and the machine were."""
    from django.db import connections

    workers = len(warm_up_ids)
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(workers + 1), context.Queue()
    connections.close_all()  # a forked child must open its own SQLite connection, never share one
    processes = [
        context.Process(target=worker_main, args=(warm_up, list(run_ids[index::workers]), barrier, results))
        for index, warm_up in enumerate(warm_up_ids)
    ]
    for process in processes:
        process.start()
    with contextlib.suppress(threading.BrokenBarrierError):  # a failed worker reports through the queue
        barrier.wait(timeout=120)
    cpu_before = machine_cpu()
    reports = [results.get(timeout=600) for _ in processes]
    cpu_after = machine_cpu()
    for process in processes:
        process.join()
    failed = [r["error"] for r in reports if "error" in r]
    if failed:
        raise SystemExit(f"a worker process failed: {failed[0]}")
    elapsed = max(r["finished"] for r in reports) - min(r["started"] for r in reports)
    busy = None
    if cpu_before and cpu_after and cpu_after[1] > cpu_before[1]:
        busy = (cpu_after[0] - cpu_before[0]) / (cpu_after[1] - cpu_before[1])
    return WorkerPass(
        elapsed_s=elapsed,
        walls=[wall for r in reports for wall in r["walls"]],
        workers_cpu_s=sum(r["cpu"] for r in reports),
        machine_busy=busy,
    )


def worker_main(warm_up_run: int, run_ids: list[int], barrier: object, results: object) -> None:
    """One forked worker: warm up, wait for the others, execute ``run_ids``, report the timings."""
    try:
        execute_timed(warm_up_run)  # pays first-use costs, as the single-process warm-up did
        barrier.wait(timeout=120)
        started, cpu_started = time.monotonic(), time.process_time()  # monotonic: system-wide on Linux
        walls = [execute_timed(run_id) for run_id in run_ids]
        cpu = time.process_time() - cpu_started
        results.put({"started": started, "finished": time.monotonic(), "walls": walls, "cpu": cpu})
    except Exception as error:  # reported to the parent, which stops the bench with it
        barrier.abort()
        results.put({"error": f"{type(error).__name__}: {error}"})


def universe_section(args: argparse.Namespace) -> None:
    from trading.market.domain.demo import DEMO_END, DEMO_START, trading_sessions

    sessions = trading_sessions(DEMO_START, DEMO_END)[-args.bars :]
    started = time.perf_counter()
    instruments = create_universe(args.universe, sessions, args.seed)
    with_news = create_news(instruments, sessions, args.news_share, args.seed + 1)
    setup_s = time.perf_counter() - started
    print(
        f"\n2. Offline overhead, {args.universe}-instrument synthetic universe (SYM000..SYM{args.universe - 1:03d}, "
        f"NSE, tick 0.05): {len(sessions)} bars each to {sessions[-1]}, own news for {with_news} of them; "
        f"built in {setup_s:.1f} s"
    )
    sample = instruments[: args.sample]
    created = time.perf_counter()
    run_ids = create_runs(sample, sessions[-1])
    create_ms = (time.perf_counter() - created) * 1000 / len(run_ids)
    set_latency(0.0)
    budget_before = budget_read_ms()
    loop_started = time.perf_counter()
    timings = describe_runs({run_id: execute_timed(run_id) for run_id in run_ids})
    loop_s = time.perf_counter() - loop_started
    check_completed(timings)
    mean = print_overhead(timings, create_ms)
    print_drift(timings, budget_before)
    print_analyst_calls(timings)
    one_process = len(run_ids) / loop_s * 60
    print(
        f"\n  one process: {one_process:,.0f} runs/minute ({60_000 / mean:,.0f} from the mean run alone); "
        f"a full {args.universe}-instrument pass takes {args.universe / one_process:.1f} min"
    )
    print(
        f"  projection for {args.workers} worker processes on {cpu_count()} cores: at most "
        f"{one_process * min(args.workers, cpu_count()):,.0f} runs/minute (linear; ignores the SQLite write lock)"
    )
    measure_workers(instruments, sessions[-1], args)


def measure_workers(sample: Sequence[object], as_of: dt.date, args: argparse.Namespace) -> None:
    """Throughput with 1 and then N forked workers on the same number of fresh runs, so the ratio
    compares like with like (same code path, nearly the same database size)."""
    runs = min(args.scale_runs, len(sample))
    print(f"  measured: forked worker processes on the same SQLite file, {runs} fresh runs per setting")
    baseline = 0.0
    for workers in sorted({1, args.workers}):
        rows_before = model_call_rows()
        # Warm-up runs on other instruments: a warm-up's pending thesis would hold a timed run.
        warm_up = sample[runs : runs + workers] if len(sample) >= runs + workers else sample[:workers]
        result = timed_workers(sample[:runs], warm_up, as_of)
        measured = runs / result.elapsed_s * 60
        baseline = baseline or measured
        cores = result.workers_cpu_s / result.elapsed_s
        cpu_ms = result.workers_cpu_s * 1000 / runs
        machine = f"{result.machine_busy:.0%}" if result.machine_busy is not None else "n/a"
        print(
            f"    {workers} worker{'s' if workers > 1 else ' '}: {measured:>6,.0f} runs/minute "
            f"= {measured / baseline:.2f}x one worker; per run wall mean {statistics.fmean(result.walls):.1f} ms, "
            f"p95 {percentile(result.walls, 95):.1f}, CPU {cpu_ms:.1f} ms; "
            f"workers used {cores:.2f} cores, machine {machine} busy; {rows_before:,}-{model_call_rows():,} call rows"
        )
    # CPU per run does not depend on what else the machine runs: the ceiling with every core free.
    print(
        f"    ceiling with all {cpu_count()} cores free for workers: {cpu_count() * 60_000 / cpu_ms:,.0f} runs/minute "
        f"({cpu_count()} x 60 000 / {cpu_ms:.1f} ms CPU per run; a projection, not a measurement)"
    )


def model_call_rows() -> int:
    """Stored model calls: the run budget reads them all once per run, so they set the drift."""
    from agents.models import ModelCall

    return ModelCall.objects.count()


def expire_pending_theses() -> int:
    """Close the approval window of the theses earlier passes left pending, so a fresh run on the
    same instrument goes through every stage instead of holding at once ("one live idea per
    instrument"): a worker pass then times the same code path as the single-process loop."""
    from django.utils import timezone

    from trading.models import Thesis

    expired = timezone.now() - dt.timedelta(seconds=1)
    return Thesis.objects.filter(status=Thesis.Status.PENDING).update(expires_at=expired)


def timed_workers(sample: Sequence[object], warm_up: Sequence[object], as_of: dt.date) -> WorkerPass:
    """One pass: a run per ``sample`` instrument, split over one worker per ``warm_up`` instrument."""
    from trading.models import PipelineRun

    expire_pending_theses()
    run_ids = create_runs(sample, as_of)
    warm_up_ids = create_runs(warm_up, as_of)
    result = worker_processes(run_ids, warm_up_ids)
    statuses = Counter(PipelineRun.objects.filter(pk__in=run_ids).values_list("status", flat=True))
    if set(statuses) != {"completed"}:
        raise SystemExit(f"worker runs did not complete: {dict(statuses)}")
    return result


# --- header and entry point ------------------------------------------------------------------------


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def load_average() -> str:
    """Other work on the machine shows up in every figure: say how busy it was."""
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def print_header(data_dir: Path, args: argparse.Namespace) -> None:
    from django.conf import settings

    desk = settings.DESK
    print(
        f"Machine: {cpu_count()} cores ({cpu_model()}), Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version} (WAL, synchronous=NORMAL); {load_average()}"
    )
    print(
        f"Settings: throwaway DB {data_dir / 'desk.sqlite3'}; provider offline; in-memory channel layer; "
        f"feature lookback {desk['FEATURE_LOOKBACK_BARS']} bars; news lookback {desk['NEWS_LOOKBACK_DAYS']} days; "
        f"latencies L = {', '.join(f'{latency:g}' for latency in args.latencies)} ms"
        f"{'; --quick' if args.quick else ''}"
    )


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer runs: 3 per latency, 50-run samples")
    parser.add_argument("--latencies", type=float, nargs="+", default=[100.0, 250.0], help="offline latency L, ms")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per latency")
    parser.add_argument("--universe", type=int, default=500, help="synthetic instruments")
    parser.add_argument("--bars", type=int, default=300, help="bars per synthetic instrument")
    parser.add_argument("--sample", type=int, default=500, help="instruments timed (one run each)")
    parser.add_argument("--news-share", type=float, default=0.3, help="share of instruments with own news")
    parser.add_argument("--workers", type=int, default=2, help="worker processes for the measured throughput")
    parser.add_argument("--scale-runs", type=int, default=200, help="runs per worker-count setting")
    parser.add_argument("--seed", type=int, default=20_240_601)
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (its path is printed)")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.sample, args.scale_runs = 3, 50, 50
    args.sample = min(args.sample, args.universe)
    return args


def main() -> None:
    args = parse_arguments()
    started = time.perf_counter()
    data_dir = Path(tempfile.mkdtemp(prefix="desk-bench-pipeline-"))
    try:
        use_throwaway_database(data_dir)
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        print_header(data_dir, args)
        concurrency_section(args.latencies, args.runs)
        universe_section(args)
    finally:
        if args.keep:
            print(f"\nKept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    print(f"\nBench took {time.perf_counter() - started:.0f} s; {load_average()} at the end.")


if __name__ == "__main__":
    main()
