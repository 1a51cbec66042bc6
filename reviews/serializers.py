"""The reviews' API shapes: a retrospective report (listed, and in full with its hard part, narrative
and the grounding check's flags), a position retrospective, and a stage-12 trade review. Output only:
the API reads reviews; the reviews themselves are written by code and the models."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from reviews.models import RetrospectiveReport

HARD_HELP = (
    "computed by code from stored rows: currency, period, attribution (money as strings to the paisa, each a "
    "signed contribution to the net), waterfall, actions, positions, best/worst position, inaction, accuracy "
    "(rates as strings from 0 to 1, or null), heuristics, calibration, effectiveness; lifecycle on a position "
    "retrospective"
)


def _net(report: RetrospectiveReport) -> str | None:
    hard = report.hard if isinstance(report.hard, Mapping) else {}
    attribution = hard.get("attribution")
    net = attribution.get("net") if isinstance(attribution, Mapping) else None
    return None if net is None else str(net)


class ReportOutput(serializers.Serializer):
    id = serializers.IntegerField()
    # Plain strings, not choice fields: the schema already has a "status" enum (a heuristic's), and
    # two enums of one name collide in the generated components.
    horizon = serializers.CharField(help_text=", ".join(RetrospectiveReport.Horizon.values))
    status = serializers.CharField(help_text=", ".join(RetrospectiveReport.Status.values))
    account = serializers.IntegerField(source="account_id")
    account_name = serializers.CharField(source="account.name")
    strategy = serializers.IntegerField(source="strategy_id", allow_null=True)
    strategy_name = serializers.CharField(source="strategy.name", allow_null=True, default=None)
    position = serializers.IntegerField(source="position_id", allow_null=True)
    symbol = serializers.CharField(source="position.instrument.symbol", allow_null=True, default=None)
    period_start = serializers.DateField()
    period_end = serializers.DateField()
    net = serializers.SerializerMethodField(help_text="the period's net result, from the hard part (null until ready)")
    confidence = serializers.DecimalField(max_digits=5, decimal_places=4, allow_null=True)
    model_used = serializers.CharField()
    tier = serializers.CharField()
    ungrounded_count = serializers.SerializerMethodField(
        help_text="numbers the narrative cites that the hard part does not hold"
    )
    is_replay = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_net(self, report: RetrospectiveReport) -> str | None:
        return _net(report)

    @extend_schema_field(serializers.IntegerField())
    def get_ungrounded_count(self, report: RetrospectiveReport) -> int:
        return len(report.ungrounded) if isinstance(report.ungrounded, list) else 0


class UngroundedOutput(serializers.Serializer):
    number = serializers.CharField(help_text="the number as the narrative wrote it")
    where = serializers.CharField(help_text='where in the narrative: "what_worked[0]", "hindsight", …')


class ReportDetailOutput(ReportOutput):
    trigger_key = serializers.CharField(help_text='what caused it: "weekly:3:2026-11-27", "position:42", …')
    hard = serializers.JSONField(help_text=HARD_HELP)
    narrative = serializers.JSONField(
        help_text="the model's reading: what_worked, what_failed (lists), hindsight, proposals, confidence"
    )
    ungrounded = UngroundedOutput(many=True)
    error = serializers.CharField(help_text="why the review failed (blank unless failed)")
    attempts = serializers.IntegerField()


class PositionRetrospectiveOutput(ReportDetailOutput):
    lifecycle = serializers.SerializerMethodField(
        help_text="the position's lifecycle: path, checkpoints, final PnL, peak, regret, vs-inaction, optimal exit"
    )

    @extend_schema_field(serializers.JSONField(allow_null=True))
    def get_lifecycle(self, report: RetrospectiveReport) -> Any:
        hard = report.hard if isinstance(report.hard, Mapping) else {}
        return hard.get("lifecycle")


class TradeReviewOutput(serializers.Serializer):
    id = serializers.IntegerField()
    position = serializers.IntegerField(source="position_id")
    symbol = serializers.CharField(source="position.instrument.symbol")
    direction = serializers.CharField(source="position.direction")
    account = serializers.IntegerField(source="position.account_id")
    is_replay = serializers.BooleanField(source="position.is_replay")
    closed_on = serializers.DateField(source="position.closed_on", allow_null=True)
    exit_reason = serializers.CharField(source="position.exit_reason")
    outcome = serializers.CharField(help_text="win, loss or scratch: from the realised PnL, by code")
    realised_pnl = serializers.DecimalField(max_digits=18, decimal_places=2)
    signal_evolution = serializers.CharField(help_text="Realized, Falsified or Weakened: from the outcome, by code")
    thesis_vs_outcome = serializers.JSONField(help_text="the thesis's predicted moves against the realised one")
    critique = serializers.CharField(help_text="the reviewer model's words")
    lessons = serializers.ListField(child=serializers.CharField(), help_text="the reviewer model's lessons")
    model_used = serializers.CharField()
    created_at = serializers.DateTimeField()
