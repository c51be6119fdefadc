"""The cache calculator: one model, one GPU, two dtypes, a context and a batch, and what follows.

Every number comes from the bank's own arithmetic (app/content/shapes.py for the model
shapes and parameter counts, graders/reference/kv_memory.py for the cache, and
app/content/inference_math.py for the roofline), so the page and the cards cannot disagree.
A pasted config.json is read with the same reader the kv-cache-bytes challenge grades.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from app.content import inference_math as im
from app.content.hardware import GPU, GPUS
from app.content.shapes import GIB, LATER_MODELS, MODELS, ModelShape
from app.services.errors import InvalidInput
from graders.reference.kv_memory import cache_shape_from_config, kv_cache_bytes

ALL_MODELS: dict[str, ModelShape] = {**MODELS, **LATER_MODELS}
WEIGHT_DTYPES: dict[str, float] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
CACHE_DTYPES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
CUSTOM = "custom"
MAX_CONTEXT = 10_000_000
MAX_BATCH = 100_000
# Each bank model's trained context window: max_position_embeddings (n_positions for GPT-2) in its
# Hugging Face config.json. A context past it still has a cache size, but not a model that uses it.
CONTEXT_WINDOWS: dict[str, int] = {
    "gpt2_small": 1024,
    "llama2_7b": 4096,
    "mistral_7b": 32768,
    "llama3_8b": 8192,
    "llama2_70b": 4096,
    "qwen25_7b": 131072,
    "gemma2_9b": 8192,
    "mixtral_8x7b": 32768,
    "llama31_70b": 131072,
    "llama31_405b": 131072,
}
CHART_CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
GPT2_POSITIONS = 1024


@dataclass(frozen=True)
class CalcInput:
    model: str = "llama3_8b"
    gpu: str = "h100_sxm"
    weights: str = "bf16"
    cache: str = "bf16"
    context: int = 4096
    batch: int = 1
    config: str = ""  # a pasted config.json, when model == "custom"
    compare: tuple[str, ...] = ()  # more models on the chart


@dataclass
class CalcResult:
    input: CalcInput
    model_name: str
    layers: int
    kv_heads: int
    head_dim: int
    params: int
    weight_bytes: float
    bytes_per_token: int
    cache_bytes: int
    gpu: GPU
    free_bytes: float
    sequences_fit: int
    step_s: float
    tokens_per_s_per_user: float
    tokens_per_s_total: float
    intensity: float
    crossover_batch: float
    bound: str  # "memory-bound" or "compute-bound"
    chart: dict[str, Any] = field(default_factory=dict)
    window: int | None = None  # the model's trained context, where its config says it
    warning: str | None = None  # the context is past that window

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model_name,
            "layers": self.layers,
            "kv_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "params": self.params,
            "weight_bytes": self.weight_bytes,
            "bytes_per_token": self.bytes_per_token,
            "cache_bytes": self.cache_bytes,
            "gpu": self.gpu.name,
            "gpu_bytes": self.gpu.hbm_bytes,
            "free_bytes": self.free_bytes,
            "sequences_fit": self.sequences_fit,
            "context_window": self.window,
            "context_warning": self.warning,
            "min_time_per_token_ms": self.step_s * 1000,
            "tokens_per_s_per_user": self.tokens_per_s_per_user,
            "tokens_per_s_total": self.tokens_per_s_total,
            "intensity_flops_per_byte": self.intensity,
            "ridge_flops_per_byte": self.gpu.ridge_flops_per_byte,
            "crossover_batch": self.crossover_batch,
            "bound": self.bound,
        }


class CalcError(InvalidInput, ValueError):
    """A field the user can fix: `field` names it, `str()` says how (what the page shows beside the
    field). Its `message`, what the API answers, leads with the field's name as it always has."""

    field: str  # always names a field

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}", field_name)
        self.hint = message

    def __str__(self) -> str:
        return self.hint


def model_params(model: ModelShape) -> int:
    """Parameters in memory: GPT-2's own layout for GPT-2, the Llama-style count for the rest."""
    if model.name.startswith("GPT-2"):
        d = model.hidden
        per_layer = 4 * d * d + 4 * d + 2 * d * model.intermediate + model.intermediate + d + 4 * d
        return model.layers * per_layer + (model.vocab + GPT2_POSITIONS) * d + 2 * d  # head tied to wte
    return model.llama_params()


