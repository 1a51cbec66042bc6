"""The home page: what needs a person now, from stored rows, and the navigation's badges."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from tests.conftest import make_roomy
from tests.factories import (
    InstrumentFactory,
    OrderFactory,
    PipelineRunFactory,
    ThesisFactory,
    position_on_path,
    trending,
)
from trading.book.accounts import default_account, replay_account
from trading.home import selectors
from trading.models import DailyBar, PipelineRun, Position, PositionMark, Strategy, StrategyDirective, StrategyRun
from vocabulary.money import format_money

pytestmark = pytest.mark.django_db

IST = ZoneInfo("Asia/Kolkata")


def _home(client, user) -> str:
    client.force_login(user)
    response = client.get(reverse("dashboard"))
    assert response.status_code == 200
    return response.content.decode()


def _figures(client, user) -> dict:
    client.force_login(user)
    response = client.get(reverse("home_figures"))
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    return response.json()


def _section(body: str, element_id: str) -> str:
    start = body.index(f'id="{element_id}"')
    return body[start : body.index("</section>", start)]


def test_the_home_lists_pending_theses_with_risk_and_a_link_and_leaves_out_replays_and_expired(client, viewer):
    live = ThesisFactory(account=default_account(), conviction=Decimal("0.7200"))
    ThesisFactory(run__is_replay=True)
    ThesisFactory(expires_at=timezone.now() - dt.timedelta(minutes=1))  # past its window, not yet swept
    ThesisFactory(approved=True)

    pending = _section(_home(client, viewer), "home-pending")
    figures = _figures(client, viewer)

    assert 'data-home="pending_count">1<' in pending
    assert f'href="{reverse("thesis_detail", args=[live.pk])}"' in pending
    assert f"LONG {live.instrument.symbol}" in pending and "conviction 0.72" in pending
    assert f"{format_money(live.risk_amount, 'INR')} at risk" in pending
    assert figures["pending_count"] == 1
    assert figures["pending"] == [
        {
            "label": f"LONG {live.instrument.symbol}",
            "conviction": "0.72",
            "at_risk": format_money(live.risk_amount, "INR"),
            "link": reverse("thesis_detail", args=[live.pk]),
        }
    ]


@pytest.fixture
def live_book(db):
    """The live account with one position still open after a climb, one stopped out on the last
    session, and a replay's winner that must not count."""
    account = make_roomy(default_account())
    held = position_on_path(trending(100, 12, "0.8"), account=account)
    start = held.instrument.bars.order_by("date").first().date
    # Same sessions; the last one gaps through the stop.
    stopped = position_on_path(
        [100, 100.5, 101, 101.5, 102, 102.5, 103, 103.5, 104, 104.5, 105, 80], account=account, start=start
    )
    position_on_path(trending(100, 30, "1"), account=replay_account("some mandate"))
    assert held.status == Position.Status.OPEN and stopped.exit_reason == "stop"
    return account, held, stopped


def test_total_pnl_is_realised_plus_unrealised_of_the_live_book(client, viewer, live_book):
    _, held, stopped = live_book

    figures = _figures(client, viewer)

    total = stopped.realised_pnl + held.unrealised_pnl
    assert figures["pnl_total"] == format_money(total, "INR")
    assert figures["pnl_realised"] == format_money(stopped.realised_pnl, "INR")
    assert figures["pnl_unrealised"] == format_money(held.unrealised_pnl, "INR")
    assert figures["pnl_total_sign"] == (1 if total > 0 else -1)
    assert figures["open_count"] == 1


def test_todays_pnl_is_the_change_since_the_previous_sessions_marks(client, viewer, live_book):
    _, held, stopped = live_book
    last, previous = PositionMark.objects.filter(position=held).order_by("-date")[:2]
    stopped_before = PositionMark.objects.get(position=stopped, date=previous.date)

    figures = _figures(client, viewer)
    body = _section(_home(client, viewer), "home-pnl")

    # The open one moved from its previous mark to its last; the stopped one from its mark to its loss.
    today = (last.unrealised_pnl - previous.unrealised_pnl) + (stopped.realised_pnl - stopped_before.unrealised_pnl)
    assert today < 0
    assert figures["pnl_today"] == format_money(today, "INR") and figures["pnl_today_sign"] == -1
    assert format_money(today, "INR") in body
    assert f"{previous.date:%d %b %Y} to {last.date:%d %b %Y}" in body


def test_an_empty_book_says_so_without_figures_it_does_not_have(client, viewer):
    figures = _figures(client, viewer)
    body = _home(client, viewer)

    assert figures["pnl_today"] == "—" and figures["pnl_total"] == format_money(Decimal(0), "INR")
    assert "no session marked yet" in body and "Nothing waits for a decision." in body
    assert 'id="stale-banner"' in body and "is-hidden" in body


