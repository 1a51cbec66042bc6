"""The SQLite backend keeps each process's closed connections for the next opening (a request's
thread opens one and closes it at the request's end), but never hands out one that is dirty, that
belongs to another process, or that points at a database file that has since been replaced."""

from __future__ import annotations

import multiprocessing
import threading

import pytest
from django.db.utils import ConnectionHandler

from config.sqlite3 import base as pooled


@pytest.fixture
def handler(tmp_path, django_db_blocker):
    path = tmp_path / "desk.sqlite3"

    def make() -> ConnectionHandler:
        return ConnectionHandler(
            {"default": {"ENGINE": "config.sqlite3", "NAME": str(path), "OPTIONS": {"timeout": 5}}}
        )

    with django_db_blocker.unblock():
        first = make()["default"]
        with first.cursor() as cursor:
            cursor.execute("CREATE TABLE trade (id integer primary key, symbol text)")
        first.close()
        yield make, path


def _raw(wrapper) -> object:
    wrapper.ensure_connection()
    return wrapper.connection


def test_a_closed_connection_is_opened_again_from_the_pool_in_another_thread(handler):
    make, path = handler
    first = make()["default"]
    raw = _raw(first)
    first.close()
    assert pooled.pooled_count(path) == 1

    seen = []

    def request() -> None:  # a request's thread: its own wrapper, as Django gives each thread
        wrapper = make()["default"]
        seen.append(_raw(wrapper))
        with wrapper.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM trade")
            assert cursor.fetchone() == (0,)
        wrapper.close()

    thread = threading.Thread(target=request)
    thread.start()
    thread.join()

    assert seen == [raw]
    assert pooled.pooled_count(path) == 1


def test_a_transaction_left_open_is_rolled_back_before_the_connection_is_reused(handler):
    make, _path = handler
    wrapper = make()["default"]
    raw = _raw(wrapper)
    raw.execute("BEGIN")
    raw.execute("INSERT INTO trade (symbol) VALUES ('RELIANCE')")
    wrapper.close()

    again = make()["default"]
    assert _raw(again) is raw and not raw.in_transaction
    with again.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM trade")
        assert cursor.fetchone() == (0,)
    again.close()


def test_a_connection_that_met_an_error_is_closed_not_pooled(handler):
    make, path = handler
    wrapper = make()["default"]
    raw = _raw(wrapper)
    with pytest.raises(Exception, match="no such table"), wrapper.cursor() as cursor:
        cursor.execute("SELECT * FROM missing")
    assert wrapper.errors_occurred
    wrapper.close()

    assert pooled.pooled_count(path) == 0
    assert _raw(make()["default"]) is not raw


def test_a_replaced_database_file_is_never_read_through_the_old_files_connections(handler, tmp_path):
    make, path = handler
    wrapper = make()["default"]
    old = _raw(wrapper)
    wrapper.close()
    path.unlink()  # a test database made again, a restore: the same name, another file
    for leftover in tmp_path.glob("desk.sqlite3-*"):
        leftover.unlink()

    fresh = make()["default"]
    assert _raw(fresh) is not old
    with fresh.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM sqlite_master WHERE name = 'trade'")
        assert cursor.fetchone() == (0,)  # the new, empty file: not the old one's table
    fresh.close()


def test_the_pool_keeps_a_few_idle_connections_and_closes_the_rest(handler):
    make, path = handler
    wrappers = [make()["default"] for _ in range(pooled.POOL_SIZE + 3)]
    for wrapper in wrappers:
        wrapper.ensure_connection()
    for wrapper in wrappers:
        wrapper.close()
    assert pooled.pooled_count(path) == pooled.POOL_SIZE


def _count_in_child(path, queue) -> None:
    queue.put(pooled.pooled_count(path))


def test_a_forked_child_never_takes_its_parents_connections(handler):
    make, path = handler
    wrapper = make()["default"]
    _raw(wrapper)
    wrapper.close()
    assert pooled.pooled_count(path) == 1

    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_count_in_child, args=(path, queue))
    child.start()
    child.join(timeout=30)

    assert child.exitcode == 0 and queue.get(timeout=5) == 0
