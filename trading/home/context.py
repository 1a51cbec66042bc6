"""Figures every page's navigation shows."""

from __future__ import annotations


def desk_nav(request) -> dict:
    return {}
