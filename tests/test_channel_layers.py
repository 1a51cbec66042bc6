"""The embedded channel layer relays group messages between processes through SQLite."""

from __future__ import annotations

import asyncio

from asgiref.sync import async_to_sync

from config.channel_layers import RelayedInMemoryChannelLayer


def _pair(tmp_path, poll_interval: float = 0.05):
    path = str(tmp_path / "relay.sqlite3")
    return (
        RelayedInMemoryChannelLayer(path=path, poll_interval=poll_interval),
        RelayedInMemoryChannelLayer(path=path),
    )


def test_a_message_sent_in_another_process_reaches_this_ones_group(tmp_path):
    web, worker = _pair(tmp_path)

    async def scenario():
        channel = await web.new_channel()
        await web.group_add("run-7", channel)
        await worker.group_send("run-7", {"type": "desk.event", "event": {"kind": "stage.started"}})
        message = await asyncio.wait_for(web.receive(channel), timeout=5)
        await web.flush()
        return message

    assert async_to_sync(scenario)() == {"type": "desk.event", "event": {"kind": "stage.started"}}


def test_a_process_does_not_receive_its_own_messages_twice(tmp_path):
    web, _ = _pair(tmp_path, poll_interval=60)

    async def scenario():
        channel = await web.new_channel()
        await web.group_add("desk", channel)
        await web.group_send("desk", {"type": "desk.event", "n": 1})
        first = await web.receive(channel)
        relayed = await web.poll_once()
        queued = web.channels[channel].qsize() if channel in web.channels else 0
        await web.flush()
        return first, relayed, queued

    first, relayed, queued = async_to_sync(scenario)()
    assert first["n"] == 1 and relayed == 0 and queued == 0


def test_only_groups_with_members_here_are_delivered(tmp_path):
    # The poller sleeps before its first look, so with a 60 s interval only the explicit poll
    # below reads the relay.
    web, worker = _pair(tmp_path, poll_interval=60)

    async def scenario():
        channel = await web.new_channel()
        await web.group_add("run-1", channel)
        await worker.group_send("run-2", {"type": "desk.event"})
        read = await web.poll_once()
        queued = web.channels[channel].qsize() if channel in web.channels else 0
        await web.flush()
        return read, queued

    assert async_to_sync(scenario)() == (1, 0)


def test_overlapping_polls_deliver_each_message_once(tmp_path):
    web, worker = _pair(tmp_path, poll_interval=60)

    async def scenario():
        channel = await web.new_channel()
        await web.group_add("run-3", channel)
        await worker.group_send("run-3", {"type": "desk.event", "n": 1})
        # The background poller and an explicit poll can overlap; each row must be claimed once.
        reads = await asyncio.gather(*(web.poll_once() for _ in range(4)))
        queued = web.channels[channel].qsize() if channel in web.channels else 0
        await web.flush()
        return sum(reads), queued

    assert async_to_sync(scenario)() == (1, 1)


def test_the_relay_table_stays_bounded_and_keeps_one_connection_per_thread(tmp_path, monkeypatch):
    layer = RelayedInMemoryChannelLayer(path=str(tmp_path / "relay.sqlite3"), retention=10)
    clock = [1_000.0]
    monkeypatch.setattr("config.channel_layers.time.time", lambda: clock[0])
    for _ in range(3):
        layer._append("desk", {"type": "desk.event"})
    clock[0] += 11  # the first three are now past their retention
    layer._append("desk", {"type": "desk.event"})
    assert layer._connect().execute("SELECT COUNT(*) FROM relay").fetchone()[0] == 1
    assert layer._connect() is layer._connect()
