"""Calibration from stored rows: each analyst's confidence and the debate's conviction against the
realised move over the thesis horizon, the alarm, the bounded buffer, the isotonic refit."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from agents.models import CalibrationFit
from reviews import calibration_service
from reviews.calibration_service import calibration_summary, historical_rate, refit_calibration, resolved_calls
from reviews.models import CalibrationSnapshot
from tests.factories import AccountFactory, InstrumentFactory, PipelineRunFactory, ThesisFactory, bars_for, trending
from trading.book.accounts import default_account, replay_account
from trading.models import AnalystNoteRecord, DailyBar, DebateRecord, Instrument, PipelineRun, Strategy, StrategyRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def rising() -> tuple[Instrument, list[dt.date]]:
    """Forty sessions up 1% a session: every call made in the first thirty resolves upward."""
    instrument = InstrumentFactory()
    bars = bars_for(instrument, trending(100, 40, "1"))
    return instrument, [bar.date for bar in bars]


@pytest.fixture
def calibration_settings(settings):
    settings.RETROSPECTIVE = {
        **settings.RETROSPECTIVE,
        "CALIBRATION_MIN_SAMPLES": 4,
        "CALIBRATION_REFIT_INTERVAL": 2,
        "ECE_ALARM_THRESHOLD": 0.25,
        "BUFFER_SIZE": 10_000,
    }
    return settings


def run_on(instrument: Instrument, day: dt.date, **fields) -> PipelineRun:
    return PipelineRunFactory(instrument=instrument, as_of=day, **fields)


def note(run: PipelineRun, role: str, stance: str, confidence: str, *, abstained: bool = False) -> AnalystNoteRecord:
    return AnalystNoteRecord.objects.create(
        run=run,
        role=role,
        stance=Decimal(stance),
        confidence=Decimal(confidence),
        abstained=abstained,
        summary="a note",
    )


def debate(run: PipelineRun, winner: str, conviction: str) -> DebateRecord:
    return DebateRecord.objects.create(
        run=run,
        winner=winner,
        proposed_conviction=Decimal(conviction),
        conviction=Decimal(conviction),
        opposing=0,
        side_taking=2,
        opposing_share=Decimal(0),
        rationale="the bulls had it",
    )


def test_an_analysts_ece_by_hand(rising, calibration_settings) -> None:
    instrument, days = rising
    # Two bullish calls at 0.9 (right: the price rose) and two bearish at 0.9 (wrong): bin 8 holds
    # all four, mean confidence 0.9, hit rate 0.5, so ECE = 0.4.
    for index, stance in enumerate(["0.6", "0.4", "-0.5", "-0.2"]):
        note(run_on(instrument, days[index]), "technical", stance, "0.9")

    summary = calibration_summary(end=days[-1])

    technical = summary["by_subject"]["technical"]
    assert technical["ece"] == pytest.approx(0.4)
    assert technical["samples"] == 4
    assert technical["bins"][8] == {
        "index": 8,
        "low": 0.8,
        "high": 0.9,
        "count": 4,
        "positives": 2,
        "mean_confidence": 0.9,
        "observed_rate": 0.5,
    }
    assert summary["analyst_ece"] == pytest.approx(0.4)
    assert summary["alarm"] is True and summary["threshold"] == 0.25
    assert summary["debate_ece"] is None and summary["by_subject"]["debate"]["samples"] == 0


def test_the_debates_conviction_is_right_when_its_winner_matches_the_move(rising, calibration_settings) -> None:
    instrument, days = rising
    debate(run_on(instrument, days[0]), "LONG", "0.7")
    debate(run_on(instrument, days[1]), "SHORT", "0.7")

    summary = calibration_summary(end=days[-1])

    assert summary["debate_ece"] == pytest.approx(0.2)  # 0.7 stated, right half the time
    assert summary["samples"] == 2
    assert summary["alarm"] is False  # 2 samples: below the minimum of 4


def test_abstentions_and_zero_stances_are_no_calls(rising, calibration_settings) -> None:
    instrument, days = rising
    note(run_on(instrument, days[0]), "news", "0.5", "0.8", abstained=True)
    note(run_on(instrument, days[1]), "news", "0", "0.8")
    note(run_on(instrument, days[2]), "news", "0.3", "0.8")

    assert calibration_summary(end=days[-1])["by_subject"]["news"]["samples"] == 1


def test_a_call_resolves_only_once_its_horizon_has_passed_by_the_end(rising, calibration_settings) -> None:
    instrument, days = rising
    note(run_on(instrument, days[5]), "sentiment", "0.5", "0.8")  # default horizon: ten sessions

    assert calibration_summary(end=days[14])["by_subject"]["sentiment"]["samples"] == 0
    assert calibration_summary(end=days[15])["by_subject"]["sentiment"]["samples"] == 1


def test_the_thesis_horizon_decides_when_a_call_resolves(rising, calibration_settings) -> None:
    instrument, days = rising
    thesis = ThesisFactory(instrument=instrument, run__as_of=days[5], horizon_sessions=2)
    note(thesis.run, "fundamental", "0.5", "0.8")

    assert calibration_summary(end=days[6])["by_subject"]["fundamental"]["samples"] == 0
    assert calibration_summary(end=days[7])["by_subject"]["fundamental"]["samples"] == 1


def test_no_look_ahead_bars_after_the_end_change_nothing(rising, calibration_settings) -> None:
    instrument, days = rising
    for index in range(6):
        note(run_on(instrument, days[index]), "technical", "0.5" if index % 2 else "-0.5", "0.7")
    end = days[12]
    before = calibration_summary(end=end)

    DailyBar.objects.filter(instrument=instrument, date__gt=end).update(
        open=Decimal("1.00"), high=Decimal("1.00"), low=Decimal("1.00"), close=Decimal("1.00")
    )
    CalibrationSnapshot.objects.all().delete()  # computed again, from the perturbed rows

    assert calibration_summary(end=end) == before
    assert before["by_subject"]["technical"]["samples"] == 3  # as_of days 0..2 resolve by day 12


def test_the_buffer_keeps_the_newest_resolved_calls(rising, calibration_settings) -> None:
    instrument, days = rising
    calibration_settings.RETROSPECTIVE = {**calibration_settings.RETROSPECTIVE, "BUFFER_SIZE": 3}
    for index in range(8):
        note(run_on(instrument, days[index]), "technical", "0.5", "0.2" if index < 5 else "0.9")

    calls, total = resolved_calls("technical", end=days[-1], limit=3)

    assert [call.as_of for call in calls] == [days[7], days[6], days[5]]
    assert total == 8
    assert calibration_summary(end=days[-1])["by_subject"]["technical"]["samples"] == 3


def test_one_accounts_runs_only(rising, calibration_settings) -> None:
    instrument, days = rising
    strategy = Strategy.objects.create(name="swing", philosophy="Trend swings.")
    replayed = StrategyRun.objects.create(strategy=strategy, as_of=days[0], is_replay=True)
    note(run_on(instrument, days[0]), "technical", "0.5", "0.8")
    note(run_on(instrument, days[1], is_replay=True, strategy_run=replayed), "technical", "-0.5", "0.8")
    other = AccountFactory()
    thesis = ThesisFactory(instrument=instrument, account=other, run__as_of=days[2])
    note(thesis.run, "technical", "0.5", "0.8")

    live = calibration_summary(account=default_account(), end=days[-1])["by_subject"]["technical"]
    replay = calibration_summary(account=replay_account(strategy.name), end=days[-1])["by_subject"]["technical"]
    own = calibration_summary(account=other, end=days[-1])["by_subject"]["technical"]

    assert live["samples"] == 2  # every live run
    assert replay["samples"] == 1 and replay["bins"][7]["positives"] == 0
    assert own["samples"] == 1
    assert calibration_summary(end=days[-1])["by_subject"]["technical"]["samples"] == 3


def test_a_stored_confidence_outside_zero_to_one_is_left_out(rising, calibration_settings) -> None:
    instrument, days = rising
    note(run_on(instrument, days[0]), "technical", "0.5", "-0.4")
    note(run_on(instrument, days[1]), "technical", "0.5", "0.6")

    assert calibration_summary(end=days[-1])["by_subject"]["technical"]["samples"] == 1


def test_the_alarm_needs_the_minimum_number_of_samples(rising, calibration_settings) -> None:
    instrument, days = rising
    for index in range(4):
        note(run_on(instrument, days[index]), "news", "-0.5", "0.95")  # all wrong, stated near certain

    assert calibration_summary(end=days[-1])["alarm"] is True
    calibration_settings.RETROSPECTIVE = {**calibration_settings.RETROSPECTIVE, "CALIBRATION_MIN_SAMPLES": 5}
    assert calibration_summary(end=days[-1])["alarm"] is False


def test_an_empty_desk_has_no_ece_and_no_alarm(calibration_settings) -> None:
    summary = calibration_summary(end=dt.date(2026, 1, 5))

    assert summary["analyst_ece"] is None and summary["debate_ece"] is None
    assert summary["samples"] == 0 and summary["alarm"] is False
    assert set(summary["by_subject"]) == {"news", "sentiment", "technical", "fundamental", "debate"}


def test_the_isotonic_refit_waits_for_enough_samples_then_refits_every_interval(rising, calibration_settings) -> None:
    instrument, days = rising
    for index, (stance, confidence) in enumerate([("0.5", "0.9"), ("-0.5", "0.8"), ("0.5", "0.6")]):
        debate(run_on(instrument, days[index]), "LONG" if stance[0] != "-" else "SHORT", confidence)
    assert refit_calibration(end=days[-1]) == []  # three samples, four needed

    debate(run_on(instrument, days[3]), "LONG", "0.3")
    fits = refit_calibration(end=days[-1])

    assert [(fit.subject, fit.samples) for fit in fits] == [("debate", 4)]
    fit = fits[0]
    # By conviction: 0.3 right, 0.6 right, 0.8 wrong, 0.9 right. PAV pools 0.3..0.8 (right 2 of 3)
    # below 0.9 (1 of 1): the map is 2/3 from 0.3 to 0.8, then 1 at 0.9.
    assert fit.points == [[0.3, pytest.approx(2 / 3)], [0.8, pytest.approx(2 / 3)], [0.9, 1.0]]
    assert fit.ece_after <= fit.ece_before
    assert refit_calibration(end=days[-1]) == []  # nothing new

    debate(run_on(instrument, days[4]), "LONG", "0.5")
    assert refit_calibration(end=days[-1]) == []  # one new, the interval is two
    debate(run_on(instrument, days[5]), "LONG", "0.5")
    assert [fit.samples for fit in refit_calibration(end=days[-1])] == [6]
    assert CalibrationFit.objects.filter(subject="debate").count() == 2


def test_the_latest_fit_says_how_often_a_conviction_was_right(rising, calibration_settings) -> None:
    instrument, days = rising
    assert historical_rate("debate", 0.7) is None
    for index in range(4):
        debate(run_on(instrument, days[index]), "LONG" if index % 2 else "SHORT", "0.7")
    refit_calibration(end=days[-1])

    assert historical_rate("debate", 0.7) == pytest.approx(0.5)
    assert historical_rate("debate", 1.5) is None


def test_the_beat_task_refits_what_is_due_and_names_it(rising, calibration_settings) -> None:
    from django.conf import settings as django_settings

    from reviews.tasks import refit_calibration as refit_task

    instrument, days = rising
    scheduled = {entry["task"] for entry in django_settings.CELERY_BEAT_SCHEDULE.values()}
    assert "reviews.refit_calibration" in scheduled
    for index in range(4):
        debate(run_on(instrument, days[index]), "LONG", "0.6")

    assert refit_task.apply(kwargs={"day": days[-1].isoformat()}).get() == {"debate": 4}
    assert refit_task.apply(kwargs={"day": days[-1].isoformat()}).get() == {}  # nothing new since


def test_a_days_summary_is_computed_once_and_read_back_while_its_rows_are_unchanged(
    rising, calibration_settings, monkeypatch
) -> None:
    """The daily review computes the day's calibration; the weekly review of the same day reads it.
    A row added since (a new note, a new bar) changes the fingerprint, and it is computed again."""
    instrument, days = rising
    for index in range(6):
        note(run_on(instrument, days[index]), "technical", "0.5" if index % 2 else "-0.5", "0.7")
    computed = []
    compute = calibration_service._computed_summary
    monkeypatch.setattr(calibration_service, "_computed_summary", lambda *args: computed.append(args) or compute(*args))
    end = days[12]

    first = calibration_summary(end=end)
    again = calibration_summary(end=end)

    assert again == first and len(computed) == 1
    assert CalibrationSnapshot.objects.get(account=None, end=end).summary == first

    note(run_on(instrument, days[1]), "technical", "0.5", "0.9")  # a call that resolves by the end
    changed = calibration_summary(end=end)

    assert len(computed) == 2
    assert changed["by_subject"]["technical"]["samples"] == first["by_subject"]["technical"]["samples"] + 1
    assert CalibrationSnapshot.objects.filter(end=end).count() == 1  # replaced, not added


def test_each_account_keeps_its_own_days_summary(rising, calibration_settings) -> None:
    instrument, days = rising
    note(run_on(instrument, days[0]), "technical", "0.5", "0.7")
    calibration_summary(end=days[-1])
    calibration_summary(account=default_account(), end=days[-1])

    assert CalibrationSnapshot.objects.filter(end=days[-1]).count() == 2
