from __future__ import annotations

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from trading import selectors, selectors_book, services
from trading.api.serializers import (
    AsOfInput,
    BarFilterInput,
    BarOutput,
    DecisionInput,
    InstrumentOutput,
    PositionCloseInput,
    PositionOutput,
    RunDetailOutput,
    RunFilterInput,
    RunOutput,
    RunStartInput,
    ThesisOutput,
)
from trading.approvals import APPROVE_PERMISSION, DecisionRefused, thesis_approve, thesis_reject
from trading.broker import BrokerError, position_close_by_hand
from trading.domain.features import NoPriceData
from trading.domain.schemas import FeatureBundle
from trading.models import DailyBar, Instrument, PipelineRun, Position, Thesis
from trading.portfolio import default_account
from trading.runs import pipeline_runs_start

SYMBOL = OpenApiParameter("symbol", str, OpenApiParameter.PATH, description="RELIANCE or NSE:RELIANCE")


class InstrumentListApi(generics.ListAPIView):
    """Every instrument of the desk's universe."""

    serializer_class = InstrumentOutput
    queryset = Instrument.objects.order_by("symbol", "exchange")


@extend_schema(parameters=[SYMBOL])
class InstrumentDetailApi(generics.RetrieveAPIView):
    serializer_class = InstrumentOutput

    def get_object(self) -> Instrument:
        return selectors.instrument_by_symbol(self.kwargs["symbol"])


