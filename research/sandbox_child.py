"""The other side of the sandbox: the rules generated code must pass and the process it runs in.

Two halves, both standard library plus numpy and the pure signal base:

- ``check_source(code)`` reads the code without running it (the AST) and lists every reason to
  refuse it. The parent (``research.sandbox``) calls it before spawning anything, and this child
  calls it again before ``exec``, so neither side trusts the other to have done it.
- ``main()`` is the entry point of the separate process (``python -I -c``, see ``CHILD_BOOT``). It
  imports everything it will ever need, reads one JSON request from stdin, then locks itself down
  (network namespace and an unprivileged user when the kernel allows, resource limits, no new file
  descriptors, the dangerous ``os``/``posix``/``io`` functions replaced) and only then compiles and
  runs the code in a restricted namespace. It answers one JSON document on a private descriptor;
  the parent never unpickles anything from here.

Why each static rule exists: attribute names that start and end with ``__`` are how every known
escape climbs from a harmless object to ``object.__subclasses__()``, a function's ``__globals__``
or the real ``__builtins__``; frame and traceback attributes (``gi_frame``, ``f_back``,
``tb_frame``) climb to the caller's globals; ``getattr``/``vars``/``str.format`` turn a string
built at run time into an attribute the AST never shows, so they are refused as names; numpy's file
functions and ``ndarray.ctypes``/``tofile``/``dump`` reach the file system and raw memory, so only
a list of numpy's maths is exposed.
"""

from __future__ import annotations

import ast
import base64
import builtins
import importlib
import inspect
import io
import itertools
import json
import math
import os
import resource
import signal
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

MAX_SOURCE_CHARS = 40_000
MAX_AST_NODES = 6_000
SANDBOX_MODULE = "sandboxed_strategy"
NOBODY = 65534

# Dunder names a strategy may define and call: the constructor only.
ALLOWED_DUNDERS = frozenset({"__init__"})

BLOCKED_NAMES = frozenset(
    {
        "eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "hasattr", "globals", "locals",
        "vars", "dir", "type", "object", "memoryview", "breakpoint", "help", "input", "exit", "quit", "copyright",
        "credits", "license", "format", "id", "classmethod_descriptor", "reload", "super_", "print_function",
    }
)  # fmt: skip

# Attributes that walk to frames, code, globals, memory or files (besides every dunder).
BLOCKED_ATTRIBUTES = frozenset(
    {
        "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "cr_frame", "cr_code", "cr_await", "ag_frame",
        "ag_code", "ag_await", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "tb_frame",
        "tb_next", "co_code", "co_consts", "co_names", "func_globals", "func_code", "mro", "format", "format_map",
        "tofile", "dump", "dumps", "ctypes", "ctypeslib", "load", "loads", "save", "savez", "savez_compressed",
        "savetxt", "loadtxt", "genfromtxt", "fromfile", "memmap", "lib", "testing", "f2py", "distutils",
        "system", "popen", "fork", "spawn", "modules", "_getframe", "_current_frames", "settrace", "setprofile",
        "builtins", "im_func", "im_self", "subclasses",
    }
)  # fmt: skip

NUMPY_NAMES = frozenset(
    {
        "abs", "absolute", "add", "all", "allclose", "any", "arange", "argmax", "argmin", "argsort", "around",
        "array", "asarray", "bool_", "ceil", "clip", "concatenate", "convolve", "copy", "corrcoef", "cov",
        "cumprod", "cumsum", "diff", "divide", "dot", "e", "empty", "empty_like", "errstate", "exp", "expm1",
        "float32", "float64", "floor", "fmax", "fmin", "full", "full_like", "greater", "hstack", "inf", "int8",
        "int16", "int32", "int64", "interp", "isclose", "isfinite", "isinf", "isnan", "less", "linspace", "log",
        "log1p", "log10", "log2", "logical_and", "logical_not", "logical_or", "logical_xor", "max", "maximum",
        "mean", "median", "min", "minimum", "multiply", "nan", "nan_to_num", "nanmax", "nanmean", "nanmedian",
        "nanmin", "nanstd", "nansum", "negative", "ones", "ones_like", "percentile", "pi", "power", "prod",
        "quantile", "roll", "round", "searchsorted", "sign", "sort", "sqrt", "square", "stack", "std",
        "subtract", "sum", "tanh", "unique", "var", "vstack", "where", "zeros", "zeros_like",
    }
)  # fmt: skip

