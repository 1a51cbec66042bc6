from __future__ import annotations

import logging

from django.apps import AppConfig
from django.conf import settings
from django.db.backends.signals import connection_created
from django.db.models.signals import post_save


def install_redaction_filter(logger: logging.Logger | None = None, **kwargs: object) -> None:
    """Put RedactSecretsFilter on every handler of ``logger`` (the root logger by default), once.
    Celery replaces the root logger's handlers when a worker starts, which drops the filter that
    LOGGING installed; its after_setup_logger signals call this to put it back."""
    from security.redaction import RedactSecretsFilter

    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactSecretsFilter) for f in handler.filters):
            handler.addFilter(RedactSecretsFilter())


class SecurityConfig(AppConfig):
    name = "security"
    verbose_name = "Security"

    def ready(self) -> None:
        from celery.signals import after_setup_logger, after_setup_task_logger

        from security.files import make_sqlite_private
        from security.tokens import revoke_tokens_on_password_change

        connection_created.connect(make_sqlite_private, dispatch_uid="security_sqlite_private")
        post_save.connect(
            revoke_tokens_on_password_change, sender=settings.AUTH_USER_MODEL, dispatch_uid="security_revoke_tokens"
        )
        after_setup_logger.connect(install_redaction_filter, weak=False, dispatch_uid="security_redact_logs")
        after_setup_task_logger.connect(install_redaction_filter, weak=False, dispatch_uid="security_redact_task_logs")
