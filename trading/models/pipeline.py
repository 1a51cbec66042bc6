"""Pipeline runs (one instrument on one as-of date) and the stages each run persisted."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from trading.models.market import Instrument

# The stages of a run, in the order they run; a StageRun row records each.
STAGES = ("features", "context", "analysts", "debate", "trader", "risk")


class PipelineRun(models.Model):
    """One instrument on one as-of date through stages 1-7. Each stage is persisted before the next."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        COMPLETED = "completed"
        DEGRADED = "degraded"
        FAILED = "failed"
        # The account already has a live idea in the instrument (held, working or pending): the
        # run proposes nothing and says which.
        HELD = "held"

    instrument = models.ForeignKey(Instrument, on_delete=models.PROTECT, related_name="runs")
    as_of = models.DateField()
    provider = models.CharField(max_length=32)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    failure_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    strategy_run = models.ForeignKey(
        "StrategyRun", on_delete=models.CASCADE, null=True, blank=True, related_name="pipeline_runs"
    )
    is_replay = models.BooleanField(default=False, help_text="made by a history replay, not live")
    # The outbox: null until a task message for the run was sent (or seen by a worker). A row
    # committed while the broker was down stays null and the sweep sends it later.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    # Who executes the run right now, until when. Taken only once expired, renewed while working,
    # checked before every write: one run never has two executors.
    lease_owner = models.CharField(max_length=255, blank=True, help_text="host:pid:attempt of the executor")
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["instrument", "as_of"], name="run_by_instrument_day"),
            # The runs page reads the latest hundred: without it every run is sorted first.
            models.Index(fields=["-created_at", "-id"], name="run_latest_first"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} {self.instrument_id}@{self.as_of}"

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.COMPLETED, self.Status.DEGRADED, self.Status.FAILED, self.Status.HELD}


class StageRun(models.Model):
    """The persisted output of one stage of one run. Unique per (run, stage): a resumed run reads
    a finished stage back instead of running it again, so nothing is ever produced twice."""

    class Status(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    run = models.ForeignKey(PipelineRun, on_delete=models.CASCADE, related_name="stages")
    stage = models.CharField(max_length=16)
    position = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    output = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "stage"], name="stage_once_per_run")]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.stage}={self.status}"
