"""``redact_data`` checks a structure's strings together before cutting any: it must answer
exactly what redacting each string on its own answers, whatever the strings hold."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from security import redaction
from security.domain import redaction as pure
from security.domain.redaction import redact, secrets_in_environ

SECRET = "s3cr3t-key-value-0123"
# Pieces that make credential shapes likelier than plain random text would.
FRAGMENTS = [
    SECRET,
    "Authorization: Bearer abcdefgh123",
    "authorization=Basic dXNlcjpwYXNz",
    "regulatory authorization: granted",
    'api_key="abcdef123456"',
    "x-api-key: 0123456789",
    "access-token=zzzzzzzz",
    "sk-ant-0123456789abcdefXYZ",
    "sk-learn",
    "bearer of bad news",
    "[redacted]",
    "\x00",
    "ſ",
    "K",
    "key_points",
    # Case-blind spellings: mixed case, and the letters outside ASCII that match ASCII ones.
    "AuThOrIzAtIoN: token abcdefgh1",
    "author\u0130zation: Bearer abcdefgh123",
    "acce\u017fs-token=zzzzzzzz",
    "api_\u212aey=abcdef123456",
    "x-Api-KEY: 0123456789",
    "bear\u0131r abcdefgh123",
    "₹ 1,234.50",
]
texts = st.one_of(
    st.text(max_size=40),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=5).map("".join),
)
leaves = st.one_of(texts, st.integers(), st.none(), st.floats(allow_nan=False), st.booleans())
structures = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(texts, children, max_size=4),
    ),
    max_leaves=20,
)


def each_string_redacted(value: Any, secrets: list[str]) -> Any:
    """The old ``redact_data``: every string redacted on its own."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {key: each_string_redacted(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(each_string_redacted(item, secrets) for item in value)
    return value


@settings(max_examples=500, deadline=None)
@given(text=texts)
def test_skipping_the_credential_patterns_on_text_without_their_words_cuts_the_same(text):
    """``redact`` runs the credential patterns only when ``may_hold_shape``: what it cuts is what
    running them on every text cuts."""
    assert redact(text, []) == pure._cut_shapes(text)


@pytest.mark.parametrize(
    "text",
    ["author\u0130zation: Bearer abcdefgh123", "acce\u017fs_token=zzzzzzzz", "API-\u212aEY: 0123456789"],
)
def test_letters_that_match_ascii_ones_case_blind_still_reach_the_patterns(text):
    assert pure.may_hold_shape(text)
    assert redact(text, []) != text


@pytest.fixture
def a_configured_secret(monkeypatch):
    monkeypatch.setenv("DESK_TEST_API_KEY", SECRET)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=structures)
def test_checking_the_strings_together_answers_as_each_one_alone(a_configured_secret, value):
    expected = each_string_redacted(value, redaction.configured_secrets())
    got = redaction.redact_data(value)
    assert got == expected
    assert type(got) is type(value)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_the_batch_redactor_cuts_what_redact_secrets_cuts(a_configured_secret, text):
    assert redaction.secrets_redactor()(text) == redaction.redact_secrets(text)


def test_a_secret_in_one_string_of_a_structure_is_cut_and_the_rest_kept(a_configured_secret):
    value = {"notes": ["fine", f"echoed {SECRET} here"], "n": 3, "pair": ("Bearer abcdefgh1234", "ok")}
    assert redaction.redact_data(value) == {
        "notes": ["fine", "echoed [redacted] here"],
        "n": 3,
        "pair": ("Bearer [redacted]", "ok"),
    }


def test_a_copy_is_returned_even_when_nothing_is_cut(a_configured_secret):
    value = {"notes": ["fine"]}
    copied = redaction.redact_data(value)
    assert copied == value and copied is not value and copied["notes"] is not value["notes"]


def test_the_environment_secrets_are_the_ones_every_variable_would_give(a_configured_secret, monkeypatch):
    monkeypatch.setenv("DESK_SHORT_TOKEN", "short")  # too short to be one
    monkeypatch.setenv("DESK_PLAIN", "not-a-secret-by-name")
    found = redaction.configured_secrets()
    assert [value for value in secrets_in_environ(os.environ) if value] == found[: len(secrets_in_environ(os.environ))]
    assert SECRET in found and "not-a-secret-by-name" not in found and "short" not in found
