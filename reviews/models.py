"""Reviews: the stage-12 trade review of each closed position, and the retrospectives above it
(daily, weekly, epoch, a position's own, an immediate loss review and a retiring strategy's
testament)."""

from __future__ import annotations

from django.conf import settings
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


class Critique(models.Model):
    """One independent review of a strategy's trajectory by the critic.

    The evidence pack and the detectors' findings are computed by code from stored rows before the
    critic runs; the critic writes the directive (severity, diagnosis, actions, prohibited patterns)
    and a grounding check holds every figure and id it cites against the pack. ``sequence`` counts a
    strategy's critiques (1, 2, …), separately for replays; the archive file is
    ``critique_run_NNN.json`` with that number."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    class Severity(models.TextChoices):
        ADVISORY = "advisory"
        DIRECTIVE = "directive"

    class Trajectory(models.TextChoices):
        FIRST = "first", "first review"
        IMPROVING = "improving"
        STAGNATING = "stagnating"
        DETERIORATING = "deteriorating"

    strategy = models.ForeignKey("trading.Strategy", on_delete=models.PROTECT, related_name="critiques")
    strategy_run = models.ForeignKey(
        "trading.StrategyRun", on_delete=models.SET_NULL, null=True, blank=True, related_name="critiques"
    )
    is_replay = models.BooleanField(default=False)
    sequence = models.PositiveIntegerField()
    run_count = models.PositiveIntegerField(help_text="the strategy's run count when it fired")
    as_of = models.DateField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED, db_index=True)
    trigger = models.JSONField(default=dict, blank=True, help_text="mode, probability, draw and the reasons for it")
    evidence = models.JSONField(default=dict, blank=True, help_text="the evidence pack, computed by code")
    findings = models.JSONField(default=list, blank=True, help_text="each detector: fired, figures, ids")
    severity = models.CharField(max_length=16, choices=Severity.choices, blank=True)
    diagnosis = models.TextField(blank=True)
    directive = models.JSONField(default=dict, blank=True, help_text="the critic's directive, settled by code")
    escalations = models.JSONField(
        default=list,
        blank=True,
        help_text="findings flagged before: when first, how many reviews ago, present or resolved",
    )
    trajectory = models.CharField(max_length=16, choices=Trajectory.choices, blank=True)
    grounding = models.JSONField(default=dict, blank=True, help_text="cited figures and ids found, and those not")
    model_used = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    archive_path = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-as_of", "-sequence"]
        constraints = [
            models.UniqueConstraint(
                fields=["strategy", "is_replay", "sequence"], name="critique_sequence_per_strategy"
            ),
            models.UniqueConstraint(
                fields=["strategy_run"], condition=models.Q(strategy_run__isnull=False), name="one_critique_per_run"
            ),
        ]

    def __str__(self) -> str:
        return f"critique #{self.sequence} of strategy {self.strategy_id} ({self.status})"


class CritiqueAction(models.Model):
    """A required action of a critique. Kinds with a machine check are verified by code; a free-form
    action is complete only when an approver attests it with a comment. Both are audited."""

    class Kind(models.TextChoices):
        LOG_SIGNAL_ICS = "log_signal_ics", "log rank ICs for enough signal families"
        REDUCE_CONCENTRATION = "reduce_concentration", "bring the largest position below a share of capital"
        WRITE_LESSON = "write_lesson", "write a lesson for a losing position"
        CALIBRATE_CONFIDENCE = "calibrate_confidence", "bring stated conviction near the empirical win rate"
        STOP_CITING = "stop_citing", "stop citing a demoted heuristic"
        FREE_FORM = "free_form", "free-form (an approver attests)"

    class Status(models.TextChoices):
        OPEN = "open"
        DONE = "done", "done (checked by code)"
        ATTESTED = "attested", "attested by an approver"

    critique = models.ForeignKey(Critique, on_delete=models.CASCADE, related_name="actions")
    number = models.PositiveSmallIntegerField()
    kind = models.CharField(max_length=32, choices=Kind.choices)
    text = models.TextField()
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    check_detail = models.TextField(blank=True, help_text="what the last machine check found")
    checked_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    attested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    attestation = models.TextField(blank=True)

    class Meta:
        ordering = ["critique", "number"]
        constraints = [models.UniqueConstraint(fields=["critique", "number"], name="critique_action_number")]

    def __str__(self) -> str:
        return f"action {self.number} of critique {self.critique_id}: {self.kind} ({self.status})"

    @property
    def is_complete(self) -> bool:
        return self.status != self.Status.OPEN


class SignalIC(models.Model):
    """A signal's rank information coefficient against forward returns over the thesis horizon, as
    logged for a strategy on a date: the record a ``log_signal_ics`` action is checked against."""

    strategy = models.ForeignKey("trading.Strategy", on_delete=models.CASCADE, related_name="signal_ics")
    is_replay = models.BooleanField(default=False)
    as_of = models.DateField()
    signal = models.CharField(max_length=64)
    family = models.CharField(max_length=32)
    horizon_sessions = models.PositiveSmallIntegerField()
    ic = models.FloatField(null=True, blank=True, help_text="Spearman rank IC; null when too few pairs")
    observations = models.PositiveIntegerField()
    logged_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["strategy", "-as_of", "signal"]
        constraints = [
            models.UniqueConstraint(fields=["strategy", "is_replay", "as_of", "signal"], name="signal_ic_once_per_day")
        ]

    def __str__(self) -> str:
        return f"IC {self.signal}={self.ic} for strategy {self.strategy_id}@{self.as_of}"


class CalibrationSnapshot(models.Model):
    """The desk's calibration summary as of a day, kept once computed: the evaluation summary every
    review of that day reads instead of resolving the same calls again.

    ``data_key`` fingerprints what it was computed from (the notes' and debates' counts and latest
    ids up to the day, the bars' likewise, and the settings that shape it); a summary whose key no
    longer matches the rows is computed again and replaces it, so a stored one is never stale."""

    account = models.ForeignKey("trading.Account", on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    end = models.DateField()
    data_key = models.CharField(max_length=64)
    summary = models.JSONField()
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-end", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["account", "end"], name="calibration_snapshot_per_day"),
            models.UniqueConstraint(
                fields=["end"], condition=models.Q(account__isnull=True), name="calibration_snapshot_desk_per_day"
            ),
        ]

    def __str__(self) -> str:
        return f"calibration of account {self.account_id} as of {self.end}"
