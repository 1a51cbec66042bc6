"""The research API, included from ``config/urls.py`` under ``api/``: sessions, trials and candidates."""

from __future__ import annotations

from django.urls import URLPattern, path

from research import api

urlpatterns: list[URLPattern] = [
    path("research/sessions/", api.SessionListApi.as_view(), name="api-research-sessions"),
    path("research/sessions/<int:session_id>/", api.SessionDetailApi.as_view(), name="api-research-session"),
    path("research/trials/", api.TrialListApi.as_view(), name="api-research-trials"),
    path("research/trials/<int:trial_id>/", api.TrialDetailApi.as_view(), name="api-research-trial"),
    path("research/candidates/", api.CandidateListApi.as_view(), name="api-research-candidates"),
    path("research/candidates/<int:candidate_id>/", api.CandidateDetailApi.as_view(), name="api-research-candidate"),
    path(
        "research/candidates/<int:candidate_id>/config/",
        api.CandidateConfigApi.as_view(),
        name="api-research-candidate-config",
    ),
]
