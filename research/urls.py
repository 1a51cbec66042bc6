"""The research pages, included from ``config/urls.py`` under ``research/``."""

from __future__ import annotations

from django.urls import URLPattern, path

from research import views

urlpatterns: list[URLPattern] = [
    path("", views.session_list, name="research_sessions"),
    path("sessions/<int:session_id>/", views.session_detail, name="research_session"),
    path("sessions/<int:session_id>/live/", views.session_live, name="research_session_live"),
    path("sessions/<int:session_id>/results/", views.session_results, name="research_session_results"),
    path("sessions/<int:session_id>/cancel/", views.session_cancel, name="research_session_cancel"),
    path("candidates/<int:candidate_id>/config.json", views.candidate_config, name="research_candidate_config"),
    path("candidates/<int:candidate_id>/attach/", views.candidate_attach, name="research_candidate_attach"),
    path("signals/<int:signal_id>/detach/", views.signal_detach, name="research_signal_detach"),
]
