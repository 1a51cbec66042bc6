"""API rate limits, and the one definition of "the client's address" that they and the log-in
lock-out share.

Rates are read when a request is checked, not when this module is imported, so a changed setting
applies at once. Counts live in the "throttle" cache: Redis when configured, so every web process
counts against the same limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.http import HttpRequest
from django.utils.connection import ConnectionProxy
from rest_framework import throttling
from rest_framework.settings import api_settings

if TYPE_CHECKING:  # at run time rest_framework.views imports this module (DEFAULT_THROTTLE_CLASSES)
    from rest_framework.request import Request
    from rest_framework.views import APIView


def client_address(request: HttpRequest) -> str | None:
    """REMOTE_ADDR, or behind ``DESK_PROXY_COUNT`` trusted proxies the address the nearest of them
    appended to X-Forwarded-For. Entries further left are written by the client and never trusted."""
    remote = request.META.get("REMOTE_ADDR")
    proxies = getattr(settings, "DESK_PROXY_COUNT", 0)
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    if not proxies or not forwarded:
        return remote
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    return hops[-min(proxies, len(hops))] if hops else remote


class _DeskRates:
    # The proxy stands for this thread's caches["throttle"], the way django.core.cache.cache does.
    cache = cast(BaseCache, ConnectionProxy(caches, "throttle"))
    scope: str | None

    def get_rate(self) -> str | None:
        if self.scope is None:
            return None
        # DRF's rates are strings such as "100/min"; its stubs type the table's values as numbers.
        return cast(str | None, api_settings.DEFAULT_THROTTLE_RATES.get(self.scope))

    def get_ident(self, request: Request) -> str:
        return client_address(request) or ""


class AnonRateThrottle(_DeskRates, throttling.AnonRateThrottle):
    """Callers without a login, per address."""


class UserRateThrottle(_DeskRates, throttling.UserRateThrottle):
    """Logged-in callers (session or token), per user."""


class TokenRateThrottle(_DeskRates, throttling.SimpleRateThrottle):
    """The token endpoint, per address, whatever the outcome: the strictest rate, as each request
    is a password guess."""

    scope = "token"

    def get_cache_key(self, request: Request, view: APIView) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
