"""OpenAI Chat Completions (and OpenAI-compatible servers) behind ``LLMClient``. Glue: SDK, no Django.

The schema is asked for with ``response_format`` ``json_schema``. ``strict`` is off: strict mode
rejects ordinary pydantic schemas (optional fields, defaults, bounds) and many compatible servers
do not support it; ``structured_call`` validates the reply either way.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import openai

from agents.domain.llm import ModelError, ModelReply, ModelRequest, TransientModelError
from agents.providers import is_transient_status

if TYPE_CHECKING:
    import httpx
    import httpx2
    from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

PROVIDER = "openai"
_MAX_ERROR_CHARS = 500


class OpenAIClient:
    provider = PROVIDER

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str | None = None,
        timeout_s: float = 60,
        http_client: httpx2.Client | httpx.Client | None = None,
    ) -> None:
        # An empty key would make the SDK fall back to OPENAI_API_KEY on its own.
        if not api_key:
            raise ModelError("openai: the API key is empty")
        # max_retries=0: structured_call's RetryPolicy is the only retry.
        self._sdk = openai.OpenAI(
            api_key=api_key,
            base_url=base_url or None,
            timeout=timeout_s,
            max_retries=0,
            # The SDK accepts a legacy httpx.Client as well as an httpx2.Client.
            http_client=http_client,  # type: ignore[arg-type]
        )

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        started = time.perf_counter()
        try:
            completion = self._sdk.chat.completions.create(
                model=model,
                messages=_messages(request),
                response_format={
                    "type": "json_schema",
                    "json_schema": {
                        # Schema names allow [a-zA-Z0-9_-]{1,64}; a pydantic class name fits.
                        "name": request.output_schema.__name__[:64],
                        "schema": request.output_schema.model_json_schema(),
                        "strict": False,
                    },
                },
            )
        except openai.OpenAIError as error:
            raise translate_error(error) from error
        latency_ms = (time.perf_counter() - started) * 1000
        usage = completion.usage
        return ModelReply(
            text=_reply_text(completion),
            provider=PROVIDER,
            model=completion.model or model,
            # Some compatible servers omit usage; zero is "unknown", not "free".
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            latency_ms=latency_ms,
        )


def translate_error(error: openai.OpenAIError) -> ModelError:
    """SDK error → our error: ``TransientModelError`` when waiting and retrying may help."""
    detail = f"{PROVIDER}: {type(error).__name__}: {str(error)[:_MAX_ERROR_CHARS]}"
    if isinstance(error, openai.APIConnectionError):  # includes APITimeoutError
        return TransientModelError(detail)
    if isinstance(error, openai.APIStatusError) and is_transient_status(error.status_code):
        return TransientModelError(detail)
    return ModelError(detail)


def _messages(request: ModelRequest) -> list[ChatCompletionMessageParam]:
    user: ChatCompletionMessageParam = {"role": "user", "content": request.prompt}
    if not request.system:
        return [user]
    return [{"role": "system", "content": request.system}, user]


def _reply_text(completion: ChatCompletion) -> str:
    if not completion.choices:
        return ""
    message = completion.choices[0].message
    # A refusal arrives in its own field with no content; pass it on so validation rejects it
    # with a reason instead of an empty string.
    return message.content or message.refusal or ""
