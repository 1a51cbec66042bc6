"""Where the desk's events become notifications. Thin: each receiver decides only whether the event
is one a person is told about (live, not a replay; the right transition) and hands it to
``trading.home.notifications``.

The book writes its transitions as conditional updates (so a retry cannot fill or close twice),
which send no ``post_save``. A fill creates the position (``post_save`` of ``Position``); a close
by stop, target or horizon is known by its audit event (``position_closed``), written in the same
transaction as the close: the position row read here is already closed."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver

from trading.home import notifications
from trading.models import AuditEvent, PipelineRun, Position, Thesis
from trading.pipeline.signals import run_finished

logger = logging.getLogger(__name__)
_Row = TypeVar("_Row")


def _told(announce: Callable[[_Row], object], row: _Row) -> None:
    """Announce in a savepoint: a notification that cannot be written (a bug, a database hiccup)
    is logged and rolled back alone, never taking the fill, close or thesis with it."""
    try:
        with transaction.atomic():
            announce(row)
    except Exception:
        logger.exception("could not notify %s for %r", announce.__name__, row)


@receiver(post_save, sender=Thesis, dispatch_uid="home_notify_thesis_pending")
def _thesis_pending(sender: type[Thesis], *, instance: Thesis, created: bool, **kwargs: object) -> None:
    if kwargs.get("raw") or not created:
        return
    if instance.status != Thesis.Status.PENDING or instance.run.is_replay:
        return
    _told(notifications.thesis_pending_notify, instance)


@receiver(post_save, sender=Position, dispatch_uid="home_notify_position_filled")
def _position_filled(sender: type[Position], *, instance: Position, created: bool, **kwargs: object) -> None:
    if kwargs.get("raw") or not created or instance.is_replay:
        return
    _told(notifications.position_filled_notify, instance)


@receiver(post_save, sender=AuditEvent, dispatch_uid="home_notify_position_exited")
def _position_exited(sender: type[AuditEvent], *, instance: AuditEvent, created: bool, **kwargs: object) -> None:
    if kwargs.get("raw") or not created or instance.action != "position_closed":
        return
    _, _, number = instance.target.partition(" ")
    if not number.isdigit():
        return
    position = (
        Position.objects.select_related("instrument", "account")
        .filter(pk=int(number), status=Position.Status.CLOSED, is_replay=False)
        .first()
    )
    if position is not None:
        _told(notifications.position_exited_notify, position)


_DECIDED = frozenset({"thesis_approved", "thesis_rejected", "thesis_expired"})


@receiver(post_save, sender=AuditEvent, dispatch_uid="home_notify_thesis_decided")
def _thesis_decided(sender: type[AuditEvent], *, instance: AuditEvent, created: bool, **kwargs: object) -> None:
    """A thesis decided (or expired) needs nobody any more: its "needs approval" notifications are
    marked read for everyone, so the badge counts only what still waits."""
    if kwargs.get("raw") or not created or instance.action not in _DECIDED:
        return
    _, _, number = instance.target.partition(" ")
    if number.isdigit():
        _told(notifications.thesis_decided_settle, int(number))


@receiver(run_finished, dispatch_uid="home_notify_run_failed")
def _run_failed(sender: type[PipelineRun], *, run: PipelineRun, **kwargs: object) -> None:
    if run.status != PipelineRun.Status.FAILED or run.is_replay:
        return
    _told(notifications.run_failed_notify, run)