BASE_NAMES = ("SignalStrategy", "ParamRange", "Bars", "as_positions", "MAX_PARAMS")
TYPING_NAMES = frozenset({"Any", "ClassVar", "Mapping", "Sequence", "Optional", "Union"})

# Modules generated code may import, and the names each exposes (None: every public name).
ALLOWED_IMPORTS: dict[str, frozenset[str] | None] = {
    "math": None,
    "numpy": NUMPY_NAMES,
    "research.signals.base": frozenset(BASE_NAMES),
    "research.signals": frozenset(BASE_NAMES),
    "typing": TYPING_NAMES,
    "__future__": frozenset({"annotations"}),
}

SAFE_BUILTINS = (
    "abs", "all", "any", "bool", "callable", "chr", "dict", "divmod", "enumerate", "filter", "float", "frozenset",
    "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next", "ord", "pow", "range",
    "repr", "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "zip", "super", "property",
    "staticmethod", "classmethod", "NotImplemented", "Ellipsis", "None", "True", "False", "ArithmeticError",
    "AssertionError", "AttributeError", "Exception", "FloatingPointError", "IndexError", "KeyError",
    "LookupError", "NotImplementedError", "OverflowError", "RuntimeError", "StopIteration", "TypeError",
    "ValueError", "ZeroDivisionError",
)  # fmt: skip

# ``os``/``posix`` functions replaced in the child before user code runs: the second line behind the
# static checks, for an escape they did not foresee.
NEUTERED_OS = (
    "system", "popen", "fork", "forkpty", "vfork", "execv", "execve", "execl", "execle", "execlp", "execlpe",
    "execvp", "execvpe", "spawnv", "spawnve", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnvp", "spawnvpe",
    "posix_spawn", "posix_spawnp", "kill", "killpg", "unlink", "remove", "rmdir", "removedirs", "rename",
    "renames", "replace", "mkdir", "makedirs", "mkfifo", "mknod", "symlink", "link", "chmod", "lchmod",
    "fchmod", "chown", "lchown", "fchown", "truncate", "ftruncate", "open", "openpty", "pipe", "pipe2", "chdir",
    "chroot", "setuid", "setgid", "seteuid", "setegid", "setreuid", "setregid", "putenv", "unsetenv", "utime",
    "listdir", "scandir", "dup", "dup2", "memfd_create", "eventfd", "sendfile", "copy_file_range", "setsid",
)  # fmt: skip


# --------------------------------------------------------------------------- static checks


def check_source(code: object) -> list[str]:
    """Every reason the code may not run, in source order; empty when it passes. Never runs it."""
    if not isinstance(code, str) or not code.strip():
        return ["the proposal carries no code"]
    if len(code) > MAX_SOURCE_CHARS:
        return [f"the code is {len(code):,} characters; at most {MAX_SOURCE_CHARS:,} are allowed"]
    try:
        tree = ast.parse(code, filename="<generated strategy>")
    except (SyntaxError, ValueError) as error:
        line = getattr(error, "lineno", None)
        return [f"the code does not parse: {getattr(error, 'msg', error)}" + (f" (line {line})" if line else "")]
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_AST_NODES:
        return [f"the code has {len(nodes):,} syntax nodes; at most {MAX_AST_NODES:,} are allowed"]
    reasons: list[str] = []
    for node in nodes:
        for reason in _node_reasons(node):
            line = getattr(node, "lineno", "?")
            if f"line {line}: {reason}" not in reasons:
                reasons.append(f"line {line}: {reason}")
    return reasons


