"""The research API: sessions (listed, started by approvers and admins, read in detail with the
shortlist), trials with their folds, and shortlisted candidates with their config files.

Reads are open to any authenticated user; starting a session needs ``research.run_research``. Every
refusal is a ``vocabulary.refusals`` answered by the API's one handler (``trading.api.errors``): a
bad filter or body 400 naming it, a role that may not 403. Nothing here attaches a signal to the
desk: that is a person's click on the research page.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from research import presenters
from research.models import ResearchCandidate, ResearchSession, ResearchTrial
from research.serializers import (
    ResearchCandidateOutput,
    ResearchSessionDetailOutput,
    ResearchSessionOutput,
    ResearchSessionStartInput,
    ResearchTrialOutput,
)
from research.start import can_run, defaults, session_start
from trading.api.errors import READ, body_of, errors, object_id, query, validated
from vocabulary.refusals import InputRefused, NotAllowed

__all__ = [
    "CandidateConfigApi",
    "CandidateDetailApi",
    "CandidateListApi",
    "SessionDetailApi",
    "SessionListApi",
    "TrialDetailApi",
    "TrialListApi",
]

SESSION_FILTER = query("session", "a research session's id", kind=OpenApiTypes.INT)
STATUS_FILTER = query("status", "queued, running, done, failed or cancelled", enum=list(ResearchSession.Status.values))
DECISION_FILTER = query("decision", "rejected, kept, discarded or failed", enum=list(ResearchTrial.Decision.values))


def _session_id(params: Any) -> int | None:
    text = str(params.get("session", "")).strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit() and len(text) <= 18 and int(text) > 0):
        raise InputRefused(f"session {text[:20]!r} is not a session id", {"session": ["a positive whole number"]})
    return int(text)


def _choice(params: Any, name: str, allowed: list[str]) -> str | None:
    value = str(params.get(name, "")).strip()
    if not value:
        return None
    if value not in allowed:
        raise InputRefused(f"{name} {value[:20]!r} is not one of {', '.join(allowed)}", {name: [f"one of {allowed}"]})
    return value


class SessionListApi(generics.ListAPIView):
    """Research sessions, latest first (?status=), or start one (approvers and admins)."""

    serializer_class = ResearchSessionOutput

    def get_queryset(self) -> QuerySet[ResearchSession]:
        sessions = ResearchSession.objects.select_related("created_by").order_by("-created_at", "-id")
        status = _choice(self.request.query_params, "status", list(ResearchSession.Status.values))
        return sessions.filter(status=status) if status else sessions

    @extend_schema(parameters=[STATUS_FILTER], responses={200: ResearchSessionOutput(many=True), **errors(400, *READ)})
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request=ResearchSessionStartInput,
        responses={
            202: ResearchSessionOutput,
            **errors(
                400,
                401,
                403,
                429,
                say={
                    400: "a bad body, nothing created: an unknown strategy, proposer or provider, an inactive "
                    "symbol, too few bars, a budget out of range; `detail` says why and each refused field is "
                    "listed by name",
                    403: "starting a research session needs the approver or admin role",
                },
            ),
        },
    )
    def post(self, request: Request) -> Response:
        if not can_run(request.user):
            raise NotAllowed("starting a research session needs the approver or admin role")
        params = {**defaults(), **validated(ResearchSessionStartInput, body_of(request))}
        session = session_start(params=params, user=request.user)
        return Response(ResearchSessionOutput(session).data, status=202)


@extend_schema(
    parameters=[object_id("session_id", "the research session's id")],
    responses={200: ResearchSessionDetailOutput, **errors(*READ)},
)
class SessionDetailApi(generics.RetrieveAPIView):
    """One session with its settings in force, its stop reason, the PBO and the shortlist."""

    serializer_class = ResearchSessionDetailOutput
    queryset = ResearchSession.objects.select_related("created_by")
    lookup_url_kwarg = "session_id"


@extend_schema(
    parameters=[SESSION_FILTER, DECISION_FILTER], responses={200: ResearchTrialOutput(many=True), **errors(400, *READ)}
)
class TrialListApi(generics.ListAPIView):
    """Trials, latest session first and in order within one (?session=, ?decision=)."""

    serializer_class = ResearchTrialOutput

    def get_queryset(self) -> QuerySet[ResearchTrial]:
        params = self.request.query_params
        trials = ResearchTrial.objects.order_by("-session_id", "number")
        session = _session_id(params)
        if session is not None:
            trials = trials.filter(session_id=session)
        decision = _choice(params, "decision", list(ResearchTrial.Decision.values))
        return trials.filter(decision=decision) if decision else trials


@extend_schema(
    parameters=[object_id("trial_id", "the trial's id")], responses={200: ResearchTrialOutput, **errors(*READ)}
)
class TrialDetailApi(generics.RetrieveAPIView):
    serializer_class = ResearchTrialOutput
    queryset = ResearchTrial.objects.all()
    lookup_url_kwarg = "trial_id"


@extend_schema(parameters=[SESSION_FILTER], responses={200: ResearchCandidateOutput(many=True), **errors(400, *READ)})
class CandidateListApi(generics.ListAPIView):
    """Shortlisted candidates with their holdout scores, latest session first, by rank (?session=)."""

    serializer_class = ResearchCandidateOutput

    def get_queryset(self) -> QuerySet[ResearchCandidate]:
        candidates = ResearchCandidate.objects.select_related("trial").order_by("-session_id", "rank")
        session = _session_id(self.request.query_params)
        return candidates.filter(session_id=session) if session is not None else candidates


@extend_schema(
    parameters=[object_id("candidate_id", "the candidate's id")],
    responses={200: ResearchCandidateOutput, **errors(*READ)},
)
class CandidateDetailApi(generics.RetrieveAPIView):
    serializer_class = ResearchCandidateOutput
    queryset = ResearchCandidate.objects.select_related("trial")
    lookup_url_kwarg = "candidate_id"


class CandidateConfigApi(APIView):
    """The candidate's config file as written for a person: parameters and provenance (session,
    trial, proposer, rationale, out-of-sample and holdout figures, DSR)."""

    @extend_schema(
        parameters=[object_id("candidate_id", "the candidate's id")],
        responses={
            200: OpenApiResponse(response=OpenApiTypes.OBJECT, description="the config file, as a JSON download"),
            **errors(*READ),
        },
    )
    def get(self, request: Request, candidate_id: int) -> HttpResponse:
        candidate = get_object_or_404(ResearchCandidate, pk=candidate_id)
        filename, body = presenters.config_file(candidate)
        response = HttpResponse(body, content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
