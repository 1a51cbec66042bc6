"""Each schedule and each event runs its review exactly once: a second delivery finds the READY
report, a worker that died mid-review is finished by the retry (attempts counted, the stored hard
part reused), a failure is kept with its reason for the next attempt, and two deliveries at once
leave one report whose effects happened once."""

from __future__ import annotations

import datetime as dt
import threading
from collections import Counter
from decimal import Decimal
from functools import partial
from typing import Any

import pytest
from django.conf import settings as django_settings

from agents.models import MemoryEntry
from reviews import tasks, triggers
from reviews.models import RetrospectiveReport, TradeReview
from reviews.triggers import (
    daily_reviews,
    epoch_reviews,
    loss_review_due,
    on_position_closed,
    on_strategy_retired,
    run_review,
    weekly_reviews,
)
from tests.factories import DEFAULT_START, AccountFactory, gapped, next_session, position_on_path, sessions, trending
from tests.processes import at_once
from trading.book.accounts import default_account, replay_account
from trading.book.signals import replay_account_clearing, replay_position_closed
from trading.models import AuditEvent, Position, Strategy, StrategyRun, Thesis

D = Decimal
Status = RetrospectiveReport.Status
END = DEFAULT_START + dt.timedelta(days=60)


class WorkerDied(BaseException):
    """What a killed worker looks like to the code it was running: nothing after it runs."""


@pytest.fixture
def effects(monkeypatch) -> Counter[str]:
    """Count what a READY review does to the rest of the desk (each effect must happen once)."""
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def counting(name: str, *args: Any, **kwargs: Any) -> None:
        with lock:
            seen[name] += 1

    monkeypatch.setattr("reviews.hindsight.apply_hindsight", partial(counting, "hindsight"))
    monkeypatch.setattr("reviews.effectiveness.after_weekly_review", partial(counting, "weekly"))
    return seen


def weekly(account: Any, key: str = "weekly:test") -> RetrospectiveReport:
    return run_review(trigger_key=key, horizon="weekly", account=account, start=DEFAULT_START, end=END)


def small_book(account: Any) -> list[Position]:
    return [
        position_on_path(trending(100, 20, "1"), account=account),
        position_on_path(trending(100, 20, "-1"), account=account),
    ]


# --- one review, exactly once --------------------------------------------------------------------


@pytest.mark.django_db
def test_a_second_delivery_returns_the_ready_report_untouched(effects) -> None:
    account = AccountFactory(roomy=True)
    small_book(account)

    first = weekly(account)
    again = weekly(account)

    assert first.status == Status.READY and again.pk == first.pk
    assert again.attempts == 1 and again.finished_at == first.finished_at
    assert RetrospectiveReport.objects.count() == 1
    assert effects == Counter({"weekly": 1})


@pytest.mark.django_db
def test_a_worker_that_died_mid_review_is_finished_by_the_retry(effects, monkeypatch) -> None:
    account = AccountFactory(roomy=True)
    small_book(account)
    built: list[int] = []
    real_build = triggers.build_hard_part

    def counted_build(**kwargs: Any) -> dict[str, Any]:
        built.append(1)
        return real_build(**kwargs)

    def dies(*args: Any, **kwargs: Any) -> None:
        raise WorkerDied

    monkeypatch.setattr(triggers, "build_hard_part", counted_build)
    monkeypatch.setattr(triggers, "narrate", dies)
    with pytest.raises(WorkerDied):
        weekly(account)
    left = RetrospectiveReport.objects.get()
    assert left.status == Status.RUNNING and left.attempts == 1 and left.hard  # the hard part was kept
    assert effects == Counter()

    monkeypatch.undo()
    monkeypatch.setattr(triggers, "build_hard_part", counted_build)
    monkeypatch.setattr("reviews.effectiveness.after_weekly_review", lambda report: effects.update(["weekly"]))
    finished = weekly(account)

    assert finished.pk == left.pk and finished.status == Status.READY and finished.attempts == 2
    assert finished.hard == left.hard and built == [1]  # resumed at the narrative, not recomputed
    assert finished.narrative["hindsight"]
    assert effects == Counter({"weekly": 1})


