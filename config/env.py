"""Typed readers for environment variables that fail loudly on a bad value.

A typo in production configuration must stop the process at start-up with a message that names
the variable, never fall back silently to a default.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    return None if value is None else value.strip()


def env_str(name: str, default: str = "", environ: Mapping[str, str] | None = None) -> str:
    value = _raw(name, environ)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool = False, environ: Mapping[str, str] | None = None) -> bool:
    value = _raw(name, environ)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name}={value!r} is not a boolean: use one of 1/0, true/false, yes/no, on/off."
    )


def env_int(
    name: str,
    default: int,
    environ: Mapping[str, str] | None = None,
    minimum: int | None = None,
) -> int:
    value = _raw(name, environ)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} is below its minimum of {minimum}.")
    return number


def env_float(
    name: str,
    default: float,
    environ: Mapping[str, str] | None = None,
    minimum: float | None = None,
) -> float:
    value = _raw(name, environ)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number.") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ImproperlyConfigured(f"{name}={value!r} must be a finite number.")
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} is below its minimum of {minimum}.")
    return number


def env_list(
    name: str, default: list[str] | None = None, environ: Mapping[str, str] | None = None
) -> list[str]:
    value = _raw(name, environ)
    if value is None or value == "":
        return list(default or [])
    return [item.strip() for item in value.split(",") if item.strip()]


def env_json(name: str, default: object = None, environ: Mapping[str, str] | None = None) -> object:
    value = _raw(name, environ)
    if value is None or value == "":
        return default
    try:
        return json.loads(value)
    except json.JSONDecodeError as error:
        raise ImproperlyConfigured(f"{name} is not valid JSON: {error.msg} at position {error.pos}.") from None
