from __future__ import annotations

from rest_framework import serializers

from trading.api.fields import CommentField


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


class OrderOutput(serializers.Serializer):
    id = serializers.IntegerField()
    thesis = serializers.IntegerField(source="thesis_id")
    account = serializers.CharField(source="account.name")
    symbol = serializers.CharField(source="instrument.symbol")
    side = serializers.CharField()
    quantity = serializers.IntegerField()
    status = serializers.CharField()
    fill_policy = serializers.CharField()
    placed_on = serializers.DateField()
    placed_at = serializers.DateTimeField()
    fill_price = serializers.DecimalField(max_digits=18, decimal_places=4, allow_null=True)
    filled_on = serializers.DateField(allow_null=True)
    costs_total = serializers.DecimalField(max_digits=18, decimal_places=2)
    note = serializers.CharField(help_text="why it was cancelled, by the broker or by a person")
    is_replay = serializers.BooleanField(source="thesis.run.is_replay")


class OrderCancelInput(serializers.Serializer):
    reason = CommentField(
        what="reason",
        help_text="why the order is cancelled (required)",
        error_messages={
            "required": "say why you cancel the order: a reason is required",
            "blank": "say why you cancel the order: a reason is required",
        },
    )