def shape_from_config(text: str) -> ModelShape:
    """A ModelShape from a pasted config.json (Llama- or GPT-2-style keys); CalcError says what is wrong."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CalcError("config", f"config.json is not valid JSON: {exc.msg} (line {exc.lineno})") from exc
    if not isinstance(config, dict):
        raise CalcError("config", "config.json must be a JSON object")
    try:
        layers, kv_heads, head_dim = cache_shape_from_config(config)
    except (ValueError, TypeError) as exc:
        raise CalcError("config", str(exc)) from exc
    heads = int(config.get("num_attention_heads") or config.get("n_head") or 0)
    hidden = int(config.get("hidden_size") or config.get("n_embd") or 0)
    if min(layers, kv_heads, head_dim, heads, hidden) <= 0 or max(layers, kv_heads, heads) > 100_000:
        raise CalcError("config", "layers, heads, head_dim and hidden size must be positive integers")
    experts = config.get("num_local_experts") or config.get("n_routed_experts") or 1
    if "n_embd" in config and "hidden_size" not in config:  # GPT-2 style: 4x MLP, head tied to wte
        vocab = int(config.get("vocab_size") or 50257)
        return ModelShape("GPT-2 (pasted config.json)", layers, heads, kv_heads, hidden, vocab, 4 * hidden)
    return ModelShape(
        name=str(config.get("_name_or_path") or config.get("model_type") or "pasted config.json")[:80],
        layers=layers,
        q_heads=heads,
        kv_heads=kv_heads,
        hidden=hidden,
        vocab=int(config.get("vocab_size") or 0),
        intermediate=int(config.get("intermediate_size") or 4 * hidden),
        head_dim_override=head_dim,
        n_experts=int(experts),
        tied_embeddings=bool(config.get("tie_word_embeddings", False)),
    )


def _pick(name: str, value: str, allowed: dict[str, Any]) -> str:
    if value not in allowed:
        raise CalcError(name, f"choose one of {', '.join(allowed)}")
    return value


def context_window(inp: CalcInput) -> int | None:
    """The model's trained context: the bank's table, or the pasted config's own key."""
    if inp.model != CUSTOM:
        return CONTEXT_WINDOWS.get(inp.model)
    try:
        config = json.loads(inp.config)
    except ValueError:
        return None
    value = (
        config.get("max_position_embeddings") or config.get("n_positions")
        if isinstance(config, dict)
        else None
    )
    return value if isinstance(value, int) and value > 0 else None


def _model(inp: CalcInput) -> ModelShape:
    if inp.model == CUSTOM:
        if not inp.config.strip():
            raise CalcError("config", "paste a config.json to use your own model")
        return shape_from_config(inp.config)
    return ALL_MODELS[_pick("model", inp.model, ALL_MODELS)]


def cache_curve(model: ModelShape, cache_bpe: int, batch: int) -> list[list[float]]:
    """(context, GiB of cache for the batch) at the chart's context lengths."""
    return [
        [n, kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, n, batch, cache_bpe) / GIB]
        for n in CHART_CONTEXTS
    ]


