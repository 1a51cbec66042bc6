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

    strategy = models.ForeignKey(Strategy, on_delete=models.CASCADE, related_name="runs")
    as_of = models.DateField()
    decision = models.CharField(max_length=16, choices=Decision.choices, default=Decision.PENDING)
    decision_reason = models.TextField(blank=True)
    is_replay = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-as_of", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["strategy", "as_of", "is_replay"], name="strategy_run_once_per_day")
        ]

    def __str__(self) -> str:
        return f"{self.strategy_id}@{self.as_of}={self.decision}"
