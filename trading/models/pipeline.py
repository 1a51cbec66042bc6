"""Pipeline runs (one instrument on one as-of date), the stages each run persisted, and the notes
and debates those stages produced, as rows that can be queried across runs."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from trading.models.market import FeatureSnapshot, Instrument

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
    # The features the run was shown, as the (instrument, as_of) row; null for runs made before
    # runs wrote it, and until the features stage finishes.
    feature_snapshot = models.ForeignKey(
        FeatureSnapshot, on_delete=models.PROTECT, null=True, blank=True, related_name="runs"
    )
    # What the run used (trading.pipeline.outputs.RunSnapshot): account, limits in force, mandate,
    # provider and models. Written once as the run starts executing, never changed after.
    used = models.JSONField(null=True, blank=True, help_text="written once when the run starts; never changed")

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
    # Stamped when the row is made (not when it is inserted): a replay day writes its stage rows in one
    # statement at the run's end, each with the moment its stage started.
    started_at = models.DateTimeField(default=timezone.now, editable=False)
    finished_at = models.DateTimeField(null=True, blank=True)
    output = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "stage"], name="stage_once_per_run")]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.stage}={self.status}"


def _unit_field(help_text: str = "") -> models.DecimalField:
    """A stance, confidence, conviction or share: 4 decimals, within [-1, 1]."""
    return models.DecimalField(max_digits=5, decimal_places=4, help_text=help_text)


class AnalystNoteRecord(models.Model):
    """One analyst's note of one run, as a row: every note of every run can be queried (all the
    bearish technical notes of a symbol). Written with the analysts stage, in its transaction; the
    citation check is code's, never the model's."""

    class Role(models.TextChoices):
        NEWS = "news"
        SENTIMENT = "sentiment"
        TECHNICAL = "technical"
        FUNDAMENTAL = "fundamental"

    run = models.ForeignKey(PipelineRun, on_delete=models.CASCADE, related_name="note_records")
    role = models.CharField(max_length=16, choices=Role.choices)
    stance = _unit_field("-1 bearish … +1 bullish")
    confidence = _unit_field()
    abstained = models.BooleanField(default=False, help_text="no real data for this factor")
    summary = models.TextField()
    evidence = models.JSONField(default=list, blank=True, help_text="the values the note cites, as it wrote them")
    citations = models.JSONField(
        default=list, blank=True, help_text="each indicator value cited, with the bundle's value and whether it matches"
    )
    citation_mismatches = models.PositiveIntegerField(default=0, help_text="cited values the bundle contradicts")
    citations_verified = models.PositiveIntegerField(default=0, help_text="cited values the bundle confirms")
    model_used = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "role"]
        constraints = [models.UniqueConstraint(fields=["run", "role"], name="note_once_per_run_role")]
        indexes = [models.Index(fields=["role", "stance"], name="note_by_role_stance")]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.role} {self.stance:+}"


class DebateRecord(models.Model):
    """The debate of one run, as a row. ``conviction`` is code's calibration of the manager's
    ``proposed_conviction``, cut by the share of side-taking analysts that opposed the winner."""

    class Winner(models.TextChoices):
        LONG = "LONG"
        SHORT = "SHORT"

    run = models.OneToOneField(PipelineRun, on_delete=models.CASCADE, related_name="debate_record")
    winner = models.CharField(max_length=5, choices=Winner.choices)
    proposed_conviction = _unit_field("the manager's own number, kept for audit")
    conviction = _unit_field("calibrated by code: what the thesis carries")
    opposing = models.PositiveSmallIntegerField(help_text="side-taking analysts that opposed the winner")
    side_taking = models.PositiveSmallIntegerField(help_text="analysts that took a side")
    opposing_share = _unit_field("opposing / side-taking (0 when none took a side)")
    rationale = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["winner", "conviction"], name="debate_by_winner_conviction")]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.winner} {self.conviction}"


class HeuristicCitation(models.Model):
    """A playbook heuristic (``H-7``) cited by one role of one run: by an analyst's note, or by the
    thesis (the trader's rationale, the debate). Extracted and checked by code against the playbook
    active when the run cited it; a code that was not active is kept with ``heuristic`` empty and
    ``accepted`` false, so a hallucinated rule is visible and never counted in the audit."""

    run = models.ForeignKey(PipelineRun, on_delete=models.CASCADE, related_name="heuristic_citations")
    role = models.CharField(max_length=16, help_text="the analyst role, or trader/bull/bear/manager")
    note = models.ForeignKey(
        AnalystNoteRecord, on_delete=models.CASCADE, null=True, blank=True, related_name="heuristic_citations"
    )
    thesis = models.ForeignKey(
        "trading.Thesis", on_delete=models.CASCADE, null=True, blank=True, related_name="heuristic_citations"
    )
    code = models.CharField(max_length=16, help_text="the code as cited")
    heuristic = models.ForeignKey(
        "agents.Heuristic", on_delete=models.PROTECT, null=True, blank=True, related_name="citations"
    )
    accepted = models.BooleanField(help_text="the code named an active heuristic when it was cited")
    cited_on = models.DateField(help_text="the run's as-of date")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "role", "code"]
        constraints = [models.UniqueConstraint(fields=["run", "role", "code"], name="citation_once_per_run_role_code")]
        indexes = [models.Index(fields=["heuristic", "cited_on"], name="citation_by_heuristic_day")]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.role} cites {self.code}{'' if self.accepted else ' (rejected)'}"
