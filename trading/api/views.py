from __future__ import annotations

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from trading import edge, selectors, selectors_book, services
from trading.api.errors import (
    READ,
    SYMBOL,
    RefusalOutput,
    bad_input,
    body_of,
    errors,
    object_id,
    query,
    validated,
)
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
from trading.runs import RunsNotQueued, pipeline_runs_start

QUEUE_PARAMETERS = [
    query(
        "status",
        "pending (default), approved, rejected, expired, risk_rejected, or all",
        enum=list(selectors_book.QUEUE_STATUSES),
    ),
    query("symbol", "one instrument's symbol (at most 100 characters)"),
    query("direction", "LONG or SHORT", enum=[*selectors_book.DIRECTIONS, *map(str.lower, selectors_book.DIRECTIONS)]),
    query("strategy", "a strategy's name (at most 100 characters)"),
    query("min_conviction", "theses at or above this calibrated conviction, a number from 0 to 1"),
    query("replay", "1 or true: include the theses of history replays", enum=sorted(edge.FLAGS)),
]


@extend_schema(responses={200: InstrumentOutput(many=True), **errors(*READ)})
class InstrumentListApi(generics.ListAPIView):
    """Every instrument of the desk's universe."""

    serializer_class = InstrumentOutput
    queryset = Instrument.objects.order_by("symbol", "exchange")


@extend_schema(parameters=[SYMBOL], responses={200: InstrumentOutput, **errors(*READ)})
class InstrumentDetailApi(generics.RetrieveAPIView):
    serializer_class = InstrumentOutput

    def get_object(self) -> Instrument:
        return selectors.instrument_by_symbol(self.kwargs["symbol"])


@extend_schema(parameters=[SYMBOL, BarFilterInput], responses={200: BarOutput(many=True), **errors(400, *READ)})
class BarListApi(generics.ListAPIView):
    """Daily bars, oldest first, optionally between two dates (inclusive)."""

    serializer_class = BarOutput

    def get_queryset(self):
        instrument = selectors.instrument_by_symbol(self.kwargs["symbol"])
        filters = validated(BarFilterInput, self.request.query_params)
        queryset = DailyBar.objects.filter(instrument=instrument).order_by("date")
        if start := filters.get("start"):
            queryset = queryset.filter(date__gte=start)
        if end := filters.get("end"):
            queryset = queryset.filter(date__lte=end)
        return queryset


class FeatureBundleApi(APIView):
    @extend_schema(
        parameters=[SYMBOL, AsOfInput],
        responses={
            200: FeatureBundle,
            **errors(400, *READ, say={404: "no such instrument, or no bar on or before `as_of`"}),
        },
        description=(
            "Stage 1's FeatureBundle (technical, news, sentiment, fundamentals, forecast, macro) computed "
            "strictly from data on or before `as_of`. `fallback` is true when the full path failed and the "
            "bundle was rebuilt from recent closes; `warnings` says why."
        ),
    )
    def get(self, request: Request, symbol: str) -> Response:
        instrument = selectors.instrument_by_symbol(symbol)
        as_of = validated(AsOfInput, request.query_params).get("as_of") or selectors.bar_dates(instrument)[1]
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
        filters = validated(RunFilterInput, self.request.query_params)
        return runs if filters["replay"] else runs.filter(is_replay=False)

    @extend_schema(parameters=[RunFilterInput], responses={200: RunOutput(many=True), **errors(400, *READ)})
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request=RunStartInput,
        responses={
            202: RunOutput(many=True),
            **errors(400, 401, 403, 429, say={400: "a bad body: unknown symbols, a date outside 1990-01-01..today"}),
            503: OpenApiResponse(description="the runs were saved but the task queue is unreachable: `detail` says "
                                 "why, `runs` lists them; they start by themselves when the queue is back"),
        },
    )
    def post(self, request: Request) -> Response:
        if not request.user.has_perm("trading.start_run"):
            raise PermissionDenied("starting runs needs the approver or admin role")
        params = validated(RunStartInput, body_of(request))
        symbols = [s.upper() for s in params["symbols"]]
        instruments = list(Instrument.objects.filter(symbol__in=symbols, is_active=True))
        unknown = sorted(set(symbols) - {i.symbol for i in instruments})
        if unknown:
            problem = f"unknown or inactive: {edge.short(', '.join(unknown))}"
            raise bad_input(edge.InputInvalid(f"symbols: {problem}"))
        try:
            runs = pipeline_runs_start(
                instruments=instruments,
                # Not left to pipeline_runs_start: its default is the latest bar of any instrument,
                # which one bar dated 9999-12-31 turned into every run's date.
                as_of=params.get("as_of") or edge.default_run_as_of(instruments),
                provider=params.get("provider") or settings.LLM["PROVIDER"],
                user=request.user,
            )
        except RunsNotQueued as refused:
            # The runs exist and the outbox sends them when the broker is back: listed, so a client
            # does not start them a second time.
            detail = (
                f"{len(refused.runs)} run(s) saved, {len(refused.unsent)} not queued: {refused.reason}; "
                "they start by themselves when the queue is back"
            )
            body = {"detail": detail, "runs": RunOutput(refused.runs, many=True).data, "unsent": refused.unsent}
            return Response(body, status=503)
        return Response(RunOutput(runs, many=True).data, status=202)


