from __future__ import annotations

import re
from decimal import Decimal

import pytest

from agents.domain.pricing import DEFAULT_PRICES, ModelPrice, PriceTable


def test_cost_is_tokens_times_the_price_per_million() -> None:
    table = PriceTable()

    # 12,000 in at 3 + 800 out at 15, per million tokens.
    assert table.cost("claude-sonnet-4-5", 12_000, 800) == Decimal("0.048")
    assert table.cost("gpt-5-mini", 1_000_000, 1_000_000) == Decimal("2.25")
    assert table.cost("gpt-5-nano", 1, 1) == Decimal("0.00000045")


def test_a_dated_snapshot_is_priced_as_its_model() -> None:
    table = PriceTable()

    assert table.cost("claude-sonnet-4-5-20250929", 1_000_000, 0) == Decimal("3")
    assert table.known("gpt-5-2025-08-07")
    assert table.known("claude-haiku-4-5-latest")


def test_a_sibling_model_is_not_mistaken_for_a_listed_one() -> None:
    table = PriceTable()

    assert not table.known("gpt-4.1-nano")
    assert not table.known("claude-sonnet-4-5-turbo")


def test_an_unknown_model_costs_nothing_and_says_so() -> None:
    table = PriceTable()

    assert table.cost("llama3.1:8b", 5_000, 5_000) == Decimal(0)
    assert not table.known("llama3.1:8b")


def test_a_fallback_price_covers_unlisted_models_without_making_them_known() -> None:
    table = PriceTable.from_mapping({"*": {"input": 10, "output": 30}})

    assert table.cost("claude-sonnet-9", 1_000_000, 1_000_000) == Decimal("40")
    assert not table.known("claude-sonnet-9")
    assert table.cost("claude-haiku-4-5", 1_000_000, 0) == Decimal("1")


@pytest.mark.parametrize("provider", ["offline", "replay", "ollama"])
def test_free_providers_cost_nothing_whatever_the_model(provider: str) -> None:
    assert PriceTable().cost("claude-opus-4-5", 10_000, 10_000, provider=provider) == Decimal(0)


def test_paid_providers_pay() -> None:
    assert PriceTable().cost("claude-opus-4-5", 1_000_000, 0, provider="anthropic") == Decimal("5")


def test_settings_override_and_extend_the_defaults() -> None:
    table = PriceTable.from_mapping(
        {"claude-sonnet-4-5": {"input": "2.5", "output": "12"}, "claude-sonnet-4-6": {"input": 3, "output": 0.15}}
    )

    assert table.price_for("claude-sonnet-4-5") == ModelPrice(Decimal("2.5"), Decimal("12"))
    # A float from JSON settings is read as written, not as its binary expansion.
    assert table.price_for("claude-sonnet-4-6") == ModelPrice(Decimal("3"), Decimal("0.15"))
    assert table.known("gpt-5")
    assert DEFAULT_PRICES["claude-sonnet-4-5"] == ModelPrice(Decimal("3"), Decimal("15")), "defaults untouched"


def test_overrides_can_start_from_an_empty_table() -> None:
    table = PriceTable.from_mapping({"house-model": {"input": 1, "output": 2}}, base=PriceTable(prices={}))

    assert list(table.prices) == ["house-model"]


@pytest.mark.parametrize(
    "entry",
    [
        {"input": "-1", "output": "2"},
        {"input": "abc", "output": "2"},
        {"input": True, "output": "2"},
        {"input": float("nan"), "output": "2"},
        {"input": "Infinity", "output": "2"},
        {"input": None, "output": "2"},
        {"input": "1"},
        {"input": "1", "output": "2", "cached": "0.1"},
        "3/15",
    ],
)
def test_bad_prices_in_settings_fail_loudly(entry: object) -> None:
    with pytest.raises(ValueError, match="house-model"):
        PriceTable.from_mapping({"house-model": entry})


@pytest.mark.parametrize("raw", [["claude-sonnet-4-5", {"input": "3", "output": "15"}], "3/15", None, 3])
def test_a_price_table_that_is_not_a_mapping_is_refused_with_an_example(raw: object) -> None:
    with pytest.raises(ValueError, match=re.escape('e.g. {"claude-sonnet-4-5": {"input": "3", "output": "15"}}; got')):
        PriceTable.from_mapping(raw)


def test_a_model_name_that_is_not_text_is_refused() -> None:
    with pytest.raises(ValueError, match="model name"):
        PriceTable.from_mapping({3: {"input": "1", "output": "2"}})


def test_negative_token_counts_are_refused() -> None:
    with pytest.raises(ValueError):
        PriceTable().cost("gpt-5", -1, 0)
