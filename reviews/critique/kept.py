"""What a critique keeps in its process from one critique of a strategy to the next.

A replay critiques a strategy every few sessions over a lookback that has moved by only those
sessions; the rows it read last time and that cannot have changed since are kept here, per
strategy, for the few strategies critiqued most recently (``evidence`` keeps the parts of finished
runs, ``signal_ics`` the signal blocks of stored bundles). What is kept is always checked against
the database's marks before it is used, so dropping it changes nothing but the time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["KeptPerStrategy"]

Key = TypeVar("Key")
Value = TypeVar("Value")


class KeptPerStrategy(Generic[Key, Value]):
    """The last value kept under each key, for the ``size`` keys kept most recently (the oldest
    goes first). Thread-safe: a value is replaced whole, never changed in place."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._kept: OrderedDict[Key, Value] = OrderedDict()

    def get(self, key: Key) -> Value | None:
        with self._lock:
            return self._kept.get(key)

    def keep(self, key: Key, value: Value) -> None:
        with self._lock:
            self._kept[key] = value
            self._kept.move_to_end(key)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)

    def forget(self, which: Callable[[Key], bool]) -> None:
        with self._lock:
            for key in [key for key in self._kept if which(key)]:
                del self._kept[key]
