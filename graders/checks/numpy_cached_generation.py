"""numpy-cached-generation: prefill, decode_step and generate_cached over the one-layer NumPy model.

Fresh float64 weights and prompts on every run; everything is compared with
graders.reference.numpy_generation. decode_step is driven on caches that live in
the submission's process (built from its own prefill's dict, with the grader's
keys and values in it), so the grader can read them back after each step, hand
over a deliberately corrupted one, and interleave two sequences. A wrong output is
matched against the usual wrong variants (scaling, masking in decode, appending
too late, ignoring the cache, caching the wrong thing) to name the mistake.

Every decode_step call is a possible probe: before each one the grader writes cache['k']
and cache['v'] itself (fresh arrays every time), and about one call in three, in every
test, at a random row, what it writes has that row changed; the logits are then compared
with the reference over exactly that cache. A submission that reads the cache only when a
call looks like a probe cannot tell which calls are probes without reading the cache.
The mistakes it names, and what each produces, are numpy_cached_generation_mistakes.py.

The last test is the cost report (numpy_cached_generation_cost.py): one decode_step on a long
cache, its multiply-adds and largest array beside the reference's; it fails only on wrong logits.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import torch

from graders.checks import numpy_cached_generation_cost
from graders.checks.numpy_cached_generation_mistakes import (
    ALL_ROWS,
    CACHE_EMBEDDINGS,
    CACHE_QUERIES,
    CACHE_SWAPPED,
    HIDDEN_STATE,
    IGNORES_CACHE,
    KNOWN_MISTAKES,
    LAST_TOKEN_TWICE,
    NO_PROMPT,
    NOT_APPENDED,
    NOT_NUMPY,
    decode_variants,
    generate_last_token_twice,
    prefill_variants,
)
from graders.checks.report import CheckReport, Mismatch, close, explain_difference, run_test
from graders.checks.serving_common import figure_test
from graders.reference.numpy_generation import (
    Params,
    decode_step,
    generate_cached,
    greedy_margin,
    prefill,
)
from graders.sandbox.protocol import Handle, SubmissionError, SubmissionLink
from graders.wording import plural

SLUG = "numpy-cached-generation"
ENTRY_POINT = "generate_cached"
__all__ = ["ENTRY_POINT", "HIDDEN_STATE", "IGNORES_CACHE", "KNOWN_MISTAKES", "SLUG", "run"]

FRESH_CHANGED_CACHES = 4  # fresh caches the read-the-cache test hands a changed past
CHANGE_RATE = 1 / 3  # the share of decode_step calls, in every test, whose cache has a row changed


def _params(rng: np.random.Generator, vocab: int, d: int) -> dict[str, np.ndarray]:
    """Weights at a scale where the scores are O(1), so a wrong scale or mask moves the logits visibly."""
    w = 1 / np.sqrt(d)
    return {
        "E": rng.normal(size=(vocab, d)),
        "W_q": rng.normal(size=(d, d)) * 1.5 * w,
        "W_k": rng.normal(size=(d, d)) * 1.5 * w,
        "W_v": rng.normal(size=(d, d)) * w,
        "W_o": rng.normal(size=(d, d)) * w,
        "W_lm": rng.normal(size=(d, vocab)) * w,
    }


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))


def _matching(got: np.ndarray, variants: dict[str, np.ndarray]) -> list[str]:
    """Every known mistake whose output `got` matches (several when they coincide on this input)."""
    return [
        name for name, wrong in variants.items() if got.shape == wrong.shape and close(_t(got), _t(wrong))
    ]


def _array(report: CheckReport, value: Any, what: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """A submission's value as a float ndarray; Mismatch with a clear message otherwise."""
    if isinstance(value, torch.Tensor):
        report.diagnose(NOT_NUMPY)
        raise Mismatch(f"{what} is a torch tensor; this challenge is NumPy only, return an np.ndarray")
    if not isinstance(value, np.ndarray):
        raise Mismatch(f"{what} should be a NumPy array, got {type(value).__name__}")
    if not np.issubdtype(value.dtype, np.floating):
        raise Mismatch(f"{what} should hold floats, got dtype {value.dtype}")
    if shape is not None and value.shape != shape:
        raise Mismatch(f"{what} has shape {value.shape}, expected {shape}")
    return value


