"""Synthetic strategy trajectories for the critique: a strategy, its universe's bars, and N daily
strategy runs, each with a pipeline run and the rows a run leaves (feature snapshot, context stage
with the lessons it recalled, four analyst notes, the debate, heuristic citations) and, on the
rebalancing days, an approved thesis and the position it became.

``strategy_trajectory()`` with no knobs is a *clean* trajectory: its rank ICs are logged, several
signal families take turns carrying the decisions, the lessons recalled are mixed, it beats the
universe held equally by a clear margin, its stated conviction matches its win rate, volatility
stays in one regime, and it trades a third of its runs at small cost. Each knob plants one of the
seven loops of DESIGN.md and leaves the rest as clean as it can:

    narrative      no rank IC logged in the window                               (loop 1)
    fixation       the trend family carries every decision                       (loop 2)
    echo           every recalled lesson says the side taken was right           (loop 3)
    shield         the universe rallies while the strategy earns the same        (loop 4)
    overconfident  conviction 0.85, three wins in ten                            (loop 5)
    frozen         volatility quadruples mid-window, the stop/target geometry stays (loop 6)
    paralysis      29 of 30 runs hold and the one trade loses                    (loop 7)
    churn          costs take three quarters of every trade's gross gain         (loop 7)

Rows are written in bulk where the desk allows it, so a 30-run trajectory costs well under a
second. Prices sit on the tick grid; money is Decimal.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from decimal import Decimal

from agents.models import Heuristic, MemoryEntry
from reviews.models import SignalIC
from tests.factories.book import AccountFactory, OrderFactory, ThesisFactory
from tests.factories.market import DEFAULT_START, InstrumentFactory, PricePath, bars_for, sessions
from trading.models import (
    Account,
    AnalystNoteRecord,
    DebateRecord,
    FeatureSnapshot,
    HeuristicCitation,
    Instrument,
    Order,
    PipelineRun,
    Position,
    PositionMark,
    StageRun,
    Strategy,
    StrategyRun,
    Thesis,
)
from vocabulary.features import bundle_digest
from vocabulary.ticks import round_to_tick

ROLES = ("fundamental", "news", "sentiment", "technical")
# Who carries each decision of a clean trajectory, in turn: (role, technical fields it cites).
CLEAN_DRIVERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("technical", ("sma_50", "ema_20")),
    ("news", ()),
    ("fundamental", ()),
    ("technical", ("rsi_14", "macd_hist")),
    ("sentiment", ()),
)
FIXED_DRIVER = ("technical", ("sma_50", "ema_20"))
STOP_ATR = Decimal(2)
REWARD_R = Decimal(2)
HORIZON = 10
QUANTITY = 100


@dataclass
class Built:
    """What a trajectory wrote: the strategy, its runs (by day), theses, positions and the account."""

    strategy: Strategy
    account: Account
    universe: list[Instrument]
    days: list[dt.date]
    strategy_runs: list[StrategyRun] = field(default_factory=list)
    pipeline_runs: list[PipelineRun] = field(default_factory=list)
    theses: list[Thesis] = field(default_factory=list)
    positions: list[Position] = field(default_factory=list)
    memories: list[MemoryEntry] = field(default_factory=list)

    @property
    def as_of(self) -> dt.date:
        return self.days[-1]


@dataclass(frozen=True)
class Knobs:
    narrative: bool = False
    fixation: bool = False
    echo: bool = False
    shield: bool = False
    overconfident: bool = False
    frozen: bool = False
    paralysis: bool = False
    churn: bool = False


# --- prices ----------------------------------------------------------------------------------


def zigzag(
    count: int, *, base: float, amplitude_pct: float, late_amplitude_pct: float, drift_pct: float, phase: float = 0
) -> PricePath:
    """Closes that alternate between a level and ``amplitude`` % above it (so the daily returns'
    spread is about the amplitude), the level drifting ``drift_pct`` % a session and wiggling by
    0.3 % (so forward returns differ from day to day); from the middle session on the amplitude is
    ``late_amplitude_pct``."""
    closes = []
    for index in range(count):
        amplitude = amplitude_pct if index < count // 2 else late_amplitude_pct
        level = base * (1 + drift_pct / 100) ** index * (1 + 0.003 * math.sin(1.7 * index + phase))
        closes.append(Decimal(str(round(level * (1 + amplitude / 100 * (index % 2)), 2))))
    return PricePath(tuple(closes))


def _universe(count: int, days: int, knobs: Knobs) -> list[Instrument]:
    late = 2.0 if knobs.frozen else 1.0
    early = 0.5 if knobs.frozen else 1.0
    drift = 0.5 if knobs.shield else 0.0
    instruments = []
    for index in range(count):
        instrument = InstrumentFactory()
        path = zigzag(
            days, base=100 + 20 * index, amplitude_pct=early, late_amplitude_pct=late, drift_pct=drift, phase=index
        )
        bars_for(instrument, path, start=DEFAULT_START, wick_pct="0.2", seed=index)
        instruments.append(instrument)
    return instruments


# --- per-run rows ----------------------------------------------------------------------------


def _bundle(instrument: Instrument, day: dt.date, close: Decimal, atr: Decimal, index: int) -> dict:
    """A stored bundle with the fields the signals read (values deterministic in ``index``)."""
    wave = math.sin(index)
    last = float(close)
    return {
        "symbol": instrument.symbol,
        "as_of": day.isoformat(),
        "technical": {
            "last_close": last,
            "atr_14": float(atr),
            "rsi_14": round(50 + 15 * wave, 2),
            "sma_50": round(last * (1 - 0.02 * wave), 2),
            "sma_200": round(last * (1 - 0.01 * math.cos(index)), 2),
            "ema_20": round(last * (1 - 0.01 * wave), 2),
            "macd_hist": round(0.5 * wave, 4),
            "bb_upper": round(last * 1.03, 2),
            "bb_middle": round(last * (1 - 0.005 * wave), 2),
            "bb_lower": round(last * 0.97, 2),
            "support_distance_pct": round(2 + wave, 2),
            "volume_vs_avg": round(1 + 0.3 * math.cos(2 * index), 3),
        },
        "news": {"net_sentiment": round(0.3 * math.cos(index), 3)},
        "sentiment": {"news_sentiment": round(0.3 * math.cos(index), 3)},
        "fundamentals": {"available": True, "pe": 20 + index % 7, "revenue_growth_pct": 5 + index % 4},
        "forecast": {"expected_move_pct": round(0.8 * wave, 3)},
    }


def _citation(name: str) -> dict:
    """A verified citation of ``name``, as the citation check stores it."""
    return {"name": name, "label": name, "cited": 1.0, "cited_text": "1", "actual": 1.0, "ok": True}


def _notes(run: PipelineRun, driver: tuple[str, tuple[str, ...]]) -> list[AnalystNoteRecord]:
    """Four bullish notes: the driver strong (0.8 at 0.8), the others mild (0.2 at 0.5)."""
    role, cited = driver
    notes = []
    for name in ROLES:
        strong = name == role
        fields = cited if strong else ()
        notes.append(
            AnalystNoteRecord(
                run=run,
                role=name,
                stance=Decimal("0.8000") if strong else Decimal("0.2000"),
                confidence=Decimal("0.8000") if strong else Decimal("0.5000"),
                summary=f"{name} note",
                citations=[
                    {"name": f, "label": f, "cited": 1.0, "cited_text": "1", "actual": 1.0, "ok": True} for f in fields
                ],
                citations_verified=len(fields),
                model_used="offline-rules",
            )
        )
    return notes


def _memory_pool(universe: list[Instrument]) -> tuple[list[MemoryEntry], list[MemoryEntry]]:
    """Six winning and four losing LONG lessons about the universe, on file before the window."""
    written = DEFAULT_START - dt.timedelta(days=30)
    wins, losses = [], []
    for index in range(10):
        outcome = "win" if index < 6 else "loss"
        entry = MemoryEntry.objects.create(
            kind="review",
            symbol=universe[index % len(universe)].symbol,
            text=f"a {outcome} lesson",
            tags={"direction": "LONG", "outcome": outcome, "symbol": universe[index % len(universe)].symbol},
            created_on=written,
        )
        (wins if outcome == "win" else losses).append(entry)
    return wins, losses


def _recalled(index: int, wins: list[MemoryEntry], losses: list[MemoryEntry], knobs: Knobs) -> list[int]:
    if knobs.echo:
        return [wins[index % len(wins)].pk, wins[(index + 1) % len(wins)].pk]
    return [wins[index % len(wins)].pk, losses[index % len(losses)].pk]


def _decision(index: int, knobs: Knobs) -> str:
    if knobs.paralysis:
        return StrategyRun.Decision.REBALANCE if index == 0 else StrategyRun.Decision.HOLD
    return StrategyRun.Decision.REBALANCE if index % 3 == 0 else StrategyRun.Decision.HOLD


# --- outcomes --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    gross: Decimal  # rupees before costs
    costs: Decimal  # entry + exit


def _outcome(trade: int, knobs: Knobs) -> Outcome:
    """The n-th trade's result: clean six wins in ten (+8,000 / -1,500), small costs."""
    if knobs.paralysis:
        return Outcome(Decimal("-1000"), Decimal("60"))
    if knobs.churn:
        return Outcome(Decimal("400"), Decimal("300"))
    if knobs.overconfident:
        return Outcome(Decimal("16000") if trade % 10 in (0, 4, 7) else Decimal("-1500"), Decimal("60"))
    return Outcome(Decimal("8000") if trade % 10 in (0, 2, 4, 6, 7, 9) else Decimal("-1500"), Decimal("60"))