@pytest.mark.django_db
def test_a_failure_is_kept_with_its_reason_and_the_next_attempt_finishes(effects, monkeypatch) -> None:
    account = AccountFactory(roomy=True)
    small_book(account)

    def broken(report: RetrospectiveReport) -> None:
        raise ValueError("the weekly judgement is broken")

    monkeypatch.setattr("reviews.effectiveness.after_weekly_review", broken)
    failed = weekly(account)

    assert failed.status == Status.FAILED and "the weekly judgement is broken" in failed.error
    assert MemoryEntry.objects.count() == 0 and failed.narrative == {}  # nothing of the finish was kept

    monkeypatch.setattr("reviews.effectiveness.after_weekly_review", lambda report: effects.update(["weekly"]))
    finished = weekly(account)

    assert finished.status == Status.READY and finished.attempts == 2 and finished.error == ""
    assert effects == Counter({"weekly": 1})


@pytest.mark.django_db(transaction=True)
def test_four_deliveries_at_once_leave_one_report_and_its_effects_once(effects) -> None:
    account = AccountFactory(roomy=True)
    small_book(account)

    def deliver() -> str:
        report = weekly(account)
        return f"{report.pk}"

    outcomes = at_once([deliver] * 4)

    assert len(outcomes) == 4 and len(set(outcomes)) == 1
    report = RetrospectiveReport.objects.get()
    assert report.status == Status.READY and 1 <= report.attempts <= 4
    assert effects == Counter({"weekly": 1})
    assert AuditEvent.objects.filter(action="retrospective_ready").count() == 1


# --- events --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_closed_position_gets_its_retrospective_once_with_hindsight_applied(effects) -> None:
    account = AccountFactory(roomy=True)
    position = small_book(account)[0]

    on_position_closed(position)
    on_position_closed(position)

    report = RetrospectiveReport.objects.get(trigger_key=f"position:{position.pk}")
    assert report.status == Status.READY and report.horizon == "position" and report.position_id == position.pk
    assert report.period_start == position.opened_on and report.period_end == position.closed_on
    assert report.hard["lifecycle"]["final_pnl"] == f"{position.realised_pnl:f}"
    assert effects == Counter({"hindsight": 1})
    assert not RetrospectiveReport.objects.filter(horizon="loss").exists()  # a small loss: no loss review


@pytest.mark.django_db
def test_position_retrospectives_can_be_switched_off(settings, effects) -> None:
    settings.RETROSPECTIVE = {**settings.RETROSPECTIVE, "POSITION_CLOSE_REVIEW": False}
    position = small_book(AccountFactory(roomy=True))[0]

    on_position_closed(position)

    assert not RetrospectiveReport.objects.exists()


def gap_loser(capital: str) -> Position:
    """A LONG of 100 shares at ~100 that gaps 30% through its stop: a loss of about ₹3,000."""
    account = AccountFactory(roomy=True, capital=D(capital))
    return position_on_path(gapped(100, before=3, gap_pct=-30, after=2), account=account)


@pytest.mark.django_db
def test_a_loss_above_the_share_of_equity_gets_an_immediate_loss_review(effects) -> None:
    position = gap_loser("20000")
    assert position.realised_pnl is not None and position.realised_pnl < D("-2500")

    on_position_closed(position)
    on_position_closed(position)

    loss = RetrospectiveReport.objects.get(horizon="loss")
    assert loss.trigger_key == f"loss:{position.pk}" and loss.position_id == position.pk
    assert loss.status == Status.READY and loss.hard["lifecycle"]["final_pnl"] == f"{position.realised_pnl:f}"
    assert RetrospectiveReport.objects.filter(horizon="position").count() == 1


@pytest.mark.django_db
def test_the_loss_trigger_fires_strictly_above_its_threshold() -> None:
    probe = gap_loser("1000000")
    assert probe.realised_pnl is not None
    loss = -probe.realised_pnl
    assert not loss_review_due(probe)  # 0.3% of ₹10 lakh

    on_the_line = gap_loser(str(loss * 20))  # the same trade: its loss is exactly 5% of this account
    above = gap_loser(str(loss * 20 - 1))

    assert on_the_line.realised_pnl == probe.realised_pnl == above.realised_pnl
    assert not loss_review_due(on_the_line)
    assert loss_review_due(above)


