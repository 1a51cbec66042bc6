"""How long a weekly review's hard part takes, and how much memory, at 1,000 to 10,000 positions.

Run from the project root:

    .venv/bin/python bench/retrospective.py                    # 1,000 / 3,000 / 10,000: ~1-2 minutes
    .venv/bin/python bench/retrospective.py --sizes 1000 3000  # other sizes
    .venv/bin/python bench/retrospective.py --history 10000    # plus closed positions before the week

No extra dependencies. A throwaway SQLite database in a fresh temp directory (removed at the end
unless ``--keep``), as the other benches. The book is written in bulk, as the broker would have
written it: 100 instruments with six weeks of bars, 100 active heuristics, and for each position a
run (four analyst notes, a debate, a feature snapshot with a forecast band, a recorded model call,
two accepted heuristic citations), a thesis, a filled order with its reference price and costs,
the daily marks and the close, every figure from the desk's own fill, cost and exit arithmetic so
the attribution's checks pass. Every position closes in the reviewed week and every thesis's
horizon ends in it, so each size is that many closed positions, resolved theses, notes and
citations for the review to read.

At each size it times ``reviews.retrospective.build_hard_part`` for the week (the best of
``--repeat`` runs; wall time with tracemalloc off) and then its peak traced memory (one run with
tracemalloc on, which slows Python, so that run is not timed), and prints the growth from the
smallest size: per position, a linear cost keeps the ratio of time to size flat. The target is
under one second at 10,000 positions.

``--history N`` first writes N positions closed before the week (with their runs, notes and
citations): the review reads the period only, so its time should barely move.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import shutil
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from bench.pipeline import cpu_count, cpu_model, load_average, use_throwaway_database  # noqa: E402

INSTRUMENTS = 100
HEURISTICS = 100
HORIZON = 5
WEEK_END = dt.date(2026, 11, 20)  # a Friday
BAR_DAYS = 60
ROLES = ("news", "sentiment", "technical", "fundamental")
REASONS = ("stop", "target", "horizon", "manual")
TARGET_SECONDS = 1.0


@dataclass
class Measure:
    size: int
    seconds: float  # the whole hard part, the day's calibration summary already stored (as the weekly review finds it)
    cold_seconds: float  # the whole hard part with no stored summary (the day's first review)
    cpu_seconds: float
    own_seconds: float  # the hard part with the calibration block held fixed: the review's own evaluators
    own_peak_mb: float
    calibration_seconds: float  # the calibration block alone, computed (no stored summary)
    peak_mb: float
    queries: int


def sessions_between(first: dt.date, last: dt.date) -> list[dt.date]:
    days, day = [], first
    while day <= last:
        if day.weekday() < 5:
            days.append(day)
        day += dt.timedelta(days=1)
    return days


class Book:
    """Writes the bench's rows in bulk."""

    def __init__(self, seed: int = 7) -> None:
        from trading.models import Account

        self.random = random.Random(seed)
        self.account = Account.objects.create(
            name="bench",
            capital=Decimal("100000000.00"),
            cash=Decimal("100000000.00"),
            daily_loss_cap=Decimal("2000000.00"),
        )
        self.sessions = sessions_between(WEEK_END - dt.timedelta(days=BAR_DAYS), WEEK_END)
        self.week_first = next(i for i, day in enumerate(self.sessions) if day >= WEEK_END - dt.timedelta(days=6))
        self.instruments = self._instruments()
        self.bars = self._bars()
        self._heuristics()
        self.codes = [f"H-{n}" for n in range(1, HEURISTICS + 1)]
        self.written = 0

    def _instruments(self) -> list[Any]:
        from trading.models import Instrument

        return Instrument.objects.bulk_create(
            Instrument(symbol=f"BENCH{n:03d}", exchange="NSE", name=f"Bench {n}") for n in range(INSTRUMENTS)
        )

    def _bars(self) -> dict[tuple[int, dt.date], Any]:
        from trading.models import DailyBar

        rows = []
        for instrument in self.instruments:
            close = Decimal(self.random.randint(200, 3000))
            for day in self.sessions:
                step = Decimal(self.random.randint(-30, 30)) / 1000
                bar_open = close
                close = max(Decimal("10.00"), (close * (1 + step)).quantize(Decimal("0.05")))
                high = max(bar_open, close) + Decimal("1.00")
                low = min(bar_open, close) - Decimal("1.00")
                rows.append(
                    DailyBar(
                        instrument=instrument, date=day, open=bar_open, high=high, low=low, close=close, volume=1000
                    )
                )
        DailyBar.objects.bulk_create(rows, batch_size=2000)
        return {(bar.instrument_id, bar.date): bar for bar in rows}

    def _heuristics(self) -> None:
        from agents.models import Heuristic

        Heuristic.objects.bulk_create(
            Heuristic(code=f"H-{n}", text=f"bench rule {n}", status=Heuristic.Status.ACTIVE, origin="bench")
            for n in range(1, HEURISTICS + 1)
        )

    def positions(self, count: int, *, closing_in_week: bool) -> None:
        """``count`` closed positions (and everything behind them) in batches."""
        batch = 2000
        done = 0
        while done < count:
            self._batch(min(batch, count - done), closing_in_week=closing_in_week)
            done += batch

    def _decision_day(self, closing_in_week: bool) -> int:
        """The index of the decision session: its fifth session after lands in the week (or before it)."""
        if closing_in_week:
            return self.random.randint(self.week_first - HORIZON, len(self.sessions) - 1 - HORIZON)
        return self.random.randint(0, self.week_first - HORIZON - 2)

    def _batch(self, count: int, *, closing_in_week: bool) -> None:
        from trading.models import PipelineRun

        plans = [self._plan(closing_in_week) for _ in range(count)]
        runs = PipelineRun.objects.bulk_create(
            PipelineRun(
                instrument=plan["instrument"],
                as_of=plan["decision"],
                provider="offline",
                status=PipelineRun.Status.COMPLETED,
                is_replay=False,
            )
            for plan in plans
        )
        for plan, run in zip(plans, runs, strict=True):
            plan["run"] = run
        self._snapshots(plans)
        self._evidence(plans)
        self._book(plans)
        self.written += count

    def _plan(self, closing_in_week: bool) -> dict[str, Any]:
        instrument = self.random.choice(self.instruments)
        index = self._decision_day(closing_in_week)
        return {
            "instrument": instrument,
            "index": index,
            "decision": self.sessions[index],
            "direction": self.random.choice(("LONG", "SHORT")),
            "reason": self.random.choice(REASONS),
            "held": self._held(index, closing_in_week),
        }

    def _held(self, index: int, closing_in_week: bool) -> int:
        """Sessions held after the fill: the close lands in the week (or before it, for history)."""
        if not closing_in_week:
            return self.random.randint(1, HORIZON)
        earliest = max(1, self.week_first - index - 1)
        return self.random.randint(earliest, min(HORIZON, len(self.sessions) - 2 - index))

    def _snapshots(self, plans: list[dict[str, Any]]) -> None:
        from trading.models import FeatureSnapshot, PipelineRun

        snapshots = FeatureSnapshot.objects.bulk_create(
            FeatureSnapshot(
                instrument=plan["instrument"],
                as_of=plan["decision"],
                bundle={"forecast": self._forecast(plan)},
                digest=f"bench-{self.written}-{number}",
            )
            for number, plan in enumerate(plans)
        )
        for plan, snapshot in zip(plans, snapshots, strict=True):
            plan["run"].feature_snapshot = snapshot
        PipelineRun.objects.bulk_update([plan["run"] for plan in plans], ["feature_snapshot"], batch_size=2000)

    def _forecast(self, plan: dict[str, Any]) -> dict[str, Any]:
        close = float(self.bars[(plan["instrument"].pk, plan["decision"])].close)
        return {"horizon_sessions": HORIZON, "low_price": close * 0.95, "high_price": close * 1.05}

    def _evidence(self, plans: list[dict[str, Any]]) -> None:
        from agents.models import ModelCall
        from trading.models import AnalystNoteRecord, DebateRecord, HeuristicCitation

        notes, debates, citations, calls = [], [], [], []
        for plan in plans:
            run = plan["run"]
            for role in ROLES:
                stance = Decimal(self.random.randint(-10, 10)) / 10
                notes.append(
                    AnalystNoteRecord(
                        run=run, role=role, stance=stance, confidence=Decimal("0.6"), summary="bench", model_used="b"
                    )
                )
            debates.append(
                DebateRecord(
                    run=run,
                    winner=plan["direction"],
                    proposed_conviction=Decimal("0.7"),
                    conviction=Decimal("0.6"),
                    opposing=1,
                    side_taking=3,
                    opposing_share=Decimal("0.3333"),
                    rationale="bench",
                )
            )
            for code in self.random.sample(self.codes, 2):
                citations.append(
                    HeuristicCitation(run=run, role="trader", code=code, accepted=True, cited_on=plan["decision"])
                )
            calls.append(
                ModelCall(
                    run=run, role="trader", symbol="B", tier="default", provider="bench", model="b", prompt_key="k",
                    system="", prompt="", cost=Decimal("0.002"), ok=True,
                )
            )  # fmt: skip
        AnalystNoteRecord.objects.bulk_create(notes, batch_size=2000)
        DebateRecord.objects.bulk_create(debates, batch_size=2000)
        HeuristicCitation.objects.bulk_create(citations, batch_size=2000)
        ModelCall.objects.bulk_create(calls, batch_size=2000)

    def _book(self, plans: list[dict[str, Any]]) -> None:
        from trading.models import Order, Position, PositionMark, Thesis

        theses = Thesis.objects.bulk_create((self._thesis(plan) for plan in plans), batch_size=2000)
        for plan, thesis in zip(plans, theses, strict=True):
            plan["thesis"] = thesis
        orders = Order.objects.bulk_create((self._order(plan) for plan in plans), batch_size=2000)
        for plan, order in zip(plans, orders, strict=True):
            plan["order"] = order
        positions = Position.objects.bulk_create((self._position(plan) for plan in plans), batch_size=2000)
        marks = []
        for plan, position in zip(plans, positions, strict=True):
            marks.extend(self._marks(plan, position))
        PositionMark.objects.bulk_create(marks, batch_size=5000)

    def _thesis(self, plan: dict[str, Any]) -> Any:
        from trading.models import Thesis
        from vocabulary.ticks import round_to_tick

        entry = self.bars[(plan["instrument"].pk, plan["decision"])].close
        side = 1 if plan["direction"] == "LONG" else -1
        plan["stop"] = round_to_tick(entry * (1 - side * Decimal("0.03")), Decimal("0.05"))
        plan["target"] = round_to_tick(entry * (1 + side * Decimal("0.06")), Decimal("0.05"))
        return Thesis(
            run=plan["run"], account=self.account, instrument=plan["instrument"], direction=plan["direction"],
            conviction=Decimal("0.6"), entry=entry, stop=plan["stop"], target=plan["target"],
            horizon_sessions=HORIZON, quantity=10, payload={}, status=Thesis.Status.APPROVED,
        )  # fmt: skip

    def _order(self, plan: dict[str, Any]) -> Any:
        from trading.book.broker import cost_model
        from trading.models import Order
        from vocabulary.costs import order_costs
        from vocabulary.fills import entry_side, fill_price

        fill_day = self.sessions[plan["index"] + 1]
        reference = self.bars[(plan["instrument"].pk, fill_day)].open
        side = entry_side(plan["direction"])
        price = fill_price(side=side, reference=reference, slippage_bps=Decimal("5"), tick=Decimal("0.05"))
        costs = order_costs(side, 10, price, cost_model())
        plan.update(fill_day=fill_day, entry=price, entry_costs=costs.total)
        return Order(
            thesis=plan["thesis"], account=self.account, instrument=plan["instrument"], side=side, quantity=10,
            fill_policy="next_open", slippage_bps=Decimal("5"), status=Order.Status.FILLED,
            placed_on=plan["decision"], fill_price=price, reference_price=reference, filled_on=fill_day,
            costs=costs.to_dict(), costs_total=costs.total,
        )  # fmt: skip

    def _position(self, plan: dict[str, Any]) -> Any:
        from trading.book.broker import cost_model
        from trading.models import Position
        from vocabulary.costs import order_costs
        from vocabulary.exits import realised_pnl
        from vocabulary.fills import exit_side, fill_price

        close_day = self.sessions[plan["index"] + 1 + plan["held"]]
        bar = self.bars[(plan["instrument"].pk, close_day)]
        reference = bar.close if plan["reason"] in ("horizon", "manual") else bar.open
        side = exit_side(plan["direction"])
        price = fill_price(side=side, reference=reference, slippage_bps=Decimal("5"), tick=Decimal("0.05"))
        exit_costs = order_costs(side, 10, price, cost_model()).total
        pnl = realised_pnl(
            direction=plan["direction"], quantity=10, entry_price=plan["entry"], exit_price=price,
            entry_costs=plan["entry_costs"], exit_costs=exit_costs,
        )  # fmt: skip
        return Position(
            account=self.account, order=plan["order"], thesis=plan["thesis"], instrument=plan["instrument"],
            direction=plan["direction"], quantity=10, entry_price=plan["entry"], entry_costs=plan["entry_costs"],
            opened_on=plan["fill_day"], stop=plan["stop"], target=plan["target"], horizon_sessions=HORIZON,
            status=Position.Status.CLOSED, exit_price=price, exit_reference=reference, exit_costs=exit_costs,
            closed_on=close_day, exit_reason=plan["reason"], realised_pnl=pnl, last_mark=price,
        )  # fmt: skip

    def _marks(self, plan: dict[str, Any], position: Any) -> list[Any]:
        from trading.models import PositionMark
        from vocabulary.exits import mark

        rows = []
        for offset in range(plan["held"]):
            day = self.sessions[plan["index"] + 1 + offset]
            close = self.bars[(plan["instrument"].pk, day)].close
            pnl = mark(direction=plan["direction"], quantity=10, entry_price=plan["entry"], mark_price=close)
            rows.append(PositionMark(position=position, date=day, close=close, unrealised_pnl=pnl))
        return rows


