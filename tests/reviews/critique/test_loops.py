"""The seven loop detectors and the other dimensions over facts typed into the test. Pure; no
database: each detector fires past its threshold, stays quiet short of it or without enough
history, and quotes its figures as stored."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace

import pytest

from reviews.domain import loops
from reviews.domain.loops import (
    DETECTORS,
    DecisionFact,
    MandateLimits,
    MemoryFact,
    NoteFact,
    PositionFact,
    RunFact,
    ThesisFact,
    Trajectory,
    benchmark_return_pct,
    detect_loops,
    driver_family,
    mandate_compliance,
    performance,
    realised_volatility_pct,
    unexplored,
)

START = dt.date(2026, 1, 1)
LIMITS = MandateLimits(universe=("AAA", "BBB"), risk_per_trade_pct=1.0, max_notional_pct=20.0, max_positions=2)


def day(i: int) -> dt.date:
    return START + dt.timedelta(days=i)


def runs(n: int, decision: str = "rebalance") -> tuple[RunFact, ...]:
    return tuple(RunFact(100 + i, day(i), decision) for i in range(n))


def decision(i: int, *, winner: str = "LONG", memory_ids: tuple[int, ...] = ()) -> DecisionFact:
    return DecisionFact(i, 100 + i, day(i), "AAA", 500 + i, winner, 0.6, memory_ids)


def note(run_id: int, role: str, *, stance: float = 0.8, cited: tuple[str, ...] = (), verified: int = 0) -> NoteFact:
    return NoteFact(1000 + run_id * 10 + len(role), run_id, role, stance, 0.8, cited=cited, verified=verified)


def thesis(i: int, **changes) -> ThesisFact:
    base = ThesisFact(
        id=200 + i,
        run_id=i,
        as_of=day(i),
        symbol="AAA",
        direction="LONG",
        conviction=0.6,
        entry=100.0,
        stop=98.0,
        target=104.0,
        horizon=10,
        atr=1.0,
        risk_amount=200.0,
        notional=10_000.0,
    )
    return replace(base, **changes)


def position(i: int, pnl: float, *, conviction: float = 0.6, costs: float = 60.0, closed: bool = True) -> PositionFact:
    return PositionFact(
        id=300 + i,
        thesis_id=200 + i,
        symbol="AAA",
        direction="LONG",
        opened_on=day(i),
        closed_on=day(i + 1) if closed else None,
        pnl=pnl,
        costs=costs,
        notional=10_000.0,
        conviction=conviction,
    )


def trajectory(**fields) -> Trajectory:
    return Trajectory(as_of=day(60), limits=fields.pop("limits", LIMITS), **fields)


def finding(t: Trajectory, key: str) -> dict:
    return next(f for f in detect_loops(t) if f["detector"] == key)


# --- the findings' shape -------------------------------------------------------------------------


def test_every_detector_reports_in_loop_order_fired_or_not_and_json_able():
    found = detect_loops(trajectory())

    assert [f["detector"] for f in found] == [
        "narrative_as_quant",
        "single_signal_fixation",
        "memory_echo_chamber",
        "compliance_shield",
        "overconfidence",
        "frozen_parameters",
        "paralysis_or_churn",
    ]
    assert [f["loop"] for f in found] == [1, 2, 3, 4, 5, 6, 7]
    assert not any(f["fired"] for f in found)
    json.dumps(found)
    for f in found:
        assert set(f) == {"detector", "loop", "title", "fired", "score", "figures", "ids", "summary"}
        assert set(f["ids"]) == {"runs", "theses", "positions", "notes", "memories", "heuristics"}
        assert 0 <= f["score"] < 0.5
        assert all(loops.is_number(v) or v is None for v in f["figures"].values())


def test_the_detectors_are_the_seven_loops_of_the_design():
    assert len(DETECTORS) == 7 and len({d.key for d in DETECTORS}) == 7


# --- loop 1 --------------------------------------------------------------------------------------


def _narrative(theses: int, ics: int) -> Trajectory:
    return trajectory(
        theses=tuple(thesis(i) for i in range(theses)),
        notes=tuple(note(i, "news") for i in range(theses)),
        heuristics_by_run={0: ("H-3",)},
        ics_logged=ics,
    )


def test_narrative_fires_when_theses_come_with_no_ic_logged_and_names_the_story_notes():
    f = finding(_narrative(5, 0), "narrative_as_quant")

    assert f["fired"] and f["score"] == 1.0
    assert f["figures"] == {"theses": 5, "signal_ics_logged": 0, "narrative_share": 1.0}
    assert f["ids"]["theses"] == [200, 201, 202, 203, 204]
    assert len(f["ids"]["notes"]) == 5 and f["ids"]["heuristics"] == ["H-3"]
    assert (
        f["summary"]
        == "5 theses with 0 signal ICs logged; 1.0 of theses rest on a note that quoted no verified figure."
    )


def test_narrative_is_quiet_once_ics_are_logged_or_with_too_few_theses():
    assert not finding(_narrative(5, 3), "narrative_as_quant")["fired"]
    assert not finding(_narrative(4, 0), "narrative_as_quant")["fired"]


# --- loop 2 --------------------------------------------------------------------------------------


def _fixation(families: list[str]) -> Trajectory:
    role_of = {"news": ("news", ()), "trend": ("technical", ("sma_50",)), "momentum": ("technical", ("rsi_14",))}
    notes, decisions = [], []
    for i, family in enumerate(families):
        role, cited = role_of[family]
        notes += [note(i, role, cited=cited, verified=len(cited)), note(i, "sentiment", stance=0.1)]
        decisions.append(decision(i))
    return trajectory(runs=runs(len(families)), decisions=tuple(decisions), notes=tuple(notes))


def test_fixation_fires_when_one_family_carries_most_decisions_and_nothing_new_comes():
    t = _fixation(["trend"] * 2 + ["news"] * 1 + ["trend"] * 7)

    f = finding(t, "single_signal_fixation")

    assert f["fired"]
    assert f["figures"] == {
        "decisions": 10,
        "top_family_share": 0.9,
        "distinct_families": 2,
        "new_families_second_half": 0,
    }
    assert len(f["ids"]["runs"]) == 9 and len(f["ids"]["notes"]) == 9


def test_fixation_is_quiet_when_a_new_family_appears_late_or_no_family_dominates():
    assert not finding(_fixation(["trend"] * 8 + ["momentum"] * 2), "single_signal_fixation")["fired"]
    assert not finding(_fixation(["trend", "news", "momentum"] * 4), "single_signal_fixation")["fired"]
    assert not finding(_fixation(["trend"] * 7), "single_signal_fixation")["fired"]  # too few decisions


def test_the_driver_is_the_strongest_note_on_the_winning_side():
    t = trajectory(
        notes=(
            note(1, "news", stance=0.9),
            NoteFact(2, 1, "fundamental", -0.95, 0.9),  # opposed the winner: not the driver
            NoteFact(3, 1, "technical", 0.5, 0.9, cited=("rsi_14", "macd_hist", "sma_50")),
            NoteFact(4, 1, "sentiment", 1.0, 1.0, abstained=True),
        )
    )
    assert driver_family(t, decision(1)) == "news"
    assert driver_family(t, decision(1, winner="SHORT")) == "fundamentals"
    only_technical = replace(t, notes=(t.notes[2],))
    assert driver_family(only_technical, decision(1)) == "momentum"  # two momentum fields cited, one trend
    assert driver_family(trajectory(), decision(1)) == "unattributed"


# --- loop 3 --------------------------------------------------------------------------------------


def _echo(recalled: list[int], memories: dict[int, MemoryFact]) -> Trajectory:
    decisions = tuple(decision(i, memory_ids=(m,)) for i, m in enumerate(recalled))
    return trajectory(decisions=decisions, memories=memories, losing_lessons_available=4)


WIN_LONG, LOSS_LONG, WIN_SHORT, UNTAGGED = (
    MemoryFact(1, "LONG", "win"),
    MemoryFact(2, "LONG", "loss"),
    MemoryFact(3, "SHORT", "win"),
    MemoryFact(4),
)
MEMORIES = {m.id: m for m in (WIN_LONG, LOSS_LONG, WIN_SHORT, UNTAGGED)}


def test_echo_fires_when_recalled_lessons_all_agree_and_losses_never_surface():
    f = finding(_echo([1] * 10 + [4] * 5, MEMORIES), "memory_echo_chamber")

    assert f["fired"]
    assert f["figures"] == {
        "recalls": 10,  # the untagged lesson counts for neither side
        "agreeing_share": 1.0,
        "losing_recalled": 0,
        "losing_share": 0.0,
        "losing_lessons_available": 4,
    }
    assert f["ids"]["memories"] == [1]


def test_a_won_trade_on_the_other_side_is_a_dissenting_lesson():
    f = finding(_echo([1] * 8 + [3] * 2, MEMORIES), "memory_echo_chamber")
    assert f["figures"]["agreeing_share"] == 0.8 and f["fired"]  # at the threshold
    assert not finding(_echo([1] * 7 + [3] * 3, MEMORIES), "memory_echo_chamber")["fired"]


def test_echo_is_quiet_when_losing_lessons_are_recalled_or_recalls_are_few():
    assert not finding(_echo([1] * 9 + [2] * 1, MEMORIES), "memory_echo_chamber")["fired"]
    assert not finding(_echo([1] * 9, MEMORIES), "memory_echo_chamber")["fired"]


# --- loop 4 --------------------------------------------------------------------------------------


def _closes(first: float, last: float, n: int = 21) -> list[tuple[dt.date, float]]:
    return [(day(i), first + (last - first) * i / (n - 1)) for i in range(n)]


def _shield(pnl: float, benchmark_last: float, **fields) -> Trajectory:
    return trajectory(
        runs=runs(20),
        positions=(position(0, pnl),),
        closes={"AAA": _closes(100, benchmark_last), "BBB": _closes(50, 50 * benchmark_last / 100)},
        capital=1_000_000.0,
        **fields,
    )


def test_the_benchmark_is_the_equal_weight_buy_and_hold_of_the_universe():
    assert benchmark_return_pct({"AAA": _closes(100, 110), "BBB": _closes(50, 47.5)}) == 2.5
    assert benchmark_return_pct({"AAA": [(day(0), 100.0)]}) is None


def test_shield_fires_within_the_mandate_when_the_strategy_trails_the_benchmark():
    f = finding(_shield(20_000, 110), "compliance_shield")

    assert f["fired"]
    assert f["figures"] == {
        "runs": 20,
        "return_pct": 2.0,
        "benchmark_return_pct": 10.0,
        "excess_return_pct": -8.0,
        "mandate_breaches": 0,
    }
    assert "2.0% against 10.0%" in f["summary"] and "-8.0 points" in f["summary"]


def test_shield_is_quiet_when_the_strategy_beats_the_benchmark_breaks_the_mandate_or_is_young():
    assert not finding(_shield(120_000, 110), "compliance_shield")["fired"]
    outside = (thesis(0, symbol="ZZZ"),)
    assert not finding(_shield(20_000, 110, theses=outside), "compliance_shield")["fired"]
    young = replace(_shield(20_000, 110), runs=runs(19))
    assert not finding(young, "compliance_shield")["fired"]
    assert not finding(replace(_shield(20_000, 110), capital=None), "compliance_shield")["fired"]


# --- loop 5 --------------------------------------------------------------------------------------


def _confident(wins: int, losses: int, conviction: float) -> Trajectory:
    results = [1000.0] * wins + [-500.0] * losses
    return trajectory(positions=tuple(position(i, pnl, conviction=conviction) for i, pnl in enumerate(results)))


def test_overconfidence_fires_when_stated_conviction_tops_the_win_rate_by_the_gap():
    f = finding(_confident(4, 6, 0.55), "overconfidence")

    assert f["fired"]
    assert f["figures"] == {"closed": 10, "win_rate": 0.4, "mean_conviction": 0.55, "conviction_gap": 0.15}
    assert f["summary"] == (
        "10 closed positions won 0.4 of the time against a mean stated conviction of 0.55: a gap of 0.15."
    )


def test_overconfidence_is_quiet_under_the_gap_with_open_positions_or_too_few_closed():
    assert not finding(_confident(4, 6, 0.54), "overconfidence")["fired"]
    assert not finding(_confident(2, 5, 0.9), "overconfidence")["fired"]
    opened = trajectory(positions=tuple(position(i, -10.0, conviction=0.9, closed=False) for i in range(10)))
    assert not finding(opened, "overconfidence")["fired"]


# --- loop 6 --------------------------------------------------------------------------------------


def _zigzag(amplitudes: list[float]) -> list[tuple[dt.date, float]]:
    return [(day(i), 100 * (1 + a / 100 * (i % 2))) for i, a in enumerate(amplitudes)]


def _frozen(late_amplitude: float, late_thesis: dict | None = None) -> Trajectory:
    amplitudes = [1.0] * 10 + [late_amplitude] * 10
    theses = [thesis(i) for i in (1, 3, 5)] + [thesis(i, **(late_thesis or {})) for i in (11, 13, 15)]
    return trajectory(runs=runs(20), theses=tuple(theses), closes={"AAA": _zigzag(amplitudes)})


def test_realised_volatility_is_the_spread_of_daily_returns():
    assert realised_volatility_pct({"AAA": [(day(i), 100.0) for i in range(5)]}) == 0.0
    assert realised_volatility_pct({"AAA": [(day(0), 100.0), (day(1), 101.0)]}) is None


def test_frozen_fires_when_volatility_changes_regime_and_the_geometry_does_not():
    f = finding(_frozen(3.0), "frozen_parameters")

    assert f["fired"]
    assert f["figures"]["volatility_change"] > 0.5
    assert f["figures"]["r_multiple"] == 2.0 and f["figures"]["atr_multiple"] == 2.0
    assert f["figures"]["horizon_sessions"] == 10 and f["figures"]["geometry_changed"] == 0
    assert "2.0R targets, stops at 2.0 ATR and 10-session horizons" in f["summary"]
    assert f["ids"]["theses"] == [201, 203, 205, 211, 213, 215]


def test_frozen_is_quiet_when_the_geometry_moved_or_volatility_stayed():
    assert not finding(_frozen(1.2), "frozen_parameters")["fired"]
    assert not finding(_frozen(3.0, {"horizon": 20}), "frozen_parameters")["fired"]
    wider = finding(_frozen(3.0, {"stop": 97.0, "target": 106.0, "atr": 1.0}), "frozen_parameters")
    assert not wider["fired"] and wider["figures"]["geometry_changed"] == 1


# --- loop 7 --------------------------------------------------------------------------------------


def test_paralysis_fires_when_nearly_every_run_holds_and_the_book_made_nothing():
    held = (*runs(19, "hold"), RunFact(999, day(30), "rebalance"))
    f = finding(trajectory(runs=held, positions=(position(0, -100.0),)), "paralysis_or_churn")

    assert f["fired"]
    assert f["figures"]["hold_share"] == 0.95 and f["figures"]["paralysis"] == 1 and f["figures"]["churn"] == 0


def test_holding_with_progress_or_too_few_runs_is_not_paralysis():
    held = (*runs(19, "hold"), RunFact(999, day(30), "rebalance"))
    assert not finding(trajectory(runs=held, positions=(position(0, 500.0),)), "paralysis_or_churn")["fired"]
    assert not finding(trajectory(runs=runs(19, "hold")), "paralysis_or_churn")["fired"]
    pending = (*runs(19, "hold"), RunFact(999, day(30), "pending"))
    assert finding(trajectory(runs=pending), "paralysis_or_churn")["figures"]["decided_runs"] == 19


def test_runs_held_by_a_directive_are_not_the_strategys_own_paralysis():
    # A directive's gate held every run: counting those as the strategy's HOLDs would make the unmet
    # directive look like paralysis, and escalate itself at every later critique.
    gated = tuple(RunFact(run.id, run.as_of, "hold", gated=True) for run in runs(19, "hold"))
    f = finding(
        trajectory(runs=(*gated, RunFact(999, day(30), "rebalance")), positions=(position(0, -100.0),)),
        "paralysis_or_churn",
    )

    assert not f["fired"]
    assert f["figures"]["gated_runs"] == 19 and f["figures"]["decided_runs"] == 1


def test_churn_fires_when_costs_eat_half_the_gross_gains():
    f = finding(trajectory(positions=tuple(position(i, 100.0, costs=300.0) for i in range(8))), "paralysis_or_churn")

    assert f["fired"]
    assert f["figures"]["cost_share"] == 0.75 and f["figures"]["churn"] == 1
    assert f["figures"]["costs"] == 2400.0 and f["figures"]["gross_pnl"] == 3200.0
    assert len(f["ids"]["positions"]) == 8


def test_a_book_that_lost_before_its_costs_is_not_churn():
    # Costs cannot eat a gain that was never made: the loss is the signal's, reported elsewhere.
    losing = trajectory(positions=tuple(position(i, -400.0, costs=100.0) for i in range(8)))
    f = finding(losing, "paralysis_or_churn")

    assert not f["fired"] and f["figures"]["churn"] == 0
    assert f["figures"]["cost_share"] is None and f["figures"]["gross_pnl"] == -2400.0
    assert "no gain to eat" in f["summary"]


def test_cheap_trading_is_not_churn():
    cheap = trajectory(positions=tuple(position(i, 940.0, costs=60.0) for i in range(8)))
    assert not finding(cheap, "paralysis_or_churn")["fired"]


# --- the other dimensions ------------------------------------------------------------------------


def test_performance_sets_stated_conviction_and_confidence_against_the_win_rate():
    t = trajectory(
        runs=runs(3, "hold") + runs(1),
        positions=(position(0, 1000.0), position(1, -500.0), position(2, 250.0, closed=False)),
        notes=(note(1, "news"), note(2, "technical", stance=0.0)),
        capital=100_000.0,
    )

    p = performance(t)

    assert (p["closed"], p["wins"], p["losses"], p["win_rate"]) == (2, 1, 1, 0.5)
    assert p["realised_pnl"] == 500.0 and p["unrealised_pnl"] == 250.0
    assert p["return_pct"] == 0.75
    assert p["mean_conviction"] == 0.6 and p["conviction_gap"] == 0.1
    assert p["mean_note_confidence"] == 0.8 and p["confidence_gap"] == 0.3
    assert p["largest_position_pct"] == 10.0


def test_mandate_compliance_counts_what_the_mandate_does_not_permit():
    t = trajectory(
        theses=(
            thesis(0, symbol="ZZZ"),
            thesis(1, direction="SHORT"),
            thesis(2, risk_amount=20_000.0),
            thesis(3, notional=300_000.0),
            thesis(4),
        ),
        positions=tuple(position(i, 0.0, closed=False) for i in range(3)),
        runs=runs(5),
        capital=1_000_000.0,
    )

    m = mandate_compliance(t)

    assert (m["outside_universe"], m["excluded_direction"]) == (1, 1)
    assert (m["risk_limit_breaches"], m["notional_limit_breaches"]) == (1, 1)
    assert m["max_concurrent_positions"] == 3 and m["position_limit_breached"] == 1
    assert m["breaches"] == 5
    assert m["ids"]["theses"] == [200, 201, 202, 203]


def test_a_short_is_allowed_only_when_the_account_can_and_the_mandate_does_not_say_long_only():
    shorting = trajectory(theses=(thesis(1, direction="SHORT"),), limits=replace(LIMITS, allow_short=True))
    assert mandate_compliance(shorting)["excluded_direction"] == 0
    long_only = replace(shorting, limits=replace(LIMITS, allow_short=True, long_only=True))
    assert mandate_compliance(long_only)["excluded_direction"] == 1


@pytest.mark.parametrize("allow_short", [False, True])
def test_unexplored_names_instruments_families_directions_and_horizons_never_tried(allow_short):
    t = trajectory(
        theses=(thesis(0),),
        decisions=(decision(0),),
        notes=(note(0, "news"),),
        limits=replace(LIMITS, allow_short=allow_short),
    )

    u = unexplored(t, families_logged=["trend"])

    assert u["instruments_never_traded"] == ["BBB"]
    assert "news" not in u["families_never_used"] and "trend" not in u["families_never_used"]
    assert "fundamentals" in u["families_never_used"]
    assert u["directions_never_tried"] == (["SHORT"] if allow_short else [])
    assert u["horizons_tried"] == [10] and u["horizons_never_tried"] == [5, 20]