def _thesis(run: PipelineRun, account: Account, close: Decimal, atr: Decimal, knobs: Knobs) -> Thesis:
    tick = run.instrument.tick_size
    entry = round_to_tick(close, tick)
    stop = round_to_tick(entry - STOP_ATR * atr, tick, mode="down")
    target = round_to_tick(entry + REWARD_R * (entry - stop), tick, mode="down")
    return ThesisFactory(
        account=account,
        instrument=run.instrument,
        run=run,
        direction="LONG",
        conviction=Decimal("0.8500") if knobs.overconfident else Decimal("0.6000"),
        entry=entry,
        stop=stop,
        target=target,
        horizon_sessions=HORIZON,
        quantity=QUANTITY,
        approved=True,
    )


def _position(thesis: Thesis, outcome: Outcome, opened: dt.date, closed: dt.date, *, is_replay: bool) -> Position:
    order = OrderFactory(thesis=thesis, placed_on=thesis.run.as_of, status=Order.Status.FILLED)
    half = outcome.costs / 2
    exit_price = round_to_tick(thesis.entry + outcome.gross / QUANTITY, thesis.instrument.tick_size)
    position = Position.objects.create(
        account=thesis.account,
        order=order,
        thesis=thesis,
        instrument=thesis.instrument,
        direction=thesis.direction,
        quantity=QUANTITY,
        entry_price=thesis.entry,
        entry_costs=half,
        opened_on=opened,
        stop=thesis.stop,
        target=thesis.target,
        horizon_sessions=thesis.horizon_sessions,
        status=Position.Status.CLOSED,
        exit_price=exit_price,
        exit_costs=half,
        closed_on=closed,
        exit_reason="target" if outcome.gross > 0 else "stop",
        realised_pnl=outcome.gross - outcome.costs,
        is_replay=is_replay,
    )
    PositionMark.objects.create(position=position, date=opened, close=thesis.entry, unrealised_pnl=Decimal("0"))
    return position


