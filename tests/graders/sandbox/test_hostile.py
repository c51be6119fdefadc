"""Hostile submissions: each test adversarially checks one property of the sandbox.

They run through the real path (graders.runner.grade -> fork server -> isolated child)
against the fake `fake-add` challenge of conftest.py. A submission that *could* do the
forbidden thing returns a wrong answer (`a - b`), so "passed" proves the attempt failed;
every test also ends with conftest's check that no sandbox process is left running.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fake_challenge import FAKE_SLUG, GOOD, SECRET

from graders.limits import Limits
from graders.runner import grade
from graders.sandbox.client import PROJECT_ROOT, ForkServerClient
from graders.verdict import Result

Grade = Callable[..., Result]


def messages(result: Result) -> str:
    return " ".join([t.message for t in result.tests] + result.diagnosis)


def test_a_correct_submission_passes(grade_code: Grade) -> None:
    result = grade_code(GOOD)
    assert result.verdict.value == "passed", result.to_json()


# --- time ------------------------------------------------------------------------------------


def test_infinite_loop_times_out(grade_code: Grade) -> None:
    result = grade_code("def add(a, b):\n    while True:\n        pass\n", wall_seconds=1.0)
    assert result.verdict.value == "timeout"
    assert result.duration_ms < 4000


def test_busy_threads_hit_the_cpu_limit(grade_code: Grade) -> None:
    code = (
        "import threading\n"
        "def spin():\n    while True:\n        pass\n"
        "def add(a, b):\n"
        "    for _ in range(2):\n        threading.Thread(target=spin, daemon=True).start()\n"
        "    spin()\n"
    )
    result = grade_code(code, cpu_seconds=1, wall_seconds=8.0)
    assert result.verdict.value == "timeout"
    assert "CPU" in messages(result)


def test_ignoring_sigterm_does_not_survive_the_deadline(grade_code: Grade) -> None:
    code = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "def add(a, b):\n    time.sleep(60)\n"
    )
    assert grade_code(code, wall_seconds=1.0).verdict.value == "timeout"


# --- memory ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bomb",
    [
        "torch.empty(3 * 2**30, dtype=torch.uint8)",
        "bytearray(3 * 2**30)",
        "np.zeros(3 * 2**30 // 8)",
        "[0] * (3 * 2**30 // 8)",
    ],
)
def test_memory_bomb_hits_the_memory_limit(grade_code: Grade, bomb: str) -> None:
    code = f"import numpy as np\nimport torch\ndef add(a, b):\n    x = {bomb}\n    return a + b\n"
    result = grade_code(code)
    assert result.verdict.value == "memory_limit", result.to_json()


def test_memory_bomb_while_loading_hits_the_memory_limit(grade_code: Grade) -> None:
    result = grade_code("hoard = bytearray(3 * 2**30)\n" + GOOD)
    assert result.verdict.value == "memory_limit"


def test_a_large_allocation_under_the_limit_is_fine(grade_code: Grade) -> None:
    code = "import torch\ndef add(a, b):\n    scratch = torch.empty(2**30 // 4)\n    return a + b\n"
    assert grade_code(code).verdict.value == "passed"


# --- processes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attempt",
    [
        "os.fork()",
        "subprocess.run(['true'])",
        "os.system('true')",
        "os.execv('/bin/true', ['true'])",
        "multiprocessing.Process(target=print).start()",
        "while True: os.fork()",
    ],
)
def test_starting_a_process_is_blocked_with_a_clear_message(grade_code: Grade, attempt: str) -> None:
    code = f"import multiprocessing, os, subprocess\ndef add(a, b):\n    {attempt}\n    return a + b\n"
    result = grade_code(code)
    assert result.verdict.value == "error", result.to_json()
    assert "blocked" in messages(result) and ("process" in messages(result) or "program" in messages(result))


def test_fork_through_libc_fails_in_the_kernel(grade_code: Grade) -> None:
    code = (
        "import ctypes, os\nlibc = ctypes.CDLL(None)\n"
        "def add(a, b):\n"
        "    pid = libc.fork()\n"
        "    if pid == 0:\n        os._exit(0)\n"
        "    return a + b if pid == -1 else a - b\n"
    )
    assert grade_code(code).verdict.value == "passed"


def test_detached_grandchildren_die_with_the_sandbox() -> None:
    """With seccomp off, fork works; the PID namespace must still take the whole tree down."""
    client = ForkServerClient(disable=["seccomp"])
    code = (
        "import ctypes, os, time\nlibc = ctypes.CDLL(None)\n"
        "def add(a, b):\n"
        "    if libc.fork() == 0:\n"
        "        libc.setsid()\n"
        "        if libc.fork() == 0:\n"
        "            os.write(1, b'grandchild running\\n')\n"
        "            time.sleep(60)\n"
        "        os._exit(0)\n"
        "    time.sleep(0.2)\n"
        "    return a + b\n"
    )
    try:
        result = grade(FAKE_SLUG, code, client=client)
    finally:
        client.shutdown()
    assert "grandchild running" in result.output
    # conftest.nothing_left_running checks that the grandchild is gone


# --- network ---------------------------------------------------------------------------------


def test_a_network_connection_is_blocked(grade_code: Grade) -> None:
    code = (
        "import socket\n"
        "def add(a, b):\n"
        "    socket.create_connection(('1.1.1.1', 80), timeout=1).close()\n"
        "    return a + b\n"
    )
    result = grade_code(code)
    assert result.verdict.value == "error"
    assert "network" in messages(result)


def test_a_raw_inet_socket_fails_in_the_kernel(grade_code: Grade) -> None:
    code = (
        "import ctypes\nlibc = ctypes.CDLL(None)\n"
        "def add(a, b):\n"
        "    return a + b if libc.socket(2, 1, 0) == -1 and libc.socket(10, 2, 0) == -1 else a - b\n"
    )
    assert grade_code(code).verdict.value == "passed"


@pytest.fixture
def database_socket() -> Iterator[socket.socket]:
    """A listening unix socket anyone may connect to, like a database's in /var/run."""
    folder = tempfile.mkdtemp(prefix="kvprep-test-sock-")
    os.chmod(folder, 0o755)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(os.path.join(folder, "db.sock"))
    os.chmod(server.getsockname(), 0o777)
    server.listen()
    server.setblocking(False)
    yield server
    server.close()
    shutil.rmtree(folder)


