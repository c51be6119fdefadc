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
the returned positions show there as tens of MiB, views as nothing.
"""

from __future__ import annotations

import random
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

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
from graders.checks.report import CheckReport, Mismatch, close, explain_difference, run_test
from graders.reference.kv_cache import KVCache
from graders.sandbox import outside
from graders.sandbox.protocol import Handle, Keep, Pending, SubmissionError, SubmissionLink
from graders.wording import exception_text

SLUG = "kv-cache-buffer"
ENTRY_POINT = "KVCache"

# --- scripts ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dims:
    n_layers: int
    batch: int
    n_heads: int
    max_len: int
    head_dim: int
    dtype: torch.dtype = torch.float32

    def args(self) -> tuple[int, int, int, int, int]:
        return self.n_layers, self.batch, self.n_heads, self.max_len, self.head_dim

    def kwargs(self) -> dict[str, Any]:
        """The optional arguments, passed only when they are not the defaults (dtype, device)."""
        return {} if self.dtype == torch.float32 else {"dtype": self.dtype, "device": "cpu"}

    def __str__(self) -> str:
        dims = f"L={self.n_layers} B={self.batch} H={self.n_heads} max_len={self.max_len} hd={self.head_dim}"
        return dims if self.dtype == torch.float32 else f"{dims} dtype={self.dtype}"


@dataclass(frozen=True)
class Update:
    layer: int
    k: torch.Tensor
    v: torch.Tensor
    start: int

    def __str__(self) -> str:
        return f"update(layer={self.layer}, k, v, start={self.start}) with n={self.k.shape[2]}"


@dataclass(frozen=True)
class Reorder:
    beam_idx: torch.Tensor

    def __str__(self) -> str:
        return f"reorder({self.beam_idx.tolist()})"


class _Rng:
    """Fresh random tensors for each run."""

    def __init__(self, seed: int | None = None) -> None:
        self.py = random.Random(seed)
        self.torch = torch.Generator().manual_seed(self.py.randrange(2**62))

    def kv(self, dims: Dims, n: int, **override: int) -> tuple[torch.Tensor, torch.Tensor]:
        b = override.get("batch", dims.batch)
        h = override.get("n_heads", dims.n_heads)
        hd = override.get("head_dim", dims.head_dim)
        shape = (b, h, n, hd)
        return (
            torch.randn(shape, generator=self.torch).to(dims.dtype),
            torch.randn(shape, generator=self.torch).to(dims.dtype),
        )

    def update(self, dims: Dims, layer: int, start: int, n: int) -> Update:
        return Update(layer, *self.kv(dims, n), start)


def _pair(value: Any, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        kind = type(value).__name__
        raise Mismatch(f"{what} should return a pair (k_all, v_all) of tensors, got {kind}")
    for part, name in zip(value, ("k_all", "v_all"), strict=True):
        if not isinstance(part, torch.Tensor):
            raise Mismatch(
                f"{what}'s {name} should be a torch tensor (a view of the cache), got {type(part).__name__}"
            )
    return value[0], value[1]


def _method(session: SubmissionLink, cache: Handle, name: str, *args: Any, keep: Keep = False) -> Any:
    return _method_later(session, cache, name, *args, keep=keep).value()


def _method_later(
    session: SubmissionLink, cache: Handle, name: str, *args: Any, keep: Keep = False
) -> Pending:
    """A method call queued (SubmissionLink.call_later): a script's calls never wait for an
    answer (the grader checks each against its own reference), so all of them go out in one
    round trip; `.value()` gives each answer, or raises what the call raised, in order."""
    try:
        return session.call_later(getattr(cache, name), *args, keep=keep)
    except AttributeError:
        raise Mismatch(f"KVCache has no method {name}: see the prompt for its signature") from None


_DEFINED: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()  # session -> has KVCache


def _new_cache(session: SubmissionLink, dims: Dims) -> Handle:
    if session not in _DEFINED:  # asked once per session: each test builds a cache
        _DEFINED[session] = session.has(ENTRY_POINT)
    if not _DEFINED[session]:
        raise Mismatch("define class KVCache at the top level of your file")
    cache = session.call(ENTRY_POINT, *dims.args(), **dims.kwargs(), keep=True)
    if not isinstance(cache, Handle):  # pragma: no cover - keep=True always hands back a Handle
        raise Mismatch("KVCache(...) should build an object")
    return cache


def _replay(
    report: CheckReport,
    session: SubmissionLink,
    dims: Dims,
    script: list[Update | Reorder],
    variants: list[tuple[str, type[KVCache]]],
) -> None:
    """Run the script on the submission, the reference and every variant; fail at the first difference."""
    cache = _new_cache(session, dims)
    ref = KVCache(*dims.args(), **dims.kwargs())
    suspects = [(name, cls(*dims.args(), **dims.kwargs())) for name, cls in variants]
    held: list[tuple[Handle, Update, int]] = []  # each returned pair, still in the submission's process
    answers = [
        _method_later(session, cache, "reorder", op.beam_idx)
        if isinstance(op, Reorder)
        else _method_later(session, cache, "update", op.layer, op.k, op.v, op.start, keep="both")
        for op in script
    ]
    for step, op in enumerate(script):
        if isinstance(op, Reorder):
            held = []  # reorder may rebind the buffers: earlier views need not see what follows
            ref.reorder(op.beam_idx)
            survivors = []
            for name, s in suspects:
                try:
                    s.reorder(op.beam_idx)
                except (ValueError, IndexError, RuntimeError):
                    continue
                survivors.append((name, s))
            suspects = survivors
            answers[step].value()
            continue
        want_k, want_v = ref.update(op.layer, op.k, op.v, op.start)
        theirs: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # by position: names repeat
        for i, (_, s) in enumerate(suspects):
            try:
                theirs[i] = s.update(op.layer, op.k, op.v, op.start)
            except (ValueError, IndexError, RuntimeError):
                pass
        try:
            result = answers[step].value()
        except SubmissionError as exc:
            if not any(isinstance(earlier, Reorder) for earlier in script[:step]):
                raise
            report.diagnose(REORDER_DIM)
            raised = exception_text(exc.type_name, exc.message[:120], parens=True)
            raise Mismatch(
                f"step {step + 1}, {op}, after a reorder, raised {raised}: "
                f"reorder changed the shape of the cache, so it probably gathers along the wrong "
                f"dimension (the batch is dim 0 of (B, H, T, hd))"
            ) from None
        handle, result = result
        held.append((handle, op, op.start + op.k.shape[2]))
        got_k, got_v = _pair(result, str(op))
        suspects = [
            suspect
            for i, suspect in enumerate(suspects)
            if i in theirs and close(got_k, theirs[i][0]) and close(got_v, theirs[i][1])
        ]
        for got, want, what in ((got_k, want_k, "k_all"), (got_v, want_v, "v_all")):
            if got.dtype != want.dtype:
                raise Mismatch(
                    f"after {op}, {what} has dtype {got.dtype}: the cache should store the dtype it was "
                    f"built with ({dims.dtype}: KVCache(..., dtype=...), torch.float32 by default)"
                )
            if not close(got, want):
                message = f"step {step + 1}, {op}: {explain_difference(got, want, what)}"
                if suspects:
                    report.diagnose(suspects[0][0])
                    message += f". It looks like {suspects[0][0]}"
                raise Mismatch(message)

    _expect_views(report, session, ref, held)


def _expect_views(
    report: CheckReport, session: SubmissionLink, ref: KVCache, held: list[tuple[Handle, Update, int]]
) -> None:
    """Every pair update returned (since the last reorder), read again now, shows the buffer as it is."""
    if not held:
        return
    box = session.new_dict({str(i): handle for i, (handle, _, _) in enumerate(held)})
    now = session.get(box)
    for i, (_, op, end) in enumerate(held):
        got_k, got_v = _pair(now.get(str(i)) if isinstance(now, dict) else None, str(op))
        want_k, want_v = ref.k[op.layer, :, :, :end], ref.v[op.layer, :, :, :end]
        if close(got_k, want_k) and close(got_v, want_v):
            continue
        report.diagnose(COPY)
        raise Mismatch(
            f"the k_all returned by {op}, read again after the later updates, no longer matches the "
            f"cache: {COPY} (slice the preallocated buffer, don't clone or cat)"
        )


def _decode_script(rng: _Rng, dims: Dims, prompt: int, steps: int) -> list[Update | Reorder]:
    """Prefill every layer with `prompt` positions, then `steps` one-token updates on every layer,
    then the last position written again on every layer (a rejected draft token replaced)."""
    script: list[Update | Reorder] = [rng.update(dims, layer, 0, prompt) for layer in range(dims.n_layers)]
    for t in range(prompt, prompt + steps):
        script += [rng.update(dims, layer, t, 1) for layer in range(dims.n_layers)]
    script += [rng.update(dims, layer, prompt + steps - 1, 1) for layer in range(dims.n_layers)]
    return script


# --- tests -----------------------------------------------------------------------------------------


def _test_views(report: CheckReport, session: SubmissionLink, rng: _Rng, dims: Dims) -> None:
    cache = _new_cache(session, dims)
    layer, prompt = dims.n_layers - 1, 4
    first, second, overwrite = (
        rng.update(dims, layer, 0, prompt),
        rng.update(dims, layer, prompt, 1),
        rng.update(dims, layer, 0, 2),
    )
    answers = [
        _method_later(session, cache, "update", op.layer, op.k, op.v, op.start, keep="both")
        for op in (first, second)
    ]
    held = {"first": answers[0].value()[0], "second": answers[1].value()[0]}
    box = session.new_dict(held)  # the returned pairs, still in the submission's process
    rewrite = _method_later(
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
        got_k, got_v = _pair(now[key], str(call))
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


def _test_views_cost_nothing(report: CheckReport, session: SubmissionLink, rng: _Rng) -> None:
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
    cache = _new_cache(session, dims)
    whole = rng.update(dims, 0, 0, dims.max_len)
    _method(session, cache, "update", 0, whole.k, whole.v, 0, keep=True)
    start, steps = rng.py.randint(240, 320), 64
    per_position = 2 * dims.batch * dims.n_heads * dims.head_dim * 4
    buffer_bytes = dims.max_len * per_position
    copies_bytes = sum(t + 1 for t in range(start, start + steps)) * per_position
    ops = [rng.update(dims, 0, t, 1) for t in range(start, start + steps)]
    with watch:  # the steps go out in one request, answered before the watch ends
        answers = [_method_later(session, cache, "update", 0, op.k, op.v, op.start, keep=True) for op in ops]
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
    cache = _new_cache(session, dims)
    fill = None
    if filled:
        k = torch.zeros(dims.batch, dims.n_heads, filled, dims.head_dim)
        fill = _method_later(session, cache, "update", 0, k, k, 0, keep="both")
    shapes = f"k {tuple(op.k.shape)} and v {tuple(op.v.shape)}"
    probe = _method_later(session, cache, "update", op.layer, op.k, op.v, op.start, keep="both")
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
    rng = _Rng(seed)
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
        lambda: _replay(
            report, session, dims, _decode_script(rng, dims, prompt, 3), list(UPDATE_VARIANTS.items())
        ),
    )

    def layers_independent() -> None:
        script: list[Update | Reorder] = [
            rng.update(dims, 0, 0, 3),
            rng.update(dims, dims.n_layers - 1, 0, 3),
        ]
        script.append(rng.update(dims, 0, 3, 1))
        _replay(report, session, dims, script, [(SHARED_LAYERS, SharedLayers)])

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
        script = _decode_script(rng, dims, dims.max_len - 2, 2)
        try:
            _replay(report, session, dims, script, [])
        except SubmissionError as exc:
            if exc.type_name == "ValueError":
                report.diagnose(OFF_BY_ONE)
                raise Mismatch(f"your code raised ValueError ({exc.message[:120]}): {OFF_BY_ONE}") from None
            raise

    check(f"a layer fills exactly to max_len={dims.max_len} (no growth, no error)", fills_to_max_len)

    wide = Dims(*dims.args(), dtype=torch.float64)
    check(
        "KVCache(..., dtype=torch.float64, device='cpu') stores and returns float64",
        lambda: _replay(report, session, wide, _decode_script(rng, wide, prompt, 1), []),
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
    script = _decode_script(rng, beam, 4, 1)
    script.append(Reorder(cycle))
    script += [rng.update(beam, layer, 5, 1) for layer in range(beam.n_layers)]
    script.append(Reorder(repeat))
    script += [rng.update(beam, layer, 6, 1) for layer in range(beam.n_layers)]
    check(
        f"reorder({cycle.tolist()}) then reorder({repeat.tolist()}): row i takes row beam_idx[i] "
        "on every layer, and later updates see it",
        lambda: _replay(report, session, beam, script, REORDER_VARIANTS),
    )
    return report
