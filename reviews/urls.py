"""The review pages, included from ``config/urls.py`` under ``reviews/``."""

from django.urls import path

from reviews import performance_views, views

urlpatterns = [
    path("positions/<int:position_id>/", views.position_lifecycle, name="position_lifecycle"),
    path("performance/", performance_views.performance, name="performance"),
]
