"""The research API: sessions, trials and candidates."""

from __future__ import annotations

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