# Constructs with no use in a bar-to-position rule and a history in escapes (``match`` reads
# attributes by keyword; coroutines carry frames).
BANNED_NODES = (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith, ast.Match, ast.Global, ast.Nonlocal)


def _node_reasons(node: ast.AST) -> Iterable[str]:
    if isinstance(node, BANNED_NODES):
        return [f"{type(node).__name__} statements are not allowed in a strategy"]
    check = NODE_CHECKS.get(type(node))
    return check(node) if check else ()


def _import_reasons(node: ast.Import) -> Iterable[str]:
    for alias in node.names:
        if alias.name not in ALLOWED_IMPORTS or "." in alias.name:
            yield f"import of {alias.name} is not allowed (allowed: math, numpy, research.signals.base)"


def _import_from_reasons(node: ast.ImportFrom) -> Iterable[str]:
    module = node.module or ""
    if node.level or module not in ALLOWED_IMPORTS:
        yield f"import from {'.' * node.level}{module} is not allowed (allowed: math, numpy, research.signals.base)"
        return
    exposed = ALLOWED_IMPORTS[module]
    for alias in node.names:
        if alias.name == "*" or (exposed is not None and alias.name not in exposed) or alias.name.startswith("_"):
            yield f"{module} does not expose {alias.name} to generated code"


def _alias_reasons(node: ast.alias) -> Iterable[str]:
    if node.asname and (node.asname.startswith("__") or node.asname in BLOCKED_NAMES):
        yield f"the import alias {node.asname} is not allowed"


def _attribute_reasons(node: ast.Attribute) -> Iterable[str]:
    name = node.attr
    if (name.startswith("__") and name not in ALLOWED_DUNDERS) or name in BLOCKED_ATTRIBUTES:
        yield f"access to the attribute {name} is not allowed"


def _name_reasons(node: ast.Name) -> Iterable[str]:
    if node.id.startswith("__"):
        yield f"the name {node.id} is not allowed"
    elif node.id in BLOCKED_NAMES:
        yield f"the builtin {node.id} is not available to generated code"


def _definition_reasons(node: ast.FunctionDef) -> Iterable[str]:
    if node.name.startswith("__") and node.name not in ALLOWED_DUNDERS:
        yield f"defining {node.name} is not allowed (only __init__ among special methods)"
    elif node.name in BLOCKED_NAMES:
        yield f"defining a function named {node.name} is not allowed"


def _class_reasons(node: ast.ClassDef) -> Iterable[str]:
    if node.keywords:
        yield f"class {node.name}: keywords in a class statement (a metaclass) are not allowed"
    if node.name.startswith("__") or node.name in BLOCKED_NAMES:
        yield f"a class named {node.name} is not allowed"


NODE_CHECKS: dict[type[ast.AST], Callable[[Any], Iterable[str]]] = {
    ast.Import: _import_reasons,
    ast.ImportFrom: _import_from_reasons,
    ast.Attribute: _attribute_reasons,
    ast.Name: _name_reasons,
    ast.FunctionDef: _definition_reasons,
    ast.ClassDef: _class_reasons,
    ast.alias: _alias_reasons,
}


# --------------------------------------------------------------------------- restricted namespace


def _exposed(module: Any, names: frozenset[str] | None) -> SimpleNamespace:
    """A stand-in for a module holding only the allowed names: the real module (and, through its
    globals, everything it imported) never reaches generated code."""
    wanted = names if names is not None else {name for name in dir(module) if not name.startswith("_")}
    return SimpleNamespace(**{name: getattr(module, name) for name in sorted(wanted) if hasattr(module, name)})