def test_a_pathname_unix_socket_is_out_of_reach(grade_code: Grade, database_socket: socket.socket) -> None:
    path = database_socket.getsockname().encode()
    code = (
        "import ctypes, struct\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "def add(a, b):\n"
        "    fd = libc.socket(1, 1, 0)\n"
        "    if fd == -1:\n        return a + b\n"
        f"    address = struct.pack('H', 1) + {path!r}\n"
        "    libc.connect(fd, address, len(address))\n"
        "    return a - b\n"
    )
    assert grade_code(code).verdict.value == "passed"
    with pytest.raises(BlockingIOError):
        database_socket.accept()


# --- files -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def database_file() -> Iterator[str]:
    """A world-readable file in a world-readable folder: only the sandbox stands in the way."""
    folder = tempfile.mkdtemp(prefix="kvprep-test-db-")
    os.chmod(folder, 0o755)
    path = os.path.join(folder, "kvprep.sqlite3")
    Path(path).write_text("SQLite format 3 -- users and sessions")
    os.chmod(path, 0o644)
    yield path
    os.unlink(path)
    os.rmdir(folder)


def _read_attempt(path: str) -> str:
    return (
        "def add(a, b):\n"
        "    try:\n"
        f"        data = open({path!r}, 'rb').read(64)\n"
        "    except OSError:\n"
        "        return a + b\n"
        "    print(data)\n"
        "    return a - b\n"
    )


@pytest.mark.parametrize(
    "path",
    [
        os.path.join(PROJECT_ROOT, "graders", "reference", "kv_memory.py"),
        os.path.join(PROJECT_ROOT, "graders", "checks", "__init__.py"),
        os.path.join(PROJECT_ROOT, "pyproject.toml"),
        "/etc/shadow",
        "/etc/passwd",
        "/proc/1/environ",
        "/proc/self/mem",
    ],
)
def test_reading_outside_the_python_installation_fails(grade_code: Grade, path: str) -> None:
    assert os.path.exists(path)
    assert grade_code(_read_attempt(path)).verdict.value == "passed"


def test_reading_a_world_readable_database_fails(grade_code: Grade, database_file: str) -> None:
    assert os.stat(database_file).st_mode & stat.S_IROTH
    assert grade_code(_read_attempt(database_file)).verdict.value == "passed"


