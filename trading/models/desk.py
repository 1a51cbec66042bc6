"""Desk-wide records: the audit trail, the desk's own permissions, and the heartbeats of its
moving parts."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    """Who did what, when and why. Written by services, never edited."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    actor_label = models.CharField(max_length=150, help_text="username, or the command/task that acted")
    action = models.CharField(max_length=64, db_index=True)
    target = models.CharField(max_length=200, blank=True)
    reason = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor_label} {self.action} {self.target}"


class DeskPermission(models.Model):
    """Holder of the desk's own permissions (no table). Later issues attach the approval flow."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [
            ("approve_thesis", "Can approve or reject a trade thesis"),
            ("start_run", "Can start pipeline and strategy runs"),
            ("import_market_data", "Can import market data"),
        ]

    def __str__(self) -> str:
        return "desk permissions"


class Heartbeat(models.Model):
    """When a background process was last seen: the scheduler's minutely tick (run by a worker, so
    it also proves beat, broker and a worker all move) and each worker that answered the tick's
    ping. The health page reads their ages; a stale tick means nothing scheduled is running."""

    class Kind(models.TextChoices):
        SCHEDULER = "scheduler"
        WORKER = "worker"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    name = models.CharField(max_length=255, help_text="the worker's hostname; 'beat' for the scheduler")
    seen_at = models.DateTimeField()

    class Meta:
        ordering = ["kind", "name"]
        constraints = [models.UniqueConstraint(fields=["kind", "name"], name="heartbeat_once_per_process")]

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}@{self.seen_at:%Y-%m-%d %H:%M:%S}"


class Notification(models.Model):
    """Something a person should know: a thesis waiting for them, a fill, an exit, a failed run.
    Shown in the desk's navigation until read; e-mailed too when the person opted into its kind."""

    class Kind(models.TextChoices):
        NEEDS_APPROVAL = "needs_approval", "needs approval"
        FILLED = "filled", "filled"
        EXITED = "exited", "stopped out / target hit"
        RUN_FAILED = "run_failed", "run failed"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications")
    kind = models.CharField(max_length=24, choices=Kind.choices)
    title = models.CharField(max_length=200)
    body = models.TextField(blank=True)
    link = models.CharField(max_length=300, blank=True, help_text="the desk page it is about")
    event_key = models.CharField(
        max_length=120, help_text="what it is about, e.g. 'thesis:12:pending': one notification per user and event"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    read_at = models.DateTimeField(null=True, blank=True)
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["user", "event_key"], name="notification_once_per_event")]
        indexes = [models.Index(fields=["user", "read_at"], name="notification_unread")]

    def __str__(self) -> str:
        return f"{self.user_id} {self.kind} {self.title}"


class NotificationPreference(models.Model):
    """Which kinds of notification a person also wants by e-mail (none by default)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preference"
    )
    email_kinds = models.JSONField(default=list, blank=True, help_text="Notification.Kind values to e-mail")

    def __str__(self) -> str:
        return f"{self.user_id}: {', '.join(self.email_kinds) or 'no e-mail'}"
