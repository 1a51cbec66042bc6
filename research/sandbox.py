"""Research hygiene and the sandbox: the gate every proposal passes before it costs a backtest.

Hygiene (``hygiene_reasons``) is the cheap, load-bearing rules that stop the loop manufacturing
overfit noise at scale: a proposal without a rationale is rejected unevaluated; more than five
parameters is rejected (each knob is more surface to overfit); a known strategy's parameters must
lie inside its ``PARAM_RANGES``; generated code must define exactly one concrete ``SignalStrategy``
with a docstring, a valid ``PARAM_RANGES`` of at most five sane ranges, and must construct with its
default parameters and answer on a small synthetic series.

``load_strategy_from_code`` is the one door generated code comes through. What it enforces:

1. Static checks on the syntax tree before anything runs (``research.sandbox_child.check_source``):
   imports only of ``math``, a list of numpy's maths, ``research.signals.base`` and ``typing``;
   no attribute or name that starts with ``__`` (except ``__init__``), no frame, traceback, code
   or file attributes (``gi_frame``, ``f_back``, ``tb_frame``, ``tofile``, ``ctypes``...), no
   ``eval``/``exec``/``compile``/``open``/``getattr``/``vars``/``globals``/``type``/``breakpoint``
   /``input``/``help``/``exit``, no ``str.format`` (it reads attributes named in a string), no
   metaclass keywords, ``match``, ``global`` or coroutines.
2. A separate process per call (``python -I``, a minimal environment, cwd ``/``) that, before the
   code runs: enters a private network namespace and switches to the user ``nobody`` when the
   kernel and its privileges allow (best effort, reported in ``SANDBOX_ISOLATION``); sets
   ``RLIMIT_CPU``, ``RLIMIT_AS`` (headroom above the interpreter's own size), ``RLIMIT_FSIZE`` 0,
   ``RLIMIT_NPROC`` 0 and ``RLIMIT_NOFILE`` at its already-open descriptors, so it can open no
   file, socket or pipe at all; replaces the ``os``/``posix``/``socket``/``io`` functions that
   spawn, kill, delete, rename or open. The code then runs with restricted builtins (a guarded
   importer, no ``open``/``eval``/``exec``/``getattr``/``type``) and sees numpy only through a
   stand-in holding the allowed names.
3. The parent kills the child at a wall-clock deadline, caps what it reads from it, and reads
   only JSON (never a pickle): positions come back as int8 bytes checked for shape and values.

What is not enforced: no seccomp filter, mount namespace or chroot; when the process does not
start as root and user namespaces are off, it keeps the caller's user and network (the descriptor
limit still stops new sockets and files), and ``RLIMIT_NPROC`` does not bind root (hence the
switch to ``nobody``). An escape past both the syntax checks and the restricted namespace would
still hold the child's three open descriptors and its CPU and memory quotas, and could read the
child's own memory (the bars and the code: nothing secret; the environment is emptied). The CPU
limit covers a whole call, so a slow pure-Python rule over a large grid is refused, not slowed.
The child is ``sys.executable``: under a server that embeds Python it fails closed (refused).
Generated code is never merged into the code base: wherever its positions are needed (the loop,
a desk reading of an attached candidate) they are computed through this sandbox, one process per
call (about a tenth of a second of start-up on an idle machine).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from research import sandbox_child
from research.sandbox_child import check_source, encode_bars
from research.signals.base import MAX_PARAMS, Bars, ParamRange, SignalStrategy
from vocabulary.refusals import InputRefused

__all__ = [
    "SandboxLimits",
    "SandboxRefused",
    "check_source",
    "hygiene_reasons",
    "load_strategy_from_code",
]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
MAX_GRID_VALUES = 1_000  # grid points of one parameter: beyond this a "range" is a fishing net
MAX_NAME_CHARS = 64
CACHE_SIZE = 32


@dataclass(frozen=True)
class SandboxLimits:
    """The child's limits: CPU seconds, memory headroom (MB above the interpreter's own size once
    numpy is loaded), wall-clock seconds, and the most bytes the parent will read back."""

    cpu_seconds: int = 10
    memory_mb: int = 512
    wall_seconds: float = 20.0
    max_answer_bytes: int = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        if self.cpu_seconds < 1 or self.memory_mb < 16 or self.wall_seconds <= 0 or self.max_answer_bytes < 1024:
            raise ValueError(f"sandbox limits out of range: {self}")

    @classmethod
    def from_settings(cls) -> SandboxLimits:
        from django.conf import settings

        research: Mapping[str, Any] = settings.RESEARCH
        return cls(
            cpu_seconds=int(research["SANDBOX_CPU_SECONDS"]),
            memory_mb=int(research["SANDBOX_MEMORY_MB"]),
            wall_seconds=float(research["SANDBOX_WALL_SECONDS"]),
        )


class SandboxRefused(InputRefused):
    """Generated code was refused: statically, or because its process failed, overran or answered
    garbage. ``reason`` says which, in a sentence."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Generated strategy refused: {reason}", {"reason": reason})
        self.reason = reason


