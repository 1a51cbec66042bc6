"""The opt-in ChromaDB memory backend (``TRADING_MEMORY=chroma``) and the backend factory.

The default backend is :class:`agents.domain.memory.HybridIndex` (BM25 + hashed dense vectors,
fused with RRF). This one hands the same hashed dense vectors to an in-memory Chroma collection
and ranks by Chroma's vector similarity alone: BM25 and rank fusion are the default backend's job,
so the two backends agree on what is relevant but not always on the order.

What it shares with the default backend, because the callers rely on it:

- Our own vectors only. Chroma gets ``hashed_vector`` output through explicit ``embeddings=``;
  the collection has no embedding function, so no model is ever downloaded or run, and the client
  is in-process with telemetry off, so nothing touches the network.
- The relevance floor: a hit shares at least one query token (``tokenize`` on both sides, the
  record's text, symbol and tag values as in ``record_fields``). The floor is pushed into Chroma as
  a metadata filter and checked again here, so it holds whatever Chroma returns.
- ``as_of`` hides records created after that day (a metadata ``$lte`` on the day's ordinal).
- ``symbol`` boosts, it does not filter: its tokens join the query, as in the default backend.
- Ties on similarity go to the lower record id, however Chroma ordered them. Chroma scores in
  float32, so two records the default backend's float64 cosines barely separate may tie here.

Chroma's index is HNSW, an approximate search; on the small collections a desk builds it answers
exactly (the tests check 400 records against a brute-force ranking), but that is Chroma's
promise, not ours. ``chromadb`` is imported only when a Chroma index is built, so the project imports and runs
without it.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from django.core.exceptions import ImproperlyConfigured

from agents.domain.memory import (
    DEFAULT_DIMENSIONS,
    HybridIndex,
    MemoryHit,
    MemoryRecord,
    hashed_vector,
    query_fields,
    record_fields,
)

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

MEMORY_BACKENDS = ("hybrid", "chroma")
SETTING_NAME = "TRADING_MEMORY"
TOKENS_KEY = "tokens"  # metadata key holding the record's distinct tokens, for the relevance floor
DAY_KEY = "created_on"  # metadata key holding created_on.toordinal(), for as_of
TAG_PREFIX = "tag:"  # tag keys are the caller's; the prefix keeps them clear of our own keys
# A first fetch of 2k usually settles the top k; when records tie at the cut (or Chroma returned
# something the floor rejects) the fetch is widened this much at a time.
FETCH_GROWTH = 4


class MemoryIndex(Protocol):
    """What the memory glue needs from a backend; both backends satisfy it."""

    def __len__(self) -> int: ...

    def add(self, record: MemoryRecord) -> None: ...

    def add_many(self, records: Iterable[MemoryRecord]) -> None: ...

    def search(
        self,
        query: str,
        *,
        k: int = 5,
        symbol: str | None = None,
        as_of: date | None = None,
    ) -> list[MemoryHit]: ...


def build_memory_index(backend: str) -> MemoryIndex:
    """A new, empty index for the ``TRADING_MEMORY`` setting's value: "hybrid" or "chroma"."""
    choice = backend.strip().lower()
    if choice == "hybrid":
        return HybridIndex()
    if choice == "chroma":
        return ChromaMemoryIndex()
    valid = ", ".join(f'"{name}"' for name in MEMORY_BACKENDS)
    raise ImproperlyConfigured(f"{SETTING_NAME}={backend!r} is not a memory backend; use one of {valid}")


@dataclass(frozen=True)
class _Match:
    record_id: int
    distance: float  # Chroma's inner-product distance, 1 - cosine for our unit vectors


