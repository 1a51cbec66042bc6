"""The reviews' API, included from ``config/urls.py`` under ``api/``: retrospectives, position
retrospectives, trade reviews, the playbook's heuristics, and critiques with their actions."""

from django.urls import URLPattern, path

from reviews import api as reviews_api
from reviews import critique_api, playbook_api

urlpatterns: list[URLPattern] = [
    path("heuristics/", playbook_api.HeuristicListApi.as_view(), name="api-heuristics"),
    path("heuristics/<str:code>/", playbook_api.HeuristicDetailApi.as_view(), name="api-heuristic"),
    path("reviews/", reviews_api.ReviewListApi.as_view(), name="api-reviews"),
    path("reviews/<int:report_id>/", reviews_api.ReviewDetailApi.as_view(), name="api-review"),
    path(
        "position-retrospectives/",
        reviews_api.PositionRetrospectiveListApi.as_view(),
        name="api-position-retrospectives",
    ),
    path("trade-reviews/", reviews_api.TradeReviewListApi.as_view(), name="api-trade-reviews"),
    path("trade-reviews/<int:review_id>/", reviews_api.TradeReviewDetailApi.as_view(), name="api-trade-review"),
    path("critiques/", critique_api.CritiqueListApi.as_view(), name="api-critiques"),
    path("critiques/<int:critique_id>/", critique_api.CritiqueDetailApi.as_view(), name="api-critique"),
    path(
        "critique-actions/<int:action_id>/", critique_api.CritiqueActionDetailApi.as_view(), name="api-critique-action"
    ),
    path(
        "critique-actions/<int:action_id>/attest/",
        critique_api.CritiqueActionAttestApi.as_view(),
        name="api-critique-action-attest",
    ),
]