def _compare(
    report: CheckReport,
    got: np.ndarray,
    want: np.ndarray,
    what: str,
    variants: dict[str, np.ndarray] | None = None,
) -> None:
    g, w = _t(got), _t(want)
    if close(g, w):
        return
    message = explain_difference(g, w, what)
    mistakes = _matching(got, variants or {})
    if len(mistakes) == 1:  # several matches: this input cannot tell them apart, another test will
        report.diagnose(mistakes[0])
    if mistakes:
        message += ". It looks like " + ", or ".join(mistakes)
    raise Mismatch(message)


Cache = dict[str, np.ndarray]  # "k", "v": (t, d) each


class _IgnoredChange(Mismatch):
    """decode_step's logits did not move when the grader changed a row of the cache."""


def _require(session: SubmissionLink, name: str, signature: str) -> None:
    if not session.has(name):
        raise Mismatch(f"define {signature} at the top level of your file")


def _their_cache(
    session: SubmissionLink, params: Params, tokens: list[int], ref: dict[str, np.ndarray]
) -> Handle:
    """A cache dict in the submission's process: its own prefill's dict (extra keys kept) with the
    reference keys and values in it, or just those when its prefill cannot give one."""
    extras: dict[str, Any] = {}
    if session.has("prefill"):
        try:
            out = session.call("prefill", params, tokens)
        except SubmissionError:
            out = None
        if isinstance(out, tuple | list) and len(out) == 2 and isinstance(out[0], dict):
            extras = {key: value for key, value in out[0].items() if key not in ("k", "v")}
    return session.new_dict({**extras, "k": ref["k"].copy(), "v": ref["v"].copy()})


def _read_cache(
    report: CheckReport, session: SubmissionLink, cache: Handle, rows: int, d: int
) -> dict[str, Any]:
    now = session.get(cache)
    for key in ("k", "v"):
        if key not in now:
            raise Mismatch(f"after decode_step the cache has no {key!r} entry")
        value = now[key]
        if isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[0] == rows - 1:
            report.diagnose(NOT_APPENDED)
            had = f"{rows - 1} row" + ("s" if rows > 2 else "")
            raise Mismatch(f"cache[{key!r}] still has {had} after decode_step: {NOT_APPENDED}")
        _array(report, value, f"cache[{key!r}] after decode_step", (rows, d))
    return now


