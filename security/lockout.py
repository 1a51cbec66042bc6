"""What a locked-out client is told: how long until it may try again, on the log-in page (429)."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessAttempt
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

STATUS = 429


def lockout_ends(request: HttpRequest, username: str | None) -> dt.datetime:
    """When the lock-out of this username at this address ends: its last counted failure plus the
    cool-off (failures during a lock-out are not counted, so the time does not move)."""
    cool_off = get_cool_off(request) or dt.timedelta(0)
    attempts = AccessAttempt.objects.filter(username=username, ip_address=getattr(request, "axes_ip_address", None))
    last = attempts.order_by("-attempt_time").values_list("attempt_time", flat=True).first()
    return (last or timezone.now()) + cool_off


def lockout_message(request: HttpRequest, username: str | None) -> str:
    ends = lockout_ends(request, username)
    minutes = max(1, math.ceil((ends - timezone.now()).total_seconds() / 60))
    return (
        "Too many failed log-ins for this username from your address: "
        f"try again after {timezone.localtime(ends):%H:%M %Z} (in {minutes} minutes)."
    )


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict[str, Any] | None = None
) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: the log-in page again, with the time to come back instead of the form's error."""
    username = get_client_username(request, credentials)
    context = {"lockout": lockout_message(request, username), "next": request.POST.get("next", "")}
    return render(request, "registration/login.html", context, status=STATUS)
