"""A submission cannot see the metadata of host files outside its grant (issue 21, item 5).

Landlock refuses opening and listing outside the grant but not looking a path up: stat(),
lstat(), access(), readlink(), statx() and the *at forms used to answer with sizes and times of
the database and the reference code. The rootfs layer (graders/sandbox/rootfs.py) gives each
child a root that holds only its grant, so every such call finds nothing. Each test below is one
call against host paths that exist; a submission that learns anything answers `a - b`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fake_challenge import FAKE_SLUG

from graders.runner import grade
from graders.sandbox.client import PROJECT_ROOT, describe_isolation
from graders.verdict import Result

REFERENCE = os.path.join(PROJECT_ROOT, "graders", "reference", "attention.py")

# Each probe takes a path and raises OSError when the sandbox keeps it out of sight.
PROBES = {
    "stat": "os.stat(path)",
    "lstat": "os.lstat(path)",
    "access": "assert os.access(path, os.F_OK)",
    "exists": "assert os.path.exists(path)",
    "statx": "raw(332, -100, path.encode(), 0, 0xFFF, ctypes.create_string_buffer(256))",
    "faccessat2": "raw(439, -100, path.encode(), 0, 0)",  # F_OK
    "newfstatat": "raw(262, -100, path.encode(), ctypes.create_string_buffer(256), 0)",
    "readlink": "os.readlink(path) if os.path.islink(path) else os.stat(path)",
}


def probe_code(call: str, paths: list[str]) -> str:
    return (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def raw(nr, *args):\n"  # the system call itself, past any libc or Python wrapper
        "    if libc.syscall(nr, *args) != 0:\n"
        "        raise OSError(ctypes.get_errno(), str(nr))\n"
        "def add(a, b):\n"
        "    seen = []\n"
        f"    for path in {paths!r}:\n"
        "        try:\n"
        f"            {call}\n"
        "        except (OSError, AssertionError):\n"
        "            continue\n"
        "        seen.append(path)\n"
        "    if seen:\n"
        "        print('SEEN', seen)\n"
        "        return a - b\n"
        "    return a + b\n"
    )


@pytest.fixture
def database_file() -> Iterator[str]:
    """A world-readable file in a world-readable folder under /tmp: only the sandbox hides it."""
    folder = tempfile.mkdtemp(prefix="kvprep-test-meta-")
    os.chmod(folder, 0o755)
    path = os.path.join(folder, "kvprep.sqlite3")
    Path(path).write_text("SQLite format 3 -- users and sessions")
    os.chmod(path, 0o644)
    yield path
    os.unlink(path)
    os.rmdir(folder)


@pytest.fixture
def grade_code() -> Callable[[str], Result]:
    return lambda code: grade(FAKE_SLUG, code)


def host_paths(database_file: str) -> list[str]:
    # Not the project's folder itself: with a virtualenv inside it, it is on the way to
    # site-packages, so the view holds an empty stand-in of it (no host metadata).
    paths = [
        database_file,
        os.path.dirname(database_file),
        REFERENCE,
        os.path.join(PROJECT_ROOT, "pyproject.toml"),
        os.path.join(PROJECT_ROOT, "graders"),
        "/etc/passwd",
        "/proc/1",
    ]
    assert all(os.path.lexists(p) for p in paths)
    return paths


@pytest.mark.parametrize("probe", sorted(PROBES))
def test_host_paths_outside_the_grant_are_out_of_sight(
    grade_code: Callable[[str], Result], database_file: str, probe: str
) -> None:
    rootfs = describe_isolation()["rootfs"]
    if os.geteuid() != 0 and not rootfs["active"]:  # as root (CI, the app's image) it must be on
        pytest.skip(f"no rootfs layer here: {rootfs['detail']}")
    result = grade_code(probe_code(PROBES[probe], host_paths(database_file)))
    assert result.verdict.value == "passed", (result.output, result.to_json())
    # The probe itself works: a path inside the grant (the stdlib) is seen.
    control = grade_code(probe_code(PROBES[probe], [os.__file__]))
    assert control.verdict.value == "failed" and "SEEN" in control.output, control.to_json()


def test_the_grant_is_still_there(grade_code: Callable[[str], Result]) -> None:
    """The Python installation stays visible (torch imports, a fresh stdlib module imports)."""
    code = (
        "import os, sys, importlib, torch\n"
        "def add(a, b):\n"
        "    importlib.import_module('colorsys')\n"
        "    assert os.path.isdir(os.path.dirname(os.__file__)) and os.path.exists(torch.__file__)\n"
        "    assert os.getcwd() == os.environ['TMPDIR'] and os.access(os.getcwd(), os.W_OK)\n"
        "    return a + b\n"
    )
    result = grade_code(code)
    assert result.verdict.value == "passed", (result.output, result.to_json())
