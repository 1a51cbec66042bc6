"""Figures every page's navigation shows: theses waiting for the person and their unread
notifications. Two small counts, only for a signed-in person."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from trading.home.selectors import nav_counts

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def desk_nav(request: HttpRequest) -> dict[str, object]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    # Lazy: a page that does not render the navigation (an error page, a fragment) costs no query.
    person = cast("User", user)
    return {"desk_nav": SimpleLazyObject(lambda: nav_counts(person))}
