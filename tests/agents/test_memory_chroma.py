"""The opt-in Chroma memory backend and the backend factory.

chromadb is not a dev requirement (it brings ~355 MB of packages, Kubernetes and ONNX Runtime
among them), so the tests that need it skip where it is not installed; the factory's errors and
the lazy import are tested everywhere.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from agents import memory_chroma
from agents.domain.memory import HybridIndex, MemoryHit, MemoryRecord, hashed_vector, query_fields, record_fields
from agents.memory_chroma import ChromaMemoryIndex, build_memory_index
from tests.agents.domain.test_memory import DAY, QUERIES, desk_records, hit_ids, note

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def chroma() -> Iterator[list[ChromaMemoryIndex]]:
    """Skips without chromadb; yields a list the test appends its indexes to, closed afterwards."""
    pytest.importorskip("chromadb")
    made: list[ChromaMemoryIndex] = []
    yield made
    for index in made:
        index.close()


MakeIndex = Callable[..., ChromaMemoryIndex]


@pytest.fixture
def make_index(chroma: list[ChromaMemoryIndex]) -> MakeIndex:
    def make(*records: MemoryRecord) -> ChromaMemoryIndex:
        index = ChromaMemoryIndex()
        index.add_many(records)
        chroma.append(index)
        return index

    return make


def brute_force_cosines(
    records: list[MemoryRecord], query: str, symbol: str | None, as_of: date | None
) -> dict[int, float]:
    """Record id → cosine for every record passing the floor and as_of, computed directly."""
    fields = query_fields(query, symbol)
    terms = {token for run in fields for token in run}
    query_vector = hashed_vector(fields, 256)
    cosines: dict[int, float] = {}
    for record in records:
        runs = record_fields(record)
        if (as_of is not None and record.created_on > as_of) or not terms & {t for run in runs for t in run}:
            continue
        vector = hashed_vector(runs, 256)
        cosines[record.id] = sum(weight * vector.get(slot, 0.0) for slot, weight in query_vector.items())
    return cosines


def summary(hits: list[MemoryHit]) -> list[tuple[int, float, int]]:
    return [(hit.record.id, hit.score, hit.dense_rank) for hit in hits]


# --- the relevance floor, as_of and symbol ----------------------------------------------------------


def test_a_record_sharing_no_query_term_never_surfaces_even_when_it_is_the_only_one(make_index: MakeIndex) -> None:
    index = make_index(note(1, "Chased a breakout; the stock reversed.", symbol="RELIANCE", direction="LONG"))

    assert index.search("earnings gap on heavy volume") == []
    assert index.search("the of and") == []  # nothing left after stop words


def test_only_records_sharing_a_query_term_are_hits(make_index: MakeIndex) -> None:
    index = make_index(
        note(1, "Chased a breakout; the stock reversed."),
        note(2, "Earnings gap held for four sessions."),
        note(3, "Refinery margins improved."),
        note(4, ""),  # no tokens at all: a zero vector, which must not upset the collection
    )

    assert set(hit_ids(index.search("breakout earnings", k=10))) == {1, 2}


def test_as_of_excludes_later_records_and_keeps_that_days(make_index: MakeIndex) -> None:
    index = make_index(
        note(1, "Breakout failed.", on=DAY),
        note(2, "Breakout held.", on=DAY + timedelta(days=1)),
        note(3, "Breakout retested.", on=DAY + timedelta(days=2)),
    )

    assert set(hit_ids(index.search("breakout", k=10, as_of=DAY + timedelta(days=1)))) == {1, 2}
    assert index.search("breakout", as_of=DAY - timedelta(days=1)) == []
    assert set(hit_ids(index.search("breakout", k=10))) == {1, 2, 3}


def test_symbol_and_tag_values_are_tokens_but_tag_keys_are_not(make_index: MakeIndex) -> None:
    index = make_index(
        note(1, "Chased a breakout.", symbol="RELIANCE", direction="LONG", outcome="loss", signal="falsified"),
        note(2, "Held the trend.", symbol="TCS", direction="SHORT", outcome="win", signal="realized"),
    )

    assert hit_ids(index.search("reliance")) == [1]
    assert hit_ids(index.search("falsified")) == [1]
    assert hit_ids(index.search("short win")) == [2]
    assert index.search("outcome signal direction") == []


def test_symbol_boosts_that_symbols_records_without_filtering_others(make_index: MakeIndex) -> None:
    index = make_index(
        note(1, "Breakout on volume; held.", symbol="TCS"),
        note(2, "Breakout on volume; held.", symbol="INFY"),
        note(3, "Trend day, no setup.", symbol="INFY"),
    )

    assert hit_ids(index.search("breakout volume", k=10)) == [1, 2]  # a tie, to the lower id
    assert hit_ids(index.search("breakout volume", k=10, symbol="INFY")) == [2, 1, 3]


# --- ranking -----------------------------------------------------------------------------------------


def test_the_obviously_relevant_record_comes_first_in_both_backends(make_index: MakeIndex) -> None:
    records = [
        note(1, "Entered a breakout without volume confirmation and it failed.", symbol="TCS"),
        note(2, "Earnings gap faded by the close.", symbol="INFY"),
        note(3, "Support bounce worked; volume was light.", symbol="SBIN"),
        note(4, "Waited for volume confirmation on the breakout; hit target.", symbol="RELIANCE"),
    ]
    hybrid = HybridIndex()
    hybrid.add_many(records)
    vectors = make_index(*records)

    for query, expected in [("breakout volume confirmation hit target", 4), ("earnings gap faded", 2)]:
        assert hit_ids(hybrid.search(query))[0] == expected
        assert hit_ids(vectors.search(query))[0] == expected


@pytest.mark.parametrize("as_of", [None, DAY + timedelta(days=20)])
def test_both_backends_find_the_same_candidates(make_index: MakeIndex, as_of: date | None) -> None:
    records = desk_records(150, seed=3)
    hybrid = HybridIndex()
    hybrid.add_many(records)
    vectors = make_index(*records)

    for query, symbol in QUERIES:
        expected = set(hit_ids(hybrid.search(query, k=1000, symbol=symbol, as_of=as_of)))
        assert set(hit_ids(vectors.search(query, k=1000, symbol=symbol, as_of=as_of))) == expected


@pytest.mark.parametrize("as_of", [None, DAY + timedelta(days=20)])
def test_hits_are_the_exact_top_k_by_cosine_with_ties_to_the_lower_id(
    make_index: MakeIndex, as_of: date | None
) -> None:
    records = desk_records(400, seed=5)
    index = make_index(*records)

    for query, symbol in [*QUERIES, ("weak results stopped", None), ("gap fill scratch", "INFY")]:
        hits = index.search(query, k=8, symbol=symbol, as_of=as_of)
        cosines = brute_force_cosines(records, query, symbol, as_of)
        assert len(hits) == min(8, len(cosines))
        # Chroma scores in float32, so compare with a tolerance and let its exact ties stand.
        assert [hit.score for hit in hits] == pytest.approx([cosines[hit.record.id] for hit in hits], abs=1e-5)
        assert [(-hit.score, hit.record.id) for hit in hits] == sorted((-hit.score, hit.record.id) for hit in hits)
        missed = [cosine for record_id, cosine in cosines.items() if record_id not in set(hit_ids(hits))]
        assert max(missed, default=-1.0) <= hits[-1].score + 1e-5
        assert [hit.dense_rank for hit in hits] == list(range(1, len(hits) + 1))
        assert {hit.bm25_rank for hit in hits} == {0}


def test_identical_records_tie_to_the_lower_id_whatever_the_insertion_order(make_index: MakeIndex) -> None:
    index = make_index(*(note(record_id, "Gap fill on volume.") for record_id in (9, 3, 7, 5)))

    assert hit_ids(index.search("gap fill", k=10)) == [3, 5, 7, 9]
    assert hit_ids(index.search("gap fill", k=2)) == [3, 5]  # the cut falls inside the tie


def test_adding_records_one_by_one_equals_building_all_at_once(make_index: MakeIndex) -> None:
    records = desk_records(60, seed=11)
    at_once = make_index(*records)
    one_by_one = make_index()
    for record in records:
        one_by_one.add(record)

    assert len(at_once) == len(one_by_one) == 60
    for query, symbol in QUERIES:
        assert summary(at_once.search(query, symbol=symbol)) == summary(one_by_one.search(query, symbol=symbol))


# --- bookkeeping ---------------------------------------------------------------------------------------


def test_a_record_id_can_only_be_indexed_once_and_a_bad_batch_writes_nothing(make_index: MakeIndex) -> None:
    index = make_index(note(1, "Breakout."))

    with pytest.raises(ValueError, match="already indexed"):
        index.add(note(1, "Another breakout."))
    with pytest.raises(ValueError, match="already indexed"):
        index.add_many([note(2, "Breakout two."), note(2, "Breakout again.")])
    assert len(index) == 1
    assert hit_ids(index.search("breakout", k=10)) == [1]


def test_k_below_one_and_an_empty_index_return_nothing(make_index: MakeIndex) -> None:
    assert make_index().search("breakout") == []
    assert make_index(note(1, "Breakout.")).search("breakout", k=0) == []


def test_indexes_do_not_see_each_others_records_and_close_drops_the_collection(make_index: MakeIndex) -> None:
    # Chroma shares one ephemeral system per process, so isolation rests on our collection names.
    first = make_index(note(1, "Breakout held."))
    second = make_index(note(2, "Breakout failed."))
    collections_before = len(first._client.list_collections())

    assert hit_ids(first.search("breakout", k=10)) == [1]
    assert hit_ids(second.search("breakout", k=10)) == [2]
    second.close()
    assert len(first._client.list_collections()) == collections_before - 1
    assert hit_ids(first.search("breakout", k=10)) == [1]


def test_the_hit_carries_the_original_record(make_index: MakeIndex) -> None:
    record = note(1, "Breakout held.", symbol="TCS", direction="LONG", outcome="win")
    index = make_index(record)

    assert index.search("breakout")[0].record == record


# --- no network --------------------------------------------------------------------------------------


@pytest.fixture
def network_attempts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Refuse, and record, every outgoing connection or DNS lookup made through Python's socket."""
    attempts: list[str] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(repr(args[1:] or args))
        raise OSError("network access attempted in an offline test")

    for name in ("connect", "connect_ex", "sendto"):
        monkeypatch.setattr(socket.socket, name, refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


def test_building_adding_and_searching_touch_no_network(
    chroma: list[ChromaMemoryIndex], network_attempts: list[str]
) -> None:
    memory_chroma._ephemeral_client.cache_clear()  # so the client is started under the block too
    index = ChromaMemoryIndex()
    chroma.append(index)
    index.add_many(desk_records(50, seed=2))
    index.search("breakout volume confirmation", symbol="TCS", as_of=DAY + timedelta(days=30))

    # Telemetry code tends to swallow errors, so the attempts are checked, not just the outcome.
    assert network_attempts == []


OFFLINE_CHILD = """
import json, socket, sys
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args[1:] or args))
    raise OSError("network access attempted in an offline test")
for name in ("connect", "connect_ex", "sendto"):
    setattr(socket.socket, name, refuse)
socket.getaddrinfo = socket.create_connection = refuse

from agents.memory_chroma import build_memory_index
from tests.agents.domain.test_memory import desk_records
index = build_memory_index("chroma")
index.add_many(desk_records(50, seed=2))
hits = index.search("breakout volume confirmation", symbol="TCS")
json.dump({"attempts": attempts, "hits": len(hits)}, sys.stdout)
"""


def test_a_fresh_process_imports_and_runs_chroma_with_the_network_blocked(chroma: list[ChromaMemoryIndex]) -> None:
    # In a fresh process the block is in place before chromadb is imported, which the in-process
    # test cannot arrange once another test has imported it.
    result = run_child(OFFLINE_CHILD)

    assert json.loads(result.stdout) == {"attempts": [], "hits": 5}


def run_child(code: str) -> subprocess.CompletedProcess[str]:
    # The child gets this process's import path, so it sees chromadb exactly when we do.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )


# --- the factory and the lazy import ------------------------------------------------------------------


def test_the_factory_builds_the_hybrid_index_by_name() -> None:
    assert isinstance(build_memory_index("hybrid"), HybridIndex)
    assert isinstance(build_memory_index(" Hybrid "), HybridIndex)


def test_the_factory_builds_the_chroma_index_by_name(chroma: list[ChromaMemoryIndex]) -> None:
    index = build_memory_index("chroma")
    assert isinstance(index, ChromaMemoryIndex)
    chroma.append(index)


@pytest.mark.parametrize("backend", ["", "faiss", "bm25"])
def test_an_unknown_backend_names_the_setting_and_the_valid_values(backend: str) -> None:
    with pytest.raises(ImproperlyConfigured) as raised:
        build_memory_index(backend)

    message = str(raised.value)
    assert "TRADING_MEMORY" in message
    assert '"hybrid"' in message
    assert '"chroma"' in message


def test_choosing_chroma_without_chromadb_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "chromadb", None)  # makes `import chromadb` fail as if absent
    memory_chroma._ephemeral_client.cache_clear()  # a cached client would skip the import

    with pytest.raises(ImproperlyConfigured, match="pip install chromadb") as raised:
        build_memory_index("chroma")
    assert "TRADING_MEMORY" in str(raised.value)


def test_importing_the_module_does_not_import_chromadb() -> None:
    result = run_child(
        "import sys, agents.memory_chroma; print(any(name.split('.')[0] == 'chromadb' for name in sys.modules))"
    )

    assert result.stdout.strip() == "False"
