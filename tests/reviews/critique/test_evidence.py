"""The evidence pack from stored rows: each of the seven loops planted in a synthetic trajectory
fires its detector, a clean trajectory fires none, nothing after ``as_of`` is read, and the pack
reads a fixed number of queries however long the trajectory."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from agents.models import Heuristic
from reviews.critique.evidence import evidence_forget, evidence_pack, flat_figures
from reviews.critique.signal_ics import bundles_forget, signal_ics_log
from reviews.domain.loops import DETECTORS
from reviews.models import SignalIC
from tests.factories.critique import strategy_trajectory
from trading.models import AuditEvent, DailyBar, DebateRecord, FeatureSnapshot, PipelineRun, Position, StrategyRun

pytestmark = pytest.mark.django_db

PLANTED = {
    "narrative": "narrative_as_quant",
    "fixation": "single_signal_fixation",
    "echo": "memory_echo_chamber",
    "shield": "compliance_shield",
    "overconfident": "overconfidence",
    "frozen": "frozen_parameters",
    "paralysis": "paralysis_or_churn",
    "churn": "paralysis_or_churn",
}


def _findings(pack: dict) -> dict[str, dict]:
    return {finding["detector"]: finding for finding in pack["loops"]}


def test_a_clean_trajectory_fires_none_of_the_seven_detectors():
    built = strategy_trajectory()

    pack = evidence_pack(built.strategy, as_of=built.as_of, is_replay=False)

    findings = _findings(pack)
    assert list(findings) == [detector.key for detector in DETECTORS]
    assert {key: f["fired"] for key, f in findings.items()} == {key: False for key in findings}
    assert all(f["score"] < 0.5 for f in findings.values())


@pytest.mark.parametrize(("knob", "detector"), sorted(PLANTED.items()))
def test_each_planted_loop_fires_its_detector(knob, detector):
    built = strategy_trajectory(**{knob: True})

    pack = evidence_pack(built.strategy, as_of=built.as_of, is_replay=False)

    finding = _findings(pack)[detector]
    assert finding["fired"], finding["summary"]
    assert finding["score"] >= 0.5
    assert any(finding["ids"][kind] for kind in ("runs", "theses", "positions", "memories"))
    assert set(finding["ids"]) == {"runs", "theses", "positions", "notes", "memories", "heuristics"}


def test_a_planted_loop_names_its_figures_and_ids_from_the_pack():
    built = strategy_trajectory(overconfident=True)

    pack = evidence_pack(built.strategy, as_of=built.as_of, is_replay=False)

    finding = _findings(pack)["overconfidence"]
    assert finding["figures"] == {"closed": 10, "win_rate": 0.3, "mean_conviction": 0.85, "conviction_gap": 0.55}
    assert pack["figures"]["loops.overconfidence.figures.conviction_gap"] == 0.55
    assert "0.3" in finding["summary"] and "0.55" in finding["summary"]
    assert set(finding["ids"]["positions"]) == {p.pk for p in built.positions}
    assert set(finding["ids"]["positions"]) <= set(pack["ids"]["positions"])
    assert set(finding["ids"]["theses"]) <= set(pack["ids"]["theses"])


def test_the_pack_holds_the_five_dimensions_every_id_and_a_flat_map_of_its_numbers():
    built = strategy_trajectory()

    pack = evidence_pack(built.strategy, as_of=built.as_of, is_replay=False)

    json.dumps(pack)  # JSON-able as it is
    expected = {"strategy", "window", "performance", "signals", "mandate", "loops", "unexplored", "ids", "figures"}
    assert set(pack) == expected
    assert pack["strategy"]["universe"] == sorted(i.symbol for i in built.universe)
    assert pack["window"]["runs_read"] == 30
    assert pack["ids"]["strategy_runs"] == sorted(r.pk for r in built.strategy_runs)
    assert pack["ids"]["runs"] == sorted(r.pk for r in built.pipeline_runs)
    assert pack["ids"]["theses"] == sorted(t.pk for t in built.theses)
    assert pack["ids"]["memories"] == sorted(m.pk for m in built.memories)
    assert pack["ids"]["heuristics"] == ["H-1"]
    assert len(pack["ids"]["notes"]) == 120 and len(pack["ids"]["debates"]) == 30
    assert pack["performance"]["win_rate"] == 0.6 and pack["performance"]["closed"] == 10
    assert pack["performance"]["mean_conviction"] == 0.6
    assert pack["signals"]["ic_floor"] == 0.03
    assert pack["signals"]["logged"]["rows"] == 3
    assert pack["signals"]["distinct_families"] == 5
    assert {row["signal"] for row in pack["signals"]["ics"]} >= {"rsi_14", "atr_pct", "news_sentiment"}
    assert pack["mandate"]["breaches"] == 0
    assert pack["unexplored"]["directions_never_tried"] == []  # the account allows no short
    assert pack["figures"] == flat_figures({k: v for k, v in pack.items() if k != "figures"})
    assert pack["figures"]["performance.win_rate"] == 0.6
    assert not any(name.startswith("ids.") or ".ids." in name for name in pack["figures"])


def test_nothing_after_as_of_changes_the_pack():
    built = strategy_trajectory()
    as_of = built.days[19]
    before = evidence_pack(built.strategy, as_of=as_of, is_replay=False)

    # The future: crazy bars, positions closed differently, more runs.
    DailyBar.objects.filter(date__gt=as_of).update(close=1, low=1, open=1, high=1)
    Position.objects.filter(closed_on__gt=as_of).update(realised_pnl=-99999)
    StrategyRun.objects.filter(as_of__gt=as_of).update(decision=StrategyRun.Decision.REBALANCE)

    assert evidence_pack(built.strategy, as_of=as_of, is_replay=False) == before
    assert before["window"]["last"] == as_of.isoformat()
    assert before["window"]["runs_read"] == 20


def test_a_position_closed_after_as_of_is_open_in_the_pack_at_its_last_mark():
    built = strategy_trajectory()
    position = built.positions[-1]  # opened the day after its thesis, closed the day after that

    pack = evidence_pack(built.strategy, as_of=position.opened_on, is_replay=False)

    assert pack["performance"]["closed"] == len(built.positions) - 1
    assert pack["performance"]["positions"] == len(built.positions)


def test_a_replay_pack_reads_only_the_replay_rows():
    built = strategy_trajectory(is_replay=True)

    live = evidence_pack(built.strategy, as_of=built.as_of, is_replay=False)
    replay = evidence_pack(built.strategy, as_of=built.as_of, is_replay=True)

    assert live["window"]["runs_read"] == 0 and live["ids"]["runs"] == []
    assert replay["window"]["runs_read"] == 30


def _queries(runs: int) -> int:
    built = strategy_trajectory(runs=runs)
    with CaptureQueriesContext(connection) as captured:
        evidence_pack(built.strategy, as_of=built.as_of, is_replay=False)
    return len(captured.captured_queries)


def test_the_pack_reads_the_same_number_of_queries_for_12_runs_as_for_30():
    assert _queries(12) == _queries(30)


def test_the_lookback_bounds_the_runs_read(settings):
    settings.CRITIQUE = {**settings.CRITIQUE, "LOOKBACK_RUNS": 12}
    built = strategy_trajectory()

    pack = evidence_pack(built.strategy, as_of=built.as_of, is_replay=False)

    assert pack["window"]["runs_read"] == 12
    assert pack["window"]["first"] == built.days[-12].isoformat()


def _afresh(built, as_of) -> dict:
    """The pack as a process that has kept nothing of the strategy's runs reads it."""
    evidence_forget(built.strategy)
    return evidence_pack(built.strategy, as_of=as_of, is_replay=True)


