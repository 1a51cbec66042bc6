from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, env_json, env_list, env_str


def test_unset_variables_take_their_defaults():
    assert env_str("X", "d", environ={}) == "d"
    assert env_bool("X", True, environ={}) is True
    assert env_int("X", 7, environ={}) == 7
    assert env_float("X", 0.5, environ={}) == 0.5
    assert env_list("X", ["a"], environ={}) == ["a"]


def test_values_are_parsed_by_type():
    environ = {"B": "Yes", "I": " 42 ", "F": "1.5", "L": "a, b,,c"}
    assert env_bool("B", environ=environ) is True
    assert env_int("I", 0, environ=environ) == 42
    assert env_float("F", 0.0, environ=environ) == 1.5
    assert env_list("L", environ=environ) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("reader", "value", "message"),
    [
        (lambda e: env_bool("DEBUG", environ=e), "maybe", "DEBUG='maybe' is not a boolean"),
        (lambda e: env_int("DEBUG", 1, environ=e), "ten", "DEBUG='ten' is not an integer"),
        (lambda e: env_int("DEBUG", 1, environ=e, minimum=1), "0", "DEBUG=0 is below its minimum of 1"),
        (lambda e: env_float("DEBUG", 1.0, environ=e), "nan", "must be a finite number"),
        (lambda e: env_float("DEBUG", 1.0, environ=e), "1,5", "is not a number"),
        (lambda e: env_json("DEBUG", environ=e), "{model: 1}", "DEBUG is not valid JSON"),
    ],
)
def test_a_bad_value_fails_loudly_naming_the_variable(reader, value, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        reader({"DEBUG": value})