def test_listing_the_project_fails(grade_code: Grade) -> None:
    code = (
        "import os\n"
        "def add(a, b):\n"
        "    try:\n"
        f"        os.listdir({os.path.join(PROJECT_ROOT, 'graders', 'reference')!r})\n"
        "    except OSError:\n"
        "        return a + b\n"
        "    return a - b\n"
    )
    assert grade_code(code).verdict.value == "passed"


@pytest.mark.parametrize(
    "path", ["/tmp/kvprep-escape", "/dev/shm/kvprep-escape", f"{PROJECT_ROOT}/escape.txt"]
)
def test_writing_outside_its_temp_folder_fails(grade_code: Grade, path: str) -> None:
    code = (
        "def add(a, b):\n"
        "    try:\n"
        f"        open({path!r}, 'w').write('x')\n"
        "    except OSError:\n"
        "        return a + b\n"
        "    return a - b\n"
    )
    assert grade_code(code).verdict.value == "passed"
    assert not os.path.exists(path)


def test_writing_many_large_files_is_capped(grade_code: Grade) -> None:
    code = (
        "import os, tempfile\n"
        "def add(a, b):\n"
        "    chunk = b'x' * 2**20\n"
        "    big = 0\n"
        "    try:\n"
        "        with open('big.bin', 'wb') as f:\n"
        "            for _ in range(64):\n"
        "                f.write(chunk); f.flush(); big += 1\n"
        "    except OSError as exc:\n"
        "        print('big stopped', exc.errno)\n"
        "    os.remove('big.bin')\n"
        "    total = 0\n"
        "    try:\n"
        "        for i in range(500):\n"
        "            with open(os.path.join(tempfile.gettempdir(), f'f{i}'), 'wb') as f:\n"
        "                f.write(chunk)\n"
        "            total += 1\n"
        "    except OSError as exc:\n"
        "        print('many stopped', exc.errno)\n"
        "    print('sizes', big, total)\n"
        "    return a + b\n"
    )
    result = grade_code(code)
    assert result.verdict.value == "passed", result.to_json()
    sizes = result.output.split("sizes")[1].split()
    big, total = int(sizes[0]), int(sizes[1])
    assert big <= 16  # file_size_bytes, 16 MiB
    assert total <= 64  # disk_bytes, 64 MiB for the whole temp folder


def test_printing_a_gigabyte_is_capped_and_stays_off_the_graders_stdout(
    grade_code: Grade, capfd: pytest.CaptureFixture[str]
) -> None:
    code = (
        "import os, sys\n"
        "line = 'spam' * 2**18\n"
        "def add(a, b):\n"
        "    for _ in range(1024):\n"
        "        print(line)\n"
        "    for _ in range(64):\n"
        "        try:\n"
        "            os.write(1, b'eggs' * 2**18)\n"
        "        except OSError:\n"
        "            pass\n"
        "    sys.stderr.write('the end\\n')\n"
        "    return a + b\n"
    )
    result = grade_code(code)
    out, err = capfd.readouterr()
    assert result.verdict.value == "passed"
    assert "spam" not in out and "eggs" not in out and "spam" not in err
    assert len(result.output) <= Limits().output_excerpt_chars + 100


# --- exits -----------------------------------------------------------------------------------


@pytest.mark.parametrize("exit_call", ["os._exit(0)", "sys.exit(0)", "raise SystemExit", "os.abort()"])
def test_exiting_early_is_an_error_never_a_pass(grade_code: Grade, exit_call: str) -> None:
    result = grade_code(f"import os, sys\ndef add(a, b):\n    {exit_call}\n")
    assert result.verdict.value == "error", result.to_json()


@pytest.mark.parametrize("target", ["grader", "everyone"])
def test_signalling_other_processes_fails(grade_code: Grade, target: str) -> None:
    pid = os.getpid() if target == "grader" else -1
    code = (
        "import os\n"
        "def add(a, b):\n"
        "    try:\n"
        f"        os.kill({pid}, 0)\n"
        "    except OSError:\n"
        "        return a + b\n"
        "    return a - b\n"
    )
    assert grade_code(code).verdict.value == "passed"


def test_exiting_while_loading_is_an_error(grade_code: Grade) -> None:
    assert grade_code("import os\nos._exit(0)\n" + GOOD).verdict.value == "error"
    assert grade_code("import sys\nsys.exit(0)\n" + GOOD).verdict.value == "error"


# --- forging a pass --------------------------------------------------------------------------


