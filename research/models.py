"""Research sessions: a goal, the trials proposed and validated walk-forward, and the shortlist.

Every proposal, trial and decision is a row here and a line in the session's JSONL journal. The
holdout's dates are fixed when the session starts; its metrics are written once, on the shortlist,
when the search is over."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ResearchSession(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    goal = models.TextField()
    strategy = models.CharField(max_length=64, blank=True, help_text="the signal strategy key searched; blank: any")
    symbols = models.JSONField(default=list, help_text="the instruments whose daily bars the session reads")
    provider = models.CharField(max_length=32, help_text="the proposer's model provider, or 'fixed' / 'optuna'")
    proposer = models.CharField(max_length=16, help_text="llm, fixed or optuna")
    max_trials = models.PositiveIntegerField()
    max_tokens = models.PositiveIntegerField()
    dry_rounds = models.PositiveIntegerField(help_text="stop after this many rounds without an OOS improvement")
    allow_code_gen = models.BooleanField(default=False)
    seed = models.IntegerField(default=0)
    config = models.JSONField(default=dict, blank=True, help_text="walk-forward, gates and costs as in force")
    data_start = models.DateField(null=True, blank=True)
    data_end = models.DateField(null=True, blank=True)
    holdout_start = models.DateField(null=True, blank=True, help_text="bars from here on are the sacred holdout")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    stop_reason = models.TextField(blank=True)
    error = models.TextField(blank=True)
    n_trials = models.PositiveIntegerField(default=0, help_text="trials evaluated so far (the DSR's n_trials)")
    tokens_used = models.PositiveIntegerField(default=0)
    incumbent = models.ForeignKey(
        "research.ResearchTrial", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    pbo = models.FloatField(null=True, blank=True, help_text="probability of backtest overfitting (CSCV)")
    journal_path = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [("run_research", "Can start and cancel research sessions")]

    def __str__(self) -> str:
        return f"research session {self.pk} ({self.status})"


class ResearchTrial(models.Model):
    class Kind(models.TextChoices):
        TUNE = "tune"
        CODE = "code"

    class Decision(models.TextChoices):
        REJECTED = "rejected", "rejected by hygiene"
        KEPT = "kept"
        DISCARDED = "discarded"
        FAILED = "failed"

    session = models.ForeignKey(ResearchSession, on_delete=models.CASCADE, related_name="trials")
    number = models.PositiveIntegerField()
    proposer = models.CharField(max_length=64)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    strategy = models.CharField(max_length=64, help_text="the signal strategy key or the generated class name")
    params = models.JSONField(default=dict, blank=True)
    code = models.TextField(blank=True)
    rationale = models.TextField(blank=True)
    decision = models.CharField(max_length=10, choices=Decision.choices)
    reason = models.TextField(blank=True)
    folds = models.JSONField(default=list, blank=True, help_text="per fold: windows, in-sample and OOS metrics")
    oos_metrics = models.JSONField(default=dict, blank=True)
    oos_sharpe = models.FloatField(null=True, blank=True, help_text="per-period Sharpe of the OOS aggregate")
    dsr = models.FloatField(null=True, blank=True)
    n_trials_at_eval = models.PositiveIntegerField(default=0)
    promotable = models.BooleanField(default=False)
    tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "number"]
        constraints = [models.UniqueConstraint(fields=["session", "number"], name="trial_number_per_session")]

    def __str__(self) -> str:
        return f"trial {self.number} of session {self.session_id}: {self.decision}"


class ResearchCandidate(models.Model):
    """A shortlisted trial, scored once on the holdout, with the config file written for a human."""

    session = models.ForeignKey(ResearchSession, on_delete=models.CASCADE, related_name="candidates")
    trial = models.OneToOneField(ResearchTrial, on_delete=models.CASCADE, related_name="candidate")
    rank = models.PositiveSmallIntegerField()
    holdout_metrics = models.JSONField(default=dict, blank=True)
    config = models.JSONField(default=dict, help_text="the candidate's config file: params and provenance")
    config_path = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "rank"]
        constraints = [models.UniqueConstraint(fields=["session", "rank"], name="candidate_rank_per_session")]

    def __str__(self) -> str:
        return f"candidate {self.rank} of session {self.session_id}"
