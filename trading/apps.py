from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _ensure_groups(sender, **kwargs) -> None:
    from trading.access import ensure_desk_groups

    ensure_desk_groups()


class TradingConfig(AppConfig):
    name = "trading"
    verbose_name = "Trading desk"

    def ready(self) -> None:
        # Permissions exist only after post_migrate has created them, and each app's arrive with
        # its own signal: refresh the groups after every app so none is missed.
        post_migrate.connect(_ensure_groups, dispatch_uid="trading_ensure_groups")
        from trading.home import receivers as home_receivers  # noqa: F401 - connects the notifications
        from trading.strategies import receivers  # noqa: F401 - connects the strategy run's decision
