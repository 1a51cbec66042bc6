from __future__ import annotations

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured


class AgentsConfig(AppConfig):
    name = "agents"

    def ready(self) -> None:
        # A typo in the price table must stop start-up, not fail the first run that records a call.
        from django.conf import settings

        from agents.domain.pricing import PriceTable

        try:
            PriceTable.from_mapping(settings.LLM["PRICES"])
        except (ValueError, TypeError, AttributeError) as error:
            raise ImproperlyConfigured(f"LLM_PRICES: {error}") from None
