"""Strategies (a mandate over a universe, on a schedule) and their runs.

A schedule is a five-field cron expression read in the desk's time zone."""

from __future__ import annotations

import datetime as dt

from celery.schedules import crontab
from django.conf import settings
from django.db import models

from trading.models.market import Instrument


def schedule_of(strategy, *, now: dt.datetime | None = None) -> crontab:
    """A five-field cron expression (minute hour day-of-month month day-of-week), desk time zone."""
    fields = strategy.schedule.split()
    if len(fields) != 5:
        raise ValueError(f"schedule {strategy.schedule!r} is not a five-field cron expression")
    minute, hour, day_of_month, month, day_of_week = fields
    return crontab(
        minute=minute,
        hour=hour,
        day_of_month=day_of_month,
        month_of_year=month,
        day_of_week=day_of_week,
        nowfun=(lambda: now) if now else None,
    )


class Strategy(models.Model):
    """A mandate: what to trade, how much to risk, how often to look."""

    name = models.CharField(max_length=100, unique=True)
    philosophy = models.TextField(help_text="the mandate in words; shown to the agents")
    universe = models.ManyToManyField(Instrument, related_name="strategies")
    schedule = models.CharField(
        max_length=64, default="0 16 * * 1-5", help_text="cron: minute hour day-of-month month day-of-week"
    )
    provider = models.CharField(max_length=32, blank=True, help_text="model provider; blank = the desk default")
    # Risk parameters of the mandate; blank = the account's.
    risk_per_trade_pct = models.DecimalField(max_digits=6, decimal_places=3, null=True, blank=True)
    max_notional_pct = models.DecimalField(max_digits=6, decimal_places=2, null=True, blank=True)
    max_positions = models.PositiveIntegerField(null=True, blank=True)
    is_active = models.BooleanField(default=True)
    run_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    # Strategic effectiveness (the retrospective): a flag for the owner, and the strategy's end.
    flagged_on = models.DateField(null=True, blank=True, help_text="when the weekly reviews flagged it")
    flag_reason = models.TextField(blank=True, help_text="why it is flagged, with the figures")
    retired_at = models.DateTimeField(null=True, blank=True)
    retired_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    retire_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "strategies"

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        try:
            schedule_of(self)
        except ValueError as error:
            raise ValidationError({"schedule": str(error)}) from None


class StrategyRun(models.Model):
    class Decision(models.TextChoices):
        PENDING = "pending"
        HOLD = "hold"
        REBALANCE = "rebalance"

    class CritiqueDecision(models.TextChoices):
        EXEMPT = "exempt", "exempt (too few runs)"
        SKIPPED = "skipped", "not drawn"
        FIRED = "fired"
        OFF = "off", "critique switched off"

    class CritiqueState(models.TextChoices):
        PENDING = "pending", "running"
        DONE = "done"
        FAILED = "failed"
        LATE = "late", "past its deadline"

    strategy = models.ForeignKey(Strategy, on_delete=models.CASCADE, related_name="runs")
    as_of = models.DateField()
    decision = models.CharField(max_length=16, choices=Decision.choices, default=Decision.PENDING)
    decision_reason = models.TextField(blank=True)
    is_replay = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The critique pre-step (written by reviews, read here): whether it fired for this run and why,
    # the critique's id (no foreign key: reviews sits above trading), and how the wait for it ended.
    critique_decision = models.CharField(
        max_length=16, choices=CritiqueDecision.choices, blank=True, help_text="blank: not evaluated yet"
    )
    critique_reason = models.TextField(blank=True, help_text="why it fired or not: run count, probability, draw")
    critique_ref = models.PositiveIntegerField(null=True, blank=True, help_text="the reviews.Critique id")
    critique_state = models.CharField(max_length=16, choices=CritiqueState.choices, blank=True)
    # When the run's pipeline runs were sent (after the critique, or its deadline); null = not yet.
    proceeded_at = models.DateTimeField(null=True, blank=True)
    # The directives in force when the run started (StrategyDirective ids), and what held it, if anything.
    directives_seen = models.JSONField(default=list, blank=True)
    blocked_by = models.TextField(blank=True, help_text="the incomplete required actions that forced HOLD")

    class Meta:
        ordering = ["-as_of", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["strategy", "as_of", "is_replay"], name="strategy_run_once_per_day")
        ]

    def __str__(self) -> str:
        return f"{self.strategy_id}@{self.as_of}={self.decision}"


class StrategyDirective(models.Model):
    """What a critique tells a strategy, in a row trading owns and reviews writes (the layers stay
    one way: trading never imports the critique).

    In force while ``lifted_at`` is null. Its ``text`` reaches the analysts', the debate's and the
    trader's prompts, fenced as data. A DIRECTIVE whose ``blocking`` list is not empty is a hard gate:
    the strategy's runs decide HOLD and none of its theses reaches approval. ``prohibitions`` are
    patterns every agent is told to avoid; those of a kind code can check (``direction``,
    ``instrument``, ``heuristic``) are refused at the risk stage."""

    class Severity(models.TextChoices):
        ADVISORY = "advisory"
        DIRECTIVE = "directive"

    strategy = models.ForeignKey(Strategy, on_delete=models.CASCADE, related_name="directives")
    is_replay = models.BooleanField(default=False)
    source_ref = models.PositiveIntegerField(help_text="the reviews.Critique id that issued it")
    sequence = models.PositiveIntegerField(help_text="the critique's sequence number for the strategy")
    severity = models.CharField(max_length=16, choices=Severity.choices)
    text = models.TextField(help_text="the directive as the agents read it (markdown)")
    # [{"kind": "direction"|"instrument"|"heuristic"|"text", "value": "...", "text": "..."}]
    prohibitions = models.JSONField(default=list, blank=True)
    # The required actions still incomplete: [{"id": action id, "kind": "...", "text": "..."}]
    blocking = models.JSONField(default=list, blank=True)
    opened_on = models.DateField(help_text="the as-of date of the run that issued it")
    opened_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    lifted_at = models.DateTimeField(null=True, blank=True)
    lifted_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["strategy", "is_replay", "source_ref"], name="one_directive_per_critique")
        ]
        indexes = [models.Index(fields=["strategy", "is_replay", "lifted_at"], name="directive_in_force")]

    def __str__(self) -> str:
        return f"{self.severity} #{self.sequence} for strategy {self.strategy_id}"

    @property
    def is_blocking(self) -> bool:
        return self.lifted_at is None and self.severity == self.Severity.DIRECTIVE and bool(self.blocking)


class ReplayJob(models.Model):
    """A history replay started from the browser or the command line: its window, its policy and
    its progress, so it can be watched, cancelled and resumed from the last finished day."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        CANCELLED = "cancelled"
        FINISHED = "finished"
        FAILED = "failed"

    strategy = models.ForeignKey(Strategy, on_delete=models.CASCADE, related_name="replay_jobs")
    start = models.DateField()
    end = models.DateField()
    policy = models.CharField(max_length=64, default="all", help_text="all | none | conviction>=X")
    provider = models.CharField(max_length=32, default="offline")
    lessons_to_live = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    days_total = models.PositiveIntegerField(default=0)
    days_done = models.PositiveIntegerField(default=0)
    last_day = models.DateField(null=True, blank=True, help_text="the last day finished; a resume starts after it")
    cancel_requested = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    summary = models.JSONField(default=dict, blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"replay {self.strategy_id} {self.start}..{self.end} ({self.status}, {self.days_done}/{self.days_total})"