def test_open_positions_and_working_orders_are_counted_and_listed(client, viewer, live_book):
    account, held, _ = live_book
    order = OrderFactory(thesis__account=account)

    body = _home(client, viewer)

    positions = _section(body, "home-positions")
    orders = _section(body, "home-orders")
    assert 'data-home="open_count">1<' in positions and f"LONG {held.quantity} {held.instrument.symbol}" in positions
    assert format_money(held.unrealised_pnl, "INR") in positions
    assert 'data-home="working_count">1<' in orders and f"BUY {order.quantity} {order.instrument.symbol}" in orders


def test_runs_in_progress_and_recent_failures_are_shown_and_replays_left_out(client, viewer):
    running = PipelineRunFactory(status=PipelineRun.Status.RUNNING)
    failed = PipelineRunFactory(status=PipelineRun.Status.FAILED, failure_reason="the provider answered 503")
    PipelineRunFactory(status=PipelineRun.Status.FAILED, is_replay=True, failure_reason="replayed failure")
    old = PipelineRunFactory(status=PipelineRun.Status.FAILED, failure_reason="last month's failure")
    PipelineRun.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=8))

    runs = _section(_home(client, viewer), "home-runs")

    assert 'data-home="running_count">1<' in runs and f"Run {running.pk} · {running.instrument.symbol}" in runs
    assert 'data-home="failed_count">1<' in runs and "the provider answered 503" in runs
    assert f'href="{reverse("run_detail", args=[failed.pk])}"' in runs
    assert "replayed failure" not in runs and "last month" not in runs


def test_strategies_held_by_a_gate_or_flagged_are_named_with_the_reason(client, viewer):
    gated = Strategy.objects.create(name="Gated momentum", philosophy="p")
    StrategyDirective.objects.create(
        strategy=gated,
        source_ref=1,
        sequence=3,
        severity=StrategyDirective.Severity.DIRECTIVE,
        text="stop",
        blocking=[{"id": "a1", "kind": "text", "text": "attest the sizing fix"}],
        opened_on=dt.date(2026, 11, 20),
    )
    held = Strategy.objects.create(name="Held value", philosophy="p")
    StrategyRun.objects.create(strategy=held, as_of=dt.date(2026, 11, 19), blocked_by="an old gate")
    StrategyRun.objects.create(strategy=held, as_of=dt.date(2026, 11, 20), blocked_by="required action 7 open")
    cleared = Strategy.objects.create(name="Cleared", philosophy="p")
    StrategyRun.objects.create(strategy=cleared, as_of=dt.date(2026, 11, 19), blocked_by="held then")
    StrategyRun.objects.create(strategy=cleared, as_of=dt.date(2026, 11, 20))
    Strategy.objects.create(
        name="Flagged swing", philosophy="p", flagged_on=dt.date(2026, 11, 21), flag_reason="win rate 20% over 10"
    )
    Strategy.objects.create(name="Quiet", philosophy="p")

    section = _section(_home(client, viewer), "home-strategies")

    assert "Gated momentum" in section and "directive #3: attest the sizing fix" in section
    assert "Held value" in section and "required action 7 open" in section and "an old gate" not in section
    assert "Flagged swing" in section and "flagged 21 Nov 2026" in section and "win rate 20% over 10" in section
    assert "Cleared" not in section and "Quiet" not in section


def _bar(instrument, day: dt.date) -> None:
    DailyBar.objects.create(instrument=instrument, date=day, open=100, high=101, low=99, close=100, volume=1_000)


def test_the_banner_counts_sessions_on_the_exchange_calendar_not_weekdays(client, viewer, monkeypatch):
    instrument = InstrumentFactory(exchange="NSE")
    _bar(instrument, dt.date(2026, 11, 19))
    after_the_close = dt.datetime(2026, 11, 26, 17, 0, tzinfo=IST)
    monkeypatch.setattr(selectors.timezone, "now", lambda: after_the_close)

    body = _home(client, viewer)

    # 20, 23, 25 and 26 November: the 24th is an NSE holiday (a weekday count would say 5).
    assert "Latest bar 2026-11-19 is 4 sessions old (last session 2026-11-26) on NSE" in body
    assert 'class="stale-banner" id="stale-banner"' in body
    assert _figures(client, viewer)["stale"] == [
        "Latest bar 2026-11-19 is 4 sessions old (last session 2026-11-26) on NSE"
    ]


def test_the_health_strip_says_degraded_when_the_bars_are_stale_as_the_health_page_does(client, viewer, monkeypatch):
    instrument = InstrumentFactory(exchange="NSE")
    _bar(instrument, dt.date(2026, 11, 19))
    monkeypatch.setattr(selectors.timezone, "now", lambda: dt.datetime(2026, 11, 26, 17, 0, tzinfo=IST))

    body = _home(client, viewer)
    strip = body[body.index('id="health-strip"') :]
    strip = strip[: strip.index("</p>")]

    assert "Desk degraded" in strip and "Desk ok" not in strip
    assert 'data-check="market_data"' in strip and "market data degraded" in strip
    assert "market data" in client.get(reverse("health")).content.decode()