# --------------------------------------------------------------------------- hygiene


def hygiene_reasons(
    proposal: Any, *, strategies: Mapping[str, type[SignalStrategy]] | None = None, limits: SandboxLimits | None = None
) -> list[str]:
    """Why the proposal may not be evaluated; empty when it passes. Cheap rules first: when one
    fails, generated code is not even started (rejected unevaluated)."""
    reasons: list[str] = []
    if not str(getattr(proposal, "rationale", "") or "").strip():
        reasons.append("no rationale: every proposal must state its hypothesis before it is tested")
    params = dict(getattr(proposal, "params", None) or {})
    if len(params) > MAX_PARAMS:
        reasons.append(f"{len(params)} parameters proposed; at most {MAX_PARAMS} are allowed")
    kind = getattr(proposal, "kind", "tune")
    if kind == "tune":
        return reasons + _tune_reasons(str(getattr(proposal, "strategy", "")), params, strategies)
    if kind != "code":
        return [*reasons, f"unknown proposal kind {kind!r}"]
    code = getattr(proposal, "code", "")
    reasons += check_source(code)
    if reasons:
        return reasons
    try:
        strategy = load_strategy_from_code(code, limits=limits)
    except SandboxRefused as refused:
        return [refused.reason]
    return _code_reasons(strategy, str(getattr(proposal, "strategy", "")), params)


def _tune_reasons(
    key: str, params: Mapping[str, Any], strategies: Mapping[str, type[SignalStrategy]] | None
) -> list[str]:
    if strategies is None:
        from research.signals import SIGNALS

        strategies = SIGNALS
    strategy = strategies.get(key)
    if strategy is None:
        return [f"unknown strategy {key!r}; known: {', '.join(sorted(strategies))}"]
    return _range_reasons(strategy, params)


def _range_reasons(strategy: type[SignalStrategy], params: Mapping[str, Any]) -> list[str]:
    reasons = []
    for name, value in params.items():
        bounds = strategy.PARAM_RANGES.get(name)
        if bounds is None:
            reasons.append(f"{strategy.key or strategy.__name__} has no parameter {name}")
        elif not bounds.contains(value):
            reasons.append(f"{name}={value!r} lies outside its range {bounds.low}..{bounds.high} ({bounds.kind})")
    if reasons:
        return reasons
    try:
        strategy(**params)
    except ValueError as error:
        return [str(error)]
    return []


def _code_reasons(strategy: type[SignalStrategy], named: str, params: Mapping[str, Any]) -> list[str]:
    reasons = []
    if named and named not in (strategy.__name__, strategy.key):
        reasons.append(f"the proposal names {named!r} but the code defines {strategy.__name__}")
    return reasons + _range_reasons(strategy, params)


# --------------------------------------------------------------------------- the choke point

_loaded: dict[tuple[str, SandboxLimits], type[SignalStrategy]] = {}


