"""The health API for load balancers. The page (login required) is ``trading.home.views.health``:
it also checks the market data's freshness, which reads above this module."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from trading.health.probes import health_report


class CheckOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "down"])
    latency_ms = serializers.FloatField(required=False)
    age_s = serializers.FloatField(required=False, help_text="seconds since the scheduler's last tick")
    seen = serializers.IntegerField(required=False, help_text="workers seen in the last 3 minutes")


class HealthOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "degraded", "down"])
    checks = serializers.DictField(child=CheckOutput(), help_text="database, broker, scheduler, workers")


class HealthApi(APIView):
    """ok, degraded (pages work; the broker, scheduler or workers do not) or down (no database:
    503). Open to anyone, as a load balancer's probe carries no credentials, so it tells statuses
    and figures only: no host, address, error text or worker name."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    # A 429 would read as "unhealthy" to a load balancer and take a working node out.
    throttle_classes: list = []

    @extend_schema(responses={200: HealthOutput, 503: HealthOutput}, auth=[])
    def get(self, request: Request) -> Response:
        report = health_report()
        return Response(report.public(), status=report.http_status)
