"""The desk's secrets, cut from text before it is stored, logged or published.

Glue around the pure ``security.domain.redaction.redact``: this module knows where the secrets are
(the provider keys in settings, Django's SECRET_KEY, secret-looking environment variables). They
are read on every call, not cached, so a key rotated in settings or the environment is cut at once.
It imports no model: the logging configuration loads it before the apps are ready.
"""

from __future__ import annotations

import logging
import os
from typing import Any, TypeVar

from django.conf import settings

from security.domain.redaction import redact, secrets_in_environ

T = TypeVar("T")


def configured_secrets() -> list[str]:
    found = list(secrets_in_environ(os.environ))
    if settings.configured:
        llm = getattr(settings, "LLM", {}) or {}
        found += [str(llm.get(name) or "") for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")]
        found.append(str(getattr(settings, "SECRET_KEY", "") or ""))
    return found


def redact_secrets(text: str) -> str:
    """``text`` without any configured secret or credential-shaped token."""
    return redact(text, configured_secrets()) if text else text


def redact_data(value: T) -> T:
    """Every string inside ``value`` (dicts, lists, tuples, nested) redacted; other values as they are."""
    return _walk(value, configured_secrets())


def _walk(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {key: _walk(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_walk(item, secrets) for item in value)
    return value


class RedactSecretsFilter(logging.Filter):
    """Installed on the log handlers (LOGGING, and Celery's own when a worker starts): the message,
    its arguments and any traceback are rendered and redacted before a handler writes them."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = configured_secrets()
        try:
            message = record.getMessage()
        except Exception:  # a bad format string is the handler's to report, not ours
            return True
        record.msg, record.args = redact(message, secrets), None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, secrets)
        return True