def timed(call: Any, repeat: int) -> tuple[float, float]:
    """The best wall and CPU time of ``repeat`` calls."""
    walls, cpus = [], []
    for _ in range(repeat):
        began, began_cpu = time.perf_counter(), time.process_time()
        call()
        walls.append(time.perf_counter() - began)
        cpus.append(time.process_time() - began_cpu)
    return min(walls), min(cpus)


def peak_of(call: Any) -> float:
    """Peak traced memory of one call, in MB (tracemalloc slows Python: never timed)."""
    tracemalloc.start()
    call()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1_000_000


def measure(account: Any, size: int, repeat: int) -> Measure:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    import reviews.calibration_service as calibration
    from reviews.models import CalibrationSnapshot
    from reviews.retrospective import build_hard_part

    start = WEEK_END - dt.timedelta(days=6)

    def review() -> dict[str, Any]:
        return build_hard_part(account=account, start=start, end=WEEK_END)

    def first_review_of_the_day() -> dict[str, Any]:
        CalibrationSnapshot.objects.all().delete()
        return review()

    with CaptureQueriesContext(connection) as captured:
        hard = review()
    if hard["inaction"]["positions"] != size:
        raise SystemExit(f"the review saw {hard['inaction']['positions']} closed positions, the bench wrote {size}")
    cold_seconds, _ = timed(first_review_of_the_day, repeat)
    review()  # the day's calibration summary is stored, as the daily review leaves it
    seconds, cpu_seconds = timed(review, repeat)
    peak_mb = peak_of(review)
    config = calibration.CalibrationSettings.from_settings()
    calibration_seconds, _ = timed(lambda: calibration._computed_summary(account, WEEK_END, config), repeat)
    summary = calibration.calibration_summary
    calibration.calibration_summary = lambda **kwargs: hard["calibration"]  # held fixed
    try:
        own_seconds, _ = timed(review, repeat)
        own_peak_mb = peak_of(review)
    finally:
        calibration.calibration_summary = summary
    return Measure(
        size=size,
        seconds=seconds,
        cold_seconds=cold_seconds,
        cpu_seconds=cpu_seconds,
        own_seconds=own_seconds,
        own_peak_mb=own_peak_mb,
        calibration_seconds=calibration_seconds,
        peak_mb=peak_mb,
        queries=len(captured.captured_queries),
    )


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000], help="closed positions")
    parser.add_argument("--history", type=int, default=0, help="positions closed before the week, written first")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per size (the best is kept)")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (its path is printed)")
    args = parser.parse_args()
    if sorted(args.sizes) != args.sizes or args.sizes[0] < 1:
        parser.error("--sizes must be positive and increasing")
    return args


