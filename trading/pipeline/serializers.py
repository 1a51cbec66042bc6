from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.humanize.templatetags.humanize import intcomma
from django.http import QueryDict
from django.template.defaultfilters import date as date_label
from django.template.defaultfilters import floatformat
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.providers.factory import PROVIDERS
from trading.models import PipelineRun
from trading.pipeline.outputs import STAGE_OUTPUTS
from trading.pipeline.presenters import run_outputs
from trading.pipeline.selectors import RunRow
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

    @extend_schema_field(
        {
            "type": "object",
            "properties": {
                "calls": {"type": "integer"},
                "input_tokens": {"type": "integer"},
                "output_tokens": {"type": "integer"},
                "cost": {
                    "type": "number",
                    "description": "the model calls' cost in the price table's currency (USD by default)",
                },
            },
        }
    )
    def get_totals(self, run: PipelineRun) -> dict[str, int | float]:
        from agents.recording import run_totals

        totals = run_totals(run)
        return {
            "calls": int(totals["calls"]),
            "input_tokens": int(totals["input_tokens"]),
            "output_tokens": int(totals["output_tokens"]),
            # A JSON number: the stored cost has six decimals, which a double holds as written.
            "cost": float(totals["cost"]),
        }


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


def run_row_json(row: RunRow) -> dict[str, Any]:
    """One line of the runs list as its live updates redraw it, formatted as the page formats it
    (the page's static script only places these strings; it formats nothing)."""
    run = row.run
    thesis = getattr(run, "thesis", None)  # the reverse one-to-one: absent, not None, without one
    strategy_run = run.strategy_run
    return {
        "id": run.pk,
        "url": reverse("run_detail", args=[run.pk]),
        "symbol": run.instrument.symbol,
        "as_of": date_label(run.as_of, "d M Y"),
        "provider": run.provider,
        "status": run.status,
        "failure_reason": run.failure_reason,
        "is_replay": run.is_replay,
        "strategy": None
        if strategy_run is None
        else {
            "name": strategy_run.strategy.name,
            "url": f"{reverse('strategy_list')}#strategy-{strategy_run.strategy_id}",
        },
        "thesis": None
        if thesis is None
        else {
            "id": thesis.pk,
            "url": reverse("thesis_detail", args=[thesis.pk]),
            "label": f"{thesis.direction} · {floatformat(thesis.conviction, 2)}",
            "risk_approved": thesis.risk_approved,
        },
        "tokens": row.tokens,
        "tokens_label": intcomma(row.tokens),
        "started": date_label(timezone.localtime(run.created_at), "d M H:i"),
        "finished": run.is_finished,
    }
