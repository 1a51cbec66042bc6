"""API tokens: django-rest-knox keeps only a hash of each, and each expires (REST_KNOX TOKEN_TTL).

``POST /api/auth/token/`` with a username and password returns ``{"token", "expiry"}``; send it as
``Authorization: Token <key>``. The endpoint has the strictest throttle and shares the log-in
lock-out: a locked-out username at an address gets a 429 that says when to come back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from knox.models import get_token_model
from knox.views import LoginView
from rest_framework import serializers, status
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from security.lockout import STATUS as LOCKED_OUT
from security.lockout import lockout_message
from security.throttles import TokenRateThrottle

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser
    from django.db.models import Model
    from rest_framework.request import Request

_TOKEN_RESPONSE = inline_serializer(
    name="ApiToken",
    fields={"token": serializers.CharField(), "expiry": serializers.DateTimeField()},
)


class TokenObtainView(LoginView):
    # No authentication: the password in the body is the credential (and no session means no CSRF).
    authentication_classes = ()
    permission_classes = (AllowAny,)
    throttle_classes = (TokenRateThrottle,)

    @extend_schema(
        request=AuthTokenSerializer,
        responses={
            200: _TOKEN_RESPONSE,
            400: OpenApiResponse(description="wrong username or password"),
            429: OpenApiResponse(description="throttled or locked out; the detail says when to try again"),
        },
        auth=[],
    )
    def post(self, request: Request, format: str | None = None) -> Response:
        serializer = AuthTokenSerializer(data=request.data, context={"request": request})
        if not serializer.is_valid():
            if getattr(request, "axes_locked_out", False):
                username = request.data.get("username")
                return Response({"detail": lockout_message(request, username)}, status=LOCKED_OUT)
            return Response(serializer.errors, status=status.HTTP_400_BAD_REQUEST)
        request.user = serializer.validated_data["user"]
        return super().post(request, format=format)


def revoke_api_tokens(user: AbstractBaseUser) -> int:
    """Delete every API token of ``user``; the number deleted."""
    deleted, _ = get_token_model().objects.filter(user=user).delete()
    return deleted


def revoke_tokens_on_password_change(
    sender: type[Model], instance: Model, created: bool = False, **kwargs: object
) -> None:
    """post_save of the user model. ``set_password`` leaves the new password on ``_password`` until
    the save completes (Django's own password_changed hook reads it); an unusable password (a
    disabled log-in) must not keep its tokens either. A save that only touches last_login is neither."""
    if created or not isinstance(instance, get_user_model()):
        return
    if getattr(instance, "_password", None) is not None or not instance.has_usable_password():
        revoke_api_tokens(instance)
