"""The start of a replay worker process, kept free of Django imports.

Replay workers are spawned, not forked: a fresh interpreter inherits no thread, lock, socket or
connection of the process that started it (a fork copied them: a worker blocked for good reading
a Redis socket its parent had open). The pool's initializer is ``start``: the
process unpickles it before Django is set up, so this module imports nothing that needs the app
registry. ``start`` takes the parent's settings as they are at that moment (a test's database
name, a bench's fill policy and model latency are not in the environment), sets Django up with
them, and only then unpickles what the worker runs with.
"""

from __future__ import annotations

import os
import pickle
from typing import Any


def settings_snapshot() -> bytes:
    """The starting process's settings, each that can be pickled (a setting holding a live object
    is left to the worker's own settings module), pickled together."""
    from django.conf import settings

    snapshot: dict[str, Any] = {}
    for name in dir(settings):
        if not name.isupper():
            continue
        value = getattr(settings, name)
        try:
            pickle.dumps(value)
        except Exception:
            continue
        snapshot[name] = value
    return pickle.dumps(snapshot)


def start(settings_pickle: bytes, payload: bytes) -> None:
    """The worker's initializer: the parent's settings, Django, then the worker's state."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings

    for name, value in pickle.loads(settings_pickle).items():
        setattr(settings, name, value)
    import django

    django.setup()
    from trading.strategies.replay import worker_start

    worker_start(pickle.loads(payload))