class ChromaMemoryIndex:
    """Memory records in an in-memory Chroma collection, searched by hashed-vector similarity.

    Every index owns a uniquely named collection in the process's one ephemeral Chroma system
    (Chroma shares that system between clients), and drops it when the index is garbage
    collected or ``close()``d, so rebuilding the index does not leak the old vectors.

    ``MemoryHit.score`` is the cosine similarity, ``dense_rank`` the hit's 1-based place, and
    ``bm25_rank`` is 0: this backend computes no BM25 ranking. Not thread-safe, like the default.
    """

    def __init__(self, *, dimensions: int = DEFAULT_DIMENSIONS, client: ClientAPI | None = None) -> None:
        if dimensions < 1:
            raise ValueError("dimensions must be positive")
        self.dimensions = dimensions
        self._client = client if client is not None else _ephemeral_client()
        self._collection = _new_collection(self._client)
        self._records: dict[int, MemoryRecord] = {}
        self._tokens: dict[int, frozenset[str]] = {}
        self._finalizer = weakref.finalize(self, _drop_collection, self._client, self._collection.name)
        # At interpreter exit the ephemeral system goes away whole; calling into it then is risky.
        self._finalizer.atexit = False

    def __len__(self) -> int:
        return len(self._records)

    def add(self, record: MemoryRecord) -> None:
        self.add_many([record])

    def add_many(self, records: Iterable[MemoryRecord]) -> None:
        """Index the records in as few Chroma calls as its batch limit allows.

        Ids are checked before anything is written, so a duplicate leaves the index unchanged.
        """
        batch = list(records)
        self._check_new_ids(batch)
        limit = self._client.get_max_batch_size()
        for start in range(0, len(batch), limit):
            self._write(batch[start : start + limit])

    def search(
        self,
        query: str,
        *,
        k: int = 5,
        symbol: str | None = None,
        as_of: date | None = None,
    ) -> list[MemoryHit]:
        """The k records most similar to the query, best first; [] when nothing shares a query term."""
        fields = query_fields(query, symbol)
        terms = frozenset(token for run in fields for token in run)
        if k < 1 or not terms or not self._records:
            return []
        vector = self._dense(hashed_vector(fields, self.dimensions))
        matches = self._top_matches(vector, terms, _where(terms, as_of), k)
        return [
            MemoryHit(record=self._records[match.record_id], score=1.0 - match.distance, bm25_rank=0, dense_rank=rank)
            for rank, match in enumerate(matches, start=1)
        ]

    def close(self) -> None:
        """Drop the Chroma collection now rather than at garbage collection; the index is then unusable."""
        self._finalizer()

    def _check_new_ids(self, batch: list[MemoryRecord]) -> None:
        seen: set[int] = set()
        for record in batch:
            if record.id in self._records or record.id in seen:
                raise ValueError(f"memory record {record.id} is already indexed")
            seen.add(record.id)

    def _write(self, batch: list[MemoryRecord]) -> None:
        if not batch:
            return
        fields = [record_fields(record) for record in batch]
        self._collection.add(
            ids=[str(record.id) for record in batch],
            embeddings=[self._dense(hashed_vector(runs, self.dimensions)) for runs in fields],
            metadatas=[_metadata(record, runs) for record, runs in zip(batch, fields, strict=True)],
            documents=[record.text for record in batch],
        )
        for record, runs in zip(batch, fields, strict=True):
            self._records[record.id] = record
            self._tokens[record.id] = frozenset(token for run in runs for token in run)

    def _dense(self, weights: dict[int, float]) -> list[float]:
        vector = [0.0] * self.dimensions
        for slot, weight in weights.items():
            vector[slot] = weight
        return vector

    def _top_matches(self, vector: list[float], terms: frozenset[str], where: dict[str, Any], k: int) -> list[_Match]:
        """The k best token-sharing matches, fetching more from Chroma until the cut is settled.

        Settled means either Chroma has nothing more to give, or its last match is strictly
        farther than our k-th, so no unseen record could beat or tie it (a tie would be decided
        by id, and the unseen record might have the lower one).
        """
        fetch = 2 * k
        while True:
            fetched = self._query(vector, where, fetch)
            matches = sorted(
                (match for match in fetched if self._tokens[match.record_id] & terms),
                key=lambda match: (match.distance, match.record_id),
            )
            exhausted = len(fetched) < fetch or fetch >= len(self._records)
            if exhausted or (len(matches) >= k and max(m.distance for m in fetched) > matches[k - 1].distance):
                return matches[:k]
            fetch = min(fetch * FETCH_GROWTH, len(self._records))

    def _query(self, vector: list[float], where: dict[str, Any], fetch: int) -> list[_Match]:
        result = self._collection.query(query_embeddings=[vector], n_results=fetch, where=where, include=["distances"])
        ids, distances = result["ids"][0], (result["distances"] or [[]])[0]
        return [_Match(int(record_id), float(distance)) for record_id, distance in zip(ids, distances, strict=True)]


def _metadata(record: MemoryRecord, fields: list[list[str]]) -> dict[str, Any]:
    """Chroma metadata for filtering: scalars, plus the distinct tokens when there are any."""
    metadata: dict[str, Any] = {
        "kind": record.kind,
        "symbol": record.symbol or "",  # Chroma metadata values cannot be None
        DAY_KEY: record.created_on.toordinal(),
    }
    metadata.update({f"{TAG_PREFIX}{key}": value for key, value in record.tags.items()})
    tokens = sorted({token for run in fields for token in run})
    if tokens:  # Chroma rejects an empty list; a record without tokens can never be a hit anyway
        metadata[TOKENS_KEY] = tokens
    return metadata


def _where(terms: frozenset[str], as_of: date | None) -> dict[str, Any]:
    """The relevance floor (any query token among the record's), and as_of when given."""
    token_clauses: list[dict[str, Any]] = [{TOKENS_KEY: {"$contains": term}} for term in sorted(terms)]
    floor = token_clauses[0] if len(token_clauses) == 1 else {"$or": token_clauses}
    if as_of is None:
        return floor
    return {"$and": [floor, {DAY_KEY: {"$lte": as_of.toordinal()}}]}


def _import_chromadb() -> ModuleType:
    try:
        import chromadb
    except ModuleNotFoundError as error:
        raise ImproperlyConfigured(
            f"{SETTING_NAME}=chroma needs the chromadb package: pip install chromadb "
            f'(or set {SETTING_NAME}="hybrid", the default backend)'
        ) from error
    return chromadb


@lru_cache(maxsize=1)
def _ephemeral_client() -> ClientAPI:
    """The process's in-memory Chroma client, made once.

    Chroma keeps one ephemeral system per process and refuses a second client with different
    settings, so every index here uses this one. Telemetry is off; nothing is persisted.
    """
    chromadb = _import_chromadb()
    from chromadb.config import Settings

    return chromadb.EphemeralClient(Settings(anonymized_telemetry=False, is_persistent=False))


def _new_collection(client: ClientAPI) -> Collection:
    # "ip" (1 - dot product) is the cosine distance for our unit vectors, and unlike "cosine"
    # needs no re-normalisation, which a record with no tokens (a zero vector) would break.
    return client.create_collection(
        name=f"trading-memory-{uuid.uuid4().hex}",
        configuration={"hnsw": {"space": "ip"}},
        embedding_function=None,  # never Chroma's default model: we always pass embeddings
    )


def _drop_collection(client: ClientAPI, name: str) -> None:
    client.delete_collection(name)
