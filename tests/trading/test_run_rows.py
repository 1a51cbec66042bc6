"""A run leaves rows that can be queried across runs: one note row per analyst, one debate row, a
link to the day's FeatureSnapshot, and a snapshot of what it used. Written with the stage that
produced them, once however often the run is delivered; the numbers in them are code's (the
calibrated conviction, the citation check), never a model's claim."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from django.urls import reverse

from agents.domain.llm import ModelRequest
from tests.agents.roles.builders import FakeClient, choose
from tests.conftest import make_bars
from trading.market.domain.news import content_hash
from trading.models import (
    Account,
    AnalystNoteRecord,
    DebateRecord,
    FeatureSnapshot,
    Instrument,
    NewsItem,
    PipelineRun,
    Strategy,
    StrategyRun,
)
from trading.pipeline.domain.conviction import haircut_conviction
from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute
from trading.pipeline.outputs import RunSnapshot
from trading.pipeline.presenters import run_outputs

IST = dt.timezone(dt.timedelta(hours=5, minutes=30))
ROLES = {"news", "sentiment", "technical", "fundamental"}


def _run(instrument: Instrument, *, as_of: dt.date | None = None, **execute: Any) -> PipelineRun:
    run = pipeline_run_create(
        instrument=instrument, as_of=as_of or instrument.bars.latest("date").date, provider="offline"
    )
    pipeline_run_execute(run.pk, **execute)
    run.refresh_from_db()
    return run


def _unit(value: float) -> Decimal:
    return Decimal(str(value)).quantize(Decimal("0.0001"))


def _counts() -> tuple[int, int, int]:
    return AnalystNoteRecord.objects.count(), DebateRecord.objects.count(), FeatureSnapshot.objects.count()


def test_a_run_writes_a_row_per_note_a_debate_row_and_links_its_features(instrument_with_bars, roomy_account):
    run = _run(instrument_with_bars)

    outputs = run_outputs(run)
    notes = {record.role: record for record in run.note_records.all()}
    assert set(notes) == ROLES == set(outputs.analysts.notes)
    for role, note in outputs.analysts.notes.items():
        record = notes[role]
        assert (record.stance, record.confidence) == (_unit(note.stance), _unit(note.confidence))
        assert (record.abstained, record.summary, record.evidence) == (note.abstained, note.summary, note.evidence)
        assert record.model_used == note.model_used
        check = outputs.analysts.citations[role]
        assert record.citation_mismatches == check.mismatches == 0
        assert record.citations_verified == len(check.citations) == len(record.citations)
    assert notes["fundamental"].abstained and notes["technical"].citations_verified >= 10

    debate = run.debate_record
    assert debate.winner == outputs.debate.result.winner
    assert debate.conviction == _unit(outputs.debate.calibration.conviction)
    assert debate.rationale == outputs.debate.result.manager_rationale

    assert run.feature_snapshot.bundle == outputs.features.bundle.model_dump(mode="json")
    assert (run.feature_snapshot.instrument_id, run.feature_snapshot.as_of) == (run.instrument_id, run.as_of)


def test_a_run_keeps_a_snapshot_of_what_it_used_that_later_changes_do_not_touch(instrument_with_bars, roomy_account):
    strategy = Strategy.objects.create(name="swing", philosophy="Trend swings on large caps.", max_positions=2)
    strategy.universe.set([instrument_with_bars])
    as_of = instrument_with_bars.bars.latest("date").date
    run = pipeline_run_create(instrument=instrument_with_bars, as_of=as_of, provider="offline")
    strategy_run = StrategyRun.objects.create(strategy=strategy, as_of=as_of)
    PipelineRun.objects.filter(pk=run.pk).update(strategy_run=strategy_run)

    account = Account.objects.get(pk=roomy_account.pk)
    pipeline_run_execute(run.pk, stop_after="analysts")  # the first attempt stops here
    run.refresh_from_db()
    first = RunSnapshot.model_validate(run.used)
    Account.objects.filter(pk=roomy_account.pk).update(risk_per_trade_pct=Decimal("0.25"))
    Strategy.objects.filter(pk=strategy.pk).update(philosophy="Something else entirely.", max_positions=9)
    pipeline_run_execute(run.pk)  # the second attempt resumes under the new settings
    run.refresh_from_db()

    assert run.status == PipelineRun.Status.COMPLETED and run.attempts == 2
    assert RunSnapshot.model_validate(run.used) == first
    assert first.account == account.name and first.currency == "INR"
    assert (first.strategy, first.mandate) == ("swing", "Trend swings on large caps.")
    assert first.risk_limits["max_positions"] == "2"  # the strategy's, over the account's
    assert first.risk_limits["risk_per_trade_pct"] == str(account.risk_per_trade_pct)
    assert first.risk_limits["allow_short"] is account.allow_short
    assert (first.provider, first.models) == ("offline", {"default": "offline-rules", "deep": "offline-rules"})
    assert first.directives == []


def test_running_the_same_run_again_writes_nothing_twice(instrument_with_bars, roomy_account):
    run = _run(instrument_with_bars, stop_after="analysts")
    after_analysts = _counts()
    resumed = _run_again(run)
    finished = _counts()
    redelivered = _run_again(resumed)

    assert after_analysts == (4, 0, 1)
    assert resumed.status == redelivered.status == PipelineRun.Status.COMPLETED
    assert finished == _counts() == (4, 1, 1)
    assert redelivered.used == resumed.used and redelivered.feature_snapshot_id == resumed.feature_snapshot_id


def _run_again(run: PipelineRun) -> PipelineRun:
    pipeline_run_execute(run.pk)
    run.refresh_from_db()
    return run


def test_runs_on_one_day_share_its_snapshot_and_each_keeps_the_bundle_it_saw(instrument_with_bars, roomy_account):
    first = _run(instrument_with_bars, stop_after="features")
    second = _run(instrument_with_bars, stop_after="features")
    assert first.feature_snapshot_id == second.feature_snapshot_id and FeatureSnapshot.objects.count() == 1

    as_of = first.as_of
    NewsItem.objects.create(
        instrument=instrument_with_bars,
        headline="Reliance wins a large refinery contract",
        source="Wire",
        published_at=dt.datetime.combine(as_of, dt.time(10, 0), tzinfo=IST),
        content_hash=content_hash("Reliance wins a large refinery contract", "RELIANCE"),
    )
    third = _run(instrument_with_bars, stop_after="features")

    # The news makes a new bundle for the day: a row of its own; the earlier runs' row is untouched.
    assert FeatureSnapshot.objects.count() == 2
    assert third.feature_snapshot_id != first.feature_snapshot_id
    for run in (first, third):
        run.refresh_from_db()
        assert run.feature_snapshot.bundle == run_outputs(run).features.bundle.model_dump(mode="json")
    assert FeatureSnapshot.objects.get(pk=first.feature_snapshot_id).bundle["news"]["unique_count"] == 0
    assert FeatureSnapshot.objects.get(pk=third.feature_snapshot_id).bundle["news"]["unique_count"] == 1


def against_the_panel(request: ModelRequest, answer: dict[str, Any]) -> dict[str, Any]:
    """A schema-valid manager that crowns the side its panel opposes at 0.99, and a technical
    analyst that cites an RSI the bundle never had."""
    if request.role == "manager":
        opposite = "LONG" if answer["winner"] == "SHORT" else "SHORT"
        return answer | {"winner": opposite, "conviction": 0.99}
    if request.role == "technical":
        return answer | {"summary": "RSI(14)=99.00 and ATR(14) 0.01: a sure thing.", "stance": -0.8}
    return answer


def test_the_rows_store_codes_numbers_not_a_hostile_models(instrument_with_bars, roomy_account, monkeypatch):
    client = FakeClient(patch=against_the_panel)
    monkeypatch.setattr("trading.pipeline.orchestrator.model_choice", lambda provider, *, symbol: choose(client))

    run = _run(instrument_with_bars, stop_after="debate")

    outputs = run_outputs(run)
    notes = outputs.analysts.notes
    expected = haircut_conviction(0.99, run.debate_record.winner, list(notes.values()))
    debate = run.debate_record
    assert debate.proposed_conviction == Decimal("0.99")
    assert expected.opposing >= 1 and expected.conviction < 0.99
    assert debate.conviction == _unit(expected.conviction)
    assert debate.opposing_share == _unit(expected.opposing / expected.side_taking)
    assert (debate.opposing, debate.side_taking) == (expected.opposing, expected.side_taking)

    technical = run.note_records.get(role="technical")
    rsi = outputs.features.bundle.technical.rsi_14
    wrong = [c for c in technical.citations if not c["ok"]]
    assert [(c["name"], c["cited"]) for c in wrong] == [("rsi_14", 99.0), ("atr_14", 0.01)]
    assert wrong[0]["actual"] == pytest.approx(rsi)
    assert technical.citation_mismatches == 2 == outputs.analysts.citation_mismatches
    assert technical.citations_verified == len(technical.citations) - 2  # its honest evidence still checks out


def test_notes_can_be_queried_across_runs_and_instruments(instrument_with_bars, roomy_account):
    tcs = Instrument.objects.create(symbol="TCS", exchange="NSE", name="Tata Consultancy Services", sector="IT")
    make_bars(tcs, 320, seed=9, first_close=3500.0)
    days = list(instrument_with_bars.bars.order_by("-date").values_list("date", flat=True)[:60:20])
    runs = [_run(instrument_with_bars, as_of=day, stop_after="debate") for day in days]
    runs.append(_run(tcs, stop_after="debate"))

    bearish_technical = AnalystNoteRecord.objects.filter(
        run__instrument__symbol="RELIANCE", role="technical", stance__lt=0
    )

    expected = {
        run.pk for run in runs
        if run.instrument.symbol == "RELIANCE" and run_outputs(run).analysts.notes["technical"].stance < 0
    }
    assert expected  # the seeded walk ends in a downtrend
    assert set(bearish_technical.values_list("run_id", flat=True)) == expected
    assert AnalystNoteRecord.objects.filter(role="technical").count() == len(runs)
    assert set(DebateRecord.objects.values_list("run_id", flat=True)) == {run.pk for run in runs}


def test_the_admin_shows_the_rows_read_only_with_their_filters(client, desk_admin, instrument_with_bars, roomy_account):
    run = _run(instrument_with_bars, stop_after="debate")
    client.force_login(desk_admin)
    notes = reverse("admin:trading_analystnoterecord_changelist")
    debates = reverse("admin:trading_debaterecord_changelist")

    page = client.get(notes, {"role": "technical", "stance_sign": "bearish", "abstained__exact": "0", "q": "RELIANCE"})
    nothing = client.get(notes, {"q": "TCS"})
    winners = client.get(debates, {"winner": run.debate_record.winner, "q": "RELIANCE"})
    note = client.get(reverse("admin:trading_analystnoterecord_change", args=[run.note_records.first().pk]))
    run_page = client.get(reverse("admin:trading_pipelinerun_change", args=[run.pk]))

    assert page.status_code == nothing.status_code == winners.status_code == 200
    assert page.context["cl"].result_count == 1 and nothing.context["cl"].result_count == 0
    assert winners.context["cl"].result_count == 1
    assert note.status_code == 200 and not note.context["has_change_permission"]
    assert not note.context["has_delete_permission"] and not note.context["has_add_permission"]
    assert run_page.status_code == 200 and "offline-rules" in run_page.content.decode()  # the snapshot