def test_a_pack_that_reuses_the_last_packs_runs_equals_one_read_afresh(monkeypatch):
    from reviews.critique import evidence

    built = strategy_trajectory(is_replay=True, echo=True)
    days = [built.days[9], built.days[19], built.as_of]
    read: list[list[int]] = []
    read_parts = evidence._read_parts
    monkeypatch.setattr(evidence, "_read_parts", lambda runs: read.append([r.id for r in runs]) or read_parts(runs))

    evidence_forget(built.strategy)
    carried = [evidence_pack(built.strategy, as_of=day, is_replay=True) for day in days]
    runs = [run.pk for run in built.pipeline_runs]  # one a day
    assert read == [runs[:10], runs[10:20], runs[20:30]]  # each pack read only the runs new since the last
    assert carried == [_afresh(built, day) for day in days]

    # A review demotes the cited heuristic between two critiques: a status is read for each pack.
    Heuristic.objects.filter(code="H-1").update(status="demoted")
    demoted = evidence_pack(built.strategy, as_of=built.as_of, is_replay=True)
    assert demoted == _afresh(built, built.as_of)
    assert demoted["signals"]["demoted_cited"] == ["H-1"] and carried[-1]["signals"]["demoted_cited"] == []


def test_a_run_retried_since_the_last_pack_is_read_again():
    built = strategy_trajectory(is_replay=True)
    before = evidence_pack(built.strategy, as_of=built.as_of, is_replay=True)
    run = built.pipeline_runs[-3]
    assert run.pk in before["ids"]["runs"] and before["ids"]["debates"]

    # The run goes round again: a new attempt, whose debate is not written yet, then is.
    DebateRecord.objects.filter(run=run).delete()
    PipelineRun.objects.filter(pk=run.pk).update(status=PipelineRun.Status.RUNNING, attempts=F("attempts") + 1)
    while_running = evidence_pack(built.strategy, as_of=built.as_of, is_replay=True)
    assert while_running == _afresh(built, built.as_of)
    DebateRecord.objects.create(
        run=run,
        winner="bull",
        conviction="0.61",
        proposed_conviction="0.7",
        opposing=1,
        side_taking=3,
        opposing_share="0.33",
    )
    debated = evidence_pack(built.strategy, as_of=built.as_of, is_replay=True)
    PipelineRun.objects.filter(pk=run.pk).update(status=PipelineRun.Status.COMPLETED)
    finished = evidence_pack(built.strategy, as_of=built.as_of, is_replay=True)

    assert len(while_running["ids"]["debates"]) == len(before["ids"]["debates"]) - 1
    # Still running, with the same mark: a run that has not finished is never kept, so it is read again.
    assert len(debated["ids"]["debates"]) == len(before["ids"]["debates"])
    assert finished == debated == _afresh(built, built.as_of)


