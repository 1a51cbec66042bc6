"""The reviews' API, read-only for any authenticated user: retrospective reports (every horizon),
position retrospectives and the stage-12 trade reviews. Filters are checked by
``reviews.report_selectors`` (a bad one is a 400 naming it, answered by ``trading.api.errors``)."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import generics

from reviews import report_selectors as selectors
from reviews.models import RetrospectiveReport, TradeReview
from reviews.serializers import (
    PositionRetrospectiveOutput,
    ReportDetailOutput,
    ReportOutput,
    TradeReviewOutput,
)
from trading.api.errors import READ, errors, object_id, query

__all__ = [
    "PositionRetrospectiveListApi",
    "ReviewDetailApi",
    "ReviewListApi",
    "TradeReviewDetailApi",
    "TradeReviewListApi",
]

ACCOUNT = query("account", "an account's id (the live paper book, or a replay's)", kind=OpenApiTypes.INT)
REPORT_PARAMETERS = [
    query("horizon", "daily, weekly, epoch, position, loss or testament", enum=list(selectors.HORIZON_VALUES)),
    ACCOUNT,
    query("strategy", "a strategy's id", kind=OpenApiTypes.INT),
    query("status", "running, ready or failed (all when omitted)", enum=list(selectors.STATUS_VALUES)),
]


@extend_schema(parameters=REPORT_PARAMETERS, responses={200: ReportOutput(many=True), **errors(400, *READ)})
class ReviewListApi(generics.ListAPIView):
    """Retrospective reports, latest period first: ?horizon=, ?account=<id>, ?strategy=<id>, ?status=."""

    serializer_class = ReportOutput

    def get_queryset(self) -> QuerySet[RetrospectiveReport]:
        return selectors.reports_matching(self.request.query_params)  # a bad filter: a 400


@extend_schema(
    parameters=[object_id("report_id", "the report's id")], responses={200: ReportDetailOutput, **errors(*READ)}
)
class ReviewDetailApi(generics.RetrieveAPIView):
    """One report: its hard part (figures by code), the narrative, and the numbers the narrative cites
    that the hard part does not hold (``ungrounded``)."""

    serializer_class = ReportDetailOutput
    queryset = RetrospectiveReport.objects.select_related("account", "strategy", "position__instrument")
    lookup_url_kwarg = "report_id"


@extend_schema(
    parameters=[ACCOUNT, query("position", "a position's id", kind=OpenApiTypes.INT)],
    responses={200: PositionRetrospectiveOutput(many=True), **errors(400, *READ)},
)
class PositionRetrospectiveListApi(generics.ListAPIView):
    """Ready position retrospectives (one per closed position), latest first, with each lifecycle."""

    serializer_class = PositionRetrospectiveOutput

    def get_queryset(self) -> QuerySet[RetrospectiveReport]:
        return selectors.position_retrospectives_matching(self.request.query_params)


@extend_schema(
    parameters=[ACCOUNT, query("outcome", "win, loss or scratch", enum=list(selectors.OUTCOMES))],
    responses={200: TradeReviewOutput(many=True), **errors(400, *READ)},
)
class TradeReviewListApi(generics.ListAPIView):
    """Stage-12 trade reviews, latest first: the outcome and realised PnL by code, the critique and
    lessons by the reviewer model."""

    serializer_class = TradeReviewOutput

    def get_queryset(self) -> QuerySet[TradeReview]:
        return selectors.trade_reviews_matching(self.request.query_params)


@extend_schema(
    parameters=[object_id("review_id", "the trade review's id")], responses={200: TradeReviewOutput, **errors(*READ)}
)
class TradeReviewDetailApi(generics.RetrieveAPIView):
    serializer_class = TradeReviewOutput
    queryset = TradeReview.objects.select_related("position__instrument")
    lookup_url_kwarg = "review_id"
