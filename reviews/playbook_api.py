"""The playbook's API: every heuristic with its citations and audit figures (any authenticated user),
and an admin's edit of a heuristic's text, factor or status (audited; its history keeps the edit).
The figures are ``reviews.playbook``'s; a refusal is answered by ``trading.api.errors``."""

from __future__ import annotations

from typing import Any

from django.db.models import IntegerField, QuerySet
from django.db.models.functions import Cast, Substr
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agents.models import HEURISTIC_CODE_PATTERN, Heuristic
from agents.playbook import STATUSES
from reviews import playbook
from trading import edge
from trading.api.errors import READ, body_of, errors, query, validated
from trading.api.fields import CommentField
from vocabulary.money import DEFAULT_CURRENCY
from vocabulary.refusals import NotAllowed

__all__ = ["HeuristicDetailApi", "HeuristicListApi"]

CODE = OpenApiParameter(
    "code",
    {"type": "string", "pattern": HEURISTIC_CODE_PATTERN},
    OpenApiParameter.PATH,
    description="the heuristic's code, e.g. H-7",
)


@extend_schema_field(
    {"type": "string", "pattern": f"^({'|'.join(STATUSES)})$", "description": "active, candidate, demoted or retired"}
)
class HeuristicStatusField(serializers.ChoiceField):
    """A heuristic's status. Documented by a pattern, not an enum: the schema's enums are named by
    field, and one more "status" enum used by several components would collide with the API's
    other "status" choices (health)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=list(STATUSES), **kwargs)


class HeuristicAuditOutput(serializers.Serializer):
    closed_positions = serializers.IntegerField(
        source="citations", help_text="closed positions whose run cited it while it was active, each once"
    )
    wins = serializers.IntegerField(help_text="of those, the ones with a profit")
    total_pnl = serializers.DecimalField(max_digits=18, decimal_places=2, help_text="their realised PnL, net")
    win_rate = serializers.DecimalField(max_digits=5, decimal_places=4, allow_null=True)
    average_pnl = serializers.DecimalField(max_digits=18, decimal_places=2, allow_null=True)
    recommendation = serializers.ChoiceField(choices=["KEEP", "DEMOTE", "INVESTIGATE", "INSUFFICIENT_DATA"])


class HeuristicOutput(serializers.Serializer):
    code = serializers.CharField(source="heuristic.code")
    text = serializers.CharField(source="heuristic.text")
    factor = serializers.CharField(source="heuristic.factor")
    status = HeuristicStatusField(source="heuristic.status")
    origin = serializers.CharField(source="heuristic.origin")
    created_at = serializers.DateTimeField(source="heuristic.created_at")
    updated_at = serializers.DateTimeField(source="heuristic.updated_at")
    citations = serializers.IntegerField(help_text="accepted citations: cited while it was active, by any role")
    audit = HeuristicAuditOutput(source="report", help_text="over every closed position, live and replay")
    currency = serializers.SerializerMethodField()

    def get_currency(self, record: playbook.HeuristicRecord) -> str:
        return DEFAULT_CURRENCY


class HistoryOutput(serializers.Serializer):
    when = serializers.DateTimeField()
    who = serializers.CharField()
    kind = serializers.CharField(help_text="created, changed or deleted")
    reason = serializers.CharField()
    changes = serializers.ListField(child=serializers.CharField(), help_text='"field: before → after"')


class HeuristicDetailOutput(HeuristicOutput):
    history = serializers.SerializerMethodField()

    @extend_schema_field(HistoryOutput(many=True))
    def get_history(self, record: playbook.HeuristicRecord) -> Any:
        return HistoryOutput(playbook.heuristic_history(record.heuristic), many=True).data


class HeuristicEditInput(serializers.Serializer):
    text = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    factor = serializers.CharField(required=False, allow_blank=True, max_length=32)
    status = HeuristicStatusField(required=False)
    reason = CommentField(
        what="reason",
        help_text="why it changes (required; kept in the audit log and the history)",
        error_messages={
            "required": "say why the heuristic changes: a reason is required",
            "blank": "say why the heuristic changes: a reason is required",
        },
    )


def _ordered() -> QuerySet[Heuristic]:
    # By number, so H-2 comes before H-10.
    return Heuristic.objects.annotate(number_=Cast(Substr("code", 3), IntegerField())).order_by("number_", "code")


@extend_schema(
    parameters=[query("status", "active, candidate, demoted or retired (all when omitted)", enum=list(STATUSES))],
    responses={200: HeuristicOutput(many=True), **errors(400, *READ)},
)
class HeuristicListApi(generics.ListAPIView):
    """The playbook: every heuristic (?status= one status) with its accepted citations and its audit
    over every closed position whose run cited it, as the playbook page shows them."""

    serializer_class = HeuristicOutput

    def get_queryset(self) -> QuerySet[Heuristic]:
        heuristics = _ordered()
        if status := self.request.query_params.get("status"):
            heuristics = heuristics.filter(status=edge.parse_choice(status, "status", STATUSES))
        return heuristics

    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        records = playbook.heuristic_records(list(page if page is not None else self.get_queryset()))
        data = HeuristicOutput(records, many=True).data
        return self.get_paginated_response(data) if page is not None else Response(data)


class HeuristicDetailApi(generics.GenericAPIView):
    """One heuristic with its figures and the history of its edits. Admins change its text, factor or
    status with PATCH (or POST), saying why: audited, and kept in its history."""

    serializer_class = HeuristicDetailOutput

    def _heuristic(self, code: str) -> Heuristic:
        return get_object_or_404(Heuristic, code=code)

    def _answer(self, heuristic: Heuristic) -> Response:
        record = playbook.heuristic_records([heuristic])[0]
        return Response(HeuristicDetailOutput(record).data)

    @extend_schema(parameters=[CODE], responses={200: HeuristicDetailOutput, **errors(*READ)})
    def get(self, request: Request, code: str) -> Response:
        return self._answer(self._heuristic(code))

    @extend_schema(
        parameters=[CODE],
        request=HeuristicEditInput,
        responses={
            200: HeuristicDetailOutput,
            **errors(
                400,
                401,
                403,
                404,
                409,
                429,
                say={
                    403: "only admins edit heuristics",
                    409: "nothing to change: the heuristic already reads so",
                },
            ),
        },
    )
    def patch(self, request: Request, code: str) -> Response:
        heuristic = self._heuristic(code)
        if not playbook.can_edit(request.user):
            raise NotAllowed("only admins edit heuristics")
        params = validated(HeuristicEditInput, body_of(request))
        changed = playbook.heuristic_update(heuristic=heuristic, user=request.user, **params)
        return self._answer(changed)

    @extend_schema(
        parameters=[CODE],
        request=HeuristicEditInput,
        responses={200: HeuristicDetailOutput, **errors(400, 401, 403, 404, 409, 429)},
        description="The same edit as PATCH, for clients that cannot send PATCH.",
    )
    def post(self, request: Request, code: str) -> Response:
        return self.patch(request, code)
