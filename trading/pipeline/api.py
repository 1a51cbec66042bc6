from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from trading import edge
from trading.api.errors import (
    READ,
    bad_input,
    body_of,
    errors,
    object_id,
    validated,
)
from trading.models import Instrument, PipelineRun
from trading.pipeline.serializers import RunDetailOutput, RunFilterInput, RunOutput, RunStartInput
from trading.pipeline.start import RunsNotQueued, pipeline_runs_start


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
