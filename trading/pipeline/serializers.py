from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import QueryDict
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.providers.factory import PROVIDERS
from trading.models import PipelineRun
from trading.pipeline.outputs import STAGE_OUTPUTS
from trading.pipeline.presenters import run_outputs
from trading.pipeline.start import MAX_SYMBOL_CHARS, MAX_SYMBOLS, run_request


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


# Each stage's full shape is published once, by GET /api/stages/schemas/; here each is named with
# its version (a pydantic schema inlined here would repeat them and name the LONG/SHORT choice twice).
OUTPUTS_SCHEMA = {
    "type": "object",
    "properties": {
        stage: {
            "type": "object",
            "description": f"the {stage} stage's output; its shape is /api/stages/schemas/ under {stage!r}",
            "properties": {"version": {"type": "integer", "description": "the shape's version"}},
            "required": ["version"],
            "additionalProperties": True,
        }
        for stage in STAGE_OUTPUTS
    },
    "additionalProperties": False,
}


class RunDetailOutput(RunOutput):
    stages = StageOutput(many=True, source="stages.all")
    outputs = serializers.SerializerMethodField(
        help_text="each finished stage's output, typed and in the current version (see /api/stages/schemas/)"
    )
    totals = serializers.SerializerMethodField()

    @extend_schema_field(OUTPUTS_SCHEMA)
    def get_outputs(self, run: PipelineRun) -> dict[str, dict[str, Any]]:
        return run_outputs(run).stored()

    def get_totals(self, run: PipelineRun) -> dict[str, str]:
        from agents.recording import run_totals

        return {key: str(value) for key, value in run_totals(run).items()}


class RunStartInput(serializers.Serializer):
    """The fields document the body; the check is ``start.run_request``'s, the run form's too, so
    the API refuses exactly what the page refuses, with the same words (``RunRequestInvalid``: a
    400 naming each refused field). Its validated data is the checked ``RunRequest``'s fields."""

    symbols = serializers.ListField(
        child=serializers.CharField(max_length=MAX_SYMBOL_CHARS),
        min_length=1,
        max_length=MAX_SYMBOLS,
        help_text="active instruments of the desk; an unknown or inactive one refuses the whole request",
    )
    as_of = serializers.DateField(
        required=False,
        help_text="from 1990-01-01 to today; when omitted, the latest bar of these instruments up to today",
    )
    provider = serializers.ChoiceField(
        choices=PROVIDERS, required=False, help_text="the desk's LLM_PROVIDER when omitted; a paid one needs a price"
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, Mapping):
            return super().to_internal_value(data)  # DRF's own 400: the body is not an object
        symbols = data.getlist("symbols") if isinstance(data, QueryDict) else data.get("symbols")
        checked = run_request(symbols=symbols, as_of=data.get("as_of"), provider=data.get("provider"))
        return {"instruments": checked.instruments, "as_of": checked.as_of, "provider": checked.provider}
