"""The log-in pages' glue: logging out says so on the log-in page it lands on."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse

LOGGED_OUT = "You are logged out."


class LogoutView(auth_views.LogoutView):
    """Django's log-out (POST only), then "You are logged out." on the page it redirects to.

    The message is added after the session is flushed, so it travels in the messages cookie and
    the next page (the log-in page) shows it once."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        was_logged_in = request.user.is_authenticated
        response = super().post(request, *args, **kwargs)
        if was_logged_in:
            messages.info(request, LOGGED_OUT)
        return response
