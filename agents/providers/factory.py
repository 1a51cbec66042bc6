"""Build the ``LLMClient`` a run asked for. Credentials are passed in; nothing here reads Django.

``ProviderSettings.from_sources`` takes each value from the configured settings first, then from
the provider's standard environment variable, so a key in settings wins over one in the shell.
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field

from agents.domain.llm import LLMClient, ModelError
from agents.providers.ollama_client import DEFAULT_BASE_URL as DEFAULT_OLLAMA_URL
from agents.providers.ollama_client import OllamaClient
from agents.providers.recorded import RecordedCallsClient, ReplayLookup

PROVIDERS = ("offline", "anthropic", "openai", "ollama", "replay")
DEFAULT_OLLAMA_PORT = 11434
DEFAULT_TIMEOUT_S = 60.0
# Local models on a desk machine answer far slower than the hosted APIs.
DEFAULT_OLLAMA_TIMEOUT_S = 120.0

# The names read from both sources: the providers' standard variables, plus our two timeouts.
ANTHROPIC_API_KEY = "ANTHROPIC_API_KEY"
OPENAI_API_KEY = "OPENAI_API_KEY"
OPENAI_BASE_URL = "OPENAI_BASE_URL"
OLLAMA_HOST = "OLLAMA_HOST"
LLM_TIMEOUT_S = "LLM_TIMEOUT_S"
OLLAMA_TIMEOUT_S = "OLLAMA_TIMEOUT_S"


@dataclass(frozen=True)
class ProviderSettings:
    # repr=False: settings objects end up in logs and tracebacks; keys must not.
    anthropic_api_key: str = field(default="", repr=False)
    openai_api_key: str = field(default="", repr=False)
    openai_base_url: str = ""
    ollama_base_url: str = DEFAULT_OLLAMA_URL
    timeout_s: float = DEFAULT_TIMEOUT_S
    ollama_timeout_s: float = DEFAULT_OLLAMA_TIMEOUT_S

    @classmethod
    def from_sources(cls, configured: Mapping[str, object], environ: Mapping[str, str]) -> ProviderSettings:
        """Each value from ``configured`` (settings, keyed by the variable names above) if set and
        not blank, else from ``environ``. Bad timeouts or hosts raise ``ValueError`` naming the variable."""

        def first(name: str) -> str:
            return _first_set(name, configured, environ)

        ollama_host = first(OLLAMA_HOST)
        return cls(
            anthropic_api_key=first(ANTHROPIC_API_KEY),
            openai_api_key=first(OPENAI_API_KEY),
            openai_base_url=first(OPENAI_BASE_URL),
            ollama_base_url=ollama_url(ollama_host) if ollama_host else DEFAULT_OLLAMA_URL,
            timeout_s=_seconds(LLM_TIMEOUT_S, first(LLM_TIMEOUT_S), DEFAULT_TIMEOUT_S),
            ollama_timeout_s=_seconds(OLLAMA_TIMEOUT_S, first(OLLAMA_TIMEOUT_S), DEFAULT_OLLAMA_TIMEOUT_S),
        )


def build_llm_client(
    provider: str,
    *,
    settings: ProviderSettings,
    replay_lookup: ReplayLookup | None = None,
    offline_client: LLMClient | None = None,
) -> LLMClient:
    """The client for ``provider``. A missing API key raises ``ModelError`` naming the variable to
    set; an unknown provider or a missing offline client or replay lookup raises ``ValueError``."""
    name = provider.strip().lower()
    if name == "offline":
        return _offline(offline_client)
    if name == "anthropic":
        return _anthropic(settings)
    if name == "openai":
        return _openai(settings)
    if name == "ollama":
        return _ollama(settings)
    if name == "replay":
        return _replay(replay_lookup)
    raise ValueError(f"unknown model provider {provider!r}; valid providers: {', '.join(PROVIDERS)}")


def missing_configuration(provider: str, configured: Mapping[str, object], environ: Mapping[str, str]) -> str:
    """Why ``provider`` cannot run with this configuration, or ``""`` when it can: a hosted API
    needs its key, Ollama its address (``OLLAMA_HOST``: without it a run would wait on a default
    address nobody chose). Read the way ``ProviderSettings.from_sources`` reads: settings first,
    then the environment. Nothing is contacted: configured is not the same as reachable."""
    name = provider.strip().lower()
    needed = {"anthropic": ANTHROPIC_API_KEY, "openai": OPENAI_API_KEY, "ollama": OLLAMA_HOST}.get(name)
    if needed is None:
        return "" if name in PROVIDERS else f"unknown model provider {provider!r}"
    value = _first_set(needed, configured, environ)
    if not value:
        what = "address" if name == "ollama" else "API key"
        return f"{name} is not configured: it has no {what}; set {needed} in the settings or the environment"
    if name == "ollama":
        try:
            ollama_url(value)
        except ValueError as error:
            return f"ollama is not configured: {error}"
    return ""


def ollama_url(host: str) -> str:
    """``OLLAMA_HOST`` read the way Ollama reads it: ``host``, ``host:port`` or a URL; http and
    port 11434 unless given (443 for https)."""
    value = host.strip()
    if "://" not in value:
        value = f"http://{value}"
    parts = urllib.parse.urlsplit(value)
    try:
        port = parts.port
    except ValueError as error:
        raise ValueError(f"{OLLAMA_HOST} has an invalid port: {host!r}") from error
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{OLLAMA_HOST} is not an http(s) address: {host!r}")
    if port is None:
        default_port = 443 if parts.scheme == "https" else DEFAULT_OLLAMA_PORT
        parts = parts._replace(netloc=f"{parts.netloc.rstrip(':')}:{default_port}")
    return urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip("/"))).rstrip("/")


def _offline(offline_client: LLMClient | None) -> LLMClient:
    if offline_client is None:
        raise ValueError("provider 'offline' needs the offline rules model passed as offline_client")
    return offline_client


def _anthropic(settings: ProviderSettings) -> LLMClient:
    if not settings.anthropic_api_key:
        raise ModelError(_missing_key("anthropic", ANTHROPIC_API_KEY))
    # Imported here so runs that never call this provider do not pay for loading its SDK.
    from agents.providers.anthropic_client import AnthropicClient

    return AnthropicClient(settings.anthropic_api_key, timeout_s=settings.timeout_s)


def _openai(settings: ProviderSettings) -> LLMClient:
    if not settings.openai_api_key:
        raise ModelError(
            _missing_key("openai", OPENAI_API_KEY)
            + " An OpenAI-compatible server that needs no key still needs a placeholder value."
        )
    from agents.providers.openai_client import OpenAIClient

    return OpenAIClient(
        settings.openai_api_key, base_url=settings.openai_base_url or None, timeout_s=settings.timeout_s
    )


def _ollama(settings: ProviderSettings) -> LLMClient:
    return OllamaClient(settings.ollama_base_url, timeout_s=settings.ollama_timeout_s)


def _replay(replay_lookup: ReplayLookup | None) -> LLMClient:
    if replay_lookup is None:
        raise ValueError("provider 'replay' needs replay_lookup to find recorded replies")
    return RecordedCallsClient(replay_lookup)


def _missing_key(provider: str, variable: str) -> str:
    return f"provider {provider!r} has no API key: set {variable} in the settings or the environment."


def _first_set(name: str, *sources: Mapping[str, object]) -> str:
    for source in sources:
        value = str(source.get(name) or "").strip()
        if value:
            return value
    return ""


def _seconds(name: str, raw: str, default: float) -> float:
    if not raw:
        return default
    try:
        seconds = float(raw)
    except ValueError as error:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from error
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {raw!r}")
    return seconds
