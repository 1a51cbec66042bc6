"""Notifications: what a person should know, shown in the navigation until read and e-mailed for
the kinds they opted into.

One notification per person and event (``event_key``, unique with the user): a signal received
twice, a task retried or a receiver run again leaves one row, and one e-mail. E-mail goes after the
transaction that made the notification commits, so a rolled-back fill never announces itself."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from trading.audit import audit_record
from trading.models import Notification, NotificationPreference, PipelineRun, Position, Thesis
from vocabulary.money import format_money
from vocabulary.refusals import InputRefused

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

APPROVE_PERMISSION = "trading.approve_thesis"
KINDS = tuple(Notification.Kind.values)


class PreferenceRefused(InputRefused):
    """A preference names a kind the desk does not send (400)."""


@dataclass(frozen=True)
class Event:
    """What happened, in the words every recipient reads."""

    kind: str
    key: str
    title: str
    body: str = ""
    link: str = ""


def approver_ids() -> list[int]:
    """Every active person who may decide on a thesis: by group, by their own permission, or as a
    superuser."""
    users = get_user_model().objects.with_perm(APPROVE_PERMISSION, backend="django.contrib.auth.backends.ModelBackend")
    return sorted(users.values_list("pk", flat=True).distinct())


def notify(*, user_ids: Iterable[int], event: Event) -> list[Notification]:
    """One notification of ``event`` to each person who has none for it yet; the new ones are
    e-mailed after commit to those who opted into the kind. Returns the new rows."""
    wanted = sorted(set(user_ids))
    if not wanted:
        return []
    if event.kind not in KINDS:
        raise ValueError(f"unknown notification kind {event.kind!r}")
    already = set(
        Notification.objects.filter(user_id__in=wanted, event_key=event.key).values_list("user_id", flat=True)
    )
    rows = [
        Notification(
            user_id=user_id,
            kind=event.kind,
            title=event.title[:200],
            body=event.body,
            link=event.link[:300],
            event_key=event.key[:120],
        )
        for user_id in wanted
        if user_id not in already
    ]
    if not rows:
        return []
    # ignore_conflicts: two processes announcing the same event at once still leave one row each.
    Notification.objects.bulk_create(rows, ignore_conflicts=True)
    created = list(
        Notification.objects.filter(
            user_id__in=[row.user_id for row in rows], event_key=event.key[:120], emailed_at__isnull=True
        ).values_list("pk", flat=True)
    )
    transaction.on_commit(lambda: notifications_email(created))
    return list(Notification.objects.filter(pk__in=created))


def _opted_in(user_id: int, kind: str, preferences: dict[int, list[str]]) -> bool:
    return kind in preferences.get(user_id, [])


def notifications_email(notification_ids: Iterable[int]) -> int:
    """E-mail each of these notifications not e-mailed yet whose person opted into its kind and has
    an address; claimed row by row (``emailed_at``), so a second call sends nothing again. A
    failed send is logged and left unclaimed: the in-app notification stands either way."""
    ids = list(notification_ids)
    if not ids:
        return 0
    pending = list(Notification.objects.filter(pk__in=ids, emailed_at__isnull=True).select_related("user"))
    preferences = dict(
        NotificationPreference.objects.filter(user_id__in={n.user_id for n in pending}).values_list(
            "user_id", "email_kinds"
        )
    )
    sent = 0
    for notification in pending:
        address = notification.user.email
        if not address or not _opted_in(notification.user_id, notification.kind, preferences):
            continue
        claimed = Notification.objects.filter(pk=notification.pk, emailed_at__isnull=True).update(
            emailed_at=timezone.now()
        )
        if not claimed:
            continue
        try:
            send_mail(
                subject=f"[Trading desk] {notification.title}",
                message=_email_text(notification),
                from_email=settings.DEFAULT_FROM_EMAIL,
                recipient_list=[address],
            )
        except Exception:  # the mail server is someone else's: log it, keep the desk running
            logger.exception("could not e-mail notification %s", notification.pk)
            Notification.objects.filter(pk=notification.pk).update(emailed_at=None)
            continue
        sent += 1
    return sent


def _email_text(notification: Notification) -> str:
    lines = [notification.title]
    if notification.body:
        lines += ["", notification.body]
    if notification.link:
        base = str(getattr(settings, "DESK_BASE_URL", "")).rstrip("/")
        lines += ["", f"{base}{notification.link}"]
    lines += ["", "You get this e-mail because you chose it on the desk's notifications page."]
    return "\n".join(lines)


def notification_mark_read(*, user: User, notification_id: int) -> bool:
    """Mark one of the person's own notifications read; someone else's is never touched."""
    return bool(
        Notification.objects.filter(pk=notification_id, user=user, read_at__isnull=True).update(read_at=timezone.now())
    )


def notifications_mark_all_read(*, user: User) -> int:
    return Notification.objects.filter(user=user, read_at__isnull=True).update(read_at=timezone.now())


def email_kinds_of(user: User) -> list[str]:
    preference = NotificationPreference.objects.filter(user=user).first()
    return list(preference.email_kinds) if preference else []


def notification_preference_set(*, user: User, email_kinds: Iterable[str]) -> NotificationPreference:
    """Which kinds the person wants by e-mail (the rest stay in the desk only)."""
    kinds = list(dict.fromkeys(email_kinds))
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown:
        raise PreferenceRefused(f"no such kind of notification: {', '.join(unknown)}")
    chosen = [kind for kind in KINDS if kind in kinds]
    with transaction.atomic():
        preference, _ = NotificationPreference.objects.update_or_create(user=user, defaults={"email_kinds": chosen})
        audit_record(
            actor=user,
            action="notification_preference_set",
            target=f"user {user.pk}",
            details={"email_kinds": chosen, "email": bool(user.email)},
        )
    return preference


# --- the desk's events, in words ------------------------------------------------------------------

EXIT_TITLES = {"stop": "Stopped out", "target": "Target hit", "horizon": "Horizon reached"}


def thesis_decided_settle(thesis_id: int) -> int:
    """Mark every unread "needs approval" notification of a decided thesis read; how many."""
    return Notification.objects.filter(
        event_key=f"thesis:{thesis_id}:pending", kind=Notification.Kind.NEEDS_APPROVAL, read_at__isnull=True
    ).update(read_at=timezone.now())


def thesis_pending_notify(thesis: Thesis) -> list[Notification]:
    """A thesis is waiting for a decision: every approver is told."""
    currency = thesis.account.currency
    expires = f" Decide before {timezone.localtime(thesis.expires_at):%d %b %Y %H:%M}." if thesis.expires_at else ""
    event = Event(
        kind=Notification.Kind.NEEDS_APPROVAL,
        key=f"thesis:{thesis.pk}:pending",
        title=f"{thesis.direction} {thesis.instrument.symbol} needs approval",
        body=(
            f"Conviction {thesis.conviction:.2f}, {format_money(thesis.risk_amount, currency)} at risk on "
            f"{thesis.quantity} shares: entry {format_money(thesis.entry, thesis.instrument.currency)}, stop "
            f"{format_money(thesis.stop, thesis.instrument.currency)}, target "
            f"{format_money(thesis.target, thesis.instrument.currency)}.{expires}"
        ),
        link=reverse("thesis_detail", args=[thesis.pk]),
    )
    return notify(user_ids=approver_ids(), event=event)


def position_filled_notify(position: Position) -> list[Notification]:
    """An order filled and the position is open: the approvers are told."""
    order = position.order
    currency = position.instrument.currency
    event = Event(
        kind=Notification.Kind.FILLED,
        key=f"order:{order.pk}:filled",
        title=f"Filled: {order.side} {position.quantity} {position.instrument.symbol} at "
        f"{format_money(position.entry_price, currency)}",
        body=(
            f"{position.direction} opened on {position.opened_on:%d %b %Y}, costs "
            f"{format_money(position.entry_costs, position.account.currency)}; stop "
            f"{format_money(position.stop, currency)}, target {format_money(position.target, currency)}."
        ),
        link=reverse("thesis_detail", args=[position.thesis_id]),
    )
    return notify(user_ids=approver_ids(), event=event)


def position_exited_notify(position: Position) -> list[Notification]:
    """A position closed by its stop, its target or its horizon (not by hand): the approvers are told."""
    if position.exit_reason not in EXIT_TITLES:
        return []
    currency = position.instrument.currency
    realised = position.realised_pnl if position.realised_pnl is not None else Decimal(0)
    event = Event(
        kind=Notification.Kind.EXITED,
        key=f"position:{position.pk}:exited",
        title=f"{EXIT_TITLES[position.exit_reason]}: {position.direction} {position.instrument.symbol} at "
        f"{format_money(position.exit_price or Decimal(0), currency)}",
        body=(
            f"Closed on {position.closed_on:%d %b %Y} after entry at {format_money(position.entry_price, currency)}; "
            f"realised {format_money(realised, position.account.currency)} net of costs."
        ),
        link=reverse("thesis_detail", args=[position.thesis_id]),
    )
    return notify(user_ids=approver_ids(), event=event)


def run_failed_notify(run: PipelineRun) -> list[Notification]:
    """A live run failed: the person who started it is told, or the approvers when nobody did (a
    schedule started it)."""
    starter = run.created_by
    recipients = [starter.pk] if starter is not None and starter.is_active else approver_ids()
    reason = run.failure_reason.strip() or "no reason was recorded"
    event = Event(
        kind=Notification.Kind.RUN_FAILED,
        key=f"run:{run.pk}:failed",
        title=f"Run {run.pk} failed: {run.instrument.symbol} as of {run.as_of:%d %b %Y}",
        body=reason[:2000],
        link=reverse("run_detail", args=[run.pk]),
    )
    return notify(user_ids=recipients, event=event)
