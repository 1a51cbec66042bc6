"""A spawned replay worker starts from its parent's settings as they stand, not from the
environment alone: a test's database name and a bench's overrides reach it; a setting that cannot
be pickled is left to the worker's own settings module."""

from __future__ import annotations

import pickle
import threading

from trading.strategies import replay_boot


def test_the_snapshot_carries_the_settings_as_overridden_in_this_process(settings):
    settings.LLM = {**settings.LLM, "OFFLINE_LATENCY_MS": 0.0}
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open"}

    snapshot = pickle.loads(replay_boot.settings_snapshot())

    assert snapshot["LLM"]["OFFLINE_LATENCY_MS"] == 0.0 and snapshot["BROKER"]["FILL_POLICY"] == "next_open"
    assert all(name.isupper() for name in snapshot)


def test_a_setting_that_cannot_be_pickled_stays_behind(settings):
    settings.DESK_TEST_LOCK = threading.Lock()

    snapshot = pickle.loads(replay_boot.settings_snapshot())

    assert "DESK_TEST_LOCK" not in snapshot and "INSTALLED_APPS" in snapshot
