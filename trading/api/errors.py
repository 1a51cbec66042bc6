"""One shape for every API refusal: ``{"detail": "<reason>", **details}``, and how the schema documents it.

Any ``vocabulary.refusals.Refusal`` raised under an API view, from a serializer, a selector or a
service, is answered here (``exception_handler``, set as REST_FRAMEWORK["EXCEPTION_HANDLER"]) with
the status of its kind: ``InputRefused`` 400, ``NotAllowed`` 403, ``StateConflict`` 409,
``ServiceUnavailable`` 503. The views catch nothing; the pages answer the same refusals in
``trading.refusals``.

A refused request body or query string also names each field it refuses (``{"detail": "as_of ...",
"as_of": ["as_of ..."]}``): ``detail`` is the sentence to show, the field keys are for forms. A
refused decision lists the risk checks that failed (``{"detail": ..., "checks": [...]}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import SuspiciousOperation
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from vocabulary.refusals import (
    InputRefused,
    NotAllowed,
    Refusal,
    ServiceUnavailable,
    StateConflict,
    kind_of,
)


class ErrorOutput(serializers.Serializer):
    detail = serializers.CharField(help_text="why the request was refused, in words for a person")


class RefusalOutput(ErrorOutput):
    checks = serializers.ListField(
        child=serializers.DictField(),
        help_text="the risk checks that failed against the live book now, each with its figures",
    )


STATUS_OF_KIND: dict[type[Refusal], int] = {
    InputRefused: status.HTTP_400_BAD_REQUEST,
    NotAllowed: status.HTTP_403_FORBIDDEN,
    StateConflict: status.HTTP_409_CONFLICT,
    ServiceUnavailable: status.HTTP_503_SERVICE_UNAVAILABLE,
}


def refusal_status(refusal: Refusal) -> int:
    return STATUS_OF_KIND[kind_of(refusal)]


def refusal_body(refusal: Refusal) -> dict[str, Any]:
    """The sentence first; a detail keyed ``detail`` (a field of that name) never overwrites it."""
    return {"detail": refusal.message, **{key: value for key, value in refusal.details.items() if key != "detail"}}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """A refusal becomes its kind's status with ``{"detail": message, **details}``; anything else
    is DRF's (its own 400/401/403/404/429 already answer ``{"detail": ...}``)."""
    if isinstance(exc, Refusal):
        set_rollback()  # nothing a refused request wrote is kept, as with DRF's own refusals
        return Response(refusal_body(exc), status=refusal_status(exc))
    return drf_exception_handler(exc, context)


def _field(parent: str, key: Any) -> str:
    """``symbols[2]`` for the third item of a list field, ``parent`` for errors of the whole object."""
    if key == "non_field_errors":
        return parent
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


def _sentences(errors: Any, field: str = "") -> list[str]:
    """Flatten DRF's nested errors into ``field: message`` sentences (a message that already starts
    with its field's name is not prefixed again)."""
    if isinstance(errors, Mapping):
        return [
            sentence
            for key, value in errors.items()
            for sentence in _sentences(value, _field(field, key))
        ]
    if isinstance(errors, list | tuple):
        return [sentence for value in errors for sentence in _sentences(value, field)]
    text = str(errors)
    return [text if not field or text.startswith(field) else f"{field}: {text}"]


def _plain(errors: Any) -> Any:
    """DRF's errors (``ReturnDict``s of ``ErrorDetail``s) as plain JSON values."""
    if isinstance(errors, Mapping):
        return {str(key): _plain(value) for key, value in errors.items()}
    if isinstance(errors, list | tuple):
        return [_plain(value) for value in errors]
    return str(errors)


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """The serializer's validated data, or a 400 ``{"detail": ..., <field>: [...]}``."""
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise InputRefused("; ".join(_sentences(serializer.errors)), _plain(serializer.errors))
    return serializer.validated_data


def body_of(request: Any) -> Any:
    """``request.data``. Django refuses a form with more than DATA_UPLOAD_MAX_NUMBER_FIELDS fields
    (or a body over DATA_UPLOAD_MAX_MEMORY_SIZE) by raising, which became its HTML 400 page: here it
    is the API's 400 with a ``detail``, like any other refused input."""
    try:
        return request.data
    except SuspiciousOperation as refusal:
        raise InputRefused(f"the request body is refused: {refusal}") from None


DESCRIPTIONS = {
    400: "the request is refused: `detail` says which value and why (refused fields are also listed by name)",
    401: "no valid credentials: log in, or send `Authorization: Token <key>` (POST /api/auth/token/)",
    403: "the role does not allow it (approvers only), or a session request without its CSRF token",
    404: "no such object, or a page number past the last page",
    409: "refused by the desk's rules: `detail` says why",
    429: "throttled: too many requests; `detail` says when to try again",
}


def errors(*codes: int, say: Mapping[int, str] | None = None) -> dict[int, OpenApiResponse]:
    """The error responses of an operation, each ``{"detail": str}``; ``say`` gives what a status
    means for this operation when the general words are not enough."""
    words = {**DESCRIPTIONS, **(say or {})}
    return {code: OpenApiResponse(response=ErrorOutput, description=words[code]) for code in codes}


READ = (401, 404, 429)  # every authenticated read: no credentials, nothing there, throttled

# Path parameters, with the shapes the router accepts: a value outside them never reaches the view
# (the router's own 404), so the schema does not invite it.
SYMBOL = OpenApiParameter(
    "symbol",
    {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9&._:-]{0,63}$"},
    OpenApiParameter.PATH,
    description="RELIANCE or NSE:RELIANCE",
)


def object_id(name: str, what: str) -> OpenApiParameter:
    return OpenApiParameter(
        name, {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}, OpenApiParameter.PATH, description=what
    )


def query(name: str, description: str, *, enum: list[str] | None = None, kind: Any = OpenApiTypes.STR):
    return OpenApiParameter(name, kind, OpenApiParameter.QUERY, required=False, description=description, enum=enum)
