"""Which model a run's agents talk to: the provider's client, built from the desk's settings.

Django glue over the pure factory in ``agents.providers.factory``: it reads credentials, model names
and prices from settings, so every caller (the pipeline, the reviewer, research) builds its client
the same way and none of them reaches into another's module for it.
"""

from __future__ import annotations

import os
from typing import cast

from django.conf import settings

from agents import recording
from agents.domain.llm import LatencyClient, ModelChoice
from agents.domain.pricing import FREE_PROVIDERS, PriceTable
from agents.providers.factory import PROVIDERS, ProviderSettings, build_llm_client, missing_configuration
from agents.roles import OfflineModel

__all__ = [
    "DEFAULT_MODELS",
    "PROVIDERS",
    "model_choice",
    "provider_models",
    "provider_unavailable",
    "providers_available",
    "require_configured",
    "require_priced",
]

DEFAULT_MODELS = {
    "offline": ("offline-rules", "offline-rules"),
    "replay": ("replay", "replay"),
    "anthropic": ("claude-sonnet-4-5", "claude-opus-4-5"),
    "openai": ("gpt-4.1-mini", "gpt-4.1"),
    "ollama": ("llama3.1", "llama3.1"),
}


def provider_models(provider: str) -> tuple[str, str]:
    """The default and deep model a provider's runs use."""
    default_model, deep_model = DEFAULT_MODELS[provider]
    if provider not in ("offline", "replay"):
        # A real provider's model names are configurable; the offline and replay ones are not.
        # settings.LLM's values are typed by config/env.py's readers; the checker sees only objects.
        default_model = cast(str, settings.LLM["DEFAULT_MODEL"]) or default_model
        deep_model = cast(str, settings.LLM["DEEP_MODEL"]) or deep_model
    return default_model, deep_model


def require_priced(provider: str) -> None:
    """A paid provider's models must have a price, or the daily cost budget would count their
    calls as free and never stop them."""
    if provider in FREE_PROVIDERS:
        return
    table = PriceTable.from_mapping(settings.LLM.get("PRICES", {}))
    unpriced = sorted({model for model in provider_models(provider) if not table.known(model)})
    if unpriced and table.fallback is None:
        raise ValueError(
            f"{provider} model {', '.join(unpriced)} has no price, so the daily cost budget could not count its "
            'calls: add it to LLM_PRICES (e.g. {"' + unpriced[0] + '": {"input": "3", "output": "15"}}, USD per '
            'million tokens) or set a "*" fallback price'
        )


def require_configured(provider: str) -> None:
    """A hosted provider needs its API key and Ollama its address before a run is created: without
    them the run could only fail in the worker, with the reason in a log nobody reads."""
    problem = missing_configuration(provider, settings.LLM, os.environ)
    if problem:
        raise ValueError(problem)


def provider_unavailable(provider: str) -> str:
    """Why a run on ``provider`` would be refused here (unknown, no key or address, no price), or
    ``""`` when it may run: the one answer the run form, the API and strategy starts give."""
    if provider not in PROVIDERS:
        return f"unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}"
    try:
        require_priced(provider)
        require_configured(provider)
    except ValueError as problem:
        return str(problem)
    return ""


def providers_available() -> list[str]:
    """The providers a person may choose on this desk, in the desk's order."""
    return [provider for provider in PROVIDERS if not provider_unavailable(provider)]


def model_choice(provider: str, *, symbol: str) -> ModelChoice:
    if provider not in DEFAULT_MODELS:
        raise ValueError(f"unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}")
    default_model, deep_model = provider_models(provider)
    client = build_llm_client(
        provider,
        settings=ProviderSettings.from_sources(settings.LLM, os.environ),
        replay_lookup=recording.replay_lookup_for(symbol) if provider == "replay" else None,
        offline_client=OfflineModel(),
    )
    latency = cast(float, settings.LLM.get("OFFLINE_LATENCY_MS", 0.0))
    if provider == "offline" and latency:
        client = LatencyClient(client, latency)
    return ModelChoice(client=client, default_model=default_model, deep_model=deep_model)