def test_no_banner_when_the_latest_bar_is_the_last_completed_session(viewer, client, monkeypatch):
    instrument = InstrumentFactory(exchange="NSE")
    _bar(instrument, dt.date(2026, 11, 25))
    during_the_session = dt.datetime(2026, 11, 26, 11, 0, tzinfo=IST)  # the 26th has not closed yet
    monkeypatch.setattr(selectors.timezone, "now", lambda: during_the_session)

    assert selectors.stale_exchanges() == []
    assert _figures(client, viewer)["stale"] == []


def test_the_home_reads_a_big_book_in_the_same_queries_as_a_small_one(client, viewer):
    client.force_login(viewer)
    account = default_account()

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(reverse("dashboard")).status_code == 200
        return len(queries)

    def add_rows(n: int) -> None:
        for i in range(n):
            ThesisFactory(account=account)
            OrderFactory(thesis__account=account)
            PipelineRunFactory(status=PipelineRun.Status.FAILED)
            PipelineRunFactory(status=PipelineRun.Status.RUNNING)
            Strategy.objects.create(name=f"flagged {n}-{i}", philosophy="p", flagged_on=dt.date(2026, 11, 2))

    add_rows(1)
    small = count()
    add_rows(6)
    assert count() == small


def test_the_nav_shows_an_approver_the_theses_to_decide_on_every_page(client, approver, viewer):
    ThesisFactory()
    ThesisFactory()
    client.force_login(approver)

    page = client.get(reverse("run_list")).content.decode()

    assert 'id="nav-pending"' in page and 'data-nav="pending">2<' in page
    assert 'data-nav="unread">2<' in page and f'href="{reverse("notification_list")}"' in page
    client.force_login(viewer)
    seen = client.get(reverse("run_list")).content.decode()
    assert 'id="nav-pending"' not in seen and 'data-nav="unread">0<' in seen


def test_the_nav_badges_cost_one_query_and_follow_the_auth_backends_rule(approver, viewer, desk_admin, outsider):
    from django.contrib.auth.models import Permission
    from django.test import RequestFactory

    from trading.home.context import desk_nav

    ThesisFactory()

    def counts(user):
        request = RequestFactory().get("/")
        request.user = user
        with CaptureQueriesContext(connection) as queries:
            badges = desk_nav(request)["desk_nav"]
            found = (badges.pending, badges.unread)
        assert len(queries) == 1
        return found

    assert counts(approver) == (1, 1) and counts(desk_admin) == (1, 1)
    assert counts(viewer) == (None, 0) and counts(outsider) == (None, 0)
    outsider.user_permissions.add(Permission.objects.get(codename="approve_thesis"))
    assert counts(outsider) == (1, 0) and outsider.has_perm("trading.approve_thesis")
    approver.is_active = False
    approver.save()
    assert counts(approver)[0] is None and not approver.has_perm("trading.approve_thesis")


def test_the_nav_badges_count_what_the_queue_and_the_notifications_page_count(approver):
    """The badges' statement is written out; it counts exactly what ``pending_theses`` and the
    unread notifications count, whatever mix of theses and notifications is stored."""
    from django.test import RequestFactory

    from trading.home.context import desk_nav
    from trading.models import Notification, Thesis

    now = timezone.now()
    ThesisFactory()
    ThesisFactory(expires_at=now + dt.timedelta(hours=2))
    ThesisFactory(expires_at=now - dt.timedelta(minutes=1))  # past its window: not counted
    ThesisFactory(expires_at=None)
    ThesisFactory(risk_approved=False, status=Thesis.Status.REJECTED_BY_RISK)
    ThesisFactory(status=Thesis.Status.REJECTED)
    ThesisFactory(run=PipelineRunFactory(is_replay=True))  # a replay's: never on the live desk
    Notification.objects.filter(user=approver).update(read_at=now)
    Notification.objects.create(user=approver, kind="filled", title="unread", event_key="test:unread")
    Notification.objects.create(user=approver, kind="filled", title="read", event_key="test:read", read_at=now)

    request = RequestFactory().get("/")
    request.user = approver
    badges = desk_nav(request)["desk_nav"]

    assert badges.pending == selectors.pending_theses().count() == 3
    assert badges.unread == Notification.objects.filter(user=approver, read_at__isnull=True).count() == 1


def test_the_login_page_has_no_badges(client):
    assert "nav-badges" not in client.get(reverse("login")).content.decode()


def test_the_instrument_list_moved_to_instruments(client, viewer, instrument_with_bars):
    client.force_login(viewer)

    body = client.get(reverse("instrument_list")).content.decode()

    assert reverse("instrument_list") == "/instruments/" and reverse("dashboard") == "/"
    assert 'id="instruments"' in body and "Reliance Industries" in body
    assert f'href="{reverse("instrument_list")}"' in client.get(reverse("dashboard")).content.decode()


def test_the_home_keeps_the_health_strip(client, viewer):
    assert 'id="health-strip"' in _home(client, viewer)