def print_table(results: list[Measure]) -> None:
    first = results[0]
    print(
        f"\n{'positions':>10} {'wall s':>8} {'cpu s':>7} {'peak MB':>8} {'queries':>8} | {'own s':>7} "
        f"{'own MB':>7} {'own x':>6} {'mem x':>6} | {'calib s':>8} {'cold s':>7}"
    )
    for result in results:
        print(
            f"{result.size:>10,} {result.seconds:>8.3f} {result.cpu_seconds:>7.3f} {result.peak_mb:>8.1f} "
            f"{result.queries:>8} | {result.own_seconds:>7.3f} {result.own_peak_mb:>7.1f} "
            f"{result.own_seconds / first.own_seconds:>5.2f}x {result.own_peak_mb / first.own_peak_mb:>5.2f}x | "
            f"{result.calibration_seconds:>8.3f} {result.cold_seconds:>7.3f}"
        )
    print(
        "wall/cpu/peak/queries: the whole weekly hard part as beat runs it, the day's calibration summary stored by "
        "the daily review before it; own: the same with the calibration block held fixed (the review's own "
        "evaluators), with its growth from the smallest size; calib: computing the calibration summary; cold: the "
        "whole hard part when it is the day's first review and computes that summary itself."
    )
    last = results[-1]
    for label, seconds in (
        ("The weekly hard part", last.seconds),
        ("The review's own evaluators", last.own_seconds),
        ("The day's first review (cold)", last.cold_seconds),
    ):
        verdict = "meets" if seconds < TARGET_SECONDS else "misses"
        print(f"{label} at {last.size:,} positions: {seconds:.3f} s, {verdict} the target of {TARGET_SECONDS:.0f} s.")