def load_strategy_from_code(code: str, *, limits: SandboxLimits | None = None) -> type[SignalStrategy]:
    """The only way generated code becomes a strategy class. Checks the source, runs it once in a
    sandbox process to read its face (name, key, docstring, ranges) and prove it constructs, and
    returns a ``SignalStrategy`` subclass whose positions are computed by the code in a fresh
    sandbox process per call. Raises ``SandboxRefused`` with the reason."""
    limits = limits or SandboxLimits.from_settings()
    reasons = check_source(code)
    if reasons:
        raise SandboxRefused("; ".join(reasons))
    cache_key = (hashlib.sha256(code.encode("utf-8")).hexdigest(), limits)
    if cache_key not in _loaded:
        answer = _ask_child({"op": "describe", "code": code}, limits)
        strategy = _proxy_class(code, _validated_description(answer), limits)
        if len(_loaded) >= CACHE_SIZE:
            _loaded.pop(next(iter(_loaded)))
        _loaded[cache_key] = strategy
    return _loaded[cache_key]


def contain_unchecked(code: str, *, limits: SandboxLimits) -> dict[str, Any]:
    """Run code in the sandbox process WITHOUT the static checks and return the child's answer (or
    ``{"ok": False, "reason": ...}``). For the containment tests only: it proves the process
    limits hold on their own. It returns no class, so it is no second door for strategies."""
    try:
        return _ask_child({"op": "describe", "code": code, "unchecked": True}, limits)
    except SandboxRefused as refused:
        return {"ok": False, "reason": refused.reason}


def _validated_description(answer: Mapping[str, Any]) -> dict[str, Any]:
    """The child's description, checked here (the child is not trusted): a proper name, a
    docstring, at most five parameters whose ranges rebuild and are not absurd."""
    name = answer.get("class_name")
    if not isinstance(name, str) or not name.isidentifier() or len(name) > MAX_NAME_CHARS:
        raise SandboxRefused("the strategy class has no proper name")
    doc = answer.get("doc")
    if not isinstance(doc, str) or not doc.strip():
        raise SandboxRefused(f"{name} has no docstring saying what its rule is")
    raw_ranges = answer.get("param_ranges")
    if not isinstance(raw_ranges, dict):
        raise SandboxRefused(f"{name} declares no PARAM_RANGES")
    if len(raw_ranges) > MAX_PARAMS:
        raise SandboxRefused(f"{name} declares {len(raw_ranges)} parameters; at most {MAX_PARAMS} are allowed")
    ranges = {str(key): _param_range(name, str(key), value) for key, value in raw_ranges.items()}
    key = answer.get("key")
    if not isinstance(key, str) or len(key) > MAX_NAME_CHARS:
        raise SandboxRefused(f"{name} has a malformed key")
    refused = answer.get("refused_points", [])
    if not isinstance(refused, list) or not all(isinstance(point, str) for point in refused):
        raise SandboxRefused(f"{name}: the sandbox answered a malformed description")
    isolation = answer.get("isolation", [])
    return {
        "class_name": name,
        "key": key or name,
        "doc": doc.strip(),
        "allows_short": bool(answer.get("allows_short")),
        "ranges": ranges,
        "refused_points": frozenset(refused),
        "isolation": tuple(str(item) for item in isolation) if isinstance(isolation, list) else (),
    }


def _param_range(strategy: str, name: str, raw: Any) -> ParamRange:
    if not name.isidentifier() or name.startswith("_") or not isinstance(raw, dict):
        raise SandboxRefused(f"{strategy}: {name!r} is not a proper parameter")
    try:
        bounds = ParamRange(raw["low"], raw["high"], raw["step"], raw.get("kind", "int"), raw.get("default"))
    except (KeyError, TypeError, ValueError) as error:
        raise SandboxRefused(f"{strategy}: parameter {name} has an invalid range ({error})") from error
    count = math.floor((bounds.high - bounds.low) / bounds.step + 1e-9) + 1
    if count < 2:
        raise SandboxRefused(f"{strategy}: parameter {name} has a single value; a constant is not a parameter")
    if count > MAX_GRID_VALUES:
        raise SandboxRefused(f"{strategy}: parameter {name} has {count:,} grid values; at most {MAX_GRID_VALUES:,}")
    return bounds