# --- the trajectory --------------------------------------------------------------------------


def _pipeline_run(built: Built, strategy_run: StrategyRun, instrument: Instrument, index: int, atr: Decimal):
    day = strategy_run.as_of
    close = instrument.bars.get(date=day).close
    bundle = _bundle(instrument, day, close, atr, index)
    snapshot = FeatureSnapshot.objects.create(
        instrument=instrument, as_of=day, bundle=bundle, digest=bundle_digest(bundle)
    )
    run = PipelineRun.objects.create(
        instrument=instrument,
        as_of=day,
        provider="offline",
        status=PipelineRun.Status.COMPLETED,
        strategy_run=strategy_run,
        is_replay=strategy_run.is_replay,
        feature_snapshot=snapshot,
    )
    built.pipeline_runs.append(run)
    return run, close


def _run_rows(run: PipelineRun, index: int, knobs: Knobs, pool: tuple[list, list], heuristic: Heuristic) -> None:
    driver = FIXED_DRIVER if knobs.fixation else CLEAN_DRIVERS[index % len(CLEAN_DRIVERS)]
    AnalystNoteRecord.objects.bulk_create(_notes(run, driver))
    conviction = Decimal("0.8500") if knobs.overconfident else Decimal("0.6000")
    DebateRecord.objects.create(
        run=run,
        winner="LONG",
        proposed_conviction=conviction,
        conviction=conviction,
        opposing=0,
        side_taking=4,
        opposing_share=Decimal("0"),
        rationale="the panel leans long",
    )
    output = {
        "version": 1,
        "memory_block": "",
        "memory_ids": _recalled(index, *pool, knobs),
        "mandate": "",
        "playbook": [],
    }
    StageRun.objects.create(run=run, stage="context", position=1, status=StageRun.Status.DONE, output=output)
    HeuristicCitation.objects.create(
        run=run, role="technical", code=heuristic.code, heuristic=heuristic, accepted=True, cited_on=run.as_of
    )


