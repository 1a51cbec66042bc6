"""Anthropic's Messages API behind ``LLMClient``. Glue: imports the SDK, never Django.

The schema is asked for through tool use: one tool whose input schema is the role's schema, and
``tool_choice`` forcing it. The tool's input comes back already parsed; we hand it on as JSON
text so ``structured_call`` validates every provider's reply the same way.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import anthropic
from anthropic import Omit

from agents.domain.llm import ModelError, ModelReply, ModelRequest, TransientModelError
from agents.providers import is_transient_status

if TYPE_CHECKING:
    import httpx2
    from anthropic.types import Message, ToolChoiceToolParam, ToolParam, UserMessageParam

PROVIDER = "anthropic"
DEFAULT_MAX_TOKENS = 4096
_MAX_ERROR_CHARS = 500


class AnthropicClient:
    provider = PROVIDER

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str | None = None,
        timeout_s: float = 60,
        http_client: httpx2.Client | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        # An empty key would make the SDK look for credentials in the environment on its own.
        if not api_key:
            raise ModelError("anthropic: the API key is empty")
        self._max_tokens = max_tokens
        # max_retries=0: structured_call's RetryPolicy is the only retry, so attempts are bounded,
        # recorded and budgeted in one place.
        self._sdk = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url or None,
            timeout=timeout_s,
            max_retries=0,
            http_client=http_client,
        )

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        tool_name = _tool_name(request)
        started = time.perf_counter()
        try:
            message = self._sdk.messages.create(
                model=model,
                max_tokens=self._max_tokens,
                messages=[_user_message(request.prompt)],
                tools=[_answer_tool(request, tool_name)],
                tool_choice=_forced_tool(tool_name),
                system=_system(request.system),
            )
        except anthropic.AnthropicError as error:
            raise translate_error(error) from error
        latency_ms = (time.perf_counter() - started) * 1000
        return ModelReply(
            text=_reply_text(message, tool_name),
            provider=PROVIDER,
            model=message.model or model,
            input_tokens=_input_tokens(message),
            output_tokens=message.usage.output_tokens,
            latency_ms=latency_ms,
        )


def translate_error(error: anthropic.AnthropicError) -> ModelError:
    """SDK error → our error: ``TransientModelError`` when waiting and retrying may help."""
    detail = f"{PROVIDER}: {type(error).__name__}: {str(error)[:_MAX_ERROR_CHARS]}"
    if isinstance(error, anthropic.APIConnectionError):  # includes APITimeoutError
        return TransientModelError(detail)
    if isinstance(error, anthropic.APIStatusError) and is_transient_status(error.status_code):
        return TransientModelError(detail)
    return ModelError(detail)


def _tool_name(request: ModelRequest) -> str:
    # Tool names allow [a-zA-Z0-9_-]{1,64}; a pydantic class name is already within that.
    return request.output_schema.__name__[:64]


def _user_message(prompt: str) -> UserMessageParam:
    return {"role": "user", "content": prompt}


def _answer_tool(request: ModelRequest, tool_name: str) -> ToolParam:
    """The one tool the model must call: its input schema is the role's output schema."""
    return {
        "name": tool_name,
        "description": f"Record the answer as one {request.output_schema.__name__} object.",
        "input_schema": request.output_schema.model_json_schema(),
    }


def _forced_tool(tool_name: str) -> ToolChoiceToolParam:
    return {"type": "tool", "name": tool_name}


def _system(system: str) -> str | Omit:
    # The API rejects an empty system prompt, so leave it out (the SDK's omit) rather than send "".
    return system if system else anthropic.omit


def _reply_text(message: Message, tool_name: str) -> str:
    for block in message.content:
        if block.type == "tool_use" and block.name == tool_name:
            return json.dumps(block.input)
    # The model answered in prose instead: pass it on, and validation and repair deal with it.
    return "".join(block.text for block in message.content if block.type == "text")


def _input_tokens(message: Message) -> int:
    usage = message.usage
    # Cached prompt tokens are billed too; counting them keeps budgets conservative.
    return usage.input_tokens + (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