def _params_key(params: Mapping[str, Any]) -> str:
    return json.dumps(dict(params), sort_keys=True)


def _proxy_class(code: str, description: Mapping[str, Any], limits: SandboxLimits) -> type[SignalStrategy]:
    """A ``SignalStrategy`` with the generated class's face whose positions come from the sandbox.
    Parameters are validated here against the ranges; combinations the code's own ``check_params``
    refuses (found on its grid in the sandbox) are refused here too, as a built-in would."""
    refused_points: frozenset[str] = description["refused_points"]

    def check_params(self: SignalStrategy) -> None:
        if _params_key(self.params) in refused_points:
            raise ValueError(f"{description['class_name']} refuses the parameters {self.params}")

    def positions(self: SignalStrategy, bars: Bars) -> np.ndarray:
        return sandbox_positions(code, bars, [self.params], limits)[0]

    def positions_grid(cls: type[SignalStrategy], bars: Bars, grid: Sequence[Mapping[str, Any]]) -> np.ndarray:
        return sandbox_positions(code, bars, [cls.validate_params(point) for point in grid], limits)

    attributes = {
        "__doc__": description["doc"],
        "__module__": __name__,
        "key": description["key"],
        "PARAM_RANGES": description["ranges"],
        "ALLOWS_SHORT": description["allows_short"],
        "SOURCE": code,
        "SANDBOX_ISOLATION": description["isolation"],
        "check_params": check_params,
        "positions": positions,
        "positions_grid": classmethod(positions_grid),
    }
    return type(description["class_name"], (SignalStrategy,), attributes)


def sandbox_positions(code: str, bars: Bars, grid: Sequence[Mapping[str, Any]], limits: SandboxLimits) -> np.ndarray:
    """Positions (configs x bars, int8 in {-1, 0, 1}) computed by the code in a sandbox process."""
    if not grid:
        return np.zeros((0, len(bars)), dtype=np.int8)
    request = {"op": "positions", "code": code, "bars": encode_bars(bars), "grid": [dict(point) for point in grid]}
    answer = _ask_child(request, limits)
    return _decoded_positions(answer, len(grid), len(bars))


def _decoded_positions(answer: Mapping[str, Any], rows: int, length: int) -> np.ndarray:
    import base64
    import binascii

    if answer.get("shape") != [rows, length] or not isinstance(answer.get("positions"), str):
        raise SandboxRefused(f"the code answered positions of shape {answer.get('shape')}, not {[rows, length]}")
    try:
        raw = base64.b64decode(answer["positions"], validate=True)
    except (binascii.Error, ValueError) as error:
        raise SandboxRefused("the code answered undecodable positions") from error
    if len(raw) != rows * length:
        raise SandboxRefused(f"the code answered {len(raw)} positions, not {rows * length}")
    matrix = np.frombuffer(raw, dtype=np.int8).reshape(rows, length).copy()
    if not np.isin(matrix, (-1, 0, 1)).all():
        raise SandboxRefused("the code answered positions other than -1, 0 and 1")
    return matrix


# --------------------------------------------------------------------------- the child process


def _child_environment() -> dict[str, str]:
    # One BLAS thread: the child must stay single-threaded (namespaces, RLIMIT_NPROC), and nothing
    # from the parent's environment (credentials, proxies) is handed to generated code.
    threads = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", **threads}