@extend_schema(parameters=[SYMBOL, BarFilterInput])
class BarListApi(generics.ListAPIView):
    """Daily bars, oldest first, optionally between two dates (inclusive)."""

    serializer_class = BarOutput

    def get_queryset(self):
        instrument = selectors.instrument_by_symbol(self.kwargs["symbol"])
        filters = BarFilterInput(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        queryset = DailyBar.objects.filter(instrument=instrument).order_by("date")
        if start := filters.validated_data.get("start"):
            queryset = queryset.filter(date__gte=start)
        if end := filters.validated_data.get("end"):
            queryset = queryset.filter(date__lte=end)
        return queryset


class FeatureBundleApi(APIView):
    @extend_schema(
        parameters=[SYMBOL, AsOfInput],
        responses={200: FeatureBundle},
        description=(
            "Stage 1's FeatureBundle (technical, news, sentiment, fundamentals, forecast, macro) computed "
            "strictly from data on or before `as_of`. `fallback` is true when the full path failed and the "
            "bundle was rebuilt from recent closes; `warnings` says why."
        ),
    )
    def get(self, request: Request, symbol: str) -> Response:
        instrument = selectors.instrument_by_symbol(symbol)
        params = AsOfInput(data=request.query_params)
        params.is_valid(raise_exception=True)
        as_of = params.validated_data.get("as_of") or selectors.bar_dates(instrument)[1]
        if as_of is None:
            raise NotFound(f"{instrument.symbol} has no bars yet.")
        try:
            bundle = services.feature_bundle_for(instrument=instrument, as_of=as_of)
        except NoPriceData as error:
            raise NotFound(str(error)) from None
        return Response(bundle.model_dump(mode="json"))


class RunListApi(generics.ListAPIView):
    """List recent runs (live only unless ?replay=true), or start runs (needs the start_run permission)."""

    serializer_class = RunOutput

    def get_queryset(self):
        runs = PipelineRun.objects.select_related("instrument").order_by("-created_at", "-id")
        if self.request.method != "GET":
            return runs
        filters = RunFilterInput(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        return runs if filters.validated_data["replay"] else runs.filter(is_replay=False)

    @extend_schema(parameters=[RunFilterInput])
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(request=RunStartInput, responses={202: RunOutput(many=True)})
    def post(self, request: Request) -> Response:
        if not request.user.has_perm("trading.start_run"):
            raise PermissionDenied("starting runs needs the approver or admin role")
        params = RunStartInput(data=request.data)
        params.is_valid(raise_exception=True)
        symbols = [s.upper() for s in params.validated_data["symbols"]]
        instruments = list(Instrument.objects.filter(symbol__in=symbols, is_active=True))
        unknown = sorted(set(symbols) - {i.symbol for i in instruments})
        if unknown:
            raise ValidationError({"symbols": [f"unknown or inactive: {', '.join(unknown)}"]})
        runs = pipeline_runs_start(
            instruments=instruments,
            as_of=params.validated_data.get("as_of"),
            provider=params.validated_data.get("provider") or settings.LLM["PROVIDER"],
            user=request.user,
        )
        return Response(RunOutput(runs, many=True).data, status=202)


class RunDetailApi(generics.RetrieveAPIView):
    serializer_class = RunDetailOutput
    queryset = PipelineRun.objects.select_related("instrument")
    lookup_url_kwarg = "run_id"


class ThesisListApi(generics.ListAPIView):
    """The approval queue: ?status=pending (default) | approved | rejected | expired | risk_rejected | all,
    ?symbol=, ?direction=, ?strategy=, ?min_conviction=, ?replay=1 (include history replays' theses)."""

    serializer_class = ThesisOutput

    def get_queryset(self):
        return selectors_book.thesis_queue(self.request.query_params)


class ThesisDetailApi(generics.RetrieveAPIView):
    serializer_class = ThesisOutput
    queryset = Thesis.objects.select_related("instrument", "decided_by")
    lookup_url_kwarg = "thesis_id"


class _ThesisDecisionApi(APIView):
    decision = ""

    @extend_schema(request=DecisionInput, responses={200: ThesisOutput})
    def post(self, request: Request, thesis_id: int) -> Response:
        thesis = get_object_or_404(Thesis.objects.select_related("instrument", "run"), pk=thesis_id)
        params = DecisionInput(data=request.data)
        params.is_valid(raise_exception=True)
        comment = params.validated_data["comment"]
        try:
            if self.decision == "approve":
                thesis_approve(thesis=thesis, user=request.user, comment=comment)
            else:
                thesis_reject(thesis=thesis, user=request.user, comment=comment)
        except DecisionRefused as refusal:
            if not request.user.has_perm(APPROVE_PERMISSION):
                raise PermissionDenied(refusal.reason) from None
            return Response({"detail": refusal.reason, "checks": refusal.checks}, status=409)
        thesis.refresh_from_db()
        return Response(ThesisOutput(thesis).data)


class ThesisApproveApi(_ThesisDecisionApi):
    """Approve (approvers only). 409 with the reason when refused: decided, expired, stale, risk-rejected,
    a replay's thesis, an instrument already live in the book, or a risk check that fails against the
    live book now (``checks`` lists each failing check with its figures)."""

    decision = "approve"


class ThesisRejectApi(_ThesisDecisionApi):
    """Reject with a comment (approvers only)."""

    decision = "reject"


class PositionListApi(generics.ListAPIView):
    """Positions of the live book: ?status=open | closed."""

    serializer_class = PositionOutput

    def get_queryset(self):
        positions = Position.objects.filter(account=default_account()).select_related("instrument")
        if status := self.request.query_params.get("status"):
            positions = positions.filter(status=status)
        return positions.order_by("-opened_on", "-id")


class PositionCloseApi(APIView):
    """Close a live position by hand at the last close (approvers only). 400 without a reason; 409
    with the reason when refused: a replay's position, a price older than the last session, already closed."""

    @extend_schema(request=PositionCloseInput, responses={200: PositionOutput})
    def post(self, request: Request, position_id: int) -> Response:
        position = get_object_or_404(Position.objects.select_related("instrument", "account"), pk=position_id)
        if not request.user.has_perm(APPROVE_PERMISSION):
            raise PermissionDenied("only approvers can close a position")
        params = PositionCloseInput(data=request.data)
        params.is_valid(raise_exception=True)
        try:
            closed = position_close_by_hand(
                position=position, user=request.user, comment=params.validated_data["comment"]
            )
        except BrokerError as refusal:
            return Response({"detail": refusal.reason}, status=409)
        return Response(PositionOutput(closed).data)
