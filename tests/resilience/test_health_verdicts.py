"""The verdicts alone, without a database or a clock: what counts as stale, and which failure makes
the desk down rather than degraded."""

from __future__ import annotations

import datetime as dt

import pytest

from trading.health.verdicts import (
    BROKER,
    DATABASE,
    SCHEDULER,
    WORKERS,
    Check,
    Status,
    describe_age,
    overall,
    scheduler_check,
    workers_check,
    workers_seen,
)

NOW = dt.datetime(2026, 11, 26, 10, 0, tzinfo=dt.UTC)


def _checks(**down: bool) -> list[Check]:
    parts = (DATABASE, BROKER, SCHEDULER, WORKERS)
    return [Check(name, Status.DOWN if down.get(name) else Status.OK, "") for name in parts]


@pytest.mark.parametrize(
    ("down", "verdict"),
    [
        ({}, Status.OK),
        ({BROKER: True}, Status.DEGRADED),
        ({SCHEDULER: True, WORKERS: True}, Status.DEGRADED),
        ({DATABASE: True}, Status.DOWN),
        ({DATABASE: True, BROKER: True}, Status.DOWN),
    ],
)
def test_only_a_missing_database_takes_the_desk_down(down, verdict):
    assert overall(_checks(**down)) is verdict


def test_a_tick_three_minutes_old_is_on_time_and_one_second_later_is_stale():
    assert scheduler_check(NOW - dt.timedelta(minutes=3), now=NOW).status is Status.OK
    late = scheduler_check(NOW - dt.timedelta(minutes=3, seconds=1), now=NOW)
    assert late.status is Status.DOWN and late.age_s == 181


def test_workers_are_alive_while_any_answered_within_three_minutes():
    seen = workers_seen({"a@x": NOW - dt.timedelta(minutes=10), "b@y": NOW - dt.timedelta(seconds=40)}, now=NOW)

    assert [(worker.name, worker.alive) for worker in seen] == [("b@y", True), ("a@x", False)]
    assert workers_check(seen).seen == 1 and workers_check(seen).status is Status.OK
    assert workers_check(seen[1:]).status is Status.DOWN


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0 s"), (119, "119 s"), (120, "2 min"), (7199, "119 min"), (7200, "2 h 0 min"), (200_000, "2 d")],
)
def test_ages_are_said_at_the_precision_a_person_needs(seconds, text):
    assert describe_age(seconds) == text
