"""kv-cache-buffer: a preallocated KVCache whose update returns views, with bounds checks and reorder.

Scripts of update and reorder calls (fresh random tensors each run) are replayed on
the submission's cache, on graders.reference.kv_cache.KVCache, and on a set of
known-wrong variants of it. The first output that differs from the reference fails
the test; a variant that agreed with the submission on every step so far, and on
this one too, names the mistake.

"update returns views" is tested by behaviour, not by trusting anything the
submission reports: the (k_all, v_all) pairs of two earlier updates stay in the
submission's process (keep=True, then held in a grader-made dict, because
SubmissionLink.get decodes dicts and tensors but not a bare tuple), a third update
overwrites their positions, and reading them back must show the new values. A
copy would still hold the old ones.

That check runs on every replay, so that no update looks like the probe: every pair
update returns is also kept in the submission's process (keep="both"), every decode
script ends by writing its last position again (a rejected draft token), and at the end
of each replay every pair returned since the last reorder is read back and must show the
buffer as it is now.

Those read-backs go through the submission's own process, which a submission can patch, so
they explain a failure but cannot pass one alone: one test also holds 64 returned pairs and
asks the kernel how much memory the process holds (graders/sandbox/outside.py); copies of
the returned positions show there as tens of MiB, views as nothing. The scripts and their replay
are kv_cache_buffer_replay.py; the known-wrong variants are kv_cache_buffer_mistakes.py.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch

from graders.checks import kv_cache_buffer_cost
from graders.checks.kv_cache_buffer_mistakes import (  # noqa: F401 - names the tests and the diagnosis use
    AT_ZERO,
    BOUNDS,
    COPY,
    KNOWN_MISTAKES,
    KV_SHAPES,
    NEGATIVE_START,
    NEW_ONLY,
    OFF_BY_ONE,
    REORDER_DIM,
    REORDER_KEYS_ONLY,
    REORDER_NOOP,
    REORDER_SCATTER,
    REORDER_SOME_LAYERS,
    REORDER_VARIANTS,
    SHAPES,
    SHARED_LAYERS,
    SWAPPED,
    UPDATE_VARIANTS,
    WHOLE_BUFFER,
    SharedLayers,
)
from graders.checks.kv_cache_buffer_replay import (
    ENTRY_POINT,
    Dims,
    Reorder,
    Rng,
    Update,
    decode_script,
    method,
    method_later,
    new_cache,
    pair,
    replay,
)
from graders.checks.report import CheckReport, Mismatch, close, explain_difference, run_test
from graders.checks.serving_common import figure_test
from graders.reference.kv_cache import KVCache
from graders.sandbox import outside
from graders.sandbox.protocol import SubmissionError, SubmissionLink
from graders.wording import exception_text

SLUG = "kv-cache-buffer"
__all__ = ["ENTRY_POINT", "KNOWN_MISTAKES", "SLUG", "run"]

# --- tests -----------------------------------------------------------------------------------------


def _test_views(report: CheckReport, session: SubmissionLink, rng: Rng, dims: Dims) -> None:
    cache = new_cache(session, dims)
    layer, prompt = dims.n_layers - 1, 4
    first, second, overwrite = (
        rng.update(dims, layer, 0, prompt),
        rng.update(dims, layer, prompt, 1),
        rng.update(dims, layer, 0, 2),
    )
    answers = [
        method_later(session, cache, "update", op.layer, op.k, op.v, op.start, keep="both")
        for op in (first, second)
    ]
    held = {"first": answers[0].value()[0], "second": answers[1].value()[0]}
    box = session.new_dict(held)  # the returned pairs, still in the submission's process
    rewrite = method_later(
        session, cache, "update", overwrite.layer, overwrite.k, overwrite.v, overwrite.start, keep="both"
    )
    now = session.get(box)
    rewrite.value()
    ref = KVCache(*dims.args(), **dims.kwargs())
    ref.update(first.layer, first.k, first.v, first.start)
    ref.update(second.layer, second.k, second.v, second.start)
    stale_k = ref.k[layer, :, :, : prompt + 1].clone()
    ref.update(overwrite.layer, overwrite.k, overwrite.v, overwrite.start)
    for key, end, call in (("first", prompt, first), ("second", prompt + 1, second)):
        got_k, got_v = pair(now[key], str(call))
        want_k, want_v = ref.k[layer, :, :, :end], ref.v[layer, :, :, :end]
        if close(got_k, want_k) and close(got_v, want_v):
            continue
        if close(got_k, stale_k[:, :, :end]):
            report.diagnose(COPY)
            raise Mismatch(
                f"the k_all returned by {call} still holds the old positions 0..2 after a later "
                f"update(start=0) overwrote them: {COPY} (slice the preallocated buffer, don't clone or cat)"
            )
        raise Mismatch(
            f"the k_all returned by {call}, read again after a later update(start=0) wrote positions 0..2: "
            + explain_difference(got_k, want_k, "k_all")
        )


def _test_views_cost_nothing(report: CheckReport, session: SubmissionLink, rng: Rng) -> None:
    """Holding every pair update returned must cost no memory, by the kernel's count (outside.py).

    The behavioural checks above read the held pairs back through the submission's own process,
    which a submission can patch (refresh each copy just before it is encoded). What it cannot
    patch is the kernel's count of the memory its process holds: views share the buffer, while
    n copies of t positions hold n * t positions more. The buffer is written whole before the
    watch starts (its pages resident), then `steps` one-position updates each keep their pair.
    """
    dims = Dims(1, 1, 4, 512, 64)  # 1 KiB a position for k, as much for v
    watch = session.peak_watch()
    assert watch is not None, "run() adds this test only where the kernel's count is available"
    cache = new_cache(session, dims)
    whole = rng.update(dims, 0, 0, dims.max_len)
    method(session, cache, "update", 0, whole.k, whole.v, 0, keep=True)
    start, steps = rng.py.randint(240, 320), 64
    per_position = 2 * dims.batch * dims.n_heads * dims.head_dim * 4
    buffer_bytes = dims.max_len * per_position
    copies_bytes = sum(t + 1 for t in range(start, start + steps)) * per_position
    ops = [rng.update(dims, 0, t, 1) for t in range(start, start + steps)]
    with watch:  # the steps go out in one request, answered before the watch ends
        answers = [method_later(session, cache, "update", 0, op.k, op.v, op.start, keep=True) for op in ops]
        for answer in answers:  # the pair stays there
            answer.value()
    budget = outside.SLACK_BYTES + 2 * buffer_bytes
    if watch.above_floor <= budget:
        return
    mib = 1 << 20
    report.diagnose(COPY)
    raise Mismatch(
        f"{COPY}: with the {steps} pairs of {steps} updates (start={start}..{start + steps - 1}, {dims}) "
        f"still held, the kernel counted {watch.above_floor / mib:.1f} MiB held by your code's process "
        f"beyond what it held before your code was loaded; views of the {buffer_bytes / mib:.1f} MiB "
        f"buffer fit in {budget / mib:.1f} MiB, copies of the returned positions "
        f"take {copies_bytes / mib:.1f} MiB (slice the preallocated buffer, don't clone or cat)"
    )


def _expect_value_error(
    report: CheckReport, session: SubmissionLink, dims: Dims, op: Update, mistake: str, filled: int
) -> None:
    """`op` must raise ValueError on a cache whose layer 0 already holds `filled` positions."""
    cache = new_cache(session, dims)
    fill = None
    if filled:
        k = torch.zeros(dims.batch, dims.n_heads, filled, dims.head_dim)
        fill = method_later(session, cache, "update", 0, k, k, 0, keep="both")
    shapes = f"k {tuple(op.k.shape)} and v {tuple(op.v.shape)}"
    probe = method_later(session, cache, "update", op.layer, op.k, op.v, op.start, keep="both")
    if fill is not None:
        fill.value()  # its exception is the test's (the probe was then never made)
    try:
        probe.value()
    except SubmissionError as exc:
        if exc.type_name == "ValueError":
            return
        report.diagnose(mistake)
        raise Mismatch(
            f"{op} with {shapes} raised {exception_text(exc.type_name, exc.message[:120], parens=True)}, "
            f"expected a ValueError that names both values: {mistake}"
        ) from None
    report.diagnose(mistake)
    raise Mismatch(f"{op} with {shapes} on a cache built with {dims} did not raise: {mistake}")


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    py = rng.py
    # Layers, batch, heads, head size and max_len all differ, so that any two of them read the
    # wrong way round (in the signature or the buffer's shape) change a shape or a value.
    n_layers, batch, n_heads = py.sample([2, 3, 4, 5], 3)
    dims = Dims(n_layers, batch, n_heads, py.randint(10, 14), py.choice([6, 8]))
    prompt = py.randint(3, 5)

    def check(name: str, body: Callable[[], None]) -> None:
        run_test(report, name, body)

    check(
        f"prefill {prompt} positions then 3 decode steps on every layer match the reference ({dims})",
        lambda: replay(
            report, session, dims, decode_script(rng, dims, prompt, 3), list(UPDATE_VARIANTS.items())
        ),
    )

    def layers_independent() -> None:
        script: list[Update | Reorder] = [
            rng.update(dims, 0, 0, 3),
            rng.update(dims, dims.n_layers - 1, 0, 3),
        ]
        script.append(rng.update(dims, 0, 3, 1))
        replay(report, session, dims, script, [(SHARED_LAYERS, SharedLayers)])

    check("layers are independent: writing the last layer leaves layer 0 untouched", layers_independent)
    check(
        "update returns views into one preallocated buffer (earlier k_all see later writes)",
        partial(_test_views, report, session, rng, dims),
    )

    if session.peak_watch() is not None:  # only from outside the process (not in-process tests)
        check(
            "holding every pair update returns costs no memory (the kernel counts the process's memory)",
            partial(_test_views_cost_nothing, report, session, rng),
        )

    def fills_to_max_len() -> None:
        script = decode_script(rng, dims, dims.max_len - 2, 2)
        try:
            replay(report, session, dims, script, [])
        except SubmissionError as exc:
            if exc.type_name == "ValueError":
                report.diagnose(OFF_BY_ONE)
                raise Mismatch(f"your code raised ValueError ({exc.message[:120]}): {OFF_BY_ONE}") from None
            raise

    check(f"a layer fills exactly to max_len={dims.max_len} (no growth, no error)", fills_to_max_len)

    wide = Dims(*dims.args(), dtype=torch.float64)
    check(
        "KVCache(..., dtype=torch.float64, device='cpu') stores and returns float64",
        lambda: replay(report, session, wide, decode_script(rng, wide, prompt, 1), []),
    )

    end = dims.max_len - 1
    probes = [
        ("start + n > max_len", Update(0, *rng.kv(dims, 2), end), BOUNDS, end),
        (f"batch 1 instead of {dims.batch}", Update(0, *rng.kv(dims, 1, batch=1), 0), SHAPES, 0),
        (f"{dims.n_heads + 1} heads instead of {dims.n_heads}",
         Update(0, *rng.kv(dims, 1, n_heads=dims.n_heads + 1), 0), SHAPES, 0),
        (f"head size 1 instead of {dims.head_dim}", Update(0, *rng.kv(dims, 1, head_dim=1), 0), SHAPES, 0),
        ("k and v of different lengths", Update(0, rng.kv(dims, 1)[0], rng.kv(dims, 2)[1], 0), KV_SHAPES, 0),
        ("a negative start", Update(0, *rng.kv(dims, 1), -2), NEGATIVE_START, 3),
    ]  # fmt: skip
    for what, op, mistake, filled in probes:
        check(
            f"raises ValueError for {what}",
            partial(_expect_value_error, report, session, dims, op, mistake, filled),
        )

    # As many layers and heads as batch rows, so that gathering the wrong dimension keeps the shapes.
    beam = Dims(3, 3, 3, py.randint(8, 12), py.choice([4, 8]))
    cycle = torch.tensor(py.choice([[1, 2, 0], [2, 0, 1]]))
    repeat = torch.tensor(py.choice([[2, 2, 0], [1, 0, 0], [0, 2, 2]]))
    script = decode_script(rng, beam, 4, 1)
    script.append(Reorder(cycle))
    script += [rng.update(beam, layer, 5, 1) for layer in range(beam.n_layers)]
    script.append(Reorder(repeat))
    script += [rng.update(beam, layer, 6, 1) for layer in range(beam.n_layers)]
    check(
        f"reorder({cycle.tolist()}) then reorder({repeat.tolist()}): row i takes row beam_idx[i] "
        "on every layer, and later updates see it",
        lambda: replay(report, session, beam, script, REORDER_VARIANTS),
    )
    figure_test(report, kv_cache_buffer_cost.NAME, lambda: kv_cache_buffer_cost.figure(session, rng))
    return report