def _atr(close: Decimal, index: int, count: int, knobs: Knobs) -> Decimal:
    """ATR as the zigzag's range: its amplitude (in the run's half) of the close."""
    amplitude = Decimal("1")
    if knobs.frozen:
        amplitude = Decimal("0.5") if index < count // 2 else Decimal("2")
    return (close * amplitude / 100).quantize(Decimal("0.0001"))


def _log_ics(built: Built) -> None:
    day = built.days[len(built.days) // 2]
    for signal, family, ic in (
        ("close_vs_sma50", "trend", 0.05),
        ("rsi_14", "momentum", -0.04),
        ("news_sentiment", "news", 0.02),
    ):
        SignalIC.objects.create(
            strategy=built.strategy,
            is_replay=built.strategy_runs[0].is_replay,
            as_of=day,
            signal=signal,
            family=family,
            horizon_sessions=HORIZON,
            ic=ic,
            observations=20,
        )


def strategy_trajectory(
    *,
    runs: int = 30,
    universe: int = 3,
    is_replay: bool = False,
    name: str | None = None,
    **knobs: bool,
) -> Built:
    """A strategy and ``runs`` daily strategy runs from ``DEFAULT_START``, clean unless a knob plants a loop."""
    plant = Knobs(**knobs)
    instruments = _universe(universe, runs, plant)
    account = AccountFactory(max_positions=5)
    strategy = Strategy.objects.create(
        name=name or f"critique strategy {Strategy.objects.count() + 1}",
        philosophy="Swing the universe's liquid names on daily evidence; long only.",
        run_count=runs,
    )
    strategy.universe.set(instruments)
    built = Built(strategy, account, instruments, sessions(DEFAULT_START, runs))
    pool = _memory_pool(instruments)
    built.memories = [*pool[0], *pool[1]]
    heuristic, _ = Heuristic.objects.get_or_create(
        code="H-1", defaults={"text": "trade with the trend", "status": "active"}
    )
    for index, day in enumerate(built.days):
        _one_day(built, index, day, plant, pool, heuristic, is_replay=is_replay)
    if not plant.narrative:
        _log_ics(built)
    return built


def _one_day(built: Built, index: int, day: dt.date, knobs: Knobs, pool, heuristic, *, is_replay: bool) -> None:
    decision = _decision(index, knobs)
    strategy_run = StrategyRun.objects.create(
        strategy=built.strategy, as_of=day, is_replay=is_replay, decision=decision, decision_reason="factory"
    )
    built.strategy_runs.append(strategy_run)
    instrument = built.universe[index % len(built.universe)]
    close = instrument.bars.get(date=day).close
    atr = _atr(close, index, len(built.days), knobs)
    run, close = _pipeline_run(built, strategy_run, instrument, index, atr)
    _run_rows(run, index, knobs, pool, heuristic)
    if decision != StrategyRun.Decision.REBALANCE or index + 2 >= len(built.days):
        return
    thesis = _thesis(run, built.account, close, atr, knobs)
    built.theses.append(thesis)
    outcome = _outcome(len(built.positions), knobs)
    built.positions.append(
        _position(thesis, outcome, built.days[index + 1], built.days[index + 2], is_replay=is_replay)
    )