def calculate(inp: CalcInput) -> CalcResult:
    """Every figure of the page for one input; CalcError names the field at fault."""
    gpu = GPUS[_pick("gpu", inp.gpu, GPUS)]
    w_bpe = WEIGHT_DTYPES[_pick("weights", inp.weights, WEIGHT_DTYPES)]
    c_bpe = CACHE_DTYPES[_pick("cache", inp.cache, CACHE_DTYPES)]
    if not 1 <= inp.context <= MAX_CONTEXT:
        raise CalcError("context", f"context must be between 1 and {MAX_CONTEXT:,} tokens")
    if not 1 <= inp.batch <= MAX_BATCH:
        raise CalcError("batch", f"batch must be between 1 and {MAX_BATCH:,}")
    model = _model(inp)
    window = context_window(inp)
    params = model_params(model)
    weight_bytes = params * w_bpe
    per_token = kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, 1, 1, c_bpe)
    cache = per_token * inp.context * inp.batch
    free = gpu.hbm_bytes - weight_bytes
    fit = im.sequences_that_fit(free, per_token * inp.context) if free > 0 else 0
    # One decode step reads every weight once and every sequence's cache once (the bandwidth floor).
    step = im.min_time_per_token(weight_bytes, cache, gpu)
    intensity = im.decode_intensity(inp.batch, w_bpe)
    crossover = im.crossover_batch(gpu, w_bpe)
    series = [{"label": f"{model.name}, batch {inp.batch}", "points": cache_curve(model, c_bpe, inp.batch)}]
    for key in inp.compare:
        if key in ALL_MODELS and key != inp.model:
            other = ALL_MODELS[key]
            series.append(
                {"label": f"{other.name}, batch {inp.batch}", "points": cache_curve(other, c_bpe, inp.batch)}
            )
    chart = {
        "title": f"KV cache against context ({inp.cache})",
        "x_label": "context (tokens)",
        "y_label": "GiB",
        "series": series,
        "hlines": [
            {"label": f"{gpu.name} memory ({gpu.hbm_bytes / GIB:.1f} GiB)", "y": gpu.hbm_bytes / GIB},
            {"label": "memory left beside the weights", "y": max(free, 0) / GIB},
        ],
    }
    return CalcResult(
        input=inp,
        model_name=model.name,
        layers=model.layers,
        kv_heads=model.kv_heads,
        head_dim=model.head_dim,
        params=params,
        weight_bytes=weight_bytes,
        bytes_per_token=per_token,
        cache_bytes=cache,
        gpu=gpu,
        free_bytes=free,
        sequences_fit=fit,
        step_s=step,
        tokens_per_s_per_user=1 / step,
        tokens_per_s_total=inp.batch / step,
        intensity=intensity,
        crossover_batch=crossover,
        bound="memory-bound" if intensity < gpu.ridge_flops_per_byte else "compute-bound",
        chart=chart,
        window=window,
        warning=(
            f"{model.name} was trained on at most {window:,} tokens (max_position_embeddings in its "
            f"config.json): a context of {inp.context:,} is past its window, so the cache size is "
            "arithmetic only, not a case the model serves."
            if window is not None and inp.context > window
            else None
        ),
    )


def _preset_for(name: str) -> dict[str, str] | None:
    """Calculator settings from one figure name: llama2_7b_gib_4k_x32, gpt2_small_gib_1024x64_fp32."""
    for key in sorted(ALL_MODELS, key=len, reverse=True):
        if not name.startswith(key + "_"):
            continue
        rest = name[len(key) + 1 :]
        preset = {"model": key}
        ctx = re.match(r"gib_(\d+)(k?)(?:x(\d+))?", rest)
        if ctx:
            preset["context"] = str(int(ctx.group(1)) * (1024 if ctx.group(2) else 1))
            if ctx.group(3):
                preset["batch"] = ctx.group(3)
        batch = re.search(r"_x(\d+)$", rest)
        if batch:
            preset["batch"] = batch.group(1)
        if key == "gpt2_small":
            preset.update(weights="fp32", cache="fp32")
        return preset
    return None


def preset_for_figures(names: list[str]) -> dict[str, str] | None:
    """Calculator settings for a card, from the figures it declares: the figure that pins the most
    (a context and a batch over a model alone); a context never past the model's window."""
    presets = [p for p in (_preset_for(name) for name in names) if p]
    if not presets:
        return None
    best = max(presets, key=len)  # max keeps the first of equals: the card's order
    window = CONTEXT_WINDOWS.get(best["model"])
    if "context" not in best and window is not None and window < CalcInput.context:
        best["context"] = str(window)
    return best


def fmt_bytes(n: float) -> str:
    """Binary units written as the cards write them, so a card's case reads the same here: GiB with
    two decimals from half a GiB up ("0.50 GiB" for Llama 3 8B's 4k cache, "4.50 GiB"), MiB and KiB
    without trailing zeros ("512 KiB", "22 KiB", "1.5 MiB")."""
    if abs(n) >= 2**29:
        return f"{n / 2**30:,.2f} GiB"
    for unit, size in (("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:,.2f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{n:,.0f} bytes"


def fmt_intensity(x: float) -> str:
    """FLOP per byte: whole numbers from 10 up, two significant digits below (0.5, not 0)."""
    return f"{x:,.0f}" if x >= 10 else f"{x:.2g}"


def fmt_count(n: float) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.2f}B"
    if n >= 1e6:
        return f"{n / 1e6:.1f}M"
    return f"{n:,.0f}"
