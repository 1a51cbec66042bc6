"""A local Ollama server behind ``LLMClient``, over its HTTP ``/api/chat`` with the standard library.

``format`` carries the role's JSON schema, so Ollama constrains decoding to it; ``stream`` is off
so one response holds the whole reply and the token counts.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request

from agents.domain.llm import ModelError, ModelReply, ModelRequest, TransientModelError
from agents.providers import is_transient_status

PROVIDER = "ollama"
DEFAULT_BASE_URL = "http://127.0.0.1:11434"
_MAX_ERROR_CHARS = 500


class OllamaClient:
    provider = PROVIDER

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        timeout_s: float = 120,
        opener: urllib.request.OpenerDirector | None = None,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._timeout_s = timeout_s
        # No proxies from the environment by default: Ollama is usually on this machine, and a
        # desk-wide HTTP_PROXY without a matching NO_PROXY would route 127.0.0.1 through it.
        self._opener = opener or urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        http_request = urllib.request.Request(
            f"{self._base_url}/api/chat",
            data=json.dumps(_payload(request, model)).encode("utf-8"),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
            method="POST",
        )
        started = time.perf_counter()
        body = self._send(http_request)
        latency_ms = (time.perf_counter() - started) * 1000
        answer = _parse_body(body)
        return ModelReply(
            text=_reply_text(answer),
            provider=PROVIDER,
            model=str(answer.get("model") or model),
            input_tokens=_count(answer, "prompt_eval_count"),
            output_tokens=_count(answer, "eval_count"),
            latency_ms=latency_ms,
        )

    def _send(self, http_request: urllib.request.Request) -> bytes:
        try:
            with self._opener.open(http_request, timeout=self._timeout_s) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            raise _from_http_error(error) from error
        # URLError wraps refused and reset connections and connect timeouts; TimeoutError and the
        # http.client errors come from a read that stalls or a server that hangs up mid-reply.
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as error:
            reason = getattr(error, "reason", None) or error
            raise TransientModelError(
                f"{PROVIDER}: cannot reach {self._base_url}: {type(error).__name__}: {reason}"
            ) from error


def _payload(request: ModelRequest, model: str) -> dict[str, object]:
    messages = [{"role": "user", "content": request.prompt}]
    if request.system:
        messages.insert(0, {"role": "system", "content": request.system})
    return {
        "model": model,
        "messages": messages,
        "format": request.output_schema.model_json_schema(),
        "stream": False,
    }


def _from_http_error(error: urllib.error.HTTPError) -> ModelError:
    detail = f"{PROVIDER}: HTTP {error.code}: {_error_message(error)}"
    return TransientModelError(detail) if is_transient_status(error.code) else ModelError(detail)


def _error_message(error: urllib.error.HTTPError) -> str:
    try:
        raw = error.read().decode("utf-8", errors="replace")
    except (OSError, http.client.HTTPException):
        return str(error.reason)
    try:
        message = json.loads(raw).get("error", raw)
    except (ValueError, AttributeError):
        message = raw
    return str(message or error.reason)[:_MAX_ERROR_CHARS]


def _parse_body(body: bytes) -> dict[str, object]:
    # A broken envelope is the server's fault, not the model's: no repair prompt can fix it.
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError) as error:
        raise ModelError(f"{PROVIDER}: the server's response is not JSON ({error})") from error
    if not isinstance(answer, dict):
        raise ModelError(f"{PROVIDER}: the server's response is not a JSON object")
    if answer.get("error"):
        raise ModelError(f"{PROVIDER}: {str(answer['error'])[:_MAX_ERROR_CHARS]}")
    return answer


def _reply_text(answer: dict[str, object]) -> str:
    message = answer.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else ""


def _count(answer: dict[str, object], key: str) -> int:
    # Ollama leaves prompt_eval_count out when the whole prompt came from its cache.
    value = answer.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
