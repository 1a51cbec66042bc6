from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from trading.api.errors import (
    READ,
    SYMBOL,
    errors,
    validated,
)
from trading.market import selectors, services
from trading.market.domain.features import NoPriceData
from trading.market.serializers import AsOfInput, BarFilterInput, BarOutput, InstrumentOutput
from trading.models import DailyBar, Instrument
from vocabulary.features import FeatureBundle


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
