"""The model calls' bill enters a review in the account's currency, or not at all (said so)."""

from __future__ import annotations

from decimal import Decimal

from reviews.retrospective import inference_in_account_currency


def test_a_bill_in_the_accounts_own_currency_counts_as_recorded(settings) -> None:
    settings.RETROSPECTIVE = {**settings.RETROSPECTIVE, "INFERENCE_RATE": ""}

    amount, source = inference_in_account_currency(Decimal("12.345678"), account_currency="USD")

    assert amount == Decimal("12.345678")
    assert source["counted"] is True and source["rate"] is None


def test_dollars_are_converted_at_the_configured_rate(settings) -> None:
    settings.RETROSPECTIVE = {**settings.RETROSPECTIVE, "INFERENCE_RATE": "84.5"}

    amount, source = inference_in_account_currency(Decimal("0.200000"), account_currency="INR")

    assert amount == Decimal("16.9")
    assert source == {"recorded": "0.200000", "currency": "USD", "rate": "84.5", "counted": True, "note": ""}


def test_without_a_rate_dollars_are_never_added_to_rupees(settings) -> None:
    settings.RETROSPECTIVE = {**settings.RETROSPECTIVE, "INFERENCE_RATE": ""}

    amount, source = inference_in_account_currency(Decimal("0.75"), account_currency="INR")

    assert amount == Decimal(0)
    assert source["counted"] is False
    assert "0.75 USD" in source["note"] and "DESK_INFERENCE_RATE" in source["note"]


def test_a_free_period_needs_no_rate(settings) -> None:
    settings.RETROSPECTIVE = {**settings.RETROSPECTIVE, "INFERENCE_RATE": ""}

    amount, source = inference_in_account_currency(Decimal(0), account_currency="INR")

    assert amount == 0 and source["counted"] is True
