from __future__ import annotations

from rest_framework import serializers

from agents.providers.factory import PROVIDERS
from trading.api.fields import desk_date


class StageOutput(serializers.Serializer):
    stage = serializers.CharField()
    status = serializers.CharField()
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField()
    output = serializers.JSONField()


class RunOutput(serializers.Serializer):
    id = serializers.IntegerField()
    symbol = serializers.CharField(source="instrument.symbol")
    as_of = serializers.DateField()
    provider = serializers.CharField()
    status = serializers.CharField()
    failure_reason = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    is_replay = serializers.BooleanField(help_text="made by a history replay, not the live desk")


class RunFilterInput(serializers.Serializer):
    replay = serializers.BooleanField(
        required=False,
        default=False,
        help_text="include the runs of history replays (default false: live runs only)",
    )


class RunDetailOutput(RunOutput):
    stages = StageOutput(many=True, source="stages.all")
    totals = serializers.SerializerMethodField()

    def get_totals(self, run) -> dict[str, str]:
        from agents.recording import run_totals

        return {key: str(value) for key, value in run_totals(run).items()}


class RunStartInput(serializers.Serializer):
    symbols = serializers.ListField(child=serializers.CharField(max_length=64), min_length=1, max_length=500)
    as_of = serializers.DateField(
        required=False,
        help_text="from 1990-01-01 to today; when omitted, the latest bar of these instruments up to today",
    )
    provider = serializers.ChoiceField(choices=PROVIDERS, required=False)

    def validate_as_of(self, value):
        return desk_date(value, "as_of")
