"""The critique's evidence, computed by code: a strategy's trajectory as plain facts, the seven
self-reinforcing loops of DESIGN.md as deterministic detectors over it, and the spec's other
dimensions (performance reality, mandate compliance, unexplored ground). Pure; no Django.

The Django glue (``reviews.critique.evidence``) reads the stored rows of one strategy as of a date
into a ``Trajectory``; everything here is arithmetic over it, so a detector can be tested on facts
typed into a test, and a replay of the same rows gives the same findings.

A **finding** is a JSON-able dict, one per detector, fired or not::

    {"detector": key, "loop": 1..7, "title": ..., "fired": bool, "score": 0..1,
     "figures": {name: number}, "ids": {"runs", "theses", "positions", "notes", "memories",
     "heuristics"}, "summary": "..."}

Figures are rounded once, where they are made (4 decimals), and the summary quotes them as stored,
so the grounding check can hold the critic's quotes against the very numbers the pack holds. A
fired finding scores at least 0.5 and a quiet one below it; within each side, the further the
measure is past (or short of) its threshold, the higher.

Every threshold below is a named constant with the reason for its value. They are deliberately
conservative (a loop needs enough history to be a loop): a critique that cries wolf on five trades
teaches the desk to ignore it.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise
from typing import Any, TypeGuard

from reviews.domain.signal_ic import CITATION_FAMILY, FAMILIES, ROLE_FAMILY

__all__ = [
    "CANDIDATE_HORIZONS",
    "DETECTORS",
    "DecisionFact",
    "MandateLimits",
    "MemoryFact",
    "NoteFact",
    "PositionFact",
    "RunFact",
    "ThesisFact",
    "Trajectory",
    "detect_loops",
    "driver_family",
    "families_cited",
    "families_in_use",
    "is_number",
    "mandate_compliance",
    "performance",
    "unexplored",
]

# --- thresholds ------------------------------------------------------------------------------

MIN_THESES_NARRATIVE = 5
"""Loop 1 needs five theses: fewer is a strategy that has barely traded, not one that trades on story."""

MIN_DECISIONS = 8
"""Loops 2 and 3 need eight debated decisions: a family that drove 3 of 4 decisions is chance."""

FIXATION_SHARE = 0.7
"""Loop 2: one family behind 70% or more of decisions. With the desk's four analysts and nine
families, an open-minded panel rarely lets one family win more than half of the debates."""

MIN_RECALLS = 10
"""Loop 3 needs ten recalled lessons that carry a side and an outcome before their balance means anything."""

ECHO_AGREEING_SHARE = 0.8
"""Loop 3: four recalled lessons in five say "your side was right"."""

ECHO_LOSING_SHARE = 0.1
"""Loop 3: and losing lessons are (almost) never recalled: under one in ten."""

SHIELD_MIN_RUNS = 20
"""Loop 4 needs twenty strategy runs: a month of daily runs is the least over which flat means flat."""

SHIELD_EXCESS_PCT = 1.0
"""Loop 4: returns within one percentage point of (or under) the universe's equal-weight
buy-and-hold; beating the benchmark by less than the cost of a few round trips is no edge."""

MIN_CLOSED = 8
"""Loops 5 and 7 (churn) need eight closed positions; a win rate on fewer moves by 12 points a trade."""

OVERCONFIDENCE_GAP = 0.15
"""Loop 5: stated conviction 15 points or more above the empirical win rate (the retrospective's
calibration alarm sits at an ECE of 0.25; a mean gap of 0.15 is already a systematic lean)."""

REGIME_SHIFT = 0.5
"""Loop 6: the universe's realised volatility moves by more than 50% between the window's halves."""

GEOMETRY_TOLERANCE = 0.1
"""Loop 6: the stop/target geometry counts as unchanged when its median R and ATR multiples move
by under 10% and the horizon not at all (tick rounding alone moves an ATR multiple by a few %)."""

MIN_THESES_PER_HALF = 3
"""Loop 6 needs three theses in each half to speak of the geometry of a half."""

PARALYSIS_MIN_RUNS = 20
"""Loop 7 (paralysis) needs twenty decided runs, as loop 4."""

PARALYSIS_HOLD_SHARE = 0.9
"""Loop 7: nine runs in ten decided HOLD, and the book made no progress (net P&L at or below zero)."""

CHURN_COST_SHARE = 0.5
"""Loop 7 (churn): costs ate half or more of the gross gains of the closed positions."""

CANDIDATE_HORIZONS: tuple[int, ...] = (5, 10, 20)
"""Holding periods a daily desk can try: a week, two weeks (the trader's default), a month."""

MAX_IDS = 30
"""A finding names at most this many ids of a kind (the latest); the pack's ``ids`` holds them all."""

DIRECTIONS = ("LONG", "SHORT")
FIGURE_DECIMALS = 4
UNATTRIBUTED = "unattributed"


# --- facts -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunFact:
    """A strategy run: the day it looked and what it decided (hold, rebalance or still pending)."""

    id: int
    as_of: dt.date
    decision: str
    # Held by a critique directive's gate rather than by the strategy's own choice.
    gated: bool = False


@dataclass(frozen=True)
class NoteFact:
    """An analyst's note: its stance, confidence and the technical fields it cited."""

    id: int
    run_id: int
    role: str
    stance: float
    confidence: float
    abstained: bool = False
    cited: tuple[str, ...] = ()
    verified: int = 0
    mismatches: int = 0


@dataclass(frozen=True)
class DecisionFact:
    """A debated pipeline run: the side the debate took and the lessons the run recalled."""

    run_id: int
    strategy_run_id: int
    as_of: dt.date
    symbol: str
    debate_id: int
    winner: str
    conviction: float
    memory_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class ThesisFact:
    id: int
    run_id: int
    as_of: dt.date
    symbol: str
    direction: str
    conviction: float
    entry: float
    stop: float
    target: float
    horizon: int
    atr: float | None = None
    risk_amount: float = 0.0
    notional: float = 0.0
    risk_approved: bool = True

    @property
    def r_multiple(self) -> float | None:
        risk = abs(self.entry - self.stop)
        return abs(self.target - self.entry) / risk if risk else None

    @property
    def atr_multiple(self) -> float | None:
        return abs(self.entry - self.stop) / self.atr if self.atr else None


@dataclass(frozen=True)
class PositionFact:
    """A position as of the review's date: closed only if it closed by then; ``pnl`` is the
    realised profit (net of costs) of a closed one, the last mark's unrealised profit of an open one."""

    id: int
    thesis_id: int
    symbol: str
    direction: str
    opened_on: dt.date
    closed_on: dt.date | None
    pnl: float
    costs: float
    notional: float
    conviction: float

    @property
    def closed(self) -> bool:
        return self.closed_on is not None

    @property
    def won(self) -> bool:
        return self.closed and self.pnl > 0

    def open_on(self, day: dt.date) -> bool:
        return self.opened_on <= day and (self.closed_on is None or self.closed_on > day)


@dataclass(frozen=True)
class MemoryFact:
    """A recalled lesson's tags: the side it was about and how that trade ended (``""`` if untagged)."""

    id: int
    direction: str = ""
    outcome: str = ""


@dataclass(frozen=True)
class MandateLimits:
    """What the mandate permits: its universe, the limits in force, the directions allowed."""

    universe: tuple[str, ...]
    risk_per_trade_pct: float | None = None
    max_notional_pct: float | None = None
    max_positions: int | None = None
    allow_short: bool = False
    long_only: bool = False

    @property
    def shorts_permitted(self) -> bool:
        """The account may carry a short and the mandate's words do not rule it out."""
        return self.allow_short and not self.long_only


@dataclass(frozen=True)
class Trajectory:
    """Everything the detectors read about one strategy, as of one date."""

    as_of: dt.date
    limits: MandateLimits
    runs: tuple[RunFact, ...] = ()
    decisions: tuple[DecisionFact, ...] = ()
    notes: tuple[NoteFact, ...] = ()
    theses: tuple[ThesisFact, ...] = ()
    positions: tuple[PositionFact, ...] = ()
    memories: Mapping[int, MemoryFact] = field(default_factory=dict)
    losing_lessons_available: int = 0
    ics_logged: int = 0
    heuristics_by_run: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    closes: Mapping[str, Sequence[tuple[dt.date, float]]] = field(default_factory=dict)
    capital: float | None = None

    @cached_property
    def _notes_by_run(self) -> dict[int, list[NoteFact]]:
        by_run: dict[int, list[NoteFact]] = {}
        for note in self.notes:
            by_run.setdefault(note.run_id, []).append(note)
        return by_run

    def notes_of(self, run_id: int) -> list[NoteFact]:
        return self._notes_by_run.get(run_id, [])

    @property
    def midpoint(self) -> dt.date | None:
        """The median run date: the first half of the window is before it, the second from it on."""
        days = sorted(run.as_of for run in self.runs)
        return days[len(days) // 2] if days else None


# --- small arithmetic ------------------------------------------------------------------------


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, FIGURE_DECIMALS)


def _share(part: int, whole: int) -> float:
    return round(part / whole, FIGURE_DECIMALS) if whole else 0.0


def _mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return round(statistics.fmean(items), FIGURE_DECIMALS) if items else None


def _fmt(value: object) -> str:
    """A figure as the summary quotes it: exactly as stored in ``figures``."""
    return "n/a" if value is None else str(value)


def _severity(measure: float | None, threshold: float, cap: float) -> float:
    """0 at nothing, 0.5 at the threshold, 1 at ``cap`` and beyond (linear in between)."""
    if measure is None or measure <= 0 or threshold <= 0:
        return 0.0
    if measure <= threshold:
        return 0.5 * measure / threshold
    return min(1.0, 0.5 + 0.5 * (measure - threshold) / max(cap - threshold, 1e-9))


def _latest(ids: Iterable[int]) -> list[int]:
    return sorted(set(ids))[-MAX_IDS:]


def _ids(**kinds: Iterable[Any]) -> dict[str, list[Any]]:
    blank: dict[str, list[Any]] = {kind: [] for kind in ("runs", "theses", "positions", "notes", "memories")}
    blank["heuristics"] = []
    for kind, values in kinds.items():
        blank[kind] = sorted(set(values))[:MAX_IDS] if kind == "heuristics" else _latest(values)
    return blank


def _side(direction: str) -> int:
    return 1 if direction == "LONG" else -1


# --- shared measures -------------------------------------------------------------------------


def driver_note(notes: Sequence[NoteFact], winner: str) -> NoteFact | None:
    """The note that carried the winning side: of the notes that took it, the strongest
    (|stance| x confidence); None when no note took the winner's side."""
    backing = [n for n in notes if not n.abstained and n.stance * _side(winner) > 0]
    return max(backing, key=lambda n: (abs(n.stance) * n.confidence, n.role), default=None)


def note_family(note: NoteFact) -> str:
    """The family a note speaks for: its role's, or for a technical note the family it cites most."""
    if note.role in ROLE_FAMILY:
        return ROLE_FAMILY[note.role]
    cited = Counter(CITATION_FAMILY[name] for name in note.cited if name in CITATION_FAMILY)
    if not cited:
        return UNATTRIBUTED
    top = max(cited.values())
    return next(family for family in FAMILIES if cited.get(family) == top)


def driver_family(trajectory: Trajectory, decision: DecisionFact) -> str:
    note = driver_note(trajectory.notes_of(decision.run_id), decision.winner)
    return note_family(note) if note is not None else UNATTRIBUTED


def families_cited(trajectory: Trajectory) -> set[str]:
    """Families any side-taking note spoke for."""
    families = {note_family(n) for n in trajectory.notes if not n.abstained and n.stance != 0}
    return families - {UNATTRIBUTED}


def benchmark_return_pct(closes: Mapping[str, Sequence[tuple[dt.date, float]]]) -> float | None:
    """Equal-weight buy-and-hold of the universe: the mean of each instrument's first-to-last return, %."""
    returns = []
    for series in closes.values():
        ordered = sorted(series)
        if len(ordered) >= 2 and ordered[0][1] > 0:
            returns.append((ordered[-1][1] / ordered[0][1] - 1) * 100)
    return _mean(returns)


def _daily_returns(series: Sequence[tuple[dt.date, float]]) -> list[float]:
    ordered = sorted(series)
    return [(b / a - 1) * 100 for (_, a), (_, b) in pairwise(ordered) if a > 0]


def realised_volatility_pct(closes: Mapping[str, Sequence[tuple[dt.date, float]]]) -> float | None:
    """The universe's realised volatility: each instrument's standard deviation of daily returns
    (%, population), averaged over the instruments with at least three closes."""
    spreads = []
    for series in closes.values():
        returns = _daily_returns(series)
        if len(returns) >= 2:
            spreads.append(statistics.pstdev(returns))
    return _mean(spreads)


def _halves(
    closes: Mapping[str, Sequence[tuple[dt.date, float]]], midpoint: dt.date
) -> tuple[dict[str, list[tuple[dt.date, float]]], dict[str, list[tuple[dt.date, float]]]]:
    first = {symbol: [bar for bar in series if bar[0] < midpoint] for symbol, series in closes.items()}
    second = {symbol: [bar for bar in series if bar[0] >= midpoint] for symbol, series in closes.items()}
    return first, second


def _net_pnl(positions: Sequence[PositionFact]) -> float:
    return round(sum(p.pnl for p in positions), 2)


def _return_pct(trajectory: Trajectory) -> float | None:
    if not trajectory.capital:
        return None
    return round(_net_pnl(trajectory.positions) / trajectory.capital * 100, FIGURE_DECIMALS)


def _closed(trajectory: Trajectory) -> list[PositionFact]:
    return [p for p in trajectory.positions if p.closed]


def _decided(trajectory: Trajectory) -> list[RunFact]:
    return [run for run in trajectory.runs if run.decision in ("hold", "rebalance")]


# --- findings --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Detector:
    key: str
    loop: int
    title: str
    detect: Callable[[Trajectory], tuple[bool, float, dict[str, Any], dict[str, list[Any]], str]]


def _finding(detector: Detector, trajectory: Trajectory) -> dict[str, Any]:
    fired, score, figures, ids, summary = detector.detect(trajectory)
    score = max(score, 0.5) if fired else min(score, 0.49)
    return {
        "detector": detector.key,
        "loop": detector.loop,
        "title": detector.title,
        "fired": fired,
        "score": round(score, FIGURE_DECIMALS),
        "figures": figures,
        "ids": ids,
        "summary": summary,
    }


Detection = tuple[bool, float, dict[str, Any], dict[str, list[Any]], str]


def narrative_as_quant(t: Trajectory) -> Detection:
    """Loop 1: theses keep coming, but no signal's rank IC was logged in the window, and the note
    that carried each thesis's side quoted no figure code could verify."""
    story = [
        thesis
        for thesis in t.theses
        if (note := driver_note(t.notes_of(thesis.run_id), thesis.direction)) is None or note.verified == 0
    ]
    narrative_share = _share(len(story), len(t.theses))
    fired = len(t.theses) >= MIN_THESES_NARRATIVE and t.ics_logged == 0
    figures = {"theses": len(t.theses), "signal_ics_logged": t.ics_logged, "narrative_share": narrative_share}
    story_runs = {thesis.run_id for thesis in story}
    ids = _ids(
        runs=(thesis.run_id for thesis in t.theses),
        theses=(thesis.id for thesis in t.theses),
        notes=(n.id for n in t.notes if n.run_id in story_runs and n.verified == 0 and not n.abstained),
        heuristics=(code for run in story_runs for code in t.heuristics_by_run.get(run, ())),
    )
    score = (0.5 + 0.5 * narrative_share) if fired else 0.4 * narrative_share * (t.ics_logged == 0)
    summary = (
        f"{figures['theses']} theses with {figures['signal_ics_logged']} signal ICs logged; "
        f"{narrative_share} of theses rest on a note that quoted no verified figure."
    )
    return fired, score, figures, ids, summary


def single_signal_fixation(t: Trajectory) -> Detection:
    """Loop 2: one signal family carried most decisions, and the second half of the window
    brought no family the first half had not used."""
    midpoint = t.midpoint
    drivers = [(d, driver_family(t, d)) for d in t.decisions]
    counts = Counter(family for _, family in drivers if family != UNATTRIBUTED)
    top_family, top_count = counts.most_common(1)[0] if counts else ("", 0)
    early = {family for d, family in drivers if midpoint and d.as_of < midpoint}
    new_late = {family for d, family in drivers if midpoint and d.as_of >= midpoint} - early - {UNATTRIBUTED}
    top_share = _share(top_count, len(drivers))
    fired = len(drivers) >= MIN_DECISIONS and top_share >= FIXATION_SHARE and not new_late
    figures = {
        "decisions": len(drivers),
        "top_family_share": top_share,
        "distinct_families": len(counts),
        "new_families_second_half": len(new_late),
    }
    top_runs = [d.run_id for d, family in drivers if family == top_family]
    backing = (driver_note(t.notes_of(d.run_id), d.winner) for d, family in drivers if family == top_family)
    notes = [note.id for note in backing if note is not None]
    ids = _ids(runs=top_runs, notes=notes)
    summary = (
        f"{figures['decisions']} decisions: the {top_family or 'no'} family carried {top_share} of them; "
        f"{figures['distinct_families']} families drove any; {len(new_late)} new in the second half."
    )
    return fired, _severity(top_share, FIXATION_SHARE, 1.0), figures, ids, summary


def _recall_valence(t: Trajectory) -> list[tuple[DecisionFact, MemoryFact, bool]]:
    """(decision, lesson, agrees) for each recalled lesson that carries a side and a win or loss:
    it agrees when it says the side taken was right (a won trade on that side, a lost one against)."""
    rows = []
    for decision in t.decisions:
        for memory_id in decision.memory_ids:
            memory = t.memories.get(memory_id)
            if memory is None or memory.direction not in DIRECTIONS or memory.outcome not in ("win", "loss"):
                continue
            same_side = memory.direction == decision.winner
            rows.append((decision, memory, same_side == (memory.outcome == "win")))
    return rows


def memory_echo_chamber(t: Trajectory) -> Detection:
    """Loop 3: the lessons the runs recalled nearly all told the debate its side was right, and
    losing lessons stayed out of the room."""
    rows = _recall_valence(t)
    agreeing = [row for row in rows if row[2]]
    losing = [row for row in rows if row[1].outcome == "loss"]
    agreeing_share, losing_share = _share(len(agreeing), len(rows)), _share(len(losing), len(rows))
    fired = len(rows) >= MIN_RECALLS and agreeing_share >= ECHO_AGREEING_SHARE and losing_share < ECHO_LOSING_SHARE
    figures = {
        "recalls": len(rows),
        "agreeing_share": agreeing_share,
        "losing_recalled": len(losing),
        "losing_share": losing_share,
        "losing_lessons_available": t.losing_lessons_available,
    }
    ids = _ids(runs=(d.run_id for d, _, _ in agreeing), memories=(m.id for _, m, _ in agreeing))
    summary = (
        f"{figures['recalls']} recalled lessons: {agreeing_share} agreed with the side taken; "
        f"{figures['losing_recalled']} losing lessons recalled of {t.losing_lessons_available} on file."
    )
    return fired, _severity(agreeing_share, ECHO_AGREEING_SHARE, 1.0), figures, ids, summary


def compliance_shield(t: Trajectory) -> Detection:
    """Loop 4: within the mandate, run after run, and no better than holding the universe."""
    strategy_return = _return_pct(t)
    benchmark = benchmark_return_pct(t.closes)
    excess = None if strategy_return is None or benchmark is None else _round(strategy_return - benchmark)
    breaches = int(mandate_compliance(t)["breaches"])
    fired = len(t.runs) >= SHIELD_MIN_RUNS and breaches == 0 and excess is not None and excess <= SHIELD_EXCESS_PCT
    figures = {
        "runs": len(t.runs),
        "return_pct": strategy_return,
        "benchmark_return_pct": benchmark,
        "excess_return_pct": excess,
        "mandate_breaches": breaches,
    }
    ids = _ids(positions=(p.id for p in t.positions), theses=(p.thesis_id for p in t.positions))
    shortfall = None if excess is None else SHIELD_EXCESS_PCT - excess
    summary = (
        f"{figures['runs']} runs within the mandate ({breaches} breaches) returned {_fmt(strategy_return)}% "
        f"against {_fmt(benchmark)}% for the universe held equally: {_fmt(excess)} points of excess."
    )
    return fired, _severity(shortfall, SHIELD_EXCESS_PCT, 5 * SHIELD_EXCESS_PCT), figures, ids, summary


def overconfidence(t: Trajectory) -> Detection:
    """Loop 5: the conviction the theses stated sits well above how often they won."""
    closed = _closed(t)
    win_rate = _share(sum(p.won for p in closed), len(closed))
    stated = _mean(p.conviction for p in closed)
    gap = None if stated is None else _round(stated - win_rate)
    fired = len(closed) >= MIN_CLOSED and gap is not None and gap >= OVERCONFIDENCE_GAP
    figures = {"closed": len(closed), "win_rate": win_rate, "mean_conviction": stated, "conviction_gap": gap}
    ids = _ids(positions=(p.id for p in closed), theses=(p.thesis_id for p in closed))
    summary = (
        f"{figures['closed']} closed positions won {win_rate} of the time against a mean stated "
        f"conviction of {_fmt(stated)}: a gap of {_fmt(gap)}."
    )
    return fired, _severity(gap, OVERCONFIDENCE_GAP, 0.5), figures, ids, summary


def _geometry(theses: Sequence[ThesisFact]) -> tuple[float | None, float | None, float | None]:
    """Median R multiple, median ATR multiple and median horizon of the theses."""

    def median(values: Iterable[float | None]) -> float | None:
        known = [value for value in values if value is not None]
        return _round(statistics.median(known)) if known else None

    return (
        median(t.r_multiple for t in theses),
        median(t.atr_multiple for t in theses),
        median(float(t.horizon) for t in theses),
    )


def _whole(value: float | None) -> float | int | None:
    """10.0 sessions reads as 10."""
    return int(value) if value is not None and value == int(value) else value


def _moved(before: float | None, after: float | None, tolerance: float) -> bool:
    if before is None or after is None:
        return False
    return abs(after - before) > tolerance * abs(before)


def _volatility_shift(t: Trajectory) -> tuple[float | None, float | None, float | None]:
    midpoint = t.midpoint
    if midpoint is None:
        return None, None, None
    first, second = _halves(t.closes, midpoint)
    early, late = realised_volatility_pct(first), realised_volatility_pct(second)
    change = _round(late / early - 1) if early and late is not None else None
    return early, late, change


def frozen_parameters(t: Trajectory) -> Detection:
    """Loop 6: the universe's volatility changed regime and the stop/target geometry did not."""
    early_vol, late_vol, change = _volatility_shift(t)
    midpoint = t.midpoint
    early = [x for x in t.theses if midpoint and x.as_of < midpoint]
    late = [x for x in t.theses if midpoint and x.as_of >= midpoint]
    before, after = _geometry(early), _geometry(late)
    tolerances = (GEOMETRY_TOLERANCE, GEOMETRY_TOLERANCE, 0.0)
    changed = any(_moved(b, a, tol) for b, a, tol in zip(before, after, tolerances, strict=True))
    enough = len(early) >= MIN_THESES_PER_HALF and len(late) >= MIN_THESES_PER_HALF
    shifted = change is not None and abs(change) > REGIME_SHIFT
    fired = enough and shifted and not changed
    figures = {
        "volatility_first_half_pct": early_vol,
        "volatility_second_half_pct": late_vol,
        "volatility_change": change,
        "r_multiple": after[0] if after[0] is not None else before[0],
        "atr_multiple": after[1] if after[1] is not None else before[1],
        "horizon_sessions": _whole(after[2] if after[2] is not None else before[2]),
        "geometry_changed": int(changed),
        "theses_first_half": len(early),
        "theses_second_half": len(late),
    }
    ids = _ids(theses=(x.id for x in t.theses), runs=(x.run_id for x in t.theses))
    summary = (
        f"Realised volatility went from {_fmt(early_vol)}% to {_fmt(late_vol)}% a day (change "
        f"{_fmt(change)}); the theses kept {_fmt(figures['r_multiple'])}R targets, stops at "
        f"{_fmt(figures['atr_multiple'])} ATR and {_fmt(figures['horizon_sessions'])}-session horizons."
    )
    score = _severity(abs(change) if change is not None and not changed else None, REGIME_SHIFT, 2.0)
    return fired, score, figures, ids, summary


def _churn(t: Trajectory) -> tuple[int, float, float, float | None]:
    """(closed, costs, gross result before costs, the share of the gross gain the costs took). With no
    gross gain there is nothing for costs to eat (None): a book that lost before its costs has a
    signal problem, which performance and the other loops report, not a turnover one."""
    closed = _closed(t)
    costs = round(sum(p.costs for p in closed), 2)
    gross = round(sum(p.pnl + p.costs for p in closed), 2)
    share = round(min(1.0, costs / gross), FIGURE_DECIMALS) if gross > 0 else None
    return len(closed), costs, gross, share


def paralysis_or_churn(t: Trajectory) -> Detection:
    """Loop 7: HOLD nearly every run with nothing to show for it, or trading whose costs eat the gains.

    A run a directive's gate held is not the strategy's own HOLD: counting it would make every
    unmet directive look like paralysis and escalate itself at each later critique."""
    decided = [run for run in _decided(t) if not run.gated]
    holds = sum(run.decision == "hold" for run in decided)
    hold_share = _share(holds, len(decided))
    net = _net_pnl(t.positions)
    closed, costs, gross, cost_share = _churn(t)
    paralysed = len(decided) >= PARALYSIS_MIN_RUNS and hold_share >= PARALYSIS_HOLD_SHARE and net <= 0
    churning = closed >= MIN_CLOSED and cost_share is not None and cost_share >= CHURN_COST_SHARE
    figures = {
        "decided_runs": len(decided),
        "gated_runs": sum(run.gated for run in t.runs),
        "holds": holds,
        "hold_share": hold_share,
        "net_pnl": net,
        "closed": closed,
        "costs": costs,
        "gross_pnl": gross,
        "cost_share": cost_share,
        "paralysis": int(paralysed),
        "churn": int(churning),
    }
    held_days = {run.id for run in decided if run.decision == "hold"}
    ids = _ids(
        runs=(d.run_id for d in t.decisions if d.strategy_run_id in held_days),
        positions=(p.id for p in _closed(t)) if churning else (),
    )
    summary = f"{holds} of {figures['decided_runs']} runs held (share {hold_share}) for a net P&L of {net}; " + (
        f"costs of {costs} took {cost_share} of {gross} gross on {closed} closed positions."
        if cost_share is not None
        else f"costs of {costs} on {closed} closed positions that made {gross} before costs (no gain to eat)."
    )
    score = max(
        _severity(hold_share, PARALYSIS_HOLD_SHARE, 1.0) if net <= 0 else 0.0,
        _severity(cost_share, CHURN_COST_SHARE, 1.0) if closed >= MIN_CLOSED and cost_share is not None else 0.0,
    )
    return paralysed or churning, score, figures, ids, summary


DETECTORS: tuple[Detector, ...] = (
    Detector("narrative_as_quant", 1, "Narrative picking dressed as quant", narrative_as_quant),
    Detector("single_signal_fixation", 2, "Single-signal fixation", single_signal_fixation),
    Detector("memory_echo_chamber", 3, "Memory echo chamber", memory_echo_chamber),
    Detector("compliance_shield", 4, "Compliance as a shield", compliance_shield),
    Detector("overconfidence", 5, "Overconfidence", overconfidence),
    Detector("frozen_parameters", 6, "Frozen parameters", frozen_parameters),
    Detector("paralysis_or_churn", 7, "Paralysis or churn", paralysis_or_churn),
)


def detect_loops(trajectory: Trajectory) -> list[dict[str, Any]]:
    """The seven findings, in the loops' order, each present whether it fired or not."""
    return [_finding(detector, trajectory) for detector in DETECTORS]


# --- the other dimensions --------------------------------------------------------------------


def performance(t: Trajectory) -> dict[str, Any]:
    """Dimension 1: what the strategy earned against the universe, and what it claimed against how it did."""
    decided, closed = _decided(t), _closed(t)
    wins = sum(p.won for p in closed)
    win_rate = _share(wins, len(closed))
    side_taking = [n for n in t.notes if not n.abstained and n.stance != 0]
    stated = _mean(p.conviction for p in closed)
    confidence = _mean(n.confidence for n in side_taking)
    strategy_return, benchmark = _return_pct(t), benchmark_return_pct(t.closes)
    return {
        "runs": len(t.runs),
        "rebalances": sum(run.decision == "rebalance" for run in decided),
        "holds": sum(run.decision == "hold" for run in decided),
        "theses": len(t.theses),
        "positions": len(t.positions),
        "closed": len(closed),
        "wins": wins,
        "losses": len(closed) - wins,
        "win_rate": win_rate,
        "realised_pnl": round(sum(p.pnl for p in closed), 2),
        "unrealised_pnl": round(sum(p.pnl for p in t.positions if not p.closed), 2),
        "costs": round(sum(p.costs for p in t.positions), 2),
        "capital": t.capital,
        "return_pct": strategy_return,
        "benchmark_return_pct": benchmark,
        "excess_return_pct": _difference(strategy_return, benchmark),
        "mean_conviction": stated,
        "conviction_gap": _difference(stated, win_rate if closed else None),
        "mean_note_confidence": confidence,
        "confidence_gap": _difference(confidence, win_rate if closed else None),
        "largest_position_pct": _largest_position_pct(t),
    }


def _difference(left: float | None, right: float | None) -> float | None:
    return None if left is None or right is None else _round(left - right)


def _largest_position_pct(t: Trajectory) -> float | None:
    """The largest position still open on the review's date, as a share of capital (%)."""
    open_now = [p.notional for p in t.positions if not p.closed]
    if not t.capital or not open_now:
        return 0.0 if t.capital else None
    return _round(max(open_now) / t.capital * 100)


def _limit_breaches(t: Trajectory, field_name: str, limit: float | None) -> list[ThesisFact]:
    if limit is None or not t.capital:
        return []
    capital = t.capital
    return [x for x in t.theses if x.risk_approved and getattr(x, field_name) / capital * 100 > limit + 1e-6]


def _max_concurrent(t: Trajectory) -> int:
    days = sorted({run.as_of for run in t.runs} | {p.opened_on for p in t.positions})
    return max((sum(p.open_on(day) for p in t.positions) for day in days), default=0)


def mandate_compliance(t: Trajectory) -> dict[str, Any]:
    """Dimension 3: what the strategy did that its mandate does not permit, with the ids."""
    universe = set(t.limits.universe)
    outside = [x for x in t.theses if x.symbol not in universe]
    permitted = t.limits.shorts_permitted
    shorts = [] if permitted else [x for x in t.theses if x.direction == "SHORT" and x.risk_approved]
    risk = _limit_breaches(t, "risk_amount", t.limits.risk_per_trade_pct)
    notional = _limit_breaches(t, "notional", t.limits.max_notional_pct)
    concurrent = _max_concurrent(t)
    too_many = int(t.limits.max_positions is not None and concurrent > t.limits.max_positions)
    return {
        "universe_size": len(universe),
        "risk_per_trade_pct": t.limits.risk_per_trade_pct,
        "max_notional_pct": t.limits.max_notional_pct,
        "max_positions": t.limits.max_positions,
        "allow_short": int(t.limits.allow_short),
        "long_only": int(t.limits.long_only),
        "outside_universe": len(outside),
        "excluded_direction": len(shorts),
        "risk_limit_breaches": len(risk),
        "notional_limit_breaches": len(notional),
        "max_concurrent_positions": concurrent,
        "position_limit_breached": too_many,
        "breaches": len(outside) + len(shorts) + len(risk) + len(notional) + too_many,
        "ids": {"theses": sorted({x.id for x in (*outside, *shorts, *risk, *notional)})},
    }


def unexplored(t: Trajectory, *, families_logged: Iterable[str] = ()) -> dict[str, Any]:
    """Dimension 5: what the mandate permits and the strategy never tried."""
    traded = {x.symbol for x in t.theses}
    used = families_cited(t) | {driver_family(t, d) for d in t.decisions} | set(families_logged)
    directions = [d for d in DIRECTIONS if d == "LONG" or t.limits.shorts_permitted]
    horizons = sorted({x.horizon for x in t.theses})
    never_traded = sorted(set(t.limits.universe) - traded)
    never_used = [family for family in FAMILIES if family not in used]
    never_tried = [d for d in directions if d not in {x.direction for x in t.theses}]
    return {
        "instruments_never_traded": never_traded,
        "instruments_never_traded_count": len(never_traded),
        "families_never_used": never_used,
        "families_never_used_count": len(never_used),
        "directions_permitted": directions,
        "directions_never_tried": never_tried,
        "horizons_tried": horizons,
        "horizons_never_tried": [h for h in CANDIDATE_HORIZONS if h not in horizons],
    }


def families_in_use(t: Trajectory) -> dict[str, int]:
    """How many decisions each family carried (the family of the note that backed the winner)."""
    counts = Counter(driver_family(t, d) for d in t.decisions)
    return {family: counts[family] for family in (*FAMILIES, UNATTRIBUTED) if counts.get(family)}


def is_number(value: object) -> TypeGuard[int | float]:
    """A finite int or float, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
