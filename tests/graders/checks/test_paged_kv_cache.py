"""The paged-kv-cache battery: speed, fresh inputs, named mistakes, the figure, swaps and odd caches."""

from __future__ import annotations

import pytest
import torch

from graders.checks import paged_kv_cache as check
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_fails_with_messages,
    assert_interface_matches,
    assert_solution_passes_cleanly,
    challenge_dir,
    passed,
    run,
    seen_per_seed,
)

CHALLENGE = challenge_dir(check.SLUG)
SOLUTION = (CHALLENGE / "solution.py").read_text()


def test_module_interface_matches_the_challenge() -> None:
    assert_interface_matches(
        check,
        "PagedKVCache",
        (
            "__init__(self, n_blocks, block_size, n_heads, head_dim",
            "MemoryError",
            "KeyError",
            "paged_attention(q, cache, seq_ids)",
        ),
    )


def test_the_prompt_example_behaves_as_shown() -> None:
    namespace: dict[str, object] = {}
    exec(SOLUTION, namespace)
    cache = namespace["PagedKVCache"](n_blocks=4, block_size=2, n_heads=1, head_dim=3)  # type: ignore[operator]
    cache.append("a", torch.randn(1, 3, 3), torch.randn(1, 3, 3))
    assert cache.num_free_blocks() == 2
    cache.fork("a", "b")
    assert cache.num_free_blocks() == 2
    cache.append("b", torch.randn(1, 1, 3), torch.randn(1, 1, 3))
    assert cache.num_free_blocks() == 1
    with pytest.raises(MemoryError):
        cache.append("a", torch.randn(1, 5, 3), torch.randn(1, 5, 3))
    assert cache.gather("a")[0].shape == (1, 3, 3)


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_fails_every_test_without_crashing_the_grader() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text())
    assert report.tests and not any(t.passed for t in report.tests)
    assert all("NotImplementedError" in t.message for t in report.tests)


def test_the_verdict_reports_blocks_used_against_a_contiguous_reservation() -> None:
    report, _ = run(check, SOLUTION, seed=8)
    figure = next(t for t in report.tests if t.name == "blocks used against a contiguous T_max reservation")
    assert figure.passed and "a contiguous cache reserving T_max = 64" in figure.message
    assert "blocks of 8" in figure.message and "of that memory" in figure.message


SPY = SOLUTION.replace(
    "        self.block_size = block_size\n",
    "        SEEN.append((n_blocks, block_size, n_heads, head_dim, dtype))\n"
    "        self.block_size = block_size\n",
)


def test_dimensions_differ_from_each_other_and_change_every_run() -> None:
    runs = seen_per_seed(check, "SEEN = []\n" + SPY, seed=4)
    for n_blocks, block_size, n_heads, head_dim, _ in runs[0]:
        assert len({n_blocks, block_size, n_heads, head_dim}) == 4  # any swap changes a shape
    assert torch.float64 in {dtype for *_, dtype in runs[0]}


@pytest.mark.parametrize(
    "old, new",
    [
        (
            "    def __init__(self, n_blocks, block_size, n_heads, head_dim, dtype=torch.float32):",
            "    def __init__(self, n_blocks, n_heads, block_size, head_dim, dtype=torch.float32):",
        ),
        (
            "    def __init__(self, n_blocks, block_size, n_heads, head_dim, dtype=torch.float32):",
            "    def __init__(self, block_size, n_blocks, n_heads, head_dim, dtype=torch.float32):",
        ),
        (
            "    def __init__(self, n_blocks, block_size, n_heads, head_dim, dtype=torch.float32):",
            "    def __init__(self, n_blocks, block_size, head_dim, n_heads, dtype=torch.float32):",
        ),
        ("    def append(self, seq_id, k, v):", "    def append(self, seq_id, v, k):"),
        (
            "        self.k_blocks = torch.zeros(shape, dtype=dtype)",
            "        self.k_blocks = torch.zeros(shape)",
        ),
    ],
    ids=[
        "block_size and n_heads",
        "n_blocks and block_size",
        "n_heads and head_dim",
        "k and v",
        "dtype ignored",
    ],
)
def test_a_swapped_or_ignored_argument_is_caught(old: str, new: str) -> None:
    assert old in SOLUTION
    assert not passed(run(check, SOLUTION.replace(old, new), seed=1)[0])


def test_a_cache_that_keys_its_sequences_by_string_passes_too() -> None:
    """The grader's ids are ints; a cache may store them any way it likes."""
    code = SOLUTION.replace("class PagedKVCache:", "class _Inner:") + (
        "\n\nclass PagedKVCache(_Inner):\n"
        "    def append(self, seq_id, k, v):\n        return super().append(str(seq_id), k, v)\n"
        "    def block_table(self, seq_id):\n        return super().block_table(str(seq_id))\n"
        "    def gather(self, seq_id):\n        return super().gather(str(seq_id))\n"
        "    def fork(self, src_id, dst_id):\n        return super().fork(str(src_id), str(dst_id))\n"
        "    def free(self, seq_id):\n        return super().free(str(seq_id))\n"
    )
    assert passed(run(check, code, seed=2)[0])


ODD = {
    "num_free_blocks returns a float": (
        "    def num_free_blocks(self):\n        return len(self.free_blocks)\n",
        "    def num_free_blocks(self):\n        return float(len(self.free_blocks))\n",
    ),
    "gather returns one tensor": ("        return k, v\n\n    def fork", "        return k\n\n    def fork"),
    "block_table returns a tensor": (
        "        return list(self.tables[seq_id])  # KeyError for an unknown id\n",
        "        return torch.tensor(self.tables[seq_id])\n",
    ),
    "no k_blocks attribute": (
        "        self.k_blocks = torch.zeros(shape, dtype=dtype)"
        "  # (n_blocks, H, block_size, hd), allocated once\n",
        "        self._k = torch.zeros(shape, dtype=dtype)\n",
    ),
}


@pytest.mark.parametrize("what", list(ODD))
def test_odd_caches_fail_with_a_message_not_a_crash(what: str) -> None:
    old, new = ODD[what]
    assert old in SOLUTION
    assert_fails_with_messages(check, SOLUTION.replace(old, new))
