"""Notifications: who is told what when a thesis waits, an order fills, a position exits or a run
fails; once per person and event; e-mailed after commit only to those who opted in."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.core import mail
from django.urls import reverse

from tests.factories import OrderFactory, PipelineRunFactory, ThesisFactory, position_on_path, trending
from trading.book import broker
from trading.book.accounts import default_account
from trading.book.approvals import thesis_approve
from trading.home import notifications
from trading.home.notifications import Event, notify
from trading.models import DailyBar, Notification, NotificationPreference, PipelineRun, Position, Thesis
from trading.pipeline.signals import run_finished
from vocabulary.money import format_money

pytestmark = pytest.mark.django_db


def _kinds(user) -> list[str]:
    return list(Notification.objects.filter(user=user).values_list("kind", flat=True))


def _next_bar(instrument, *, open_: Decimal, high: Decimal, low: Decimal, close: Decimal) -> DailyBar:
    last = instrument.bars.latest("date")
    day = last.date + dt.timedelta(days=3 if last.date.weekday() == 4 else 1)
    return DailyBar.objects.create(
        instrument=instrument, date=day, open=open_, high=high, low=low, close=close, volume=100_000
    )


# --- needs approval -------------------------------------------------------------------------------


def test_a_thesis_from_a_real_run_tells_every_approver_and_not_the_viewer(approver, desk_admin, viewer, pending_thesis):
    for person in (approver, desk_admin):
        note = Notification.objects.get(user=person)
        assert note.kind == Notification.Kind.NEEDS_APPROVAL and note.event_key == f"thesis:{pending_thesis.pk}:pending"
        assert note.title == f"{pending_thesis.direction} {pending_thesis.instrument.symbol} needs approval"
        assert format_money(pending_thesis.risk_amount, "INR") in note.body
        assert note.link == reverse("thesis_detail", args=[pending_thesis.pk]) and note.read_at is None
    assert not Notification.objects.filter(user=viewer).exists()


def test_a_decided_thesis_no_longer_waits_in_anybodys_notifications(approver, desk_admin, pending_thesis):
    from trading.book.approvals import thesis_reject

    assert Notification.objects.filter(read_at__isnull=True).count() == 2

    thesis_reject(thesis=pending_thesis, user=approver, comment="not convinced by the volume")

    # Both approvers' notifications are settled, not only the one who decided.
    assert not Notification.objects.filter(read_at__isnull=True, kind=Notification.Kind.NEEDS_APPROVAL).exists()
    assert Notification.objects.filter(user=desk_admin).get().read_at is not None


def test_the_same_event_announced_twice_leaves_one_notification_each(approver, desk_admin):
    thesis = ThesisFactory(account=default_account())

    again = notifications.thesis_pending_notify(thesis)

    assert again == []
    assert Notification.objects.filter(event_key=f"thesis:{thesis.pk}:pending").count() == 2


def test_a_replays_thesis_and_a_risk_rejected_one_tell_nobody(approver):
    ThesisFactory(run__is_replay=True)
    ThesisFactory(status=Thesis.Status.REJECTED_BY_RISK, risk_approved=False)

    assert not Notification.objects.exists()


def test_a_deactivated_approver_is_not_told(approver, desk_admin):
    approver.is_active = False
    approver.save()

    ThesisFactory()

    assert _kinds(approver) == [] and _kinds(desk_admin) == [Notification.Kind.NEEDS_APPROVAL]


# --- filled and exited, through the real broker ----------------------------------------------------


@pytest.fixture
def filled(approver, viewer, pending_thesis, settings):
    """The real run's thesis approved and filled by the broker at the next session's open."""
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open", "SLIPPAGE_BPS": "0"}
    close = pending_thesis.instrument.bars.latest("date").close
    day = _next_bar(pending_thesis.instrument, open_=close, high=close + 1, low=close - 1, close=close)
    order = thesis_approve(thesis=pending_thesis, user=approver)
    position = broker.order_try_fill(order=order, as_of=day.date)
    assert position is not None
    return position


def test_a_fill_tells_the_approvers_what_filled_at_what_price(filled, approver, viewer):
    note = Notification.objects.get(user=approver, kind=Notification.Kind.FILLED)

    assert note.event_key == f"order:{filled.order.pk}:filled"
    assert note.title == (
        f"Filled: {filled.order.side} {filled.quantity} {filled.instrument.symbol} at "
        f"{format_money(filled.entry_price, 'INR')}"
    )
    assert _kinds(viewer) == []


def test_a_stop_hit_by_the_daily_pass_tells_the_approvers_it_stopped_out(filled, approver):
    stop = filled.stop
    long = filled.direction == "LONG"
    gap = stop - 5 if long else stop + 5  # a gap through the stop: the pass closes it at the open
    bar = _next_bar(
        filled.instrument,
        open_=gap,
        high=(gap + 1) if long else (gap + 2),
        low=(gap - 2) if long else (gap - 1),
        close=gap,
    )

    broker.positions_mark(as_of=bar.date, on_close=lambda _position: None)

    filled.refresh_from_db()
    assert filled.status == Position.Status.CLOSED and filled.exit_reason == "stop"
    note = Notification.objects.get(user=approver, kind=Notification.Kind.EXITED)
    assert note.title.startswith(f"Stopped out: {filled.direction} {filled.instrument.symbol} at ")
    assert format_money(filled.realised_pnl, "INR") in note.body
    assert note.event_key == f"position:{filled.pk}:exited"


def test_a_target_hit_says_so_and_a_close_by_hand_is_not_announced(approver, roomy_account):
    winner = position_on_path(trending(100, 30, "1"), account=roomy_account)
    by_hand = position_on_path(trending(100, 5, "0.2"), account=roomy_account, close_by_hand="taking it off")

    assert winner.exit_reason == "target" and by_hand.exit_reason == "manual"
    titles = list(
        Notification.objects.filter(user=approver, kind=Notification.Kind.EXITED).values_list("title", flat=True)
    )
    assert len(titles) == 1 and titles[0].startswith(f"Target hit: LONG {winner.instrument.symbol}")


def test_a_replays_fill_and_exit_tell_nobody(approver):
    order = OrderFactory(thesis__run__is_replay=True, status="filled", fill_price=Decimal("100"))
    assert not Notification.objects.exists()  # the replay's thesis told nobody either

    position = Position.objects.create(
        account=order.account,
        order=order,
        thesis=order.thesis,
        instrument=order.instrument,
        direction="LONG",
        quantity=order.quantity,
        entry_price=Decimal("100"),
        entry_costs=Decimal("0"),
        opened_on=order.placed_on,
        stop=order.thesis.stop,
        target=order.thesis.target,
        horizon_sessions=10,
        is_replay=True,
    )
    broker.position_close(
        position=position, price=order.thesis.target, on=order.placed_on, reason="target", on_close=lambda _p: None
    )

    assert not Notification.objects.exists()


# --- run failed -----------------------------------------------------------------------------------


def test_a_failed_run_tells_the_person_who_started_it_only(approver, viewer):
    run = PipelineRunFactory(
        status=PipelineRun.Status.FAILED, failure_reason="the provider timed out", created_by=viewer
    )

    run_finished.send(sender=PipelineRun, run=run)
    run_finished.send(sender=PipelineRun, run=run)  # a retried task announces it again

    note = Notification.objects.get(user=viewer)
    assert note.kind == Notification.Kind.RUN_FAILED and note.body == "the provider timed out"
    assert note.link == reverse("run_detail", args=[run.pk])
    assert _kinds(approver) == []


def test_a_scheduled_run_that_fails_tells_the_approvers_and_a_finished_or_replay_run_nobody(approver, viewer):
    failed = PipelineRunFactory(status=PipelineRun.Status.FAILED, failure_reason="no bars")
    fine = PipelineRunFactory(status=PipelineRun.Status.COMPLETED)
    replay = PipelineRunFactory(status=PipelineRun.Status.FAILED, is_replay=True)

    for run in (failed, fine, replay):
        run_finished.send(sender=PipelineRun, run=run)

    assert _kinds(approver) == [Notification.Kind.RUN_FAILED] and _kinds(viewer) == []


# --- e-mail ----------------------------------------------------------------------------------------


def _opt_in(user, *kinds: str, email: str = "") -> None:
    if email:
        user.email = email
        user.save()
    notifications.notification_preference_set(user=user, email_kinds=kinds)


def test_it_emails_after_commit_only_those_who_opted_into_the_kind_and_have_an_address(
    approver, desk_admin, django_capture_on_commit_callbacks
):
    _opt_in(approver, Notification.Kind.NEEDS_APPROVAL, email="arjun@example.org")
    _opt_in(desk_admin, Notification.Kind.FILLED, email="asha@example.org")  # another kind

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        thesis = ThesisFactory()
    assert mail.outbox == []  # nothing before the commit
    for callback in callbacks:
        callback()

    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["arjun@example.org"] and thesis.instrument.symbol in message.subject
    assert reverse("thesis_detail", args=[thesis.pk]) in message.body
    assert Notification.objects.get(user=approver).emailed_at is not None
    assert Notification.objects.get(user=desk_admin).emailed_at is None


def test_an_opted_in_person_without_an_address_gets_no_mail_and_nothing_is_sent_twice(
    approver, desk_admin, django_capture_on_commit_callbacks
):
    _opt_in(approver, Notification.Kind.RUN_FAILED)  # no address
    _opt_in(desk_admin, Notification.Kind.RUN_FAILED, email="asha@example.org")

    with django_capture_on_commit_callbacks(execute=True):
        notify(
            user_ids=[approver.pk, desk_admin.pk],
            event=Event(kind=Notification.Kind.RUN_FAILED, key="run:99:failed", title="Run 99 failed"),
        )
    again = notifications.notifications_email(Notification.objects.values_list("pk", flat=True))

    assert [m.to for m in mail.outbox] == [["asha@example.org"]] and again == 0


def test_a_preference_for_an_unknown_kind_is_refused_and_nothing_changes(approver):
    with pytest.raises(notifications.PreferenceRefused, match="no such kind of notification: everything"):
        notifications.notification_preference_set(user=approver, email_kinds=["filled", "everything"])

    assert not NotificationPreference.objects.filter(user=approver).exists()


# --- the notifications page -----------------------------------------------------------------------


def _note(user, key: str, **fields) -> Notification:
    return Notification.objects.create(
        user=user,
        kind=fields.pop("kind", Notification.Kind.FILLED),
        title=fields.pop("title", key),
        event_key=key,
        **fields,
    )


def test_the_page_lists_only_the_persons_own_notifications_and_marks_them_read(client, approver, viewer):
    mine = _note(approver, "order:1:filled", title="Filled: BUY 10 MINE")
    _note(viewer, "order:2:filled", title="Filled: BUY 10 THEIRS")
    client.force_login(approver)

    body = client.get(reverse("notification_list")).content.decode()
    assert "Filled: BUY 10 MINE" in body and "THEIRS" not in body and "1 unread" in body

    response = client.post(reverse("notification_read", args=[mine.pk]))
    assert response.status_code == 302
    mine.refresh_from_db()
    assert mine.read_at is not None


def test_a_person_cannot_mark_someone_elses_notification_read(client, approver, viewer):
    theirs = _note(viewer, "order:2:filled")
    client.force_login(approver)

    client.post(reverse("notification_read", args=[theirs.pk]))

    theirs.refresh_from_db()
    assert theirs.read_at is None


def test_mark_all_read_reads_every_one_of_mine_and_the_nav_count_drops(client, approver, viewer):
    for n in range(3):
        _note(approver, f"order:{n}:filled")
    theirs = _note(viewer, "order:9:filled")
    client.force_login(approver)
    before = client.get(reverse("portfolio")).content.decode()
    assert 'data-nav="unread">3<' in before

    client.post(reverse("notification_read_all"))

    assert not Notification.objects.filter(user=approver, read_at__isnull=True).exists()
    theirs.refresh_from_db()
    assert theirs.read_at is None
    assert 'data-nav="unread">0<' in client.get(reverse("portfolio")).content.decode()


def test_the_preferences_form_saves_the_kinds_to_email(client, approver):
    client.force_login(approver)

    response = client.post(reverse("notification_preferences"), {"email_kinds": ["filled", "exited"]}, follow=True)

    assert NotificationPreference.objects.get(user=approver).email_kinds == ["filled", "exited"]
    assert "no e-mail address" in response.content.decode()
    forged = client.post(reverse("notification_preferences"), {"email_kinds": ["<b>all</b>"]}, follow=True)
    assert NotificationPreference.objects.get(user=approver).email_kinds == ["filled", "exited"]
    assert "&lt;b&gt;all&lt;/b&gt;" in forged.content.decode()


def test_a_hostile_failure_reason_is_shown_as_text(client, viewer):
    hostile = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    run = PipelineRunFactory(status=PipelineRun.Status.FAILED, failure_reason=hostile, created_by=viewer)
    run_finished.send(sender=PipelineRun, run=run)
    client.force_login(viewer)

    notes = client.get(reverse("notification_list")).content.decode()
    home = client.get(reverse("dashboard")).content.decode()

    for body in (notes, home):
        assert "<script>alert(2)" not in body and "<img src=x" not in body
        assert "&lt;script&gt;alert(2)" in body


def test_the_notification_pages_need_a_login(client):
    for url in (reverse("notification_list"), reverse("home_figures")):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_a_notification_that_cannot_be_written_never_takes_the_thesis_with_it(approver, monkeypatch):
    def broken(thesis):
        Notification.objects.create(user=approver, kind="filled", title="x", event_key="dup")
        Notification.objects.create(user=approver, kind="filled", title="x", event_key="dup")  # IntegrityError

    monkeypatch.setattr(notifications, "thesis_pending_notify", broken)

    thesis = ThesisFactory()

    assert Thesis.objects.filter(pk=thesis.pk, status=Thesis.Status.PENDING).exists()
    assert not Notification.objects.exists()  # the savepoint rolled back the half-written one