def bench(args: argparse.Namespace) -> None:
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    settings.RETROSPECTIVE = {**settings.RETROSPECTIVE, "BUFFER_SIZE": max(args.sizes[-1], 10_000)}
    print(f"CPU: {cpu_model()} ({cpu_count()} usable); {load_average()}")
    print(f"Database: SQLite; {INSTRUMENTS} instruments, {HEURISTICS} active heuristics, week ending {WEEK_END}")
    began = time.perf_counter()
    book = Book()
    if args.history:
        book.positions(args.history, closing_in_week=False)
        print(f"History: {args.history:,} positions closed before the week")
    results = []
    for size in args.sizes:
        book.positions(size - (book.written - args.history), closing_in_week=True)
        results.append(measure(book.account, size, args.repeat))
        print(f"  {size:,} positions: {results[-1].seconds:.3f} s, peak {results[-1].peak_mb:.1f} MB")
    print(f"(rows written in {time.perf_counter() - began:.0f} s, measuring included)")
    print_table(results)


def main() -> None:
    args = parse_arguments()
    data_dir = Path(tempfile.mkdtemp(prefix="desk-bench-retrospective-"))
    os.environ["DEBUG"] = "0"  # DEBUG keeps every query in memory: slower, and growing
    try:
        use_throwaway_database(data_dir)
        bench(args)
    finally:
        if args.keep:
            print(f"\nKept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