# --- the rank-IC log ---------------------------------------------------------------------------


def test_signal_ics_log_upserts_one_row_per_measured_signal_and_audits_it():
    built = strategy_trajectory(narrative=True)

    first = signal_ics_log(built.strategy, as_of=built.as_of, is_replay=False)
    again = signal_ics_log(built.strategy, as_of=built.as_of, is_replay=False)

    assert [row.pk for row in again] == [row.pk for row in first]
    assert SignalIC.objects.filter(strategy=built.strategy, as_of=built.as_of).count() == len(first)
    families = {row.family for row in first}
    assert {"trend", "momentum", "mean_reversion", "volatility", "volume", "news", "fundamentals"} <= families
    assert all(row.horizon_sessions == 10 for row in first)
    assert all(row.ic is None or -1 <= row.ic <= 1 for row in first)
    assert any(row.ic is not None for row in first)
    assert AuditEvent.objects.filter(action="signal_ics_logged").count() == 2


def test_signal_ics_log_reads_nothing_after_as_of():
    built = strategy_trajectory(narrative=True)
    as_of = built.days[20]
    before = {(r.signal, r.ic, r.observations) for r in signal_ics_log(built.strategy, as_of=as_of, is_replay=False)}

    DailyBar.objects.filter(date__gt=as_of).update(close=1, low=1, open=1, high=1)
    after = {(r.signal, r.ic, r.observations) for r in signal_ics_log(built.strategy, as_of=as_of, is_replay=False)}

    assert after == before


def test_logging_ics_quiets_the_narrative_detector():
    built = strategy_trajectory(narrative=True)
    assert _findings(evidence_pack(built.strategy, as_of=built.as_of, is_replay=False))["narrative_as_quant"]["fired"]

    signal_ics_log(built.strategy, as_of=built.as_of, is_replay=False)

    pack = evidence_pack(built.strategy, as_of=built.as_of, is_replay=False)
    assert not _findings(pack)["narrative_as_quant"]["fired"]
    assert pack["signals"]["logged"]["rows"] > 0


def test_a_strategy_without_runs_gets_a_quiet_pack_and_writes_nothing():
    from tests.factories.market import InstrumentFactory, trending
    from trading.models import Account, Strategy

    strategy = Strategy.objects.create(name="newborn", philosophy="Anything liquid.")
    strategy.universe.set([InstrumentFactory(bars=trending(100, 30, "0.2"))])
    accounts = Account.objects.count()

    pack = evidence_pack(strategy, as_of=DailyBar.objects.latest("date").date, is_replay=False)

    json.dumps(pack)
    assert pack["window"]["runs_read"] == 0 and pack["window"]["first"] is None
    assert not any(finding["fired"] for finding in pack["loops"])
    assert pack["performance"]["win_rate"] == 0.0 and pack["performance"]["closed"] == 0
    assert Account.objects.count() == accounts  # read only: no account made for it
    assert pack["unexplored"]["instruments_never_traded_count"] == 1


