"""Reviews: the stage-12 trade review of each closed position, and the retrospectives above it
(daily, weekly, epoch, a position's own, an immediate loss review and a retiring strategy's
testament)."""

from __future__ import annotations

from django.db import models


class TradeReview(models.Model):
    """Outcome, PnL and signal evolution are facts written by code; critique and lessons by a model."""

    position = models.OneToOneField("trading.Position", on_delete=models.CASCADE, related_name="review")
    outcome = models.CharField(max_length=8)
    realised_pnl = models.DecimalField(max_digits=18, decimal_places=2)
    signal_evolution = models.CharField(max_length=16)
    thesis_vs_outcome = models.JSONField(default=dict)
    critique = models.TextField()
    lessons = models.JSONField(default=list)
    model_used = models.CharField(max_length=200)
    memory_entry = models.OneToOneField(
        "agents.MemoryEntry", on_delete=models.SET_NULL, null=True, blank=True, related_name="review"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"review of position {self.position_id}: {self.outcome}"


class RetrospectiveReport(models.Model):
    """One retrospective: the hard part computed by code from stored rows, and a narrative by a model
    whose numbers are checked against the hard part.

    ``trigger_key`` names the event or the period that caused it ("daily:3:2026-11-25",
    "position:42", "loss:42", "testament:strategy:7"); it is unique, so each event runs its review
    exactly once, and a retried worker finds the row its crashed predecessor claimed and finishes it."""

    class Horizon(models.TextChoices):
        DAILY = "daily"
        WEEKLY = "weekly"
        EPOCH = "epoch"
        POSITION = "position", "position retrospective"
        LOSS = "loss", "loss review"
        TESTAMENT = "testament"

    class Status(models.TextChoices):
        RUNNING = "running"
        READY = "ready"
        FAILED = "failed"

    trigger_key = models.CharField(max_length=120, unique=True)
    horizon = models.CharField(max_length=16, choices=Horizon.choices, db_index=True)
    account = models.ForeignKey("trading.Account", on_delete=models.PROTECT, related_name="retrospectives")
    strategy = models.ForeignKey(
        "trading.Strategy", on_delete=models.PROTECT, null=True, blank=True, related_name="retrospectives"
    )
    position = models.ForeignKey(
        "trading.Position", on_delete=models.PROTECT, null=True, blank=True, related_name="retrospectives"
    )
    period_start = models.DateField()
    period_end = models.DateField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.RUNNING, db_index=True)
    hard = models.JSONField(default=dict, blank=True, help_text="computed by code: attribution, accuracy, actions, …")
    narrative = models.JSONField(default=dict, blank=True, help_text="the model's reading of the hard part")
    ungrounded = models.JSONField(
        default=list, blank=True, help_text="numbers the narrative cites that the hard part does not hold"
    )
    confidence = models.DecimalField(max_digits=5, decimal_places=4, null=True, blank=True)
    model_used = models.CharField(max_length=200, blank=True)
    tier = models.CharField(max_length=8, blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    is_replay = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-period_end", "-id"]
        indexes = [
            models.Index(fields=["account", "horizon", "-period_end"], name="retro_latest_by_horizon"),
        ]

    def __str__(self) -> str:
        return f"{self.horizon} review {self.period_start}–{self.period_end} ({self.status})"
