from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from trading.api.errors import (
    READ,
    body_of,
    errors,
    object_id,
    validated,
)
from trading.models import PipelineRun
from trading.pipeline.outputs import StageSchemas, stage_schemas
from trading.pipeline.serializers import RunDetailOutput, RunFilterInput, RunOutput, RunStartInput
from trading.pipeline.start import RunsNotQueued, pipeline_runs_start
from vocabulary.refusals import NotAllowed


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
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request=RunStartInput,
        responses={
            202: RunOutput(many=True),
            **errors(
                400,
                401,
                403,
                429,
                say={
                    400: "a bad body, nothing started: unknown or inactive symbols, a date outside "
                    "1990-01-01..today, an unknown or unpriced provider; `detail` says why and each refused "
                    "field is listed by name, with the run form's words"
                },
            ),
            503: OpenApiResponse(
                description="the runs were saved but the task queue is unreachable: `detail` says why, `runs` "
                "lists them and `unsent` their ids; they start by themselves when the queue is back"
            ),
        },
    )
    def post(self, request: Request) -> Response:
        if not request.user.has_perm("trading.start_run"):
            raise NotAllowed("starting runs needs the approver or admin role")
        params = validated(RunStartInput, body_of(request))  # start.run_request: the run form's check
        try:
            runs = pipeline_runs_start(**params, user=request.user)
        except RunsNotQueued as refused:
            # A 503 (trading.api.errors) that lists the saved runs in the API's own shape, so a
            # client does not start them a second time.
            refused.details["runs"] = RunOutput(refused.runs, many=True).data
            raise
        return Response(RunOutput(runs, many=True).data, status=202)


@extend_schema(parameters=[object_id("run_id", "the run's id")], responses={200: RunDetailOutput, **errors(*READ)})
class RunDetailApi(generics.RetrieveAPIView):
    serializer_class = RunDetailOutput
    queryset = PipelineRun.objects.select_related("instrument")
    lookup_url_kwarg = "run_id"


class StageSchemasApi(APIView):
    """The shape of each stage's stored output, with the version this desk writes: what a client of
    ``/api/runs/{run_id}/`` reads in ``outputs``."""

    @extend_schema(
        responses={200: StageSchemas, **errors(401, 429)},
        description=(
            "For each stage (features, context, analysts, debate, trader, risk): `version`, the version this desk "
            "writes, and `schema`, the JSON Schema of that stage's output. A run's outputs carry their `version`; "
            "rows written before versions were stored read as version 1."
        ),
    )
    def get(self, request: Request) -> Response:
        return Response(stage_schemas())