def restricted_namespace() -> dict[str, Any]:
    """The globals generated code runs in: safe builtins, a guarded importer, the signal base."""
    import numpy

    base = sys.modules["research.signals.base"]
    modules = {
        "math": _exposed(math, None),
        "numpy": _exposed(numpy, NUMPY_NAMES),
        "research.signals.base": _exposed(base, frozenset(BASE_NAMES)),
        "research.signals": _exposed(base, frozenset(BASE_NAMES)),
        "typing": _exposed(typing, TYPING_NAMES),
        "__future__": SimpleNamespace(annotations=None),
    }

    def guarded_import(
        name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> SimpleNamespace:
        if level or name not in modules:
            raise ImportError(f"import of {name} is not allowed in generated code")
        return modules[name]

    safe = {name: getattr(builtins, name) for name in SAFE_BUILTINS}
    safe["__build_class__"] = builtins.__build_class__
    safe["__import__"] = guarded_import
    safe["print"] = _quiet_print
    namespace: dict[str, Any] = {"__builtins__": safe, "__name__": SANDBOX_MODULE, "__doc__": None}
    namespace.update({name: getattr(base, name) for name in BASE_NAMES})
    namespace.update({"np": modules["numpy"], "math": modules["math"]})
    return namespace


def _quiet_print(*args: Any, **kwargs: Any) -> None:
    """``print`` for generated code: accepted and dropped (stdout is the parent's channel)."""


def strategy_class(namespace: Mapping[str, Any], base_class: type) -> Any:
    """The one concrete subclass of ``SignalStrategy`` the code defined, or ``ValueError``."""
    defined = [
        value
        for value in namespace.values()
        if isinstance(value, type)
        and issubclass(value, base_class)
        and value is not base_class
        and value.__module__ == SANDBOX_MODULE
    ]
    concrete = [cls for cls in defined if not inspect.isabstract(cls)]
    if not concrete:
        missing = sorted(getattr(defined[0], "__abstractmethods__", ())) if defined else []
        if missing:
            raise ValueError(f"{defined[0].__name__} does not implement {', '.join(missing)}")
        raise ValueError("the code defines no concrete subclass of SignalStrategy")
    if len(concrete) > 1:
        names = ", ".join(cls.__name__ for cls in concrete)
        raise ValueError(f"the code defines {len(concrete)} concrete strategies ({names}); exactly one is allowed")
    return concrete[0]


# --------------------------------------------------------------------------- the child process

CHILD_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from research.sandbox_child import main; main()"


def main() -> None:  # pragma: no cover - runs in the child process (tests drive it through the parent)
    """Entry point of the sandbox process: prepare, lock down, run, answer once, exit."""
    import numpy  # noqa: F401 - imported before the lock-down: no file can be opened after it

    base = _signal_base()
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    channel = _private_channel()
    isolation = _lock_down(request.get("limits", {}), channel)
    try:
        answer = _serve(request, base)
    except MemoryError:
        answer = {"ok": False, "reason": "the code ran out of memory (memory limit)"}
    except RecursionError:
        answer = {"ok": False, "reason": "the code recursed too deeply"}
    except BaseException as error:  # any failure of untrusted code is an answer
        answer = {"ok": False, "reason": f"{type(error).__name__}: {str(error)[:400]}"}
    answer["isolation"] = isolation
    _answer(channel, answer)
    os._exit(0)


def _signal_base() -> Any:
    """``research.signals.base`` without the package's ``__init__`` (which loads the built-in
    strategies and, through the indicators, pandas and scipy: a second of start-up for nothing)."""
    if "research.signals" not in sys.modules:
        package = types.ModuleType("research.signals")
        package.__path__ = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "signals")]
        sys.modules["research.signals"] = package
    return importlib.import_module("research.signals.base")


def _private_channel() -> int:
    """Move the answer channel off stdout (fd 1 becomes stderr, so a stray write cannot forge an
    answer) and close every other descriptor above it."""
    channel = os.dup(1)
    os.dup2(2, 1)
    os.closerange(channel + 1, 1 << 16)
    sys.stdout = sys.stderr
    return channel