@extend_schema(parameters=[object_id("run_id", "the run's id")], responses={200: RunDetailOutput, **errors(*READ)})
class RunDetailApi(generics.RetrieveAPIView):
    serializer_class = RunDetailOutput
    queryset = PipelineRun.objects.select_related("instrument")
    lookup_url_kwarg = "run_id"


@extend_schema(parameters=QUEUE_PARAMETERS, responses={200: ThesisOutput(many=True), **errors(400, *READ)})
class ThesisListApi(generics.ListAPIView):
    """The approval queue: ?status=pending (default) | approved | rejected | expired | risk_rejected | all,
    ?symbol=, ?direction=, ?strategy=, ?min_conviction=, ?replay=1 (include history replays' theses).
    The page's filters, read by the same code: a bad one is a 400 naming it."""

    serializer_class = ThesisOutput

    def get_queryset(self):
        try:
            return selectors_book.thesis_queue(self.request.query_params)
        except edge.InputInvalid as problem:
            raise bad_input(problem) from None


@extend_schema(parameters=[object_id("thesis_id", "the thesis's id")], responses={200: ThesisOutput, **errors(*READ)})
class ThesisDetailApi(generics.RetrieveAPIView):
    serializer_class = ThesisOutput
    queryset = Thesis.objects.select_related("instrument", "decided_by")
    lookup_url_kwarg = "thesis_id"


class _ThesisDecisionApi(APIView):
    decision = ""

    @extend_schema(
        parameters=[object_id("thesis_id", "the thesis's id")],
        request=DecisionInput,
        responses={
            200: ThesisOutput,
            **errors(400, 401, 403, 404, 429),
            409: OpenApiResponse(response=RefusalOutput, description="refused by the desk's rules: `detail` says why"),
        },
    )
    def post(self, request: Request, thesis_id: int) -> Response:
        thesis = get_object_or_404(Thesis.objects.select_related("instrument", "run"), pk=thesis_id)
        comment = validated(DecisionInput, body_of(request))["comment"]
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


@extend_schema(
    parameters=[query("status", "open or closed (both when omitted)", enum=list(selectors_book.POSITION_STATUSES))],
    responses={200: PositionOutput(many=True), **errors(400, *READ)},
)
class PositionListApi(generics.ListAPIView):
    """Positions of the live book: ?status=open | closed."""

    serializer_class = PositionOutput

    def get_queryset(self):
        positions = Position.objects.filter(account=default_account()).select_related("instrument")
        if status := self.request.query_params.get("status"):
            try:
                status = edge.parse_choice(status, "status", selectors_book.POSITION_STATUSES)
            except edge.InputInvalid as problem:
                raise bad_input(problem) from None
            positions = positions.filter(status=status)
        return positions.order_by("-opened_on", "-id")


class PositionCloseApi(APIView):
    """Close a live position by hand at the last close (approvers only). 400 without a reason; 409
    with the reason when refused: a replay's position, a price older than the last session, already closed."""

    @extend_schema(
        parameters=[object_id("position_id", "the position's id")],
        request=PositionCloseInput,
        responses={200: PositionOutput, **errors(400, 401, 403, 404, 409, 429)},
    )
    def post(self, request: Request, position_id: int) -> Response:
        position = get_object_or_404(Position.objects.select_related("instrument", "account"), pk=position_id)
        if not request.user.has_perm(APPROVE_PERMISSION):
            raise PermissionDenied("only approvers can close a position")
        comment = validated(PositionCloseInput, body_of(request))["comment"]
        try:
            closed = position_close_by_hand(position=position, user=request.user, comment=comment)
        except BrokerError as refusal:
            return Response({"detail": refusal.reason}, status=409)
        return Response(PositionOutput(closed).data)
