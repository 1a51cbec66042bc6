from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from trading import edge
from trading.api.errors import (
    READ,
    RefusalOutput,
    body_of,
    errors,
    object_id,
    query,
    validated,
)
from trading.book import selectors
from trading.book.accounts import default_account
from trading.book.approvals import APPROVE_PERMISSION, thesis_approve, thesis_reject
from trading.book.broker import position_close_by_hand
from trading.book.orders import order_cancel
from trading.book.serializers import (
    DecisionInput,
    OrderCancelInput,
    OrderOutput,
    PositionCloseInput,
    PositionOutput,
    ThesisOutput,
)
from trading.models import Order, Position, Thesis
from vocabulary.refusals import NotAllowed

QUEUE_PARAMETERS = [
    query(
        "status",
        "pending (default), approved, rejected, expired, risk_rejected, or all",
        enum=list(selectors.QUEUE_STATUSES),
    ),
    query("symbol", "one instrument's symbol (at most 100 characters)"),
    query("direction", "LONG or SHORT", enum=[*selectors.DIRECTIONS, *map(str.lower, selectors.DIRECTIONS)]),
    query("strategy", "a strategy's name (at most 100 characters)"),
    query("min_conviction", "theses at or above this calibrated conviction, a number from 0 to 1"),
    query("replay", "1 or true: include the theses of history replays", enum=sorted(edge.FLAGS)),
]


@extend_schema(parameters=QUEUE_PARAMETERS, responses={200: ThesisOutput(many=True), **errors(400, *READ)})
class ThesisListApi(generics.ListAPIView):
    """The approval queue: ?status=pending (default) | approved | rejected | expired | risk_rejected | all,
    ?symbol=, ?direction=, ?strategy=, ?min_conviction=, ?replay=1 (include history replays' theses).
    The page's filters, read by the same code: a bad one is a 400 naming it."""

    serializer_class = ThesisOutput

    def get_queryset(self):
        return selectors.thesis_queue(self.request.query_params)  # a bad filter: InputInvalid, a 400


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
        # A DecisionRefused is answered by trading.api.errors: 403 for a viewer, 400 for a rejection
        # without a comment, 409 with the failing ``checks`` otherwise.
        if self.decision == "approve":
            thesis_approve(thesis=thesis, user=request.user, comment=comment)
        else:
            thesis_reject(thesis=thesis, user=request.user, comment=comment)
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
    parameters=[query("status", "open or closed (both when omitted)", enum=list(selectors.POSITION_STATUSES))],
    responses={200: PositionOutput(many=True), **errors(400, *READ)},
)
class PositionListApi(generics.ListAPIView):
    """Positions of the live book: ?status=open | closed."""

    serializer_class = PositionOutput

    def get_queryset(self):
        positions = Position.objects.filter(account=default_account()).select_related("instrument")
        if status := self.request.query_params.get("status"):
            status = edge.parse_choice(status, "status", selectors.POSITION_STATUSES)
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
            raise NotAllowed("only approvers can close a position")
        comment = validated(PositionCloseInput, body_of(request))["comment"]
        closed = position_close_by_hand(position=position, user=request.user, comment=comment)  # BrokerError: 409
        return Response(PositionOutput(closed).data)


ORDER_PARAMETERS = [
    query("status", "working, filled, cancelled, or all (default)", enum=list(selectors.ORDER_STATUSES)),
    query("symbol", "one instrument's symbol (at most 100 characters)"),
    query("account", "live (default), replay (every replay account), all, or an account's id"),
]


@extend_schema(parameters=ORDER_PARAMETERS, responses={200: OrderOutput(many=True), **errors(400, *READ)})
class OrderListApi(generics.ListAPIView):
    """The orders blotter, newest first: ?status=working | filled | cancelled | all, ?symbol=,
    ?account=live | replay | all | <id>. The page's filters, read by the same code."""

    serializer_class = OrderOutput

    def get_queryset(self):
        return selectors.order_blotter(self.request.query_params, live=default_account())


class OrderCancelApi(APIView):
    """Cancel a working order of the live book (approvers only). 400 without a reason; 409 with the
    reason when refused: already filled, already cancelled, or a replay's order."""

    @extend_schema(
        parameters=[object_id("order_id", "the order's id")],
        request=OrderCancelInput,
        responses={200: OrderOutput, **errors(400, 401, 403, 404, 409, 429)},
    )
    def post(self, request: Request, order_id: int) -> Response:
        order = get_object_or_404(Order.objects.select_related("instrument", "account", "thesis__run"), pk=order_id)
        if not request.user.has_perm(APPROVE_PERMISSION):
            raise NotAllowed("only approvers can cancel an order")
        reason = validated(OrderCancelInput, body_of(request))["reason"]
        cancelled = order_cancel(order=order, user=request.user, reason=reason)  # OrderCancelRefused: 409
        return Response(OrderOutput(cancelled).data)
