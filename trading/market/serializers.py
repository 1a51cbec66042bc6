from __future__ import annotations

from rest_framework import serializers

from trading.api.fields import desk_date
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
        required=False,
        help_text="the bundle as of this date (YYYY-MM-DD), from 1990-01-01 to today; the latest bar when omitted",
    )

    def validate_as_of(self, value):
        return desk_date(value, "as_of")
