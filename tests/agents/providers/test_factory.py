"""Building the client a run asked for: settings first, then the standard environment variables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents.domain.llm import ModelError, ModelReply, ModelRequest
from agents.providers.anthropic_client import AnthropicClient
from agents.providers.factory import PROVIDERS, ProviderSettings, build_llm_client, ollama_url
from agents.providers.ollama_client import OllamaClient
from agents.providers.openai_client import OpenAIClient
from agents.providers.recorded import RecordedCallsClient

ROOT = Path(__file__).resolve().parents[3]


class StubOffline:
    provider = "offline"

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        return ModelReply(text="{}", provider=self.provider, model=model)


# --- where each value comes from -----------------------------------------------------------------


def test_settings_win_over_the_environment() -> None:
    configured = {
        "ANTHROPIC_API_KEY": "sk-ant-settings",
        "OPENAI_API_KEY": "sk-settings",
        "OPENAI_BASE_URL": "https://gateway.internal/v1",
        "OLLAMA_HOST": "http://gpu-box:11434",
    }
    environ = {
        "ANTHROPIC_API_KEY": "sk-ant-env",
        "OPENAI_API_KEY": "sk-env",
        "OPENAI_BASE_URL": "https://env.example/v1",
        "OLLAMA_HOST": "env-box",
    }

    settings = ProviderSettings.from_sources(configured, environ)

    assert settings.anthropic_api_key == "sk-ant-settings"
    assert settings.openai_api_key == "sk-settings"
    assert settings.openai_base_url == "https://gateway.internal/v1"
    assert settings.ollama_base_url == "http://gpu-box:11434"


def test_the_environment_fills_what_settings_leave_blank() -> None:
    configured = {"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "  "}
    environ = {"ANTHROPIC_API_KEY": "sk-ant-env", "OPENAI_API_KEY": "sk-env", "OLLAMA_HOST": "0.0.0.0:11434"}

    settings = ProviderSettings.from_sources(configured, environ)

    assert settings.anthropic_api_key == "sk-ant-env"
    assert settings.openai_api_key == "sk-env"
    assert settings.openai_base_url == ""
    assert settings.ollama_base_url == "http://0.0.0.0:11434"


def test_nothing_anywhere_gives_the_defaults() -> None:
    settings = ProviderSettings.from_sources({}, {})

    assert settings == ProviderSettings()
    assert settings.ollama_base_url == "http://127.0.0.1:11434"
    assert (settings.timeout_s, settings.ollama_timeout_s) == (60.0, 120.0)


def test_timeouts_are_read_and_bad_ones_fail_loudly() -> None:
    settings = ProviderSettings.from_sources({"LLM_TIMEOUT_S": "30"}, {"OLLAMA_TIMEOUT_S": "300"})
    assert (settings.timeout_s, settings.ollama_timeout_s) == (30.0, 300.0)

    for bad in ("soon", "0", "-5", "nan", "inf"):
        with pytest.raises(ValueError, match="LLM_TIMEOUT_S"):
            ProviderSettings.from_sources({"LLM_TIMEOUT_S": bad}, {})


def test_keys_stay_out_of_the_repr() -> None:
    settings = ProviderSettings(anthropic_api_key="sk-ant-secret", openai_api_key="sk-secret")

    assert "secret" not in repr(settings)


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:11434"),
        ("0.0.0.0:11434", "http://0.0.0.0:11434"),
        ("gpu-box:8080", "http://gpu-box:8080"),
        ("http://gpu-box", "http://gpu-box:11434"),
        ("https://ollama.example.com", "https://ollama.example.com:443"),
        ("https://ollama.example.com/ollama/", "https://ollama.example.com:443/ollama"),
        ("[::1]:11434", "http://[::1]:11434"),
    ],
)
def test_ollama_host_is_read_the_way_ollama_reads_it(host: str, url: str) -> None:
    assert ollama_url(host) == url


@pytest.mark.parametrize("host", ["gpu-box:port", "ftp://gpu-box", "http://"])
def test_a_bad_ollama_host_names_the_variable(host: str) -> None:
    with pytest.raises(ValueError, match="OLLAMA_HOST"):
        ollama_url(host)


# --- building ------------------------------------------------------------------------------------


def test_each_provider_builds_its_client() -> None:
    settings = ProviderSettings(anthropic_api_key="sk-ant", openai_api_key="sk-oa")
    offline = StubOffline()

    assert build_llm_client("offline", settings=settings, offline_client=offline) is offline
    assert isinstance(build_llm_client("anthropic", settings=settings), AnthropicClient)
    assert isinstance(build_llm_client("openai", settings=settings), OpenAIClient)
    assert isinstance(build_llm_client("ollama", settings=settings), OllamaClient)
    recorded = build_llm_client(" Replay ", settings=settings, replay_lookup=lambda key: None)
    assert isinstance(recorded, RecordedCallsClient)


def test_a_missing_anthropic_key_names_the_variable() -> None:
    with pytest.raises(ModelError, match="set ANTHROPIC_API_KEY in the settings or the environment"):
        build_llm_client("anthropic", settings=ProviderSettings())


def test_a_missing_openai_key_names_the_variable() -> None:
    with pytest.raises(ModelError, match="set OPENAI_API_KEY in the settings or the environment"):
        build_llm_client("openai", settings=ProviderSettings(openai_base_url="http://127.0.0.1:8000/v1"))


def test_an_unknown_provider_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="unknown model provider 'gemini'") as raised:
        build_llm_client("gemini", settings=ProviderSettings())

    for provider in PROVIDERS:
        assert provider in str(raised.value)


def test_offline_without_the_offline_model_is_refused() -> None:
    with pytest.raises(ValueError, match="offline_client"):
        build_llm_client("offline", settings=ProviderSettings())


def test_replay_without_a_lookup_is_refused() -> None:
    with pytest.raises(ValueError, match="replay_lookup"):
        build_llm_client("replay", settings=ProviderSettings())


def test_providers_import_no_django() -> None:
    code = (
        "import sys\n"
        "import agents.providers.factory, agents.providers.anthropic_client, agents.providers.openai_client\n"
        "leaked = sorted(m for m in sys.modules if m.split('.')[0] in {'django', 'celery', 'channels', 'config'})\n"
        "print(leaked)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_building_offline_or_replay_loads_no_sdk() -> None:
    code = (
        "import sys\n"
        "from agents.providers.factory import ProviderSettings, build_llm_client\n"
        "build_llm_client('replay', settings=ProviderSettings(), replay_lookup=lambda key: None)\n"
        "print(sorted(m for m in ('anthropic', 'openai') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
