"""The critique API's shapes: a critique (listed, and in full with its evidence, findings, directive,
escalations and grounding), its required actions, and an approver's attestation. Output is read from
the stored rows; the one input is the attestation's comment.

Statuses, severities and kinds are plain strings documented in their help text, not choice fields:
the schema names an enum by its field, and one more "status" enum would collide with the API's
others (a heuristic's, a report's, health's)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from reviews.models import Critique, CritiqueAction
from trading.api.fields import CommentField

__all__ = ["AttestInput", "CritiqueActionOutput", "CritiqueDetailOutput", "CritiqueOutput"]


class CritiqueActionOutput(serializers.Serializer):
    id = serializers.IntegerField()
    critique = serializers.IntegerField(source="critique_id")
    number = serializers.IntegerField()
    kind = serializers.CharField(help_text=", ".join(CritiqueAction.Kind.values))
    text = serializers.CharField()
    params = serializers.JSONField(help_text="the kind's parameters, e.g. {'max_pct': 20.0}")
    status = serializers.CharField(help_text=", ".join(CritiqueAction.Status.values))
    is_complete = serializers.BooleanField()
    check_detail = serializers.CharField(help_text="what the last machine check found (blank for free-form)")
    checked_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)
    attested_by = serializers.SerializerMethodField(help_text="the approver who attested it, or null")
    attestation = serializers.CharField(help_text="the approver's comment (blank unless attested)")

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_attested_by(self, action: CritiqueAction) -> str | None:
        return action.attested_by.get_username() if action.attested_by_id and action.attested_by else None


class CritiqueOutput(serializers.Serializer):
    id = serializers.IntegerField()
    strategy = serializers.IntegerField(source="strategy_id")
    strategy_name = serializers.CharField(source="strategy.name")
    strategy_run = serializers.IntegerField(source="strategy_run_id", allow_null=True)
    is_replay = serializers.BooleanField()
    sequence = serializers.IntegerField(help_text="the strategy's critique number (1, 2, …), replays counted apart")
    run_count = serializers.IntegerField(help_text="the strategy's run count when it fired")
    as_of = serializers.DateField()
    status = serializers.CharField(help_text=", ".join(Critique.Status.values))
    severity = serializers.CharField(help_text="advisory or directive (blank until done)")
    trajectory = serializers.CharField(help_text="first, improving, stagnating or deteriorating (blank until done)")
    diagnosis = serializers.CharField(help_text="the critic's words")
    fired = serializers.SerializerMethodField(help_text="the detectors that fired, by key")
    actions = CritiqueActionOutput(many=True, help_text="the required actions with their status")
    model_used = serializers.CharField()
    error = serializers.CharField(help_text="why the critique failed (blank unless failed)")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_fired(self, critique: Critique) -> list[str]:
        findings = critique.findings if isinstance(critique.findings, list) else []
        return [str(f.get("detector")) for f in findings if isinstance(f, dict) and f.get("fired")]


class CritiqueDetailOutput(CritiqueOutput):
    trigger = serializers.JSONField(help_text="mode, probability, draw and the reasons it fired")
    evidence = serializers.JSONField(help_text="the evidence pack, computed by code from stored rows")
    findings = serializers.JSONField(
        help_text="each loop detector: detector, loop, title, fired, score (0 to 1), figures, ids, summary"
    )
    directive = serializers.JSONField(
        help_text="the critic's directive as settled by code: severity, diagnosis, required_actions, "
        "prohibited_patterns, evidence"
    )
    escalations = serializers.JSONField(help_text="findings flagged by earlier critiques: present or resolved")
    grounding = serializers.JSONField(help_text="the cited figures and ids found in the evidence pack, and those not")
    archive_path = serializers.CharField(help_text="the critique_run_NNN.json file (blank until archived)")
    attempts = serializers.IntegerField()
    started_at = serializers.DateTimeField(allow_null=True)


class AttestInput(serializers.Serializer):
    comment = CommentField(
        what="comment",
        help_text="what was done and where to see it (required; kept in the audit log)",
        error_messages={
            "required": "an attestation needs a comment: say what was done and where to see it",
            "blank": "an attestation needs a comment: say what was done and where to see it",
        },
    )
