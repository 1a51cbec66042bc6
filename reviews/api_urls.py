"""The reviews' API, included from ``config/urls.py`` under ``api/``: retrospectives, position
retrospectives, trade reviews and the playbook's heuristics."""

from django.urls import URLPattern, path

from reviews import api as reviews_api
from reviews import playbook_api

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
]