@pytest.mark.django_db
def test_a_live_close_is_reviewed_then_retrospected_by_the_task(effects) -> None:
    position = small_book(default_account())[0]

    result = tasks.review_position(position.pk)
    tasks.review_position(position.pk)  # delivered twice

    assert result["status"] == "ok"
    assert TradeReview.objects.filter(position=position).count() == 1
    assert RetrospectiveReport.objects.filter(trigger_key=f"position:{position.pk}", status=Status.READY).count() == 1
    assert effects == Counter({"hindsight": 1})
    assert tasks.review_position(999_999) == {"status": "gone", "position_id": 999_999}


@pytest.mark.django_db
def test_a_replayed_close_is_retrospected_in_process_and_cleared_with_its_replay(effects) -> None:
    strategy = Strategy.objects.create(name="replayed", philosophy="test")
    account = replay_account(strategy.name)
    position = small_book(account)[0]
    Position.objects.filter(pk=position.pk).update(is_replay=True)
    position.refresh_from_db()

    replay_position_closed.send(sender=Position, position=position, lessons_to_live=False)

    report = RetrospectiveReport.objects.get(trigger_key=f"position:{position.pk}")
    assert report.status == Status.READY and report.is_replay
    replay_account_clearing.send(sender=Strategy, account=account)
    assert not RetrospectiveReport.objects.filter(account=account).exists()
    Position.objects.filter(account=account).delete()  # the replay can now delete its positions


@pytest.mark.django_db
def test_retiring_a_strategy_writes_its_testament_once_into_memory(effects) -> None:
    strategy = Strategy.objects.create(name="momentum", philosophy="ride strength")
    live = default_account()
    positions = small_book(live)
    run_row = StrategyRun.objects.create(strategy=strategy, as_of=DEFAULT_START)
    for position in positions:
        type(position.thesis.run).objects.filter(pk=position.thesis.run_id).update(strategy_run=run_row)
    Strategy.objects.filter(pk=strategy.pk).update(is_active=False)
    strategy.refresh_from_db()

    testament = on_strategy_retired(strategy)
    again = on_strategy_retired(strategy)

    assert again.pk == testament.pk and testament.status == Status.READY
    assert testament.horizon == "testament" and testament.tier == "deep" and testament.strategy_id == strategy.pk
    assert testament.hard["inaction"]["positions"] == 2
    memory = MemoryEntry.objects.get(kind="testament")
    assert memory.tags["strategy"] == "momentum" and memory.tags["report"] == str(testament.pk)
    assert memory.text.startswith("Testament of strategy momentum")
    assert testament.hard["attribution"]["net"] in memory.text


# --- schedules -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_daily_review_covers_the_previous_session_once_per_active_account(effects) -> None:
    active = AccountFactory(roomy=True)
    idle = AccountFactory(roomy=True)
    position = small_book(active)[1]  # the loser closes first
    assert position.closed_on is not None
    day_after = next_session(position.closed_on)

    first = daily_reviews(day=day_after)
    again = daily_reviews(day=day_after)

    assert [report.account_id for report in first] == [active.pk]
    assert [report.pk for report in again] == [report.pk for report in first]
    report = first[0]
    assert report.trigger_key == f"daily:{active.pk}:{position.closed_on.isoformat()}"
    assert report.period_end == position.closed_on
    assert report.period_start == position.closed_on - dt.timedelta(days=int(position.closed_on.weekday() == 0) * 2)
    assert report.hard["actions"]["exits"] == 1
    assert not RetrospectiveReport.objects.filter(account=idle).exists()
    assert RetrospectiveReport.objects.filter(horizon="daily").count() == 1


@pytest.mark.django_db
def test_the_weekly_review_runs_per_account_and_per_live_strategy(effects) -> None:
    strategy = Strategy.objects.create(name="swing", philosophy="swing trades")
    live = default_account()
    position = small_book(live)[0]
    run_row = StrategyRun.objects.create(strategy=strategy, as_of=position.thesis.run.as_of)
    type(position.thesis.run).objects.filter(pk=position.thesis.run_id).update(strategy_run=run_row)
    assert position.closed_on is not None
    friday = position.closed_on + dt.timedelta(days=4 - position.closed_on.weekday())

    reports = weekly_reviews(day=friday)
    weekly_reviews(day=friday)

    keys = sorted(report.trigger_key for report in reports)
    assert keys == sorted([f"weekly:{live.pk}:{friday}", f"weekly:{live.pk}:s{strategy.pk}:{friday}"])
    assert RetrospectiveReport.objects.filter(horizon="weekly").count() == 2
    by_strategy = RetrospectiveReport.objects.get(strategy=strategy)
    assert [row["id"] for row in by_strategy.hard["positions"]] == [position.pk]
    assert effects == Counter({"weekly": 2})


