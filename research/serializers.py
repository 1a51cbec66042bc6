"""The research API's shapes: a session (listed, and in detail with its shortlist), a trial with its
folds, a shortlisted candidate with its holdout scores, and the body that starts a session.

Output figures are the session's own (walk-forward, DSR, PBO, holdout), as stored. The start body's
fields document it; ``research.services.session_create`` checks every value, as it does for the
page's form, so the API and the page refuse the same things with the same words.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from research.models import ResearchCandidate, ResearchSession, ResearchTrial
from research.start import MAX_COLUMN

# Plain strings, not choice fields: enums named "status" or "decision" would collide with other
# apps' enums of the same name among the schema's components.
SESSION_STATUS = ", ".join(ResearchSession.Status.values)
TRIAL_DECISIONS = ", ".join(ResearchTrial.Decision.values)
METRICS_HELP = (
    "figures computed by the walk-forward from the backtest's per-period returns: total_return, cagr, "
    "annualised_volatility, sharpe (annualised, 252 periods a year), sharpe_per_period, sortino, max_drawdown "
    "(a negative fraction), calmar, win_rate, profit_factor, n_trades, trades, exposure, n_periods, bars"
)


class ResearchSessionOutput(serializers.Serializer):
    id = serializers.IntegerField()
    goal = serializers.CharField()
    strategy = serializers.CharField(help_text="the signal strategy searched; empty: any")
    symbols = serializers.ListField(child=serializers.CharField())
    proposer = serializers.CharField(help_text="llm, fixed or optuna")
    provider = serializers.CharField(help_text="the llm proposer's model provider")
    status = serializers.CharField(help_text=SESSION_STATUS)
    stop_reason = serializers.CharField()
    error = serializers.CharField()
    max_trials = serializers.IntegerField()
    max_tokens = serializers.IntegerField()
    dry_rounds = serializers.IntegerField()
    allow_code_gen = serializers.BooleanField()
    seed = serializers.IntegerField()
    n_trials = serializers.IntegerField(help_text="trials evaluated so far: the deflated Sharpe's number of trials")
    tokens_used = serializers.IntegerField()
    pbo = serializers.FloatField(allow_null=True, help_text="probability of backtest overfitting (CSCV), 0 to 1")
    data_start = serializers.DateField(allow_null=True)
    data_end = serializers.DateField(allow_null=True)
    holdout_start = serializers.DateField(
        allow_null=True, help_text="bars from this date on are the holdout: never searched, scored once"
    )
    incumbent = serializers.IntegerField(source="incumbent_id", allow_null=True, help_text="the best kept trial's id")
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class ResearchTrialOutput(serializers.Serializer):
    id = serializers.IntegerField()
    session = serializers.IntegerField(source="session_id")
    number = serializers.IntegerField(help_text="the trial's place in its session, from 1")
    proposer = serializers.CharField()
    kind = serializers.CharField(help_text="tune (a known strategy's parameters) or code (a generated strategy)")
    strategy = serializers.CharField()
    params = serializers.DictField()
    code = serializers.CharField(help_text="a code proposal's source; empty for tune")
    rationale = serializers.CharField()
    decision = serializers.CharField(help_text=TRIAL_DECISIONS)
    reason = serializers.CharField()
    folds = serializers.ListField(
        child=serializers.DictField(),
        help_text="per fold: in_sample and out_of_sample windows (start, end), purge_bars, the params chosen "
        "in-sample, is_metrics and oos_metrics",
    )
    oos_metrics = serializers.DictField(help_text=f"the out-of-sample aggregate: {METRICS_HELP}")
    oos_sharpe = serializers.FloatField(allow_null=True, help_text="per-period Sharpe of the out-of-sample aggregate")
    dsr = serializers.FloatField(allow_null=True, help_text="deflated Sharpe ratio, 0 to 1")
    n_trials_at_eval = serializers.IntegerField(help_text="the session's trial count the DSR was deflated by")
    promotable = serializers.BooleanField()
    tokens = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class ResearchCandidateOutput(serializers.Serializer):
    id = serializers.IntegerField()
    session = serializers.IntegerField(source="session_id")
    rank = serializers.IntegerField()
    trial = serializers.IntegerField(source="trial_id")
    trial_number = serializers.IntegerField(source="trial.number")
    kind = serializers.CharField(source="trial.kind")
    strategy = serializers.CharField(source="trial.strategy")
    params = serializers.DictField(source="trial.params")
    oos_sharpe = serializers.FloatField(source="trial.oos_sharpe", allow_null=True)
    dsr = serializers.FloatField(source="trial.dsr", allow_null=True)
    oos_metrics = serializers.DictField(source="trial.oos_metrics")
    holdout_metrics = serializers.DictField(help_text=f"scored once, on the holdout, after the search: {METRICS_HELP}")
    config_url = serializers.SerializerMethodField(help_text="the candidate's config file (JSON) to download")
    created_at = serializers.DateTimeField()

    @extend_schema_field(serializers.CharField())
    def get_config_url(self, candidate: ResearchCandidate) -> str:
        return reverse("api-research-candidate-config", args=[candidate.pk])


class ResearchSessionDetailOutput(ResearchSessionOutput):
    config = serializers.DictField(help_text="walk-forward, gates and costs as in force for the session")
    journal_path = serializers.CharField()
    candidates = serializers.SerializerMethodField(help_text="the shortlist by rank, with holdout scores")

    @extend_schema_field(ResearchCandidateOutput(many=True))
    def get_candidates(self, session: ResearchSession) -> list[dict[str, Any]]:
        candidates = session.candidates.select_related("trial").order_by("rank")
        return list(ResearchCandidateOutput(candidates, many=True).data)


class ResearchSessionStartInput(serializers.Serializer):
    """The fields document the body and refuse a wrong type; the values are checked by the service."""

    goal = serializers.CharField(max_length=2000, help_text="what the session looks for, in words")
    symbols = serializers.ListField(
        child=serializers.CharField(max_length=64), min_length=1, max_length=50, help_text="active instruments"
    )
    strategy = serializers.CharField(
        required=False, default="", allow_blank=True, help_text="a signal strategy key; empty: any"
    )
    proposer = serializers.CharField(default="optuna", help_text="llm, fixed or optuna")
    provider = serializers.CharField(
        required=False, default="offline", help_text="the llm proposer's model provider (offline by default)"
    )
    max_trials = serializers.IntegerField(required=False, help_text="the trial budget, from 1 to 2000")
    max_tokens = serializers.IntegerField(
        required=False, min_value=0, max_value=MAX_COLUMN, help_text="the token budget (0: no model calls)"
    )
    dry_rounds = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_COLUMN,
        help_text="stop after this many rounds without an out-of-sample improvement",
    )
    allow_code_gen = serializers.BooleanField(required=False, default=False)
    seed = serializers.IntegerField(required=False, default=0, min_value=-MAX_COLUMN, max_value=MAX_COLUMN)
