"""Known ways out of a Python sandbox, as generated strategy code would carry them.

Each entry is code the sandbox must refuse (statically or when it runs) or contain (it runs and
does no harm). ``{marker}`` is replaced with a path in a world-writable folder: a file there after
the test means a write got through. ``{port}`` is a local port a test listens on: a connection
there means the network got through.

``RUNTIME`` entries skip the static checks (``research.sandbox.contain_unchecked``) to show the
process's own limits hold when an escape gets past the syntax checks: they reach the real ``os``
module through the classic ``object.__subclasses__()`` walk, then try the harm.
"""

from __future__ import annotations

from dataclasses import dataclass

# The classic walk from an empty tuple to the os module's globals (via os._wrap_close).
WALK = """
def _os_globals():
    for cls in ().__class__.__base__.__subclasses__():
        if cls.__name__ == '_wrap_close':
            return cls.__init__.__globals__
    raise LookupError('no _wrap_close')
G = _os_globals()
"""

# A class found anywhere under ``object`` by name (FileIO sits under _RawIOBase, not object).
FIND = """
def find(name):
    todo = list(().__class__.__base__.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls.__name__ == name:
            return cls
        try:
            todo.extend(cls.__subclasses__())
        except TypeError:
            pass
    raise LookupError(name)
"""


@dataclass(frozen=True)
class Escape:
    id: str
    code: str
    # "static": the syntax checks must refuse it; "runtime": it passes them and must be stopped or
    # contained when it runs.
    stage: str = "static"


CORPUS: tuple[Escape, ...] = (
    Escape("dunder_import_os", "__import__('os').system('touch {marker}')"),
    Escape("import_os", "import os\nos.system('touch {marker}')"),
    Escape("import_sys", "import sys\nsys.modules['os'].system('touch {marker}')"),
    Escape("import_subprocess", "import subprocess\nsubprocess.run(['touch', '{marker}'])"),
    Escape("import_socket", "import socket\nsocket.create_connection(('127.0.0.1', {port}))"),
    Escape("import_ctypes", "import ctypes\nctypes.CDLL(None).system(b'touch {marker}')"),
    Escape("import_importlib", "import importlib\nimportlib.import_module('os').system('touch {marker}')"),
    Escape("from_os_import_system", "from os import system\nsystem('touch {marker}')"),
    Escape("relative_import", "from . import sandbox"),
    Escape("import_gc_objects", "import gc\nobjs = gc.get_objects()"),
    Escape("import_pickle", "import pickle\npickle.loads(b'cos\\nsystem\\n(S\"touch {marker}\"\\ntR.')"),
    Escape("import_operator_attrgetter", "import operator\ng = operator.attrgetter('__globals__')"),
    Escape(
        "subclasses_walk",
        "for c in ().__class__.__base__.__subclasses__():\n"
        "    if c.__name__ == '_wrap_close':\n"
        "        c.__init__.__globals__['system']('touch {marker}')",
    ),
    Escape("builtins_subscript", "__builtins__['__import__']('os').system('touch {marker}')"),
    Escape("globals_builtins", "globals()['__builtins__']['open']('{marker}', 'w')"),
    Escape("open_read_passwd", "secret = open('/etc/passwd').read()"),
    Escape("open_write_file", "open('{marker}', 'w').write('pwned')"),
    Escape("eval_string", "eval(\"__import__('os').system('touch {marker}')\")"),
    Escape("exec_string", "exec(\"import os; os.system('touch {marker}')\")"),
    Escape("compile_code", "code = compile('1 + 1', 'x', 'exec')"),
    Escape("getattr_string_concat", "f = lambda: 0\ng = getattr(f, '__glo' + 'bals__')"),
    Escape("vars_of_class", "v = vars(SignalStrategy)"),
    Escape("sys_getframe", "import sys\nframe = sys._getframe(0).f_back"),
    Escape(
        "generator_frame_walk",
        "def gen():\n    yield 1\ng = gen()\ncaller = g.gi_frame.f_back.f_globals",
    ),
    Escape(
        "traceback_frame_walk",
        "try:\n    1 / 0\nexcept ZeroDivisionError as error:\n    f = error.__traceback__.tb_frame.f_back",
    ),
    Escape("type_three_args", "Evil = type('Evil', (), {})"),
    Escape("metaclass_keyword", "class Evil(SignalStrategy, metaclass=abc):\n    pass"),
    Escape("format_attribute", "leak = '{0.__class__.__mro__}'.format(1)"),
    Escape("format_via_str_type", "leak = str.format('{0.__class__}', 1)"),
    Escape("fstring_dunder", "leak = f'{(1).__class__.__base__}'"),
    Escape("class_cell", "class C:\n    def f(self):\n        return __class__"),
    Escape("match_class_attribute", "match 1:\n    case int(__class__=c):\n        pass"),
    Escape("dunder_method_getattr", "class C:\n    def __getattr__(self, name):\n        return name"),
    Escape("mro_walk", "base = int.mro()[-1]"),
    Escape("fork_via_os", "import os\nos.fork()"),
    Escape("numpy_load", "import numpy as np\narr = np.load('/etc/passwd', allow_pickle=True)"),
    Escape("numpy_save", "import numpy as np\nnp.save('{marker}', np.zeros(3))"),
    Escape("numpy_ctypeslib", "import numpy as np\nlib = np.ctypeslib.load_library('libc', '/lib')"),
    Escape("numpy_lib_memmap", "import numpy as np\nm = np.lib.format.open_memmap('{marker}', mode='w+', shape=(3,))"),
    Escape("numpy_tofile", "import numpy as np\nnp.zeros(3).tofile('{marker}')"),
    Escape("numpy_array_ctypes", "import numpy as np\npointer = np.zeros(3).ctypes.data"),
    Escape("numpy_fromfile", "import numpy as np\ndata = np.fromfile('/etc/passwd')"),
    Escape("from_numpy_import_hidden", "from numpy import loadtxt"),
    Escape("breakpoint_call", "breakpoint()"),
    Escape("help_call", "help()"),
    Escape("input_call", "x = input()"),
    Escape("exit_call", "exit()"),
    Escape("fullwidth_eval_identifier", "\uff45\uff56\uff41\uff4c('1')"),
    Escape("async_coroutine_frame", "async def f():\n    pass\nframe = f().cr_frame"),
    # Pass the syntax checks; stopped when they run.
    Escape("numpy_hidden_submodule", "import numpy as np\nm = np.core.multiarray", "runtime"),
    Escape("infinite_loop", "while True:\n    pass", "runtime"),
    Escape("memory_bomb_string", "s = 'a' * 10 ** 10", "runtime"),
    Escape("memory_bomb_list_growth", "grow = []\nwhile True:\n    grow.append([0] * 100_000)", "runtime"),
    Escape("recursion_bomb", "def deeper(n):\n    return deeper(n + 1)\ndeeper(0)", "runtime"),
    Escape("import_inside_function", "def f():\n    import os\n    return os\nf()"),
)

