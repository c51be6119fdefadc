"""Which isolation layers are on, and that each degrades gracefully when it is not."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch
from fake_challenge import FAKE_SLUG, GOOD

from graders.limits import Limits
from graders.runner import grade
from graders.sandbox import describe_isolation, isolation
from graders.sandbox.client import PROJECT_ROOT, ForkServerClient, shared_client
from graders.sandbox.protocol import SubmissionError

KERNEL_LAYERS = {"pidns", "netns", "ipcns", "mountns", "rlimits", "landlock", "seccomp"}


def _has_cap_sys_admin() -> bool:
    with open("/proc/self/status") as f:
        caps = next(line for line in f if line.startswith("CapEff:"))
    return bool(int(caps.split()[1], 16) & (1 << 21))


def test_describe_isolation_reports_every_layer_with_a_reason() -> None:
    layers = describe_isolation()
    assert KERNEL_LAYERS | {"uid", "userns"} <= set(layers)
    for status in layers.values():
        assert isinstance(status["active"], bool) and status["detail"]


@pytest.mark.skipif(
    os.geteuid() != 0 or not _has_cap_sys_admin() or isolation.landlock_abi() < 6,
    reason="needs root with CAP_SYS_ADMIN on a kernel with Landlock ABI 6+",
)
def test_every_layer_is_on_as_root_on_a_modern_kernel() -> None:
    layers = describe_isolation()
    assert all(layers[name]["active"] for name in KERNEL_LAYERS | {"uid"}), layers
    assert not layers["userns"]["active"]  # not needed as root


@pytest.mark.skipif(not ctypes.util.find_library("seccomp"), reason="libseccomp is not installed")
def test_seccomp_syscall_numbers_match_libseccomp() -> None:
    lib = ctypes.CDLL(ctypes.util.find_library("seccomp"))
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    for name, number in isolation.SYSCALLS.items():
        assert lib.seccomp_syscall_resolve_name(name.encode()) == number, name


def test_a_sandbox_with_layers_off_still_grades_and_says_so() -> None:
    client = ForkServerClient(disable=["landlock", "seccomp", "netns", "mountns"])
    try:
        result = grade(FAKE_SLUG, GOOD, client=client)
        layers = client.isolation
    finally:
        client.shutdown()
    assert result.verdict.value == "passed"
    for name in ("landlock", "seccomp", "netns", "mountns"):
        assert layers[name] == {"active": False, "detail": "disabled by configuration"}


def test_the_fork_servers_socket_is_out_of_reach() -> None:
    client = shared_client()
    client.ensure_started()
    code = "import os\ndef visible(path):\n    return os.path.exists(path)\n"
    assert os.path.exists(client.socket_path)
    with client.open(Limits()) as session:
        session.load(code)
        assert session.call("visible", client.socket_path) is False


def test_another_submissions_temp_folder_is_out_of_reach() -> None:
    client = shared_client()
    code = (
        "import os\n"
        "def plant():\n    open('note.txt', 'w').write('mine')\n    return os.path.abspath('note.txt')\n"
        "def peek(path):\n    return open(path).read()\n"
    )
    with client.open(Limits()) as first, client.open(Limits()) as second:
        first.load(code)
        second.load(code)
        path = first.call("plant")
        assert first.call("peek", path) == "mine"
        with pytest.raises(SubmissionError):
            second.call("peek", path)


def test_torch_and_common_modules_work_inside() -> None:
    code = (
        "import math, typing, dataclasses, functools, itertools, collections, heapq, json, re\n"
        "import colorsys, fractions, decimal, statistics\n"
        "import numpy as np, torch, torch.nn.functional as F\n"
        "def run(x):\n"
        "    q = torch.nn.Linear(8, 8, bias=False)(x)\n"
        "    y = F.scaled_dot_product_attention(q, q, q, is_causal=True)\n"
        "    return float(y.sum()) + float(np.tanh(np.ones(3)).sum()) + math.pi\n"
    )
    with shared_client().open(Limits()) as session:
        session.load(code)
        assert isinstance(session.call("run", torch.randn(2, 4, 8)), float)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become nobody")
def test_an_unprivileged_user_gets_a_user_namespace_instead() -> None:
    script = (
        "import json, torch\n"
        "from graders.limits import Limits\n"
        "from graders.sandbox.client import ForkServerClient\n"
        "client = ForkServerClient()\n"
        "try:\n"
        "    with client.open(Limits()) as s:\n"
        "        s.load('def add(a, b):\\n    return a + b\\n')\n"
        "        value = s.call('add', torch.ones(2), torch.ones(2)).tolist()\n"
        "    print(json.dumps({'isolation': client.isolation, 'value': value}))\n"
        "finally:\n"
        "    client.shutdown()\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": PROJECT_ROOT, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", script],
        env=env,
        cwd="/tmp",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    report = json.loads(out.splitlines()[-1])
    assert report["value"] == [2.0, 2.0]
    layers = report["isolation"]
    assert not layers["uid"]["active"]
    if layers["userns"]["active"]:
        assert all(layers[name]["active"] for name in KERNEL_LAYERS), layers