@pytest.mark.django_db
def test_epochs_run_every_interval_from_the_first_activity(settings, effects) -> None:
    settings.RETROSPECTIVE = {**settings.RETROSPECTIVE, "EPOCH_INTERVAL_DAYS": 10}
    account = AccountFactory(roomy=True)
    small_book(account)
    first_day = Thesis.objects.filter(account=account).order_by("run__as_of").values_list("run__as_of", flat=True)[0]

    assert epoch_reviews(day=first_day + dt.timedelta(days=9)) == []  # the first epoch has not ended
    reports = epoch_reviews(day=first_day + dt.timedelta(days=25))
    assert [(r.period_start, r.period_end) for r in reports] == [
        (first_day, first_day + dt.timedelta(days=9)),
        (first_day + dt.timedelta(days=10), first_day + dt.timedelta(days=19)),
    ]
    assert epoch_reviews(day=first_day + dt.timedelta(days=25)) == []  # nothing due twice
    later = epoch_reviews(day=first_day + dt.timedelta(days=31))
    assert [(r.period_start, r.trigger_key) for r in later] == [
        (first_day + dt.timedelta(days=20), f"epoch:{account.pk}:{first_day + dt.timedelta(days=29)}")
    ]
    assert all(report.tier == "deep" for report in RetrospectiveReport.objects.filter(horizon="epoch"))


@pytest.mark.django_db
def test_a_scheduled_pass_retries_the_reviews_that_failed(monkeypatch, effects) -> None:
    account = AccountFactory(roomy=True)
    position = small_book(account)[1]
    assert position.closed_on is not None
    day_after = next_session(position.closed_on)
    monkeypatch.setattr(triggers, "narrate", lambda report, hard: (_ for _ in ()).throw(RuntimeError("offline")))
    (failed,) = daily_reviews(day=day_after)
    assert failed.status == Status.FAILED

    monkeypatch.undo()
    monkeypatch.setattr("reviews.hindsight.apply_hindsight", lambda report: None)
    retried = daily_reviews(day=day_after + dt.timedelta(days=7))

    assert RetrospectiveReport.objects.get(pk=failed.pk).status == Status.READY
    assert failed.pk in [report.pk for report in retried]


@pytest.mark.django_db
def test_the_beat_tasks_exist_and_can_be_switched_off(settings) -> None:
    scheduled = {entry["task"] for entry in django_settings.CELERY_BEAT_SCHEDULE.values()}
    for task in (tasks.daily_reviews, tasks.weekly_reviews, tasks.epoch_reviews, tasks.review_position):
        assert task.name.startswith("reviews.")
    assert {"reviews.daily_reviews", "reviews.weekly_reviews", "reviews.epoch_reviews"} <= scheduled
    settings.RETROSPECTIVE = {
        **settings.RETROSPECTIVE,
        "DAILY_ENABLED": False,
        "WEEKLY_ENABLED": False,
        "EPOCH_ENABLED": False,
    }
    small_book(AccountFactory(roomy=True))
    day = sessions(DEFAULT_START, 30)[-1]
    assert tasks.daily_reviews(day.isoformat()) == []
    assert tasks.weekly_reviews(day.isoformat()) == []
    assert tasks.epoch_reviews(day.isoformat()) == []
    assert not RetrospectiveReport.objects.exists()


@pytest.mark.django_db
def test_a_strategy_that_only_ever_replayed_leaves_the_testament_of_its_replay(effects) -> None:
    strategy = Strategy.objects.create(name="backtested", philosophy="only replayed")
    account = replay_account(strategy.name)
    position = small_book(account)[0]
    run_row = StrategyRun.objects.create(strategy=strategy, as_of=position.thesis.run.as_of, is_replay=True)
    type(position.thesis.run).objects.filter(pk=position.thesis.run_id).update(strategy_run=run_row, is_replay=True)

    testament = on_strategy_retired(strategy)

    assert testament.account_id == account.pk and testament.period_start == run_row.as_of
    assert [row["id"] for row in testament.hard["positions"]] == [position.pk]
    assert MemoryEntry.objects.filter(kind="testament", tags__strategy="backtested").count() == 1