# Past the static checks on purpose: the process limits alone must stop the harm.
RUNTIME: tuple[Escape, ...] = (
    Escape("walk_os_system", WALK + "G['system']('touch {marker}')", "runtime"),
    Escape("walk_real_open_write", WALK + "G['__builtins__']['open']('{marker}', 'w').write('x')", "runtime"),
    Escape("walk_fileio_class_write", FIND + "find('FileIO')('{marker}', 'w').write(b'x')", "runtime"),
    Escape("walk_fileio_read_passwd", FIND + "secret = find('FileIO')('/etc/passwd', 'r').read()", "runtime"),
    Escape(
        "walk_real_import_socket",
        WALK + "s = G['__builtins__']['__import__']('socket')\ns.create_connection(('127.0.0.1', {port}), timeout=1)",
        "runtime",
    ),
    Escape(
        "walk_posix_socket_via_sys_modules",
        WALK + "m = G['sys'].modules\nsock = m['_socket'] if '_socket' in m else m['posix'].socket",
        "runtime",
    ),
    Escape(
        "walk_posix_fork", WALK + "pid = G['sys'].modules['posix'].fork()\nG['system']('touch {marker}')", "runtime"
    ),
    Escape("walk_os_kill_parent_probe", WALK + "G['kill'](G['getppid'](), 0)", "runtime"),
    Escape("walk_unlink_victim", WALK + "G['sys'].modules['posix'].unlink('{victim}')", "runtime"),
    Escape("walk_rename_victim", WALK + "G['rename']('{victim}', '{marker}')", "runtime"),
    Escape("walk_reimport_ctypes", WALK + "c = G['__builtins__']['__import__']('ctypes')", "runtime"),
    Escape("walk_subprocess_popen", WALK + "sp = G['__builtins__']['__import__']('subprocess')", "runtime"),
    Escape(
        "walk_exec_with_real_builtins",
        WALK + "B = G['__builtins__']\nB['exec'](\"open('{marker}', 'w')\", {'__builtins__': B})",
        "runtime",
    ),
)
