"""Every model call, and the memory the agents read."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from simple_history.models import HistoricalRecords


class ModelCall(models.Model):
    """One attempt at one model call: enough to audit it, price it and replay it offline."""

    # A call is the record of money spent, so it outlives its run: a replay started again deletes its
    # runs, and the day's spend (the daily cost budget) must still count what their calls cost. (The
    # replay deletes its free calls itself, so the table does not grow with every replay started.)
    run = models.ForeignKey(
        "trading.PipelineRun", on_delete=models.SET_NULL, null=True, blank=True, related_name="model_calls"
    )
    role = models.CharField(max_length=32)
    symbol = models.CharField(max_length=32)
    tier = models.CharField(max_length=8)
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=100)
    prompt_key = models.CharField(max_length=64, db_index=True, help_text="sha256 of role, system and prompt")
    system = models.TextField()
    prompt = models.TextField()
    reply = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    latency_ms = models.FloatField(default=0)
    ok = models.BooleanField()
    error = models.TextField(blank=True)
    attempt = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.role} {self.provider}/{self.model} {'ok' if self.ok else 'error'}"


class MemoryEntry(models.Model):
    """A lesson or note the agents may be shown. Written by the reviewer (issue 4) and by hand."""

    kind = models.CharField(max_length=16, default="note")
    symbol = models.CharField(max_length=32, blank=True)
    text = models.TextField()
    tags = models.JSONField(default=dict, blank=True)
    created_on = models.DateField()
    created_at = models.DateTimeField(auto_now_add=True)
    scope = models.CharField(
        max_length=64,
        default="live",
        db_index=True,
        help_text='who recalls it: "live" (every live run), or "replay:<account id>" (that replay\'s runs only)',
    )
    weight = models.FloatField(
        default=1.0, help_text="retrieval weight: hindsight from a position retrospective raises it (1.5)"
    )

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "memory entries"

    def __str__(self) -> str:
        return f"[{self.kind}] {self.symbol}: {self.text[:60]}"


HEURISTIC_CODE_PATTERN = r"^H-[0-9]+$"


class Heuristic(models.Model):
    """One rule of the playbook, cited by code (``H-7``) in the agents' notes and theses.

    Only *active* heuristics are offered to the agents and accepted as citations; a *candidate*
    (proposed by a retrospective, or typed in by a person) waits for a person to activate it;
    *demoted* and *retired* ones stay for the record. Every edit is kept in ``history``."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        CANDIDATE = "candidate"
        DEMOTED = "demoted"
        RETIRED = "retired"

    code = models.CharField(
        max_length=16,
        unique=True,
        validators=[RegexValidator(HEURISTIC_CODE_PATTERN, 'a code is "H-" and a number, e.g. H-7')],
    )
    text = models.TextField(help_text="the rule, as the agents read it")
    factor = models.CharField(
        max_length=32, blank=True, help_text="the analyst factor it speaks to (trend, momentum, news, …), if any"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CANDIDATE, db_index=True)
    origin = models.CharField(
        max_length=200, blank=True, help_text='where it came from: "seed", "admin", "retrospective #12", …'
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return f"{self.code} ({self.status})"

    @property
    def number(self) -> int:
        return int(self.code.removeprefix("H-"))


class CalibrationFit(models.Model):
    """An isotonic recalibration of a stated probability (an analyst role's confidence, or the
    debate's conviction) against how often it turned out right, refit every so many samples."""

    subject = models.CharField(
        max_length=32, db_index=True, help_text='"debate" or an analyst role ("technical", "news", …)'
    )
    samples = models.PositiveIntegerField(help_text="resolved calls the fit was made on")
    points = models.JSONField(help_text="the fitted map as [[confidence, rate], …], increasing")
    ece_before = models.FloatField(help_text="expected calibration error of the stated values")
    ece_after = models.FloatField(help_text="expected calibration error after the map (in sample)")
    fitted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["subject", "-fitted_at", "-id"]
        get_latest_by = "fitted_at"

    def __str__(self) -> str:
        return f"{self.subject}: {self.samples} samples, ECE {self.ece_before:.3f} → {self.ece_after:.3f}"