class _Battery:
    def __init__(self, session: SubmissionLink, seed: int | None) -> None:
        self.session = session
        self.report = CheckReport()
        self.rng = np.random.default_rng(seed)
        self.vocab, self.d = int(self.rng.integers(16, 25)), int(self.rng.choice([8, 12, 16]))
        self.params = _params(self.rng, self.vocab, self.d)
        self.last_handed: Cache = {}
        self.interleaving_mixed = False

    def tokens(self, n: int) -> list[int]:
        return [int(t) for t in self.rng.integers(self.vocab, size=n)]

    def test(self, name: str, body: Callable[[], None]) -> bool:
        return run_test(self.report, name, body)

    # prefill ------------------------------------------------------------------------------------

    def prefill_matches(self, t: int) -> None:
        _require(self.session, "prefill", "prefill(params, tokens)")
        tokens = self.tokens(t)
        out = self.session.call("prefill", self.params, tokens)
        if not isinstance(out, tuple | list) or len(out) != 2:
            raise Mismatch(f"prefill should return (cache, logits), got {type(out).__name__}")
        cache, logits = out
        if not isinstance(cache, dict):
            raise Mismatch(f"prefill's cache should be a dict with 'k' and 'v', got {type(cache).__name__}")
        want_cache, want_logits = prefill(self.params, tokens)
        x = self.params["E"][tokens]
        cache_variants = {
            CACHE_QUERIES: x @ self.params["W_q"],
            CACHE_EMBEDDINGS: x,
        }
        for key, other in (("k", "v"), ("v", "k")):
            if key not in cache:
                raise Mismatch(f"prefill's cache has no {key!r} entry (keys: {sorted(map(str, cache))})")
            got = _array(self.report, cache[key], f"prefill's cache[{key!r}]", (t, self.d))
            _compare(
                self.report,
                got,
                want_cache[key],
                f"cache[{key!r}]",
                {
                    **(cache_variants if key == "k" else {CACHE_EMBEDDINGS: x}),
                    CACHE_SWAPPED: want_cache[other],
                },
            )
        variants = prefill_variants(self.params, tokens)
        if isinstance(logits, np.ndarray) and logits.shape == (t, self.vocab) and t > 1:
            if _matching(logits, {ALL_ROWS: variants[ALL_ROWS]}):
                self.report.diagnose(ALL_ROWS)
                raise Mismatch(
                    f"prefill's logits have shape {logits.shape}, expected ({self.vocab},): {ALL_ROWS}"
                )
        got_logits = _array(self.report, logits, "prefill's logits", (self.vocab,))
        _compare(self.report, got_logits, want_logits, "prefill's logit vector", variants)

    # decode_step --------------------------------------------------------------------------------

    def change(self, past: dict[str, np.ndarray], *, always: bool = False) -> tuple[int | None, Cache]:
        """A copy of `past` to hand over: for about CHANGE_RATE of the calls (or always), one random
        row of k and v replaced by large random values, so that the logits move."""
        handed = {key: value.copy() for key, value in past.items()}
        if not always and self.rng.random() >= CHANGE_RATE:
            return None, handed
        row = int(self.rng.integers(len(past["k"])))
        handed["k"][row] = self.rng.normal(size=self.d) * 3
        handed["v"][row] = self.rng.normal(size=self.d) * 3
        return row, handed

    def step_on(self, cache: Handle, past: Cache, what: str, *, always: bool = False) -> np.ndarray:
        """One decode_step on the grader's `past` (written into `cache`, maybe with a row changed);
        checks the logits, and returns them. `past` becomes the true past after the step."""
        row, handed = self.change(past, always=always)
        self.session.setitem(cache, "k", handed["k"])
        self.session.setitem(cache, "v", handed["v"])
        token = self.tokens(1)[0]
        variants = decode_variants(self.params, token, handed["k"], handed["v"])
        after = dict(handed)
        want = decode_step(self.params, token, after)  # after: handed plus the new row
        unchanged = decode_step(self.params, token, past)  # appends the true new row to past
        got = _array(
            self.report, self.session.call("decode_step", self.params, token, cache), what, (self.vocab,)
        )
        if row is not None:
            what += f" (the grader had changed row {row} of the cache)"
            if close(_t(got), _t(unchanged)) and not close(_t(want), _t(unchanged)):
                self.report.diagnose(IGNORES_CACHE)
                raise _IgnoredChange(
                    f"the grader changed row {row} of cache['k'] and cache['v'] before calling "
                    f"decode_step, but your logits are those of the unchanged cache: {IGNORES_CACHE}"
                )
        _compare(self.report, got, want, what, variants)
        self.last_handed = after  # what the submission's cache must hold now
        return got

    def decode_matches(self, t: int, steps: int) -> None:
        _require(self.session, "decode_step", "decode_step(params, token, cache)")
        tokens = self.tokens(t)
        past, _ = prefill(self.params, tokens)
        cache = _their_cache(self.session, self.params, tokens, past)
        for step in range(steps):
            rows = t + step + 1
            self.step_on(cache, past, f"decode step {step + 1} ({rows} cached rows): the logit vector")
            now = _read_cache(self.report, self.session, cache, rows, self.d)
            for key in ("k", "v"):
                want = self.last_handed[key]
                _compare(self.report, now[key], want, f"cache[{key!r}] after decode step {step + 1}")

    def decode_reads_cache(self, t: int) -> None:
        """Like every other call, with the change guaranteed, on FRESH_CHANGED_CACHES new caches.

        Each first call on a fresh cache changes a random row: a submission that trusts the cache
        only after spotting a change in one row it watches escapes each with probability 1/t.
        """
        _require(self.session, "decode_step", "decode_step(params, token, cache)")
        for _ in range(FRESH_CHANGED_CACHES):
            tokens = self.tokens(t)
            past, _ = prefill(self.params, tokens)
            cache = _their_cache(self.session, self.params, tokens, past)
            self.step_on(cache, past, "with a grader-modified cache, the logit vector", always=True)

    def interleaved(self) -> None:
        _require(self.session, "decode_step", "decode_step(params, token, cache)")
        seqs = []
        for t in (2, 5):
            tokens = self.tokens(t)
            past, _ = prefill(self.params, tokens)
            seqs.append((past, _their_cache(self.session, self.params, tokens, past)))
        for step in range(2):
            for i, (past, cache) in enumerate(seqs):
                try:
                    self.step_on(cache, past, f"sequence {'AB'[i]}, step {step + 1}: the logit vector")
                except _IgnoredChange:
                    raise
                except Mismatch:  # neither right nor the unchanged cache's: the sequences mixed
                    self.interleaving_mixed = True
                    raise

    # generate_cached ----------------------------------------------------------------------------

    def distinguishing_prompt(self, t: int, n_new: int) -> list[int] | None:
        """A prompt of t tokens on which running its last token through decode_step again after
        prefill changes the greedy tokens (and every greedy choice is far from a tie); None when
        none turns up (greedy tokens of a small random model often agree anyway)."""
        for _ in range(200):
            prompt = self.tokens(t)
            if greedy_margin(self.params, prompt, n_new) <= 1e-6:
                continue
            if generate_last_token_twice(self.params, prompt, n_new) != generate_cached(
                self.params, prompt, n_new
            ):
                return prompt
        return None

    def generates(self, prompt: list[int], n_new: int) -> None:
        _require(self.session, ENTRY_POINT, "generate_cached(params, prompt, n_new)")
        want = generate_cached(self.params, prompt, n_new)
        got = self.session.call(ENTRY_POINT, self.params, prompt, n_new)
        if isinstance(got, torch.Tensor):
            self.report.diagnose(NOT_NUMPY)
        if not isinstance(got, list):
            raise Mismatch(f"generate_cached should return a list of ints, got {type(got).__name__}")
        if not all(type(tok) is int for tok in got):
            bad = next(tok for tok in got if type(tok) is not int)
            raise Mismatch(f"generate_cached's list should hold ints, found {type(bad).__name__} {bad!r:.40}")
        if got == want[len(prompt) :]:
            self.report.diagnose(NO_PROMPT)
            raise Mismatch(f"got only the {n_new} new tokens: {NO_PROMPT}")
        if len(got) != len(want):
            raise Mismatch(
                f"got {plural(len(got), 'token')}, expected {len(want)}: "
                f"the {plural(len(prompt), 'prompt token')}, then {n_new} new"
            )
        first = next((i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b), None)
        if first is not None:
            where = "a prompt token" if first < len(prompt) else f"new token {first - len(prompt) + 1}"
            hint = ""
            if got == generate_last_token_twice(self.params, prompt, n_new):
                self.report.diagnose(LAST_TOKEN_TWICE)
                hint = f": {LAST_TOKEN_TWICE}"
            raise Mismatch(
                f"token {first} ({where}) is {got[first]}, expected {want[first]}; expected {want}, got {got}"
                + hint
            )


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    b = _Battery(session, seed)
    for _ in range(20):  # keep the greedy choices far from ties, so rounding cannot flip a token
        prompts = [(b.tokens(1), 7), (b.tokens(4), 6), (b.tokens(7), 5)]
        if min(greedy_margin(b.params, p, n) for p, n in prompts) > 1e-6:
            break
        b.params = _params(b.rng, b.vocab, b.d)
    V, d = b.vocab, b.d
    t = int(b.rng.integers(3, 7))
    b.test(
        f"prefill over {t} tokens: cache k, v are ({t}, {d}), logits ({V},) for the last position",
        partial(b.prefill_matches, t),
    )
    b.test("prefill over a 1-token prompt", partial(b.prefill_matches, 1))
    ok = b.test(
        f"decode_step x3 after a {t}-token prefill: appends one row to k and v, logits match",
        partial(b.decode_matches, t, 3),
    )
    b.test("decode_step after a 1-token prompt", partial(b.decode_matches, 1, 2))
    b.test(
        "decode_step reads the past from the cache (a grader-modified cache changes the logits)",
        partial(b.decode_reads_cache, t),
    )
    if not b.test("two sequences decoded in turn, each with its own cache", b.interleaved) and (
        ok or b.interleaving_mixed
    ):
        b.report.diagnose(HIDDEN_STATE)
    for prompt, n_new in prompts:
        b.test(
            f"generate_cached(params, {prompt}, {n_new}) equals greedy decoding",
            partial(b.generates, prompt, n_new),
        )
    # A prompt chosen so that the tokens tell the last prompt token run twice from the right answer.
    tell = b.distinguishing_prompt(int(b.rng.integers(2, 6)), 6)
    if tell is not None:
        b.test(
            f"generate_cached(params, {tell}, 6): prefill has already cached the last prompt token",
            partial(b.generates, tell, 6),
        )
    cost_step = partial(
        numpy_cached_generation_cost.figure, b.session, b.rng, _params, partial(_their_cache, b.session)
    )
    figure_test(b.report, numpy_cached_generation_cost.NAME, cost_step)
    return b.report
