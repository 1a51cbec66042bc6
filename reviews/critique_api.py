"""The critique's API: critiques and their required actions, read by any authenticated user, and an
approver's attestation of a free-form action (the same service as the critique page's button, so
the rules are one: approvers only, a comment required, a machine-checked kind never attested).
Refusals are answered by ``trading.api.errors``."""

from __future__ import annotations

from collections.abc import Mapping

from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from reviews.critique.actions import action_attest
from reviews.critique_serializers import AttestInput, CritiqueActionOutput, CritiqueDetailOutput, CritiqueOutput
from reviews.models import Critique, CritiqueAction
from trading import edge
from trading.api.errors import READ, body_of, errors, object_id, query, validated
from trading.models import Strategy
from vocabulary.refusals import NotAllowed

__all__ = ["CritiqueActionAttestApi", "CritiqueActionDetailApi", "CritiqueDetailApi", "CritiqueListApi"]

APPROVE_PERMISSION = "trading.approve_thesis"
MAX_ID = 2**63 - 1
STATUSES = tuple(Critique.Status.values)


def _actions() -> Prefetch:
    return Prefetch("actions", queryset=CritiqueAction.objects.select_related("attested_by").order_by("number"))


def _strategy_id(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) <= MAX_ID:
        raise edge.InputInvalid(f"strategy {edge.short(text)!r} is not an id (a whole number from 1)")
    if not Strategy.objects.filter(pk=int(text)).exists():
        raise edge.InputInvalid(f"there is no strategy {int(text)}")
    return int(text)


def critiques_matching(params: Mapping[str, str]) -> QuerySet[Critique]:
    """Critiques filtered by ``strategy`` (id), ``status`` and ``replay`` (live only by default),
    latest first. A bad filter is refused (400) naming it."""
    critiques = Critique.objects.select_related("strategy").prefetch_related(_actions())
    critiques = critiques.filter(is_replay=edge.parse_flag(params.get("replay"), "replay"))
    if strategy := params.get("strategy", "").strip():
        critiques = critiques.filter(strategy_id=_strategy_id(strategy))
    if status := params.get("status", "").strip():
        critiques = critiques.filter(status=edge.parse_choice(status, "status", STATUSES))
    return critiques.order_by("-as_of", "-sequence", "-id")


@extend_schema(
    parameters=[
        query("strategy", "a strategy's id", kind=OpenApiTypes.INT),
        query("status", "queued, running, done or failed (all when omitted)", enum=list(STATUSES)),
        query(
            "replay", "1 or true: the critiques of history replays instead of the live desk's", enum=sorted(edge.FLAGS)
        ),
    ],
    responses={200: CritiqueOutput(many=True), **errors(400, *READ)},
)
class CritiqueListApi(generics.ListAPIView):
    """Critiques, latest first, each with its required actions and their status: ?strategy=<id>,
    ?status=, ?replay=1."""

    serializer_class = CritiqueOutput

    def get_queryset(self) -> QuerySet[Critique]:
        return critiques_matching(self.request.query_params)


@extend_schema(
    parameters=[object_id("critique_id", "the critique's id")], responses={200: CritiqueDetailOutput, **errors(*READ)}
)
class CritiqueDetailApi(generics.RetrieveAPIView):
    """One critique in full: the evidence pack and the detectors' findings (by code), the critic's
    directive, escalations, the grounding check, and each required action with its status."""

    serializer_class = CritiqueDetailOutput
    queryset = Critique.objects.select_related("strategy").prefetch_related(_actions())
    lookup_url_kwarg = "critique_id"


@extend_schema(
    parameters=[object_id("action_id", "the action's id")], responses={200: CritiqueActionOutput, **errors(*READ)}
)
class CritiqueActionDetailApi(generics.RetrieveAPIView):
    serializer_class = CritiqueActionOutput
    queryset = CritiqueAction.objects.select_related("attested_by")
    lookup_url_kwarg = "action_id"


class CritiqueActionAttestApi(APIView):
    """Attest a free-form action as done, with a comment (approvers only). Audited; when it was the
    last incomplete action of a directive, the directive is lifted and the strategy runs again."""

    @extend_schema(
        parameters=[object_id("action_id", "the action's id")],
        request=AttestInput,
        responses={
            200: CritiqueActionOutput,
            **errors(
                400,
                401,
                403,
                404,
                409,
                429,
                say={
                    400: "no comment, or one too long: `detail` says which",
                    403: "only approvers attest a critique's action",
                    409: "the action is checked by code, or already complete: `detail` says why",
                },
            ),
        },
    )
    def post(self, request: Request, action_id: int) -> Response:
        action = get_object_or_404(CritiqueAction.objects.select_related("critique"), pk=action_id)
        if not request.user.has_perm(APPROVE_PERMISSION):
            raise NotAllowed("only approvers attest a critique's action")
        comment = validated(AttestInput, body_of(request))["comment"]
        attested = action_attest(action, user=request.user, comment=comment)
        attested = CritiqueAction.objects.select_related("attested_by").get(pk=attested.pk)
        return Response(CritiqueActionOutput(attested).data)
