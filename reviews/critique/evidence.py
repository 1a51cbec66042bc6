"""The critique's evidence pack: a strategy's stored rows, as of a date, turned into the figures
and ids the critic must argue from.

This module only reads: it loads the latest ``settings.CRITIQUE["LOOKBACK_RUNS"]`` strategy runs of
one strategy (live or replay, never both) dated on or before ``as_of``, and everything hanging off
them — pipeline runs, analyst notes, debates, theses, positions and their marks, the lessons each
run recalled (the context stage's ``memory_ids``), the heuristics cited, the feature snapshots and
the universe's daily bars — in a fixed number of queries (none per row). Nothing dated after
``as_of`` is read: a position closed later is still open here, at its last mark on or before the
date. The arithmetic is pure (``reviews.domain.loops``, ``reviews.domain.signal_ic``).

What a finished run contributes (its notes, debate, theses, recalled lessons and citations) does
not change, so the process keeps it from one pack of a strategy to the next and reads only the runs
that are new or have changed since (``_parts``): a replay's critiques then cost the days between
them, not the whole lookback each time.

The pack (JSON-able) holds the five dimensions of the review, the seven loop findings, an ``ids``
map of every row id it names (by kind) and a flat ``figures`` map ``{dotted.name: number}`` of every
number in it: the reference the grounding check holds the critic's citations against.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any

from django.conf import settings

from agents.models import Heuristic, MemoryEntry
from agents.recording import memory_scopes
from reviews.critique.kept import KeptPerStrategy
from reviews.critique.signal_ics import ICWindow, critique_number, strategy_rank_ics
from reviews.domain.loops import (
    DecisionFact,
    MandateLimits,
    MemoryFact,
    NoteFact,
    PositionFact,
    RunFact,
    ThesisFact,
    Trajectory,
    detect_loops,
    families_in_use,
    is_number,
    mandate_compliance,
    performance,
    unexplored,
)
from reviews.domain.loops import families_cited as cited_families
from reviews.models import SignalIC
from trading.book.accounts import risk_limits
from trading.models import (
    Account,
    AnalystNoteRecord,
    DailyBar,
    DebateRecord,
    FeatureSnapshot,
    HeuristicCitation,
    PipelineRun,
    Position,
    PositionMark,
    StageRun,
    Strategy,
    StrategyRun,
    Thesis,
)

__all__ = ["evidence_forget", "evidence_pack", "flat_figures", "load_trajectory"]


# --- loading ---------------------------------------------------------------------------------

# A run in one of these states has finished: its notes, debate, theses, context and citations are
# written and stay as they are (a retried run starts again with a new attempt, so a new mark).
_FINISHED = frozenset(
    {PipelineRun.Status.COMPLETED, PipelineRun.Status.DEGRADED, PipelineRun.Status.FAILED, PipelineRun.Status.HELD}
)


@dataclass(frozen=True)
class RunRow:
    """One pipeline run of the lookback, and the mark that says it has not changed since it was
    read: its state, its attempts and when it was made and finished."""

    id: int
    as_of: dt.date
    strategy_run_id: int | None
    symbol: str
    feature_snapshot_id: int | None
    mark: tuple[Any, ...]

    @property
    def finished(self) -> bool:
        return self.mark[0] in _FINISHED


@dataclass(frozen=True)
class RunPart:
    """What one pipeline run adds to a pack, as facts: its analysts' notes (by role), its debate's
    decision, its theses (each with the account it was sized for), the lessons it recalled and the
    heuristics it cited and had accepted (code and heuristic id, by code; a heuristic's status is
    read afresh for each pack, since a review can demote it)."""

    run_id: int
    notes: tuple[NoteFact, ...] = ()
    decision: DecisionFact | None = None
    theses: tuple[tuple[ThesisFact, int], ...] = ()
    memory_ids: tuple[int, ...] = ()
    citations: tuple[tuple[str, int | None], ...] = ()


@dataclass
class Rows:
    """The stored rows one pack reads: the lookback's strategy runs and pipeline runs, each run's
    part, and the positions of its theses. The lists drawn from the parts are made once, when first
    read (``_load`` fills the parts and statuses before anything reads them)."""

    strategy: Strategy
    as_of: dt.date
    is_replay: bool
    strategy_runs: list[StrategyRun]
    runs: list[RunRow] = field(default_factory=list)
    parts: dict[int, RunPart] = field(default_factory=dict)
    positions: list[Position] = field(default_factory=list)
    statuses: dict[int, str] = field(default_factory=dict)
    universe: dict[int, str] = field(default_factory=dict)

    @property
    def run_ids(self) -> list[int]:
        return [run.id for run in self.runs]

    @property
    def first_day(self) -> dt.date | None:
        return min((run.as_of for run in self.strategy_runs), default=None)

    def _in_run_order(self) -> list[RunPart]:
        return [self.parts[run_id] for run_id in sorted(self.parts)]

    @cached_property
    def notes(self) -> list[NoteFact]:
        """By run and role, as the database orders them."""
        return [note for part in self._in_run_order() for note in part.notes]

    @cached_property
    def decisions(self) -> list[DecisionFact]:
        return [part.decision for part in self._in_run_order() if part.decision is not None]

    @cached_property
    def theses(self) -> list[tuple[ThesisFact, int]]:
        """Each thesis with its account, by id."""
        return sorted((pair for part in self.parts.values() for pair in part.theses), key=lambda pair: pair[0].id)

    @cached_property
    def memory_ids(self) -> dict[int, tuple[int, ...]]:
        return {run_id: part.memory_ids for run_id, part in self.parts.items()}

    @cached_property
    def citations(self) -> list[tuple[int, str, str | None]]:
        """Accepted citations as (run, code, the heuristic's status now), by run and code."""
        return [
            (part.run_id, code, None if heuristic is None else self.statuses.get(heuristic))
            for part in self._in_run_order()
            for code, heuristic in part.citations
        ]


def _strategy_runs(strategy: Strategy, *, as_of: dt.date, is_replay: bool) -> list[StrategyRun]:
    lookback = int(critique_number("LOOKBACK_RUNS"))
    latest = StrategyRun.objects.filter(strategy=strategy, is_replay=is_replay, as_of__lte=as_of)
    return sorted(latest.order_by("-as_of", "-id")[:lookback], key=lambda run: (run.as_of, run.pk))


def _run_rows(strategy_runs: list[StrategyRun], as_of: dt.date) -> list[RunRow]:
    runs = (
        PipelineRun.objects.filter(strategy_run__in=[run.pk for run in strategy_runs], as_of__lte=as_of)
        .order_by("as_of", "id")
        .values_list(
            "id",
            "as_of",
            "strategy_run_id",
            "instrument__symbol",
            "feature_snapshot_id",
            "status",
            "attempts",
            "created_at",
            "finished_at",
        )
    )
    return [RunRow(*row[:5], mark=tuple(row[5:])) for row in runs]


def _memory_ids(run_ids: list[int]) -> dict[int, tuple[int, ...]]:
    """The lessons each run recalled, as its context stage stored them."""
    # The one key read out of each stored output by the database: an output is the whole memory
    # block and playbook the run was shown, and a critique reads those of every run in its lookback.
    context = StageRun.objects.filter(run_id__in=run_ids, stage="context").order_by()  # no join for an order
    outputs = context.values_list("run_id", "output__memory_ids")
    recalled: dict[int, tuple[int, ...]] = {}
    for run_id, stored in outputs:
        ids = stored if isinstance(stored, list) else []
        recalled[run_id] = tuple(int(i) for i in ids if isinstance(i, int) and not isinstance(i, bool))
    return recalled


def _atr_by_run(runs: Iterable[RunRow]) -> dict[int, float | None]:
    """ATR(14) of the bundle each thesis's run was shown (the run's own feature snapshot)."""
    snapshot_of = {run.id: run.feature_snapshot_id for run in runs if run.feature_snapshot_id}
    # The one figure read out of each stored bundle by the database: a bundle is a few kilobytes of
    # JSON, and a critique reads the bundles of every thesis in its lookback.
    values = dict(
        FeatureSnapshot.objects.filter(id__in=set(snapshot_of.values())).values_list("id", "bundle__technical__atr_14")
    )
    atr: dict[int, float | None] = {}
    for run_id, snapshot_id in snapshot_of.items():
        value = values.get(snapshot_id)
        atr[run_id] = float(value) if is_number(value) else None
    return atr


def _note_fact(
    pk: int,
    run_id: int,
    role: str,
    stance: Decimal,
    confidence: Decimal,
    abstained: bool,
    citations: Any,
    verified: int,
    mismatches: int,
) -> NoteFact:
    cited = tuple(str(c.get("name")) for c in citations or () if isinstance(c, Mapping) and c.get("name"))
    return NoteFact(
        id=pk,
        run_id=run_id,
        role=role,
        stance=float(stance),
        confidence=float(confidence),
        abstained=abstained,
        cited=cited,
        verified=verified,
        mismatches=mismatches,
    )


_NOTE_COLUMNS = (
    "id",
    "run_id",
    "role",
    "stance",
    "confidence",
    "abstained",
    "citations",
    "citations_verified",
    "citation_mismatches",
)
_THESIS_COLUMNS = (
    "id",
    "run_id",
    "instrument__symbol",
    "direction",
    "conviction",
    "entry",
    "stop",
    "target",
    "horizon_sessions",
    "risk_amount",
    "notional",
    "risk_approved",
    "account_id",
)


def _thesis_fact(
    pk: int,
    run_id: int,
    symbol: str,
    direction: str,
    conviction: Decimal,
    entry: Decimal,
    stop: Decimal,
    target: Decimal,
    horizon: int,
    risk_amount: Decimal,
    notional: Decimal,
    risk_approved: bool,
    account_id: int,
    *,
    as_of: dt.date,
    atr: float | None,
) -> tuple[ThesisFact, int]:
    fact = ThesisFact(
        id=pk,
        run_id=run_id,
        as_of=as_of,
        symbol=symbol,
        direction=direction,
        conviction=float(conviction),
        entry=float(entry),
        stop=float(stop),
        target=float(target),
        horizon=horizon,
        atr=atr,
        risk_amount=float(risk_amount),
        notional=float(notional),
        risk_approved=risk_approved,
    )
    return fact, account_id


def _read_parts(runs: list[RunRow]) -> dict[int, RunPart]:
    """The parts of ``runs``, read in a fixed number of queries (values only: a lookback holds
    hundreds of runs, and nothing here needs a model instance)."""
    by_id = {run.id: run for run in runs}
    run_ids = list(by_id)
    notes: dict[int, list[NoteFact]] = {}
    note_rows = AnalystNoteRecord.objects.filter(run_id__in=run_ids).order_by("run_id", "role")
    for row in note_rows.values_list(*_NOTE_COLUMNS):
        notes.setdefault(row[1], []).append(_note_fact(*row))
    memory_ids = _memory_ids(run_ids)
    decisions: dict[int, DecisionFact] = {}
    debates = DebateRecord.objects.filter(run_id__in=run_ids).order_by()  # one per run
    for debate_id, run_id, winner, conviction in debates.values_list("id", "run_id", "winner", "conviction"):
        run = by_id[run_id]
        decisions[run_id] = DecisionFact(
            run_id=run_id,
            strategy_run_id=run.strategy_run_id or 0,
            as_of=run.as_of,
            symbol=run.symbol,
            debate_id=debate_id,
            winner=winner,
            conviction=float(conviction),
            memory_ids=memory_ids.get(run_id, ()),
        )
    thesis_rows = list(Thesis.objects.filter(run_id__in=run_ids).order_by("id").values_list(*_THESIS_COLUMNS))
    atr = _atr_by_run(by_id[row[1]] for row in thesis_rows)
    theses: dict[int, list[tuple[ThesisFact, int]]] = {}
    for row in thesis_rows:
        run = by_id[row[1]]
        theses.setdefault(run.id, []).append(_thesis_fact(*row, as_of=run.as_of, atr=atr.get(run.id)))
    citations: dict[int, list[tuple[str, int | None]]] = {}
    accepted = HeuristicCitation.objects.filter(run_id__in=run_ids, accepted=True).order_by("run_id", "code")
    for run_id, code, heuristic_id in accepted.values_list("run_id", "code", "heuristic_id"):
        citations.setdefault(run_id, []).append((code, heuristic_id))
    return {
        run_id: RunPart(
            run_id=run_id,
            notes=tuple(notes.get(run_id, ())),
            decision=decisions.get(run_id),
            theses=tuple(theses.get(run_id, ())),
            memory_ids=memory_ids.get(run_id, ()),
            citations=tuple(citations.get(run_id, ())),
        )
        for run_id in run_ids
    }


# A finished run's part under its id, with the mark it had when read; the runs of each strategy's
# last pack (live and replay apart), for the four strategies packed most recently.
_carried: KeptPerStrategy[tuple[int, bool], dict[int, tuple[tuple[Any, ...], RunPart]]] = KeptPerStrategy(4)


def _parts(strategy: Strategy, is_replay: bool, runs: list[RunRow]) -> dict[int, RunPart]:
    """Each run's part: carried over from the strategy's last pack while its run's mark (state,
    attempts, made and finished at) is unchanged, else read. Only finished runs' parts are kept for
    the next pack: reading each run's rows again was most of a replay critique's time, and grew
    with the lookback."""
    key = (strategy.pk, is_replay)
    kept = _carried.get(key) or {}
    parts = {run.id: kept[run.id][1] for run in runs if run.id in kept and kept[run.id][0] == run.mark}
    missing = [run for run in runs if run.id not in parts]
    if missing:
        parts.update(_read_parts(missing))
    _carried.keep(key, {run.id: (run.mark, parts[run.id]) for run in runs if run.finished})
    return parts


def evidence_forget(strategy: Strategy) -> None:
    """Drop what this process kept of the strategy's runs (its replay is cleared and starts again)."""
    _carried.forget(lambda key: key[0] == strategy.pk)


def _load(strategy: Strategy, *, as_of: dt.date, is_replay: bool) -> Rows:
    """The lookback's rows: its runs' parts (those of finished runs carried over from the last pack
    where unchanged), and the positions of its theses as they stand."""
    rows = Rows(strategy, as_of, is_replay, _strategy_runs(strategy, as_of=as_of, is_replay=is_replay))
    rows.universe = dict(strategy.universe.values_list("id", "symbol"))
    rows.runs = _run_rows(rows.strategy_runs, as_of)
    rows.parts = _parts(strategy, is_replay, rows.runs)
    rows.positions = list(
        Position.objects.filter(thesis__in=[fact.id for fact, _ in rows.theses], opened_on__lte=as_of)
        .select_related("instrument")
        .order_by("id")
    )
    heuristic_ids = {heuristic for part in rows.parts.values() for _, heuristic in part.citations}
    heuristic_ids.discard(None)
    if heuristic_ids:
        rows.statuses = dict(Heuristic.objects.filter(id__in=heuristic_ids).values_list("id", "status"))
    return rows


def _last_marks(positions: Iterable[Position], as_of: dt.date) -> dict[int, float]:
    """Each still-open position's unrealised profit at its last mark on or before ``as_of``."""
    open_ids = [p.pk for p in positions if p.closed_on is None or p.closed_on > as_of]
    marks = (
        PositionMark.objects.filter(position_id__in=open_ids, date__lte=as_of)
        .order_by("position_id", "date")
        .values_list("position_id", "unrealised_pnl")
    )
    return {position_id: float(pnl) for position_id, pnl in marks}


def _closes(rows: Rows) -> dict[str, list[tuple[dt.date, float]]]:
    closes: dict[str, list[tuple[dt.date, float]]] = {}
    if rows.first_day is None:
        return closes
    bars = DailyBar.objects.filter(
        instrument_id__in=list(rows.universe), date__gte=rows.first_day, date__lte=rows.as_of
    ).values_list("instrument__symbol", "date", "close")
    for symbol, day, close in bars:
        closes.setdefault(symbol, []).append((day, float(close)))
    return closes


def _account(rows: Rows) -> Account | None:
    """The book the strategy's theses were sized for; without a thesis, its account by name (never created)."""
    if rows.theses:
        return Account.objects.filter(pk=rows.theses[-1][1]).first()
    name = f"replay: {rows.strategy.name}"[:64] if rows.is_replay else str(settings.ACCOUNT["NAME"])
    return Account.objects.filter(name=name).first()


def _optional(value: Decimal | int | None) -> float | None:
    return None if value is None else float(value)


# A mandate that says it in words ("long only", "long-only", "no shorts") excludes SHORT even where
# the account could carry one.
_LONG_ONLY = re.compile(r"\blong[\s-]only\b|\bno\s+short(?:s|ing)?\b", re.IGNORECASE)


def _limits(rows: Rows, account: Account | None) -> MandateLimits:
    strategy = rows.strategy
    universe = tuple(sorted(rows.universe.values()))
    long_only = bool(_LONG_ONLY.search(strategy.philosophy))
    if account is None:
        return MandateLimits(
            universe=universe,
            risk_per_trade_pct=_optional(strategy.risk_per_trade_pct),
            max_notional_pct=_optional(strategy.max_notional_pct),
            max_positions=strategy.max_positions,
            long_only=long_only,
        )
    limits = risk_limits(account, strategy)
    return MandateLimits(
        universe=universe,
        risk_per_trade_pct=float(limits.risk_per_trade_pct),
        max_notional_pct=float(limits.max_notional_pct),
        max_positions=int(limits.max_positions),
        allow_short=bool(limits.allow_short),
        long_only=long_only,
    )


def _losing_lessons(rows: Rows, account: Account | None) -> int:
    """Losing lessons about the universe on file by ``as_of``, in the scopes the runs recall from."""
    replay_account = account.pk if rows.is_replay and account is not None else None
    return MemoryEntry.objects.filter(
        created_on__lte=rows.as_of,
        scope__in=memory_scopes(replay_account_id=replay_account),
        symbol__in=list(rows.universe.values()),
        tags__outcome="loss",
    ).count()


def _memories(rows: Rows) -> dict[int, MemoryFact]:
    ids = {memory_id for recalled in rows.memory_ids.values() for memory_id in recalled}
    entries = MemoryEntry.objects.filter(id__in=ids, created_on__lte=rows.as_of).values_list("id", "tags")
    facts = {}
    for memory_id, tags in entries:
        tags = tags if isinstance(tags, Mapping) else {}
        facts[memory_id] = MemoryFact(memory_id, str(tags.get("direction", "")), str(tags.get("outcome", "")))
    return facts


# --- rows to facts ---------------------------------------------------------------------------


def _position_fact(
    position: Position, *, as_of: dt.date, marks: Mapping[int, float], conviction: float
) -> PositionFact:
    closed = position.closed_on is not None and position.closed_on <= as_of and position.realised_pnl is not None
    pnl = float(position.realised_pnl or 0) if closed else marks.get(position.pk, 0.0)
    costs = float(position.entry_costs) + (float(position.exit_costs) if closed else 0.0)
    return PositionFact(
        id=position.pk,
        thesis_id=position.thesis_id,
        symbol=position.instrument.symbol,
        direction=position.direction,
        opened_on=position.opened_on,
        closed_on=position.closed_on if closed else None,
        pnl=pnl,
        costs=costs,
        notional=float(position.entry_price * position.quantity),
        conviction=conviction,
    )


def _heuristics_by_run(rows: Rows) -> dict[int, tuple[str, ...]]:
    by_run: dict[int, list[str]] = {}
    for run_id, code, _status in rows.citations:
        by_run.setdefault(run_id, []).append(code)
    return {run_id: tuple(codes) for run_id, codes in by_run.items()}


def _ics_logged(rows: Rows) -> list[tuple[str, str, float | None, dt.date]]:
    if rows.first_day is None:
        return []
    return list(
        SignalIC.objects.filter(
            strategy=rows.strategy, is_replay=rows.is_replay, as_of__gte=rows.first_day, as_of__lte=rows.as_of
        ).values_list("signal", "family", "ic", "as_of")
    )


@dataclass(frozen=True)
class Loaded:
    rows: Rows
    trajectory: Trajectory
    logged: list[tuple[str, str, float | None, dt.date]]
    account: Account | None


def load_trajectory(strategy: Strategy, *, as_of: dt.date, is_replay: bool) -> Loaded:
    """The strategy's stored rows as of ``as_of``, and the trajectory the detectors read."""
    rows = _load(strategy, as_of=as_of, is_replay=is_replay)
    account = _account(rows)
    marks = _last_marks(rows.positions, as_of)
    theses = [fact for fact, _account_id in rows.theses]
    conviction = {fact.id: fact.conviction for fact in theses}
    logged = _ics_logged(rows)
    trajectory = Trajectory(
        as_of=as_of,
        limits=_limits(rows, account),
        runs=tuple(RunFact(run.pk, run.as_of, run.decision, gated=bool(run.blocked_by)) for run in rows.strategy_runs),
        decisions=tuple(rows.decisions),
        notes=tuple(rows.notes),
        theses=tuple(theses),
        positions=tuple(
            _position_fact(p, as_of=as_of, marks=marks, conviction=conviction[p.thesis_id]) for p in rows.positions
        ),
        memories=_memories(rows),
        losing_lessons_available=_losing_lessons(rows, account),
        ics_logged=len(logged),
        heuristics_by_run=_heuristics_by_run(rows),
        closes=_closes(rows),
        capital=float(account.capital) if account is not None else None,
    )
    return Loaded(rows, trajectory, logged, account)


# --- the pack --------------------------------------------------------------------------------


def _strategy_block(rows: Rows, limits: MandateLimits) -> dict[str, Any]:
    strategy = rows.strategy
    return {
        "id": strategy.pk,
        "name": strategy.name,
        "mandate": strategy.philosophy,
        "run_count": strategy.run_count,
        "universe": list(limits.universe),
        "limits": {
            "risk_per_trade_pct": limits.risk_per_trade_pct,
            "max_notional_pct": limits.max_notional_pct,
            "max_positions": limits.max_positions,
            "allow_short": limits.allow_short,
            "long_only": limits.long_only,
        },
    }


def _window_block(rows: Rows) -> dict[str, Any]:
    days = [run.as_of for run in rows.strategy_runs]
    return {
        "first": min(days).isoformat() if days else None,
        "last": max(days).isoformat() if days else None,
        "as_of": rows.as_of.isoformat(),
        "runs_read": len(days),
        "lookback": int(critique_number("LOOKBACK_RUNS")),
        "is_replay": rows.is_replay,
    }


def _heuristics_block(rows: Rows) -> list[dict[str, Any]]:
    counts: dict[str, list[Any]] = {}
    for _run_id, code, status in rows.citations:
        counts.setdefault(code, [status or "", 0])[1] += 1
    return [{"code": code, "status": status, "citations": n} for code, (status, n) in sorted(counts.items())]


def _signals_block(loaded: Loaded, window: ICWindow) -> dict[str, Any]:
    floor = critique_number("IC_FLOOR")
    trajectory = loaded.trajectory
    in_use = families_in_use(trajectory)
    ics = [
        {
            "signal": r.signal,
            "family": r.family,
            "ic": r.ic,
            "observations": r.observations,
            "above_floor": r.above(floor),
        }
        for r in window.results
    ]
    heuristics = _heuristics_block(loaded.rows)
    return {
        "families_in_use": in_use,
        "distinct_families": len([f for f in in_use if f != "unattributed"]),
        "families_cited": sorted(cited_families(trajectory)),
        "horizon_sessions": window.horizon,
        "ic_floor": floor,
        "ic_window_start": window.start.isoformat() if window.start else None,
        "ics": ics,
        "signals_above_floor": sum(row["above_floor"] for row in ics),
        "families_above_floor": sorted({row["family"] for row in ics if row["above_floor"]}),
        "logged": {
            "rows": len(loaded.logged),
            "families": sorted({family for _, family, _, _ in loaded.logged}),
            "latest": max((day for *_, day in loaded.logged), default=None),
        },
        "heuristics": heuristics,
        "demoted_cited": [h["code"] for h in heuristics if h["status"] in ("demoted", "retired")],
    }


def _ids_block(loaded: Loaded) -> dict[str, list[Any]]:
    rows, trajectory = loaded.rows, loaded.trajectory
    return {
        "runs": sorted(rows.run_ids),
        "strategy_runs": sorted(run.pk for run in rows.strategy_runs),
        "theses": sorted(fact.id for fact, _account_id in rows.theses),
        "positions": sorted(p.pk for p in rows.positions),
        "notes": sorted(note.id for note in rows.notes),
        "debates": sorted(decision.debate_id for decision in rows.decisions),
        "memories": sorted(trajectory.memories),
        "heuristics": sorted({code for _, code, _ in rows.citations}),
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value


_LIST_KEYS = ("detector", "signal", "code")


def _element_name(index: int, item: Any) -> str:
    if isinstance(item, Mapping):
        for key in _LIST_KEYS:
            if isinstance(item.get(key), str):
                return str(item[key])
    return str(index)


def flat_figures(value: Any, prefix: str = "") -> dict[str, float | int]:
    """Every number in ``value`` by its dotted path (``loops.overconfidence.figures.win_rate``);
    list items are named by their detector, signal or code when they have one, else by index.
    Ids (any ``ids`` block) are not figures and are left out; so are booleans."""
    figures: dict[str, float | int] = {}
    if isinstance(value, Mapping):
        items: Iterable[tuple[str, Any]] = ((str(k), v) for k, v in value.items() if k != "ids")
    elif isinstance(value, list):
        items = ((_element_name(i, item), item) for i, item in enumerate(value))
    else:
        return {prefix: value} if is_number(value) and prefix else {}
    for name, item in items:
        figures.update(flat_figures(item, f"{prefix}.{name}" if prefix else name))
    return figures


def evidence_pack(strategy: Strategy, *, as_of: dt.date, is_replay: bool) -> dict[str, Any]:
    """The evidence a critique of ``strategy`` argues from, computed by code from rows dated ≤ ``as_of``."""
    loaded = load_trajectory(strategy, as_of=as_of, is_replay=is_replay)
    trajectory = loaded.trajectory
    window = strategy_rank_ics(strategy, as_of=as_of, is_replay=is_replay)
    logged_families = {family for _, family, _, _ in loaded.logged}
    mandate = mandate_compliance(trajectory)
    pack = {
        "strategy": _strategy_block(loaded.rows, trajectory.limits),
        "window": _window_block(loaded.rows),
        "performance": performance(trajectory),
        "signals": _signals_block(loaded, window),
        "mandate": {**mandate, "text": strategy.philosophy},
        "loops": detect_loops(trajectory),
        "unexplored": unexplored(trajectory, families_logged=logged_families),
        "ids": _ids_block(loaded),
    }
    pack = _jsonable(pack)
    pack["figures"] = flat_figures(pack)
    return pack
