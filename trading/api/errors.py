"""One shape for every API refusal: ``{"detail": "<reason>"}``, and how the schema documents it.

A refused request body or query string also names each field it refuses (``{"detail": "as_of ...",
"as_of": ["as_of ..."]}``): ``detail`` is the sentence to show, the field keys are for forms.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import SuspiciousOperation
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers, status
from rest_framework.exceptions import APIException

from trading.edge import InputInvalid


class ErrorOutput(serializers.Serializer):
    detail = serializers.CharField(help_text="why the request was refused, in words for a person")


class RefusalOutput(ErrorOutput):
    checks = serializers.ListField(
        child=serializers.DictField(),
        help_text="the risk checks that failed against the live book now, each with its figures",
    )


class InputRefused(APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "invalid"

    def __init__(self, detail: str, fields: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.detail = {"detail": detail, **(fields or {})}


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


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """The serializer's validated data, or a 400 ``{"detail": ..., <field>: [...]}``."""
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise InputRefused("; ".join(_sentences(serializer.errors)), serializer.errors)
    return serializer.validated_data


def bad_input(problem: InputInvalid) -> InputRefused:
    return InputRefused(str(problem))


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
