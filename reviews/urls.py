"""The review pages, included from ``config/urls.py`` under ``reviews/``."""

from django.urls import path

from reviews import critique_views, performance_views, playbook_views, report_views, retire_views, views

urlpatterns = [
    path("positions/<int:position_id>/", views.position_lifecycle, name="position_lifecycle"),
    path("performance/", performance_views.performance, name="performance"),
    path("", report_views.reviews, name="reviews"),
    path("reports/<int:report_id>/", report_views.review_report, name="review_report"),
    path("reports/<int:report_id>/diff/", report_views.review_diff, name="review_diff"),
    path("heuristics/", playbook_views.heuristic_list, name="heuristic_list"),
    path("heuristics/<str:code>/", playbook_views.heuristic_detail, name="heuristic_detail"),
    path("heuristics/<str:code>/decide/", playbook_views.heuristic_decide, name="heuristic_decide"),
    path("strategies/<int:strategy_id>/retire/", retire_views.strategy_retire_view, name="strategy_retire"),
    path("strategies/<int:strategy_id>/critiques/", critique_views.critique_list, name="critique_list"),
    path("critiques/<int:critique_id>/", critique_views.critique_detail, name="critique_detail"),
    path(
        "critique-actions/<int:action_id>/attest/",
        critique_views.critique_action_attest,
        name="critique_action_attest",
    ),
]
