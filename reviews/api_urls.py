"""The reviews' API, included from ``config/urls.py`` under ``api/``: retrospectives, position
retrospectives, trade reviews and the playbook's heuristics."""

from django.urls import URLPattern, path  # noqa: F401  (path: the routes are added as the views land)

urlpatterns: list[URLPattern] = []