def test_an_attached_research_signal_gets_its_rank_ic_beside_the_desks_own():
    """A research signal a person attached reaches each run's context (its reading as of the run's
    day); the rank-IC check measures it like the desk's own signals, in a family of its own."""
    from reviews.critique.signal_ics import strategy_horizon, strategy_rank_ics
    from trading.models import StageRun

    built = strategy_trajectory(runs=30)
    as_of = built.days[-1]
    horizon = strategy_horizon(built.strategy, as_of=as_of, is_replay=False)
    closes = {
        (symbol, day): float(close)
        for symbol, day, close in DailyBar.objects.filter(instrument__in=built.universe).values_list(
            "instrument__symbol", "date", "close"
        )
    }
    days = sorted({day for _, day in closes})
    for context in StageRun.objects.filter(stage="context", run__in=built.pipeline_runs).select_related(
        "run__instrument"
    ):
        symbol, day = context.run.instrument.symbol, context.run.as_of
        later = days[days.index(day) + horizon] if days.index(day) + horizon < len(days) else None
        # A signal that knew the future: long before a rise, short before a fall.
        position = 0 if later is None else (1 if closes[(symbol, later)] > closes[(symbol, day)] else -1)
        entry = {"name": "sma_crossover(fast=10, slow=50)", "reading": {"position": position}}
        context.output = {**context.output, "research_signals": [entry]}
        context.save(update_fields=["output"])

    window = strategy_rank_ics(built.strategy, as_of=as_of, is_replay=False)

    [research] = [result for result in window.results if result.family == "research"]
    assert research.signal == "research:sma_crossover(fast=10, slow=50)"
    assert research.observations >= 8 and research.ic is not None and research.ic > 0.5
    logged = {row.signal: row for row in signal_ics_log(built.strategy, as_of=as_of, is_replay=False)}
    assert logged[research.signal].family == "research" and logged[research.signal].ic == research.ic


def test_each_thesis_carries_the_atr_of_the_bundle_its_run_was_shown():
    from reviews.critique.evidence import load_trajectory

    built = strategy_trajectory()

    theses = load_trajectory(built.strategy, as_of=built.as_of, is_replay=False).trajectory.theses

    shown = {
        run.pk: run.feature_snapshot.bundle["technical"]["atr_14"]
        for run in built.pipeline_runs
        if run.feature_snapshot is not None
    }
    assert theses and all(isinstance(fact.atr, float) for fact in theses)
    assert {fact.run_id: fact.atr for fact in theses} == {fact.run_id: shown[fact.run_id] for fact in theses}
    assert len(set(shown.values())) > 1  # the figures differ run to run: a constant would not pass


def test_a_critique_computes_its_rank_ic_window_once_for_its_evidence_and_its_action_checks():
    from reviews.critique.signal_ics import ic_windows_kept, strategy_rank_ics

    built = strategy_trajectory(narrative=True)
    with CaptureQueriesContext(connection) as alone:
        first = strategy_rank_ics(built.strategy, as_of=built.as_of, is_replay=False)
    assert len(alone.captured_queries) > 0

    with ic_windows_kept():
        kept = strategy_rank_ics(built.strategy, as_of=built.as_of, is_replay=False)
        bundles_forget(built.strategy)  # what one window's bundles keep for the next is not this test's
        with CaptureQueriesContext(connection) as again:
            asked_again = strategy_rank_ics(built.strategy, as_of=built.as_of, is_replay=False)
            other_day = strategy_rank_ics(built.strategy, as_of=built.days[20], is_replay=False)

    assert asked_again is kept and kept == first
    assert len(again.captured_queries) == len(alone.captured_queries)  # only the other day's window was read
    assert other_day != kept
    bundles_forget(built.strategy)
    with CaptureQueriesContext(connection) as outside:
        strategy_rank_ics(built.strategy, as_of=built.as_of, is_replay=False)
    assert len(outside.captured_queries) == len(alone.captured_queries)  # outside a critique: read afresh


def test_an_ic_window_that_reuses_the_last_windows_bundles_equals_one_read_afresh(monkeypatch):
    from reviews.critique import signal_ics

    built = strategy_trajectory(narrative=True)
    read: list[int] = []
    bundle_parts = signal_ics._bundle_parts
    monkeypatch.setattr(signal_ics, "_bundle_parts", lambda ids: read.append(len(ids)) or bundle_parts(ids))

    def afresh(as_of):
        bundles_forget(built.strategy)
        return signal_ics.strategy_rank_ics(built.strategy, as_of=as_of, is_replay=False)

    bundles_forget(built.strategy)
    earlier = signal_ics.strategy_rank_ics(built.strategy, as_of=built.days[19], is_replay=False)
    later = signal_ics.strategy_rank_ics(built.strategy, as_of=built.as_of, is_replay=False)
    assert read == [20, 10]  # a bundle a day; the later window read only the ten days after the earlier one
    assert (earlier, later) == (afresh(built.days[19]), afresh(built.as_of))

    # A day's bundle recomputed after the window read it: a new row, and the window takes it.
    shown = built.pipeline_runs[5].feature_snapshot  # a day with a forward return in the window
    bundle = {**shown.bundle, "technical": {**shown.bundle["technical"], "rsi_14": 99.0}}
    FeatureSnapshot.objects.create(instrument=shown.instrument, as_of=shown.as_of, bundle=bundle, digest="f" * 64)
    recomputed = signal_ics.strategy_rank_ics(built.strategy, as_of=built.as_of, is_replay=False)
    assert read[-1] == 1
    assert recomputed == afresh(built.as_of) and recomputed != later
