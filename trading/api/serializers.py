from __future__ import annotations

from rest_framework import serializers

from trading.models import DailyBar, Instrument


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
        required=False, help_text="the bundle as of this date (YYYY-MM-DD); the latest bar when omitted"
    )


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
    stages = StageOutput(many=True, required=False)
    totals = serializers.DictField(required=False)


class RunStartInput(serializers.Serializer):
    symbols = serializers.ListField(child=serializers.CharField(), min_length=1, max_length=500)
    as_of = serializers.DateField(required=False)
    provider = serializers.ChoiceField(choices=())

    def __init__(self, *args, **kwargs):
        from trading.pipeline import PROVIDERS

        super().__init__(*args, **kwargs)
        self.fields["provider"].choices = PROVIDERS
        self.fields["provider"].required = False