def _lock_down(limits: Mapping[str, Any], channel: int) -> list[str]:
    """Best-effort OS isolation, then hard resource limits, then the Python-level second line.
    Returns what was achieved, reported to the parent."""
    baseline = _address_space()
    achieved = _namespaces_and_user()
    cpu = max(1, int(limits.get("cpu_seconds", 10)))
    headroom = max(16, int(limits.get("memory_mb", 512))) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (baseline + headroom,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    # Every descriptor below this number is already open: no file, socket or pipe can be created.
    resource.setrlimit(resource.RLIMIT_NOFILE, (channel + 1, channel + 1))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    achieved += ["rlimits", "no-new-descriptors"]
    _neuter_python()
    achieved.append("os-functions-removed")
    return achieved


def _namespaces_and_user() -> list[str]:
    """A private network namespace (no interface is up: nothing to connect to), no new privileges,
    death with the parent, and, when started as root, the unprivileged user ``nobody``."""
    import ctypes

    achieved: list[str] = []
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return achieved
    if libc.prctl(38, 1, 0, 0, 0) == 0:  # PR_SET_NO_NEW_PRIVS
        achieved.append("no-new-privileges")
    libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG = SIGKILL
    clone_newnet, clone_newuser = 0x40000000, 0x10000000
    flags = clone_newnet if os.geteuid() == 0 else clone_newnet | clone_newuser
    if libc.unshare(flags) == 0:
        achieved.append("network-namespace")
    if os.geteuid() == 0:
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            achieved.append("user-nobody")
        except OSError:
            pass
    for name in ("ctypes", "_ctypes", "ctypes._endian"):
        sys.modules.pop(name, None)
    return achieved


def _address_space() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _neuter_python() -> None:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError("not available inside the research sandbox")

    for module_name in ("os", "posix", "_posixsubprocess", "socket", "_socket", "subprocess"):
        module = sys.modules.get(module_name)
        for name in (*NEUTERED_OS, "fork_exec", "socket", "socketpair", "create_connection", "fromfd", "Popen"):
            if module is not None and hasattr(module, name):
                setattr(module, name, refused)
    builtins.open = refused
    io.open = refused
    for name in ("breakpoint", "input", "help", "exit", "quit"):
        if hasattr(builtins, name):
            setattr(builtins, name, refused)


def _serve(request: Mapping[str, Any], base: Any) -> dict[str, Any]:
    code = request["code"]
    reasons = check_source(code) if not request.get("unchecked") else []
    if reasons:
        return {"ok": False, "reason": "; ".join(reasons)}
    namespace = restricted_namespace()
    exec(compile(code, "<generated strategy>", "exec"), namespace)  # the sandbox's purpose
    cls = strategy_class(namespace, base.SignalStrategy)
    if request["op"] == "describe":
        return {"ok": True, **describe(cls, base)}
    bars = decode_bars(request["bars"], base.Bars)
    # One configuration at a time through ``positions``, each checked: the rule's own vectorised
    # grid, if it has one, is not trusted to agree with it.
    rows = [numpy_positions(cls(**params).positions(bars), len(bars)) for params in request["grid"]]
    return {"ok": True, **encode_positions(rows, len(bars))}


def describe(cls: Any, base: Any) -> dict[str, Any]:
    """What the parent needs to rebuild the class's face: name, key, docstring, ranges. Builds one
    with its default parameters and runs it on a small synthetic series (it must construct and
    answer)."""
    ranges = cls.PARAM_RANGES
    if not isinstance(ranges, dict) or not all(isinstance(value, base.ParamRange) for value in ranges.values()):
        raise ValueError("PARAM_RANGES must be a dict of ParamRange")
    instance = cls()
    sample = synthetic_bars(base.Bars)
    numpy_positions(instance.positions(sample), len(sample))
    return {
        "class_name": cls.__name__,
        "key": str(cls.key or ""),
        "doc": (cls.__doc__ or "").strip(),
        "allows_short": bool(cls.ALLOWS_SHORT),
        "param_ranges": {
            str(name): {**bounds.describe(), "default": bounds.default} for name, bounds in ranges.items()
        },
        "default_params": dict(instance.params),
        "refused_points": refused_points(cls),
    }


def refused_points(cls: Any, limit: int = 5_000) -> list[str]:
    """The grid points (the first ``limit``, in ``PARAM_RANGES`` order) the class refuses to be
    built with, as sorted-key JSON of the full parameter set: the parent refuses them too."""
    names = list(cls.PARAM_RANGES)
    grids = [cls.PARAM_RANGES[name].values() for name in names]
    refused = []
    for values in itertools.islice(itertools.product(*grids), limit):
        point = dict(zip(names, values, strict=True))
        try:
            cls(**point)
        except ValueError:
            refused.append(json.dumps(cls.validate_params(point), sort_keys=True))
    return refused


def synthetic_bars(bars_class: Any, count: int = 120) -> Any:
    """A deterministic, gently trending and oscillating series (no randomness)."""
    import numpy as np

    steps = np.arange(count, dtype=np.float64)
    close = 100.0 + 0.05 * steps + 3.0 * np.sin(steps / 7.0)
    dates = np.datetime64("2020-01-01", "D") + steps.astype("timedelta64[D]")
    return bars_class(
        symbol="SYNTHETIC", dates=dates, open=close, high=close + 1.0, low=close - 1.0, close=close,
        volume=np.full(count, 1000.0),
    )  # fmt: skip


def numpy_positions(values: Any, length: int) -> Any:
    import numpy as np

    array = np.asarray(values)
    if array.shape != (length,):
        raise ValueError(f"positions must be a 1-D array of {length} values (one per bar), got shape {array.shape}")
    if not np.isin(array, (-1, 0, 1)).all():
        raise ValueError("positions must be -1, 0 or 1")
    return array.astype(np.int8)


def encode_bars(bars: Any) -> dict[str, Any]:
    """Bars as JSON: the arrays as base64 of their little-endian bytes (exact, compact)."""
    import numpy as np

    def packed(values: Any, dtype: str) -> str:
        return base64.b64encode(np.ascontiguousarray(values, dtype=dtype).tobytes()).decode("ascii")

    return {
        "symbol": bars.symbol,
        "tick": str(bars.tick),
        "lot_size": int(bars.lot_size),
        "currency": bars.currency,
        "dates": packed(bars.dates.astype("datetime64[D]").astype(np.int64), "<i8"),
        **{name: packed(getattr(bars, name), "<f8") for name in ("open", "high", "low", "close", "volume")},
    }


def decode_bars(payload: Mapping[str, Any], bars_class: Any) -> Any:
    import numpy as np

    def unpacked(name: str, dtype: str) -> Any:
        return np.frombuffer(base64.b64decode(payload[name]), dtype=dtype).copy()

    return bars_class(
        symbol=str(payload["symbol"]),
        dates=unpacked("dates", "<i8").astype("datetime64[D]"),
        **{name: unpacked(name, "<f8") for name in ("open", "high", "low", "close", "volume")},
        tick=Decimal(payload["tick"]),
        lot_size=int(payload["lot_size"]),
        currency=str(payload["currency"]),
    )


def encode_positions(matrix: Any, length: int) -> dict[str, Any]:
    import numpy as np

    array = np.asarray(matrix)
    if array.ndim != 2 or array.shape[1] != length:
        raise ValueError(f"positions must be configs x {length} bars, got shape {array.shape}")
    if not np.isin(array, (-1, 0, 1)).all():
        raise ValueError("positions must be -1, 0 or 1")
    payload = base64.b64encode(np.ascontiguousarray(array, dtype=np.int8).tobytes()).decode("ascii")
    return {"positions": payload, "shape": list(array.shape)}


def _answer(channel: int, answer: Mapping[str, Any]) -> None:
    data = json.dumps(answer).encode("utf-8")
    view = memoryview(data)
    while view:
        written = os.write(channel, view)
        view = view[written:]