def test_patching_comparison_functions_cannot_pass(grade_code: Grade) -> None:
    code = (
        "import numpy as np, torch, torch.testing\n"
        "always = lambda *args, **kwargs: True\n"
        "torch.allclose = torch.equal = np.allclose = np.array_equal = always\n"
        "torch.Tensor.__eq__ = torch.Tensor.__ne__ = always\n"
        "torch.testing.assert_close = lambda *args, **kwargs: None\n"
        "def add(a, b):\n    return torch.zeros_like(a)\n"
    )
    assert grade_code(code).verdict.value == "failed"


@pytest.mark.parametrize(
    "liar",
    [
        "class Liar:\n    def __eq__(self, other): return True\n    __array_priority__ = 1000\n"
        "def make(a, b): return Liar()\n",
        "import torch\nclass Liar(torch.Tensor):\n"
        "    def __eq__(self, other): return torch.ones_like(other, dtype=torch.bool)\n"
        "    @classmethod\n    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        return True\n"
        "def make(a, b): return torch.zeros_like(a).as_subclass(Liar)\n",
        "import torch\nclass Liar(torch.Tensor):\n"
        "    @property\n    def shape(self): raise RuntimeError('no shape for you')\n"
        "def make(a, b): return torch.zeros_like(a).as_subclass(Liar)\n",
        "def make(a, b): return {'$': 'tensor', 'dtype': 'float32', 'shape': list(a.shape), 'offset': 0}\n",
        "class FakeClass:\n    __class__ = property(lambda self: __import__('torch').Tensor)\n"
        "def make(a, b): return FakeClass()\n",
    ],
    ids=[
        "eq-always-true",
        "tensor-subclass-torch-function",
        "tensor-subclass-shape",
        "tagged-dict",
        "fake-class",
    ],
)
def test_objects_that_lie_cannot_pass(grade_code: Grade, liar: str) -> None:
    result = grade_code(liar + "def add(a, b):\n    return make(a, b)\n")
    assert result.verdict.value in ("failed", "error"), result.to_json()


def test_its_memory_holds_no_reference_checks_or_expected_values(grade_code: Grade) -> None:
    needle_parts = SECRET.split("-")
    code = (
        "import gc, importlib, sys, torch\n"
        f"NEEDLE = '-'.join({needle_parts!r})\n"
        "def strings(obj):\n"
        "    if isinstance(obj, dict):\n        yield from (v for v in obj.values() if isinstance(v, str))\n"
        "    elif isinstance(obj, (list, tuple, set, frozenset)):\n"
        "        yield from (v for v in obj if isinstance(v, str))\n"
        "    elif hasattr(obj, 'co_consts'):\n"
        "        yield from (v for v in obj.co_consts if isinstance(v, str))\n"
        "def add(a, b):\n"
        "    hits = sum(1 for o in gc.get_objects() for s in strings(o) if NEEDLE in s and s is not NEEDLE)\n"
        "    secret = ('graders.checks', 'graders.reference', 'app')\n"
        "    modules = [m for m in sys.modules if m.startswith(secret)]\n"
        "    imported = []\n"
        "    for name in ('graders.reference', 'graders.checks', 'app', 'kvprep_test_fake_add_check'):\n"
        "        try:\n            importlib.import_module(name)\n            imported.append(name)\n"
        "        except Exception:\n            pass\n"
        "    others = [o for o in gc.get_objects() if isinstance(o, torch.Tensor) and o.shape == a.shape\n"
        "              and o is not a and o is not b]\n"
        "    print('hits', hits, 'modules', modules, 'imported', imported, 'tensors', len(others))\n"
        "    return others[0] if others else torch.zeros_like(a)\n"
    )
    result = grade_code(code)
    assert result.verdict.value == "failed"
    assert "hits 0 modules [] imported [] tensors 0" in result.output, result.output


def test_a_huge_reply_is_refused(grade_code: Grade) -> None:
    code = "import torch\ndef add(a, b):\n    return torch.zeros(2**24)\n"  # 64 MiB > max_reply_bytes
    result = grade_code(code)
    assert result.verdict.value == "error"
    assert "64 MiB" in messages(result) and "32 MiB limit on a reply" in messages(result), messages(result)


def test_a_huge_reply_header_names_the_header_limit(grade_code: Grade) -> None:
    code = "def add(a, b):\n    return 'x' * (9 * 2**20)\n"  # a 9 MiB JSON header, a small frame
    result = grade_code(code)
    assert result.verdict.value == "error"
    assert "8 MiB limit on a reply's header" in messages(result), messages(result)
    assert "32 MiB" not in messages(result), messages(result)
