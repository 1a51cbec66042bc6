"""The log-in lock-out's authentication backend."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from axes.backends import AxesStandaloneBackend

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser
    from django.http import HttpRequest


class LockoutBackend(AxesStandaloneBackend):
    """Refuses a username at an address that has failed too often (django-axes); the next backend
    checks the password.

    Axes refuses any call without a request. Only the shell, management commands and Django's test
    client authenticate without one: there is no remote client to count, so the check is skipped
    rather than failing them. Every log-in over HTTP (the form, the admin, the token endpoint)
    passes its request and is counted.
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> AbstractBaseUser | None:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
