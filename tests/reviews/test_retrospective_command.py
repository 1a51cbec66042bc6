"""``manage.py review`` runs a retrospective by hand under the schedule's key, so running it again
(or the beat running it later) shows the same report instead of writing a second one."""

from __future__ import annotations

import datetime as dt
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from reviews.models import RetrospectiveReport
from tests.factories import position_on_path, trending
from trading.book.accounts import default_account

pytestmark = pytest.mark.django_db


def review(*args: str) -> str:
    out = StringIO()
    call_command("review", *args, stdout=out)
    return out.getvalue()


def test_a_weekly_review_by_hand_is_the_schedules_review() -> None:
    account = default_account()
    winner = position_on_path(trending(100, 30, "1"), account=account)
    assert winner.closed_on is not None
    end = winner.closed_on

    printed = review("--horizon", "weekly", "--account", account.name, "--end", end.isoformat())
    again = review("--horizon", "weekly", "--end", end.isoformat())

    report = RetrospectiveReport.objects.get()
    assert report.trigger_key == f"weekly:{account.pk}:{end.isoformat()}"
    assert report.period_start == end - dt.timedelta(days=6) and report.status == "ready"
    assert f"Weekly review #{report.pk}" in printed and "ready" in printed
    assert f"net {report.hard['attribution']['net']} INR" in printed
    assert winner.instrument.symbol in printed  # the narrative's points are printed
    assert f"#{report.pk}" in again and RetrospectiveReport.objects.count() == 1


def test_a_position_review_by_hand_and_its_refusals() -> None:
    position = position_on_path(trending(100, 30, "-1"), account=default_account())

    printed = review("--horizon", "position", "--position", str(position.pk), "--json")

    assert f"[position:{position.pk}]" in printed and '"lifecycle"' in printed
    with pytest.raises(CommandError, match="needs --position"):
        review("--horizon", "loss")
    with pytest.raises(CommandError, match="no account named 'nobody'"):
        review("--horizon", "daily", "--account", "nobody", "--end", "2025-01-10")
    with pytest.raises(CommandError, match="a testament needs --strategy"):
        review("--horizon", "testament")
