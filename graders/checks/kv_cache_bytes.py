"""kv-cache-bytes: KV-cache memory in exact integer bytes, from a shape and from a config.json.

Every test calls the submission with fresh random sizes (plus the real model shapes
of the seeds) and compares with graders.reference.kv_memory. A wrong number is
matched against the usual wrong formulas so the feedback can name the mistake.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graders.checks.report import CheckReport, Mismatch, run_test
from graders.reference.kv_memory import kv_cache_bytes
from graders.sandbox.protocol import SubmissionError, SubmissionLink

SLUG = "kv-cache-bytes"
ENTRY_POINT = "kv_cache_bytes"
FROM_CONFIG = "kv_cache_bytes_from_config"

# Known mistakes: each phrase is what report.diagnosis carries when the output gives it away.
FACTOR_TWO = "forgot the factor 2 for keys and values"
QUERY_HEADS = "used query heads instead of key-value heads (num_key_value_heads)"
HIDDEN_AS_HEAD_DIM = "head_dim taken as hidden_size instead of hidden_size // num_attention_heads"
EXPLICIT_HEAD_DIM_IGNORED = "ignored the config's own head_dim"
FLOAT_RESULT = "float arithmetic (returned a float)"
FLOAT_ROUNDED = "float arithmetic (the result was rounded)"
BATCH_IGNORED = "ignored batch"
BPE_IGNORED = "bytes_per_element ignored"
BPE_TWICE = "bytes_per_element applied twice"
SEQ_IGNORED = "ignored seq_len (computed one token's worth)"
CONFIG_DTYPE = "used the config's torch_dtype instead of bytes_per_element"
ABSENT_KEY = "an absent optional key (num_key_value_heads, head_dim) must fall back to its default"
NULL_KEY = "an optional key set to null (None) must fall back to its default, like an absent one"
GPT2_KEYS = "GPT-2-style keys (n_layer, n_head, n_embd) are not read"
GPT2_SWAPPED = "n_layer and n_head are swapped: n_layer is the number of layers, n_head the heads per layer"
KNOWN_MISTAKES = (
    FACTOR_TWO, QUERY_HEADS, HIDDEN_AS_HEAD_DIM, EXPLICIT_HEAD_DIM_IGNORED, FLOAT_RESULT, FLOAT_ROUNDED,
    BATCH_IGNORED, BPE_IGNORED, BPE_TWICE, SEQ_IGNORED, CONFIG_DTYPE, ABSENT_KEY, NULL_KEY, GPT2_KEYS,
    GPT2_SWAPPED,
)  # fmt: skip

_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


@dataclass
class Shape:
    """What a config resolves to, plus what the wrong formulas would read from it."""

    layers: int
    q_heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    explicit_head_dim: bool = False
    gqa_key: bool = True  # the config names num_key_value_heads
    torch_dtype: str | None = None

    def config(self, style: str = "llama", null_keys: tuple[str, ...] = ()) -> dict[str, Any]:
        if style == "gpt2":
            cfg: dict[str, Any] = {"n_layer": self.layers, "n_head": self.q_heads, "n_embd": self.hidden}
        else:
            cfg = {
                "num_hidden_layers": self.layers,
                "num_attention_heads": self.q_heads,
                "hidden_size": self.hidden,
            }
            if self.gqa_key:
                cfg["num_key_value_heads"] = self.kv_heads
            if self.explicit_head_dim:
                cfg["head_dim"] = self.head_dim
        for key in null_keys:
            cfg[key] = None
        if self.torch_dtype:
            cfg["torch_dtype"] = self.torch_dtype
        cfg["vocab_size"] = 32000  # an unrelated key, as real configs have many
        return cfg


@dataclass
class Case:
    """One call: its arguments, the exact answer and the wrong answers worth naming."""

    want: int
    variants: dict[str, set[int]] = field(default_factory=dict)

    def add(self, name: str, value: int) -> None:
        if value != self.want:
            self.variants.setdefault(name, set()).add(value)


def _formula_case(layers: int, kv_heads: int, head_dim: int, seq_len: int, batch: int, bpe: int) -> Case:
    case = Case(kv_cache_bytes(layers, kv_heads, head_dim, seq_len, batch, bpe))
    case.add(FACTOR_TWO, case.want // 2)
    case.add(BATCH_IGNORED, case.want // batch)
    case.add(BPE_IGNORED, case.want // bpe)
    case.add(BPE_IGNORED, case.want // bpe * 2)  # hard-coded fp16
    case.add(BPE_TWICE, case.want * bpe)
    case.add(SEQ_IGNORED, case.want // seq_len)
    return case


def _config_case(shape: Shape, seq_len: int, batch: int, bpe: int) -> Case:
    case = _formula_case(shape.layers, shape.kv_heads, shape.head_dim, seq_len, batch, bpe)

    def wrong(kv_heads: int, head_dim: int) -> int:
        return kv_cache_bytes(shape.layers, kv_heads, head_dim, seq_len, batch, bpe)

    case.add(QUERY_HEADS, wrong(shape.q_heads, shape.head_dim))
    case.add(HIDDEN_AS_HEAD_DIM, wrong(shape.kv_heads, shape.hidden))
    # hidden_size // num_key_value_heads as the head size gives exactly the QUERY_HEADS number
    # (n_kv * hidden // n_kv == n_q * hidden // n_q), so that mistake is reported under QUERY_HEADS.
    if shape.explicit_head_dim:
        case.add(EXPLICIT_HEAD_DIM_IGNORED, wrong(shape.kv_heads, shape.hidden // shape.q_heads))
    if shape.torch_dtype in _DTYPE_BYTES:
        case.add(CONFIG_DTYPE, case.want // bpe * _DTYPE_BYTES[shape.torch_dtype])
    return case


def _gpt2_case(shape: Shape, seq_len: int, batch: int, bpe: int) -> Case:
    """A GPT-2-style config's case, with n_layer and n_head read the wrong way round as a variant."""
    case = _config_case(shape, seq_len, batch, bpe)
    layers, heads = shape.q_heads, shape.layers  # the swap
    case.add(GPT2_SWAPPED, kv_cache_bytes(layers, heads, shape.hidden // heads, seq_len, batch, bpe))
    case.add(GPT2_SWAPPED, 2 * layers * shape.hidden * seq_len * batch * bpe)  # MHA's 2 * n_layer * n_embd
    return case


def _random_gpt2(rng: random.Random) -> Shape:
    """A GPT-2-style MHA shape whose layer and head counts differ and whose n_layer does not divide
    n_embd: with the two swapped, n_embd // n_layer as the head size then changes the answer too."""
    heads = rng.choice([8, 12, 16, 20, 25, 32])
    head_dim = rng.choice([64, 80, 128])
    layers = rng.choice([n for n in range(4, 49) if n != heads and (heads * head_dim) % n])
    return Shape(layers, heads, heads, head_dim, heads * head_dim, gqa_key=False)


# Real shapes, from the models' config.json files as quoted in the seeds.
GPT2_SMALL = Shape(12, 12, 12, 64, 768, gqa_key=False)
GPT2_MEDIUM = Shape(24, 16, 16, 64, 1024, gqa_key=False)  # n_layer 24, n_head 16, n_embd 1024
LLAMA2_7B = Shape(32, 32, 32, 128, 4096, gqa_key=False)
MISTRAL_7B = Shape(32, 32, 8, 128, 4096)
LLAMA3_8B = Shape(32, 32, 8, 128, 4096, torch_dtype="bfloat16")
LLAMA2_70B = Shape(80, 64, 8, 128, 8192)


def _random_shape(rng: random.Random, *, explicit_head_dim: bool = False) -> Shape:
    q_heads = rng.choice([12, 16, 24, 32, 40, 48, 64])
    kv_heads = rng.choice([d for d in range(2, q_heads // 2 + 1) if q_heads % d == 0])
    head_dim = rng.choice([64, 128])
    hidden = q_heads * head_dim
    if explicit_head_dim:
        # A head size that is not hidden_size // num_attention_heads, and not 2x or 1/2x of it,
        # so that ignoring it cannot be mistaken for another known mistake.
        head_dim = rng.choice([80, 96, 160, 192])
    layers = rng.randint(3, 95)
    return Shape(layers, q_heads, kv_heads, head_dim, hidden, explicit_head_dim=explicit_head_dim)


def _judge(report: CheckReport, got: Any, case: Case) -> None:
    """Raise Mismatch (and diagnose a known mistake) unless `got` is exactly the int `case.want`."""
    if isinstance(got, float):
        report.diagnose(FLOAT_RESULT)
        raise Mismatch(
            f"returned the float {got!r}, expected the int {case.want:,}: "
            "byte counts are exact integers, so multiply ints and divide with //"
        )
    if type(got) is not int:
        raise Mismatch(f"should return an int number of bytes, got {type(got).__name__} {got!r:.80}")
    if got == case.want:
        return
    names = sorted(name for name, values in case.variants.items() if got in values)
    if len(names) == 1:
        report.diagnose(names[0])
    hint = f". That is the number a known mistake gives: {names[0]}" if len(names) == 1 else ""
    if not names and case.want > 2**53 and abs(got - case.want) <= case.want * 2**-50:
        report.diagnose(FLOAT_ROUNDED)
        hint = ": off by a rounding error, so some step went through a float (use // not /)"
    # No ratio for a zero (or negative) count: "0x the right answer" says nothing the numbers do not.
    ratio = f", {got / case.want:.4g}x the right answer" if case.want and got > 0 else ""
    raise Mismatch(f"got {got:,} bytes, expected {case.want:,}{ratio}{hint}")


def _test(
    report: CheckReport,
    name: str,
    session: SubmissionLink,
    fn: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    case: Case,
) -> None:
    def body() -> None:
        if not session.has(fn):
            raise Mismatch(f"define {fn} at the top level of your file (see the prompt for its signature)")
        try:
            got = session.call(fn, *args, **kwargs)
        except SubmissionError as exc:
            mistake = _explain_error(exc)
            if mistake:
                report.diagnose(mistake)
                raise Mismatch(f"your code raised {exc}; {mistake}") from None
            raise
        _judge(report, got, case)

    run_test(report, name, body)


def _explain_error(exc: SubmissionError) -> str | None:
    """The known mistake behind an exception raised on a config, if the message gives it away."""
    if exc.type_name == "KeyError" and any(k in exc.message for k in ("num_key_value_heads", "head_dim")):
        return ABSENT_KEY
    if exc.type_name == "KeyError" and any(
        k in exc.message for k in ("num_hidden_layers", "num_attention_heads", "hidden_size")
    ):
        return GPT2_KEYS
    if exc.type_name == "TypeError" and "NoneType" in exc.message:
        return NULL_KEY
    return None


def _beyond_float(make: Callable[[], tuple[Case, Any]]) -> tuple[Case, Any]:
    """Draw sizes until the exact byte count is an int that a float64 cannot hold (but int64 can)."""
    for _ in range(10_000):
        case, extra = make()
        if float(case.want) != case.want and case.want < 2**62:
            return case, extra
    raise RuntimeError("could not draw a byte count beyond float precision")  # pragma: no cover


def _odd(rng: random.Random, low: int, high: int) -> int:
    return rng.randint(low, high) | 1


@dataclass
class Probe:
    name: str
    fn: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    case: Case


def _probes(rng: random.Random) -> list[Probe]:
    """The battery, with fresh sizes on every run."""
    probes: list[Probe] = []

    def add(name: str, fn: str, args: tuple[Any, ...], kwargs: dict[str, Any], case: Case) -> None:
        probes.append(Probe(name, fn, args, kwargs, case))

    # kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_element=2)
    add(
        "kv_cache_bytes: GPT-2 small in fp32 is 72 KiB per token",
        ENTRY_POINT, (12, 12, 64, 1), {"batch": 1, "bytes_per_element": 4},
        _formula_case(12, 12, 64, 1, 1, 4),
    )  # fmt: skip
    seq = rng.randint(1000, 9000)
    add(
        f"kv_cache_bytes: Llama-2-70B shape, {seq:,} tokens, defaults (batch 1, fp16)",
        ENTRY_POINT, (80, 8, 128, seq), {}, _formula_case(80, 8, 128, seq, 1, 2),
    )  # fmt: skip
    for bpe in (1, 4):
        layers, kv, hd = rng.randint(2, 96), rng.choice([1, 2, 4, 8, 16]), rng.choice([64, 96, 128])
        seq, batch = rng.randint(17, 40000), rng.randint(3, 64)
        add(
            f"kv_cache_bytes({layers}, {kv}, {hd}, {seq}, batch={batch}, bytes_per_element={bpe})",
            ENTRY_POINT, (layers, kv, hd, seq), {"batch": batch, "bytes_per_element": bpe},
            _formula_case(layers, kv, hd, seq, batch, bpe),
        )  # fmt: skip

    def big_formula() -> tuple[Case, Any]:
        args = (_odd(rng, 41, 125), rng.choice([5, 7, 9]), rng.choice([80, 96]), _odd(rng, 10**8, 2 * 10**9),
                _odd(rng, 1001, 99999), rng.choice([1, 2, 4]))  # fmt: skip
        return _formula_case(*args), args

    case, args = _beyond_float(big_formula)
    add(
        f"kv_cache_bytes: beyond float precision, exact ({args[3]:,} tokens, batch {args[4]:,})",
        ENTRY_POINT, args, {}, case,
    )  # fmt: skip

    # kv_cache_bytes_from_config(config, seq_len, batch=1, bytes_per_element=2)
    seq = rng.choice([2048, 4096, 8192])
    add(
        f"from_config: Llama-2-7B (no num_key_value_heads, so MHA), {seq:,} tokens",
        FROM_CONFIG, (LLAMA2_7B.config(), seq), {}, _config_case(LLAMA2_7B, seq, 1, 2),
    )  # fmt: skip
    batch = rng.randint(5, 40)
    add(
        f"from_config: Mistral-7B (8 KV heads for 32 query heads), 4,096 tokens, batch {batch}",
        FROM_CONFIG, (MISTRAL_7B.config(), 4096), {"batch": batch}, _config_case(MISTRAL_7B, 4096, batch, 2),
    )  # fmt: skip
    add(
        "from_config: Llama-3-8B (its torch_dtype bfloat16 plays no part), 32,768 tokens",
        FROM_CONFIG, (LLAMA3_8B.config(), 32768), {}, _config_case(LLAMA3_8B, 32768, 1, 2),
    )  # fmt: skip
    seq, batch = rng.randint(1, 300), rng.randint(3, 9)
    add(
        f"from_config: Llama-2-70B, {seq} tokens, batch {batch}, positional arguments",
        FROM_CONFIG, (LLAMA2_70B.config(), seq, batch, 2), {}, _config_case(LLAMA2_70B, seq, batch, 2),
    )  # fmt: skip
    seq = rng.randint(100, 1024)
    add(
        f"from_config: GPT-2 small (n_layer, n_head, n_embd) in fp32, {seq} tokens",
        FROM_CONFIG, (GPT2_SMALL.config("gpt2"), seq), {"bytes_per_element": 4},
        _config_case(GPT2_SMALL, seq, 1, 4),
    )  # fmt: skip
    seq, batch = rng.randint(100, 1024), rng.randint(2, 9)
    add(
        f"from_config: GPT-2 medium (n_layer=24, n_head=16, n_embd=1024), {seq} tokens, batch {batch}",
        FROM_CONFIG, (GPT2_MEDIUM.config("gpt2"), seq), {"batch": batch},
        _gpt2_case(GPT2_MEDIUM, seq, batch, 2),
    )  # fmt: skip
    shape = _random_gpt2(rng)
    seq = rng.randint(50, 5000)
    add(
        f"from_config: a GPT-2-style config with n_layer={shape.layers}, n_head={shape.q_heads}, "
        f"n_embd={shape.hidden}, {seq} tokens",
        FROM_CONFIG, (shape.config("gpt2"), seq), {"bytes_per_element": 4}, _gpt2_case(shape, seq, 1, 4),
    )  # fmt: skip
    shape = _random_shape(rng)
    shape.gqa_key, shape.kv_heads = False, shape.q_heads  # MHA, so 4x cannot mean "query heads"
    shape.torch_dtype = "float32"
    seq = rng.randint(50, 5000)
    add(
        f"from_config: torch_dtype float32 in the config, an 8-bit cache (bytes_per_element=1), {seq} tokens",
        FROM_CONFIG, (shape.config(), seq), {"bytes_per_element": 1}, _config_case(shape, seq, 1, 1),
    )  # fmt: skip
    shape = _random_shape(rng)
    shape.gqa_key, shape.kv_heads = False, shape.q_heads  # MHA: the KV heads default to the query heads
    seq = rng.randint(50, 5000)
    add(
        f"from_config: num_key_value_heads is null (MHA), {shape.q_heads} heads, {seq} tokens",
        FROM_CONFIG, (shape.config(null_keys=("num_key_value_heads",)), seq), {},
        _config_case(shape, seq, 1, 2),
    )  # fmt: skip
    shape = _random_shape(rng)
    seq, batch = rng.randint(50, 5000), rng.randint(3, 12)
    add(
        f"from_config: head_dim is null, {shape.q_heads} query and {shape.kv_heads} KV heads, batch {batch}",
        FROM_CONFIG, (shape.config(null_keys=("head_dim",)), seq), {"batch": batch, "bytes_per_element": 4},
        _config_case(shape, seq, batch, 4),
    )  # fmt: skip
    shape = _random_shape(rng, explicit_head_dim=True)
    seq = rng.randint(50, 5000)
    add(
        f"from_config: head_dim={shape.head_dim} given, hidden_size={shape.hidden}, {shape.q_heads} heads",
        FROM_CONFIG, (shape.config(), seq), {"bytes_per_element": 1}, _config_case(shape, seq, 1, 1),
    )  # fmt: skip

    def big_config() -> tuple[Case, Any]:
        shape = _random_shape(rng)
        shape.layers = _odd(rng, 41, 125)
        seq, batch = _odd(rng, 10**8, 2 * 10**9), _odd(rng, 1001, 99999)
        return _config_case(shape, seq, batch, 2), (shape.config(), seq, batch)

    case, args = _beyond_float(big_config)
    add(
        f"from_config: beyond float precision, exact ({args[1]:,} tokens, batch {args[2]:,})",
        FROM_CONFIG, args, {}, case,
    )  # fmt: skip
    return probes


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    report = CheckReport()
    for p in _probes(random.Random(seed)):
        _test(report, p.name, session, p.fn, p.args, p.kwargs, p.case)
    return report
