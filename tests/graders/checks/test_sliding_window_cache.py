"""The sliding-window-cache battery: its content, speed, storage checks, mutations and odd submissions."""

from __future__ import annotations

import pytest

from graders.checks import sliding_window_cache as check
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_fails_with,
    assert_interface_matches,
    assert_solution_passes_cleanly,
    seen_per_seed,
)
from tests.graders.checks.mutations import assert_mutation_caught, mutated_solution

INIT = "    def __init__(self, window, n_sink, batch, n_heads, head_dim, dtype=torch.float32):\n"


def test_the_challenge_files_agree_with_the_battery() -> None:
    assert_interface_matches(
        check, "SlidingWindowCache", ["class SlidingWindowCache", "n_sink + window", "data_ptr"]
    )


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_every_known_mistake_has_a_golden_case() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_inputs_are_fresh_every_run_and_fixed_by_a_seed() -> None:
    record = "SEEN = []\n\n\n" + "class SlidingWindowCache:\n" + '    """'
    code = mutated_solution(
        check,
        [
            ('class SlidingWindowCache:\n    """', record),
            (
                '    def update(self, k, v):\n        """',
                '    def update(self, k, v):\n        SEEN.append(float(k.sum()))\n        """',
            ),
        ],
    )
    seen_per_seed(check, code)


@pytest.mark.parametrize(
    "edits",
    [
        # window and n_sink swapped (the scripts always use different values)
        [
            (
                "        self.window, self.n_sink = window, n_sink\n",
                "        self.window, self.n_sink = n_sink or window, window if n_sink else 0\n",
            )
        ],
        [
            (
                "        self.window, self.n_sink = window, n_sink\n",
                "        self.window, self.n_sink = window, 0\n",
            )
        ],  # n_sink ignored
        [(INIT, INIT.replace("dtype=torch.float32", "dtype=torch.float64"))],  # a wrong default dtype
        [
            ("        self.v[:, :, slots] = v[:, :, keep]\n", "        self.v[:, :, slots] = k[:, :, keep]\n")
        ],  # k where v goes
        [("        size = n_sink + window\n", "        size = n_sink + window + 1\n")],  # one slot too many
    ],
)
def test_a_swapped_field_or_ignored_argument_is_caught(edits: list[tuple[str, str]]) -> None:
    assert_mutation_caught(check, edits)


@pytest.mark.parametrize(
    ("old", "new", "phrase"),
    [
        (
            "        return self.k[:, :, order], self.v[:, :, order], kept\n",
            "        return self.k[:, :, order], self.v[:, :, order]\n",
            "should return (k_kept, v_kept, positions)",
        ),
        (
            "        return self.k[:, :, order], self.v[:, :, order], kept\n",
            "        return self.k[:, :, order], self.v[:, :, order], kept.float()\n",
            "positions have dtype torch.float32",
        ),
    ],
)
def test_odd_values_fail_with_a_message(old: str, new: str, phrase: str) -> None:
    assert_fails_with(check, mutated_solution(check, [(old, new)]), phrase)