def _ask_child(request: Mapping[str, Any], limits: SandboxLimits) -> dict[str, Any]:
    """Send one request to a fresh sandbox process and return its JSON answer, or refuse."""
    payload = json.dumps({**request, "limits": {"cpu_seconds": limits.cpu_seconds, "memory_mb": limits.memory_mb}})
    process = subprocess.Popen(  # our own interpreter and module; no shell
        [sys.executable, "-I", "-c", sandbox_child.CHILD_BOOT, str(PROJECT_ROOT)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_child_environment(),
        cwd="/",
        close_fds=True,
    )
    try:
        output, errors, overrun = _exchange(process, payload.encode("utf-8"), limits)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None and not stream.closed:
                stream.close()
    return _parsed_answer(process.returncode, output, errors, overrun, limits)


def _exchange(process: subprocess.Popen[bytes], payload: bytes, limits: SandboxLimits) -> tuple[bytes, bytes, str]:
    """Write the request and read both pipes until the child closes them, the deadline passes or
    the answer grows past its cap. Returns (stdout, last stderr, overrun reason or "")."""
    assert process.stdin and process.stdout and process.stderr
    deadline = time.monotonic() + limits.wall_seconds
    answer, errors = _Capture(limits.max_answer_bytes), _Capture(65_536, keep_tail=True)
    captures = {process.stdout.fileno(): answer, process.stderr.fileno(): errors}
    pending = memoryview(payload)
    with selectors.DefaultSelector() as selector:
        for stream in (process.stdin, process.stdout, process.stderr):
            os.set_blocking(stream.fileno(), False)
        selector.register(process.stdin, selectors.EVENT_WRITE)
        for stream in (process.stdout, process.stderr):
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return b"", b"", f"ran past its wall-clock limit of {limits.wall_seconds:g} s and was killed"
            for key, _ in selector.select(timeout=remaining):
                if key.fileobj is process.stdin:
                    pending = _write_some(selector, process, pending)
                elif not captures[key.fd].take(key.fd):
                    selector.unregister(key.fileobj)
            if answer.overflowed:
                return b"", b"", f"answered more than {limits.max_answer_bytes:,} bytes and was killed"
    return answer.data(), errors.data(), ""


class _Capture:
    """Bytes read from one of the child's pipes, at most ``cap`` (or the last ``cap``)."""

    def __init__(self, cap: int, *, keep_tail: bool = False) -> None:
        self.cap, self.keep_tail, self.size, self.overflowed = cap, keep_tail, 0, False
        self.chunks: list[bytes] = []

    def take(self, fd: int) -> bool:
        """Read what the pipe holds; False at its end."""
        try:
            data = os.read(fd, 65_536)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False
        self.chunks.append(data)
        self.size += len(data)
        if self.size > self.cap:
            if not self.keep_tail:
                self.overflowed = True
                return False
            self.chunks = [self.data()[-4096:]]
            self.size = len(self.chunks[0])
        return True

    def data(self) -> bytes:
        return b"".join(self.chunks)


def _write_some(selector: selectors.BaseSelector, process: subprocess.Popen[bytes], pending: memoryview) -> memoryview:
    assert process.stdin
    try:
        written = os.write(process.stdin.fileno(), pending[:65_536])
    except BlockingIOError:
        return pending
    except (BrokenPipeError, OSError):
        written = len(pending)
    pending = pending[written:]
    if not pending:
        selector.unregister(process.stdin)
        process.stdin.close()
    return pending


def _parsed_answer(
    returncode: int, output: bytes, errors: bytes, overrun: str, limits: SandboxLimits
) -> dict[str, Any]:
    if overrun:
        raise SandboxRefused(f"the sandbox process {overrun}")
    if returncode != 0:
        raise SandboxRefused(_death_reason(returncode, errors, limits))
    try:
        answer = json.loads(output.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise SandboxRefused("the sandbox process answered something that is not JSON") from error
    if not isinstance(answer, dict):
        raise SandboxRefused("the sandbox process answered something that is not a JSON object")
    if answer.get("ok") is not True:
        raise SandboxRefused(str(answer.get("reason") or "the code failed without a reason")[:600])
    return answer


def _death_reason(returncode: int, errors: bytes, limits: SandboxLimits) -> str:
    if returncode < 0:
        number = -returncode
        if number in (signal.SIGXCPU, signal.SIGKILL):
            return f"the sandboxed code ran past its CPU-time limit of {limits.cpu_seconds} s and was killed"
        return f"the sandbox process died of signal {signal.Signals(number).name}"
    tail = errors.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
    return f"the sandbox process exited with status {returncode} {tail[0][:300]}".strip()
