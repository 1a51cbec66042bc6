"""The desk's secrets, cut from text before it is stored, logged or published.

Glue around the pure ``security.domain.redaction.redact``: this module knows where the secrets are
(the provider keys in settings, Django's SECRET_KEY, secret-looking environment variables). They
are read on every call, not cached, so a key rotated in settings or the environment is cut at once.
It imports no model: the logging configuration loads it before the apps are ready.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings

from security.domain.redaction import SECRET_NAME_SUFFIXES, redact, secrets_in_environ

T = TypeVar("T")
# Joins a structure's strings into one text to check them all at once: no secret or credential
# pattern can match it, so a match in one string is a match in the joined text at the same place.
_JOIN = "\x00"


def configured_secrets() -> list[str]:
    # Only the variables named for a credential are decoded: the environment holds a few hundred
    # others, and this is read on every redaction.
    named = {name: os.environ[name] for name in os.environ if name.upper().endswith(SECRET_NAME_SUFFIXES)}
    found = list(secrets_in_environ(named))
    if settings.configured:
        llm = getattr(settings, "LLM", {}) or {}
        found += [str(llm.get(name) or "") for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")]
        found.append(str(getattr(settings, "SECRET_KEY", "") or ""))
    return found


def redact_secrets(text: str) -> str:
    """``text`` without any configured secret or credential-shaped token."""
    return redact(text, configured_secrets()) if text else text


def secrets_redactor() -> Callable[[str], str]:
    """``redact_secrets`` for a batch of texts: the secrets are read once, when it is made (a
    flush of a run's model calls redacts each reply and error)."""
    secrets = configured_secrets()

    def redact_text(text: str) -> str:
        return redact(text, secrets) if text else text

    return redact_text


def redact_data(value: T) -> T:
    """Every string inside ``value`` (dicts, lists, tuples, nested) redacted; other values as they are.

    A copy is made, and its strings are checked together, joined: when the joined text has nothing
    to cut (the usual case), neither has any of them, and the copy is the answer; otherwise each
    string is redacted on its own, exactly as ``_walk`` does."""
    secrets = configured_secrets()
    texts: list[str] = []
    copied = _copy(value, texts)
    if not texts:
        return copied
    joined = _JOIN.join(texts)
    if all(_JOIN not in secret for secret in secrets) and redact(joined, secrets) == joined:
        return copied
    return _walk(value, secrets)


def _copy(value: Any, texts: list[str]) -> Any:
    """``_walk`` without the redaction: the same containers rebuilt, each string collected."""
    if isinstance(value, str):
        texts.append(value)
        return value
    if isinstance(value, dict):
        return {key: _copy(item, texts) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_copy(item, texts) for item in value)
    return value


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
