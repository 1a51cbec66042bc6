"""Strategic effectiveness after the weekly reviews: the flag (inaction beat the strategy in more
than 70% of positions for two weekly reviews in a row), shown on the strategy's pages, and retiring
a strategy from its page, which stops it and runs its testament."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from reviews.effectiveness import after_weekly_review, strategies_of, strategy_retire
from reviews.models import RetrospectiveReport
from tests.factories import AccountFactory
from trading.book.accounts import default_account, replay_account
from trading.models import AuditEvent, Strategy
from trading.strategies.runs import strategies_due
from vocabulary.refusals import InputRefused, StateConflict

pytestmark = pytest.mark.django_db

FRIDAY = dt.date(2026, 11, 27)


@pytest.fixture
def strategy() -> Strategy:
    return Strategy.objects.create(name="swing", philosophy="Trend swings.", schedule="0 16 * * 1-5")


def weekly(
    *, account, strategy: Strategy | None, end: dt.date, superiority: str | None, beaten: int = 0, positions: int = 0
) -> RetrospectiveReport:
    return RetrospectiveReport.objects.create(
        trigger_key=f"weekly:{account.pk}:s{strategy.pk if strategy else ''}:{end}",
        horizon=RetrospectiveReport.Horizon.WEEKLY,
        account=account,
        strategy=strategy,
        period_start=end - dt.timedelta(days=6),
        period_end=end,
        status=RetrospectiveReport.Status.READY,
        hard={"inaction": {"positions": positions, "beaten_by_inaction": beaten, "superiority": superiority}},
    )


def two_weeks(strategy: Strategy, first: str | None, second: str | None, *, account=None) -> RetrospectiveReport:
    book = account or default_account()
    owner = strategy if account is None else None
    weekly(account=book, strategy=owner, end=FRIDAY - dt.timedelta(days=7), superiority=first, beaten=4, positions=5)
    return weekly(account=book, strategy=owner, end=FRIDAY, superiority=second, beaten=3, positions=4)


def test_two_weeks_above_seventy_percent_flag_the_strategy_with_the_figures(strategy: Strategy) -> None:
    after_weekly_review(two_weeks(strategy, "0.8000", "0.7500"))

    strategy.refresh_from_db()
    assert strategy.flagged_on == FRIDAY
    assert "4 of 5 positions (80.00%)" in strategy.flag_reason
    assert "3 of 4 positions (75.00%)" in strategy.flag_reason
    assert "more than 70.00%" in strategy.flag_reason
    event = AuditEvent.objects.get(action="strategy_flagged")
    assert event.target == f"strategy {strategy.pk}" and event.details["superiorities"] == ["0.8000", "0.7500"]


@pytest.mark.parametrize(("first", "second"), [("0.7000", "0.7000"), ("0.9000", "0.7000"), ("0.9000", None)])
def test_exactly_seventy_percent_or_one_week_does_not_flag(strategy: Strategy, first: str, second: str | None) -> None:
    after_weekly_review(two_weeks(strategy, first, second))

    strategy.refresh_from_db()
    assert strategy.flagged_on is None and strategy.flag_reason == ""
    assert not AuditEvent.objects.filter(action="strategy_flagged").exists()


def test_a_single_weekly_review_never_flags(strategy: Strategy) -> None:
    after_weekly_review(weekly(account=default_account(), strategy=strategy, end=FRIDAY, superiority="1.0000"))

    strategy.refresh_from_db()
    assert strategy.flagged_on is None


def test_a_flag_is_set_once_and_never_cleared_by_a_better_week(strategy: Strategy) -> None:
    after_weekly_review(two_weeks(strategy, "0.8000", "0.9000"))
    again = weekly(
        account=default_account(), strategy=strategy, end=FRIDAY + dt.timedelta(days=7), superiority="0.9500"
    )
    after_weekly_review(again)
    better = weekly(account=default_account(), strategy=strategy, end=FRIDAY + dt.timedelta(days=14), superiority="0.1")
    after_weekly_review(better)

    strategy.refresh_from_db()
    assert strategy.flagged_on == FRIDAY
    assert AuditEvent.objects.filter(action="strategy_flagged").count() == 1


def test_a_replay_accounts_weekly_reviews_flag_the_strategy_it_belongs_to(strategy: Strategy) -> None:
    book = replay_account(strategy.name)
    report = two_weeks(strategy, "0.8000", "0.8000", account=book)

    assert strategies_of(report) == [strategy]
    after_weekly_review(report)

    strategy.refresh_from_db()
    assert strategy.flagged_on == FRIDAY


def test_a_review_of_an_account_with_no_strategy_flags_nothing(strategy: Strategy) -> None:
    after_weekly_review(two_weeks(strategy, "0.9", "0.9", account=AccountFactory()))

    assert not Strategy.objects.filter(flagged_on__isnull=False).exists()


def test_another_strategys_weeks_do_not_count(strategy: Strategy) -> None:
    other = Strategy.objects.create(name="value", philosophy="Cheap stocks.")
    weekly(account=default_account(), strategy=other, end=FRIDAY - dt.timedelta(days=7), superiority="0.9000")
    report = weekly(account=default_account(), strategy=strategy, end=FRIDAY, superiority="0.9000")

    after_weekly_review(report)

    assert not Strategy.objects.filter(flagged_on__isnull=False).exists()


def test_only_a_ready_weekly_review_is_read(strategy: Strategy) -> None:
    report = two_weeks(strategy, "0.8000", "0.9000")
    RetrospectiveReport.objects.filter(pk=report.pk).update(status=RetrospectiveReport.Status.RUNNING)
    report.refresh_from_db()

    after_weekly_review(report)

    strategy.refresh_from_db()
    assert strategy.flagged_on is None


def test_the_flag_shows_on_the_strategies_page_with_its_reason(client, viewer, strategy: Strategy) -> None:
    after_weekly_review(two_weeks(strategy, "0.8000", "0.7500"))
    client.force_login(viewer)

    body = client.get(reverse("strategy_list")).content.decode()

    assert "Flagged 27 Nov 2026" in body and "3 of 4 positions (75.00%)" in body
    assert reverse("strategy_retire", args=[strategy.pk]) not in body  # a viewer cannot retire


def test_an_approver_retires_a_strategy_from_its_page(client, approver, strategy: Strategy) -> None:
    client.force_login(approver)
    page = client.get(reverse("strategy_list")).content.decode()
    assert reverse("strategy_retire", args=[strategy.pk]) in page

    answer = client.post(reverse("strategy_retire", args=[strategy.pk]), {"reason": "Inaction kept winning."})

    assert answer.status_code == 302
    strategy.refresh_from_db()
    assert not strategy.is_active
    assert strategy.retired_by == approver and strategy.retired_at is not None
    assert strategy.retire_reason == "Inaction kept winning."
    event = AuditEvent.objects.get(action="strategy_retired")
    assert event.actor == approver and event.reason == "Inaction kept winning."
    testament = RetrospectiveReport.objects.get(trigger_key=f"testament:strategy:{strategy.pk}")
    assert testament.horizon == RetrospectiveReport.Horizon.TESTAMENT and testament.strategy == strategy
    assert "retired" in client.get(reverse("strategy_list")).content.decode()


def test_a_retired_strategy_is_no_longer_due_nor_started_by_hand(client, approver, strategy: Strategy) -> None:
    Strategy.objects.filter(pk=strategy.pk).update(created_at=dt.datetime(2026, 11, 23, 9, tzinfo=dt.UTC))
    now = dt.datetime(2026, 11, 23, 10, 45, tzinfo=dt.UTC)
    assert strategies_due(now=now) == [Strategy.objects.get(pk=strategy.pk)]
    strategy_retire(strategy=strategy, actor=approver, reason="Done.")

    assert strategies_due(now=now) == []
    client.force_login(approver)
    client.post(reverse("strategy_start", args=[strategy.pk]), follow=True)
    assert not strategy.runs.exists()


def test_retiring_needs_a_reason_and_changes_nothing_without_one(client, approver, strategy: Strategy) -> None:
    client.force_login(approver)

    answer = client.post(reverse("strategy_retire", args=[strategy.pk]), {"reason": "   "})

    assert answer.status_code == 400
    assert "the reason is required" in answer.content.decode()
    strategy.refresh_from_db()
    assert strategy.is_active and strategy.retired_at is None
    assert not AuditEvent.objects.filter(action="strategy_retired").exists()
    with pytest.raises(InputRefused):
        strategy_retire(strategy=strategy, actor=approver, reason="")


@pytest.mark.parametrize("persona", ["viewer", "outsider"])
def test_a_viewer_or_an_outsider_cannot_retire(client, request, persona: str, strategy: Strategy) -> None:
    client.force_login(request.getfixturevalue(persona))

    answer = client.post(reverse("strategy_retire", args=[strategy.pk]), {"reason": "I want to."})

    assert answer.status_code == 403
    strategy.refresh_from_db()
    assert strategy.is_active and strategy.retired_at is None


def test_a_strategy_is_retired_once(client, desk_admin, strategy: Strategy) -> None:
    strategy_retire(strategy=strategy, actor=desk_admin, reason="First.")
    client.force_login(desk_admin)

    answer = client.post(reverse("strategy_retire", args=[strategy.pk]), {"reason": "Second."})

    assert answer.status_code == 409
    strategy.refresh_from_db()
    assert strategy.retire_reason == "First."
    assert AuditEvent.objects.filter(action="strategy_retired").count() == 1
    with pytest.raises(StateConflict):
        strategy_retire(strategy=strategy, actor=desk_admin, reason="Third.")
    assert RetrospectiveReport.objects.filter(horizon=RetrospectiveReport.Horizon.TESTAMENT).count() == 1


def test_the_retire_page_shows_the_flag_and_the_form(client, approver, strategy: Strategy) -> None:
    after_weekly_review(two_weeks(strategy, "0.8000", "0.7500"))
    client.force_login(approver)

    body = client.get(reverse("strategy_retire", args=[strategy.pk])).content.decode()

    assert "Flagged 27 Nov 2026" in body and 'id="retire-form"' in body


def test_the_flag_reads_the_hard_part_never_the_narrative(strategy: Strategy) -> None:
    """A schema-valid but careless narrative says inaction rarely won; the code's figures flag."""
    report = two_weeks(strategy, "0.8000", "0.9000")
    report.narrative = {
        "what_worked": ["Inaction beat the strategy in only 10% of positions: superiority 0.1000."],
        "what_failed": [],
        "hindsight": "superiority 0.1000",
        "proposals": [],
        "confidence": 0.9,
    }
    report.save(update_fields=["narrative"])

    after_weekly_review(report)

    strategy.refresh_from_db()
    assert strategy.flagged_on == FRIDAY and "(90.00%)" in strategy.flag_reason
