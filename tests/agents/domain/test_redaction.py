"""Secrets are cut out of any text before it is stored, logged or sent (security.domain.redaction)."""

from __future__ import annotations

from security.domain.redaction import REDACTED, redact, secrets_in_environ

KEY = "sk-ant-api03-Zx8QeR7t2LmN0pQrStUvWxYz-1234567890abcdef"


def test_a_configured_key_is_removed_wherever_it_appears():
    text = f"anthropic: APIStatusError: 401 {{'x-api-key': '{KEY}'}} echoed {KEY}"

    cleaned = redact(text, [KEY])

    assert KEY not in cleaned
    assert cleaned.count(REDACTED) >= 2
    assert cleaned.startswith("anthropic: APIStatusError: 401")


def test_a_bearer_token_is_removed_even_when_no_one_configured_it():
    cleaned = redact("upstream said: Bearer abc.DEF-ghi_123~xyz+/== rejected", [])

    assert "abc.DEF" not in cleaned
    assert "Bearer [redacted] rejected" in cleaned


def test_authorization_and_api_key_header_values_are_removed_whatever_their_scheme():
    text = (
        "request headers: Authorization: Basic dXNlcjpwYXNz\n"
        "{'authorization': 'Token 0123456789abcdef', 'X-Api-Key': 'plainvalue42'}\n"
        'api_key="zzz-secret-zzz"'
    )

    cleaned = redact(text, [])

    for leaked in ("dXNlcjpwYXNz", "0123456789abcdef", "plainvalue42", "zzz-secret-zzz"):
        assert leaked not in cleaned
    assert "Authorization: [redacted]" in cleaned


def test_provider_key_shapes_are_removed_even_when_not_configured():
    openai_key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123456789"
    anthropic_key = "sk-ant-api03-abcdefghijklmnopqrstu_vwxyz-0123"

    cleaned = redact(f"keys {openai_key} and {anthropic_key}.", [])

    assert openai_key not in cleaned and anthropic_key not in cleaned
    assert cleaned == f"keys {REDACTED} and {REDACTED}."


def test_ordinary_text_is_left_alone():
    text = "analyst: quorum not met; sk-learn is a library; the bearer of bad news; RSI 14 = 61.2"

    assert redact(text, ["", "short"]) == text


def test_a_longer_secret_is_removed_whole_when_a_shorter_one_is_inside_it():
    short, long = "abcdefgh1234", "abcdefgh1234-and-more-5678"

    cleaned = redact(f"x {long} y", [short, long])

    assert cleaned == f"x {REDACTED} y"


def test_secret_looking_environment_variables_are_collected_and_short_or_unrelated_ones_are_not():
    environ = {
        "OPENAI_API_KEY": "sk-openai-abcdefgh",
        "GATEWAY_TOKEN": "gw-token-12345",
        "WEBHOOK_SECRET": "whsec_0987654321",
        "DB_PASSWORD": "hunter2hunter2",
        "FEATURE_TOKEN": "1",
        "DESK_PORT": "8000123456",
        "PATH": "/usr/bin:/bin",
    }

    assert sorted(secrets_in_environ(environ)) == sorted(
        ["sk-openai-abcdefgh", "gw-token-12345", "whsec_0987654321", "hunter2hunter2"]
    )


def test_redacting_twice_changes_nothing_more():
    text = f"{{'authorization': 'Bearer {KEY}'}} Authorization: Basic abcdefgh1234, api_key={KEY} Bearer {KEY}"

    once = redact(text, [KEY])

    assert redact(once, [KEY]) == once


def test_the_word_authorization_in_prose_is_not_mistaken_for_a_header():
    text = '{"summary": "regulatory authorization: granted for the new plant"}'

    assert redact(text, []) == text
