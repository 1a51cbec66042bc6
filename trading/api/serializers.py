from __future__ import annotations

from rest_framework import serializers

from agents.providers.factory import PROVIDERS
from trading import edge
from trading.models import DailyBar, Instrument


def _desk_date(value, name: str):
    """A date inside the desk's window (DATE_FLOOR to today): 0001-01-01 and 9999-12-31 overflowed
    the features' date arithmetic, and a run as of a day to come has nothing to read."""
    try:
        return edge.check_date(value, name)
    except edge.InputInvalid as problem:
        raise serializers.ValidationError(str(problem)) from None


class CommentField(serializers.CharField):
    """Free text a person types: the one limit (``edge.MAX_COMMENT_CHARS``, ``maxLength`` in the
    schema) refused with the same words as on the page, before DRF's own length message."""

    def __init__(self, *, what: str, **kwargs) -> None:
        self.what = what
        super().__init__(max_length=edge.MAX_COMMENT_CHARS, **kwargs)

    def to_internal_value(self, data) -> str:
        value = super().to_internal_value(data)
        try:
            return edge.check_comment(value, self.what)
        except edge.InputInvalid as problem:
            raise serializers.ValidationError(str(problem)) from None


class InstrumentOutput(serializers.ModelSerializer):
    class Meta:
        model = Instrument
        fields = ["symbol", "exchange", "name", "sector", "tick_size", "lot_size", "currency", "is_active"]


class BarOutput(serializers.ModelSerializer):
    class Meta:
        model = DailyBar
        fields = ["date", "open", "high", "low", "close", "volume"]


class BarFilterInput(serializers.Serializer):
    start = serializers.DateField(required=False, help_text="first date, inclusive (YYYY-MM-DD)")
    end = serializers.DateField(required=False, help_text="last date, inclusive (YYYY-MM-DD)")

    def validate(self, attrs: dict) -> dict:
        start, end = attrs.get("start"), attrs.get("end")
        if start and end and start > end:
            raise serializers.ValidationError({"start": f"start {start} is after end {end}."})
        return attrs


class AsOfInput(serializers.Serializer):
    as_of = serializers.DateField(
        required=False,
        help_text="the bundle as of this date (YYYY-MM-DD), from 1990-01-01 to today; the latest bar when omitted",
    )

    def validate_as_of(self, value):
        return _desk_date(value, "as_of")


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
        from trading.pipeline import run_totals

        return {key: str(value) for key, value in run_totals(run).items()}


class RunStartInput(serializers.Serializer):
    symbols = serializers.ListField(child=serializers.CharField(max_length=64), min_length=1, max_length=500)
    as_of = serializers.DateField(
        required=False,
        help_text="from 1990-01-01 to today; when omitted, the latest bar of these instruments up to today",
    )
    provider = serializers.ChoiceField(choices=PROVIDERS, required=False)

    def validate_as_of(self, value):
        return _desk_date(value, "as_of")


class ThesisOutput(serializers.Serializer):
    id = serializers.IntegerField()
    run = serializers.IntegerField(source="run_id")
    symbol = serializers.CharField(source="instrument.symbol")
    direction = serializers.CharField()
    conviction = serializers.DecimalField(max_digits=5, decimal_places=4)
    entry = serializers.DecimalField(max_digits=18, decimal_places=4)
    stop = serializers.DecimalField(max_digits=18, decimal_places=4)
    target = serializers.DecimalField(max_digits=18, decimal_places=4)
    horizon_sessions = serializers.IntegerField()
    quantity = serializers.IntegerField()
    risk_amount = serializers.DecimalField(max_digits=18, decimal_places=2)
    notional = serializers.DecimalField(max_digits=18, decimal_places=2)
    risk_approved = serializers.BooleanField()
    risk_checks = serializers.JSONField()
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True, default=None)
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_comment = serializers.CharField()


class DecisionInput(serializers.Serializer):
    comment = CommentField(
        what="comment", required=False, allow_blank=True, default="", help_text="why (required to reject)"
    )


class PositionOutput(serializers.Serializer):
    id = serializers.IntegerField()
    thesis = serializers.IntegerField(source="thesis_id")
    symbol = serializers.CharField(source="instrument.symbol")
    direction = serializers.CharField()
    quantity = serializers.IntegerField()
    entry_price = serializers.DecimalField(max_digits=18, decimal_places=4)
    opened_on = serializers.DateField()
    stop = serializers.DecimalField(max_digits=18, decimal_places=4)
    target = serializers.DecimalField(max_digits=18, decimal_places=4)
    status = serializers.CharField()
    last_mark = serializers.DecimalField(max_digits=18, decimal_places=4, allow_null=True)
    unrealised_pnl = serializers.DecimalField(max_digits=18, decimal_places=2)
    exit_price = serializers.DecimalField(max_digits=18, decimal_places=4, allow_null=True)
    closed_on = serializers.DateField(allow_null=True)
    exit_reason = serializers.CharField()
    realised_pnl = serializers.DecimalField(max_digits=18, decimal_places=2, allow_null=True)
    exit_comment = serializers.CharField()
    is_replay = serializers.BooleanField()


class PositionCloseInput(serializers.Serializer):
    comment = CommentField(
        what="reason",
        help_text="why the position is closed by hand (required)",
        error_messages={
            "required": "say why you close it by hand: a reason is required",
            "blank": "say why you close it by hand: a reason is required",
        },
    )
