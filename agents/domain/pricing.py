"""What a model call costs, from token counts and a per-model price table. Pure; no Django, no SDK.

The default prices are configurable defaults, not facts: list prices change, and each desk may
have its own contract. Settings override or extend them through ``PriceTable.from_mapping``.
A model the table does not know costs ``Decimal(0)``, unless the table has a fallback price
(the ``"*"`` entry in settings). Callers that budget on cost should check ``known(model)``: an
unknown model is a configuration gap, not a free model, and a cost budget cannot see it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

MILLION = Decimal(1_000_000)

# Calls answered without a paid API: the rules model, recorded replies, and a local Ollama server.
FREE_PROVIDERS = frozenset({"offline", "replay", "ollama"})

# A dated snapshot ("claude-sonnet-4-5-20250929", "gpt-4o-2024-08-06") or "-latest" is priced as
# its base model. Anything else must be listed: "gpt-4.1-nano" is not "gpt-4.1".
_SNAPSHOT_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


@dataclass(frozen=True)
class ModelPrice:
    """Price per million tokens, in the table's currency."""

    input_per_million: Decimal
    output_per_million: Decimal


# Configurable defaults in USD per million tokens, copied from the providers' public list prices
# when this file was written: not facts. Newer models are deliberately absent rather than guessed;
# add them, and correct these, in settings.
DEFAULT_PRICES: Mapping[str, ModelPrice] = {
    "claude-opus-4-5": ModelPrice(Decimal("5"), Decimal("25")),
    "claude-sonnet-4-5": ModelPrice(Decimal("3"), Decimal("15")),
    "claude-haiku-4-5": ModelPrice(Decimal("1"), Decimal("5")),
    "gpt-5": ModelPrice(Decimal("1.25"), Decimal("10")),
    "gpt-5-mini": ModelPrice(Decimal("0.25"), Decimal("2")),
    "gpt-5-nano": ModelPrice(Decimal("0.05"), Decimal("0.40")),
    "gpt-4.1": ModelPrice(Decimal("2"), Decimal("8")),
    "gpt-4.1-mini": ModelPrice(Decimal("0.40"), Decimal("1.60")),
    "gpt-4o-mini": ModelPrice(Decimal("0.15"), Decimal("0.60")),
}
# The settings key for "any model not listed": a conservative price keeps a cost budget meaningful.
FALLBACK_KEY = "*"


@dataclass(frozen=True)
class PriceTable:
    prices: Mapping[str, ModelPrice] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    currency: str = "USD"
    fallback: ModelPrice | None = None

    @classmethod
    def from_mapping(cls, raw: object, *, base: PriceTable | None = None) -> PriceTable:
        """Build a table from settings: ``{"model": {"input": "3", "output": "15"}}`` per million tokens,
        and optionally ``"*"`` for any model not listed.

        Entries override ``base`` (the defaults unless given); bad values raise ``ValueError``.
        Takes any object because settings hold whatever JSON was configured; anything but a
        mapping of model names is refused."""
        if not isinstance(raw, Mapping):
            raise ValueError(
                'prices must map model names to prices, e.g. {"claude-sonnet-4-5": {"input": "3", "output": "15"}}; '
                f"got {raw!r}"
            )
        base = base if base is not None else cls()
        prices = dict(base.prices)
        fallback = base.fallback
        for model, entry in raw.items():
            if not isinstance(model, str):
                raise ValueError(f"a model name in the price table must be text, got {model!r}")
            price = _parse_price(model, entry)
            if model.strip() == FALLBACK_KEY:
                fallback = price
            else:
                prices[model.strip()] = price
        return cls(prices=prices, currency=base.currency, fallback=fallback)

    def price_for(self, model: str) -> ModelPrice | None:
        name = model.strip()
        if name in self.prices:
            return self.prices[name]
        return self.prices.get(_SNAPSHOT_SUFFIX.sub("", name))

    def known(self, model: str) -> bool:
        return self.price_for(model) is not None

    def cost(self, model: str, input_tokens: int, output_tokens: int, *, provider: str = "") -> Decimal:
        """Cost of one call; ``Decimal(0)`` for free providers, and for models the table does not
        know when it has no fallback price."""
        if input_tokens < 0 or output_tokens < 0:
            raise ValueError("token counts cannot be negative")
        if provider in FREE_PROVIDERS:
            return Decimal(0)
        price = self.price_for(model) or self.fallback
        if price is None:
            return Decimal(0)
        return (input_tokens * price.input_per_million + output_tokens * price.output_per_million) / MILLION


def _parse_price(model: str, entry: object) -> ModelPrice:
    if not isinstance(entry, Mapping):
        raise ValueError(f"price for {model!r} must be a mapping with 'input' and 'output'")
    unexpected = set(entry) - {"input", "output"}
    if unexpected or not {"input", "output"} <= set(entry):
        raise ValueError(f"price for {model!r} needs exactly 'input' and 'output', got {sorted(entry)}")
    return ModelPrice(
        input_per_million=_parse_amount(model, "input", entry["input"]),
        output_per_million=_parse_amount(model, "output", entry["output"]),
    )


def _parse_amount(model: str, side: str, value: object) -> Decimal:
    # bool is an int subclass; a True price is a settings typo, not 1 USD.
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise ValueError(f"{side} price for {model!r} must be a number, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{side} price for {model!r} must be finite, got {value!r}")
    try:
        # str() first so a float from JSON settings (0.15) becomes 0.15, not its binary expansion.
        amount = Decimal(str(value).strip())
    except InvalidOperation as error:
        raise ValueError(f"{side} price for {model!r} is not a number: {value!r}") from error
    if not amount.is_finite() or amount < 0:
        raise ValueError(f"{side} price for {model!r} must be a finite amount >= 0, got {value!r}")
    return amount
