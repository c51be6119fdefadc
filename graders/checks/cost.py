"""The cost report: one named test of a battery says how much work the submission did, beside the
reference on the same inputs, in the test's message (the verdict JSON keeps its shape: a passed
test's `message` carries the figure, as mla-decode's and int4-weight-matmul's do).

    your decode step: 4.2 M multiply-adds, largest tensor 1.0 MiB; reference: 4.2 M, 256 KiB (1.00x ...)

Both figures come from one counter (graders/sandbox/work_counter.py, the one moe-routing's rule
uses): the multiply-adds of the matrix products a call asks torch for, and the largest
floating-point tensor it made fresh; NumPy arguments are counted alike by its NumPy half
(graders/sandbox/numpy_work_counter.py, numpy-cached-generation's report). The submission's side
is counted in its own process (the sandbox child), the reference's in the grader's, by the same code.

Why informational only: a counter in the submission's process can be found and patched by the
submission (it may under-report), so nothing here decides a verdict. The test fails only for what
the grader checks itself, from what came back: a wrong output of the counted call. The sentence says
so, since it is what a person reads on the page.

Why not torch.utils.flop_counter.FlopCounterMode: it is a TorchDispatchMode, and the first one a
process enters imports sympy and torch._dynamo (2.5 s measured here), which every sandbox child
would pay once per verdict; and on the CPU it counts 0 for scaled_dot_product_attention, which
work_counter counts. The tests check that the two agree on decode-step's reference
(tests/graders/checks/test_cost_report.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graders.sandbox.protocol import Handle, SubmissionLink
from graders.sandbox.work_counter import counted_call

INFORMATIONAL = (
    "counted inside your code's process, so it informs and never decides the verdict; "
    "the reference is counted by the same code in the grader's"
)


def count(n: int) -> str:
    """4_200_000 -> '4.2 M', 12_300 -> '12.3 k', 512 -> '512'."""
    if n >= 1_000_000:
        return f"{n / 1e6:.1f} M"
    if n >= 1_000:
        return f"{n / 1e3:.1f} k"
    return str(n)


def size(n_bytes: int) -> str:
    """1_048_576 -> '1.0 MiB', 262_144 -> '256 KiB', 96 -> '96 B'."""
    if n_bytes >= 1 << 20:
        return f"{n_bytes / (1 << 20):.1f} MiB"
    if n_bytes >= 1 << 10:
        return f"{n_bytes / (1 << 10):.0f} KiB"
    return f"{n_bytes} B"


NO_TENSOR = "no new tensor"  # a call that only writes in place and slices (a cache's update)


def sentence(
    what: str,
    madds: int,
    largest: int,
    ref_madds: int,
    ref_largest: int,
    itemsize: int = 4,
    library: str = "torch",
) -> str:
    """The figure: `largest` and `ref_largest` in elements of `itemsize` bytes (float32 by the contract;
    numpy-cached-generation's float64 arrays: 8), the products counted being `library`'s.

    A ratio is left out where the reference's figure is 0 (a cache write does no matrix product,
    and one that writes in place and returns views makes no tensor): the two figures still read."""
    ratios = []
    if ref_madds:
        ratios.append(f"{madds / ref_madds:.2f}x the reference's multiply-adds")
    if ref_largest:
        ratios.append(f"{largest / ref_largest:.2f}x its largest tensor")
    mine = f"largest tensor {size(largest * itemsize)}" if largest else NO_TENSOR
    theirs = size(ref_largest * itemsize) if ref_largest else NO_TENSOR
    why_none = " (a write in place or a view makes none)" if not (largest and ref_largest) else ""
    return (
        f"{what}: {count(madds)} multiply-adds, {mine}; reference: {count(ref_madds)}, {theirs}"
        + (f" ({', '.join(ratios)})" if ratios else "")
        + f". Measured in the matrix products {library} was asked for and the floating-point tensors "
        f"the call made{why_none}; {INFORMATIONAL}."
    )


Figures = tuple[int, int, int, int]  # madds, largest, the reference's madds, its largest
Measure = Callable[[str | Handle, tuple[Any, ...], Callable[..., Any]], tuple[Any, Any, Figures]]


def measurer(session: SubmissionLink) -> Measure:
    """measure(target, args, reference) -> (the submission's result, the reference's, figures).

    The submission's call runs counted in its process; the reference runs counted here on the same
    arguments (a dict among them is copied first, so a reference that appends to a cache leaves the
    caller's alone).
    """

    def measure(
        target: str | Handle, args: tuple[Any, ...], reference: Callable[..., Any]
    ) -> tuple[Any, Any, Figures]:
        got, largest, madds = session.call_counted(target, *args)
        mine = tuple(dict(a) if isinstance(a, dict) else a for a in args)
        want, ref_largest, ref_madds = counted_call(reference, mine, {})
        return got, want, (madds, largest, ref_madds, ref_largest)

    return measure
