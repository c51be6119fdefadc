"""The cache calculator: GET /calculator (every setting in the URL) and GET /api/calculator."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import Field

from app.content.hardware import GPUS
from app.routes.public import Number, Public
from app.services.calculator import (
    ALL_MODELS,
    CACHE_DTYPES,
    CUSTOM,
    MAX_BATCH,
    MAX_CONTEXT,
    WEIGHT_DTYPES,
    CalcError,
    CalcInput,
    calculate,
    fmt_bytes,
    fmt_count,
    fmt_intensity,
    preset_for_figures,
)
from app.web import templates

router = APIRouter(prefix="/api/calculator", tags=["calculator"])
pages = APIRouter(prefix="/calculator", tags=["pages"], include_in_schema=False)
DEFAULTS = CalcInput()


def _int(field: str, text: str | None, default: int) -> int:
    """An integer field as a person types it ("8,192", " 4096 "); empty means the default."""
    text = (text or "").strip().replace(",", "").replace("_", "")
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise CalcError(field, f"{field} must be a whole number, not {text[:20]!r}") from None


@dataclass(frozen=True)
class CalcForm:
    """The form as the page shows it back: what was sent, and the default for a field left out.

    The one place the form's defaults live; `to_input` reads it as the calculator needs it (the
    page and the API alike). An empty number field stays empty on the page and counts as its
    default, as a person leaves it.
    """

    model: str = DEFAULTS.model
    gpu: str = DEFAULTS.gpu
    weights: str = DEFAULTS.weights
    cache: str = DEFAULTS.cache
    context: str = str(DEFAULTS.context)
    batch: str = str(DEFAULTS.batch)
    config: str = ""
    compare: tuple[str, ...] = ()

    @classmethod
    def from_query(
        cls,
        model: str | None,
        gpu: str | None,
        weights: str | None,
        cache: str | None,
        context: str | None,
        batch: str | None,
        config: str | None,
        compare: list[str] | None,
    ) -> CalcForm:
        blank = cls()
        pasted = (config or "").strip()
        return cls(
            # A pasted config.json is the model asked about, whatever the menu still says.
            model=CUSTOM if pasted else model or blank.model,
            gpu=gpu or blank.gpu,
            weights=weights or blank.weights,
            cache=cache or blank.cache,
            context=blank.context if context is None else context,
            batch=blank.batch if batch is None else batch,
            config=(config or "")[:20_000],
            compare=tuple(c for c in (compare or []) if c),
        )

    def to_input(self) -> CalcInput:
        return CalcInput(
            model=self.model,
            gpu=self.gpu,
            weights=self.weights,
            cache=self.cache,
            context=_int("context", self.context, DEFAULTS.context),
            batch=_int("batch", self.batch, DEFAULTS.batch),
            config=self.config,
            compare=self.compare,
        )


# The calculator's figures for one input, as GET /api/calculator answers them.
class CalcPublic(Public):
    model: str
    layers: int
    kv_heads: int
    head_dim: int
    params: int
    weight_bytes: Number
    bytes_per_token: int
    cache_bytes: int
    gpu: str
    gpu_bytes: Number
    free_bytes: Number
    sequences_fit: int
    min_time_per_token_ms: Number
    tokens_per_s_per_user: Number
    tokens_per_s_total: Number
    intensity_flops_per_byte: Number
    ridge_flops_per_byte: Number
    crossover_batch: Number
    bound: Literal["memory-bound", "compute-bound"]
    chart: dict[str, Any] = Field(description="the series of the page's chart")
    context_window: int | None = Field(description="the model's trained context (max_position_embeddings)")
    context_warning: str | None = Field(description="said when the context is past that window")


Text = Annotated[str | None, Query(max_length=40)]
Config = Annotated[
    str | None, Query(max_length=20_000, description="a pasted config.json, with model=custom")
]
Compare = Annotated[list[str] | None, Query(max_length=20, description="more models on the chart")]
# The API's query must fit the server's request line (64 KiB, uvicorn's httptools: past it a plain
# 400 "Invalid HTTP request received" before the app sees anything), whatever the schema allows:
# percent-encoded, a character is at most 12 bytes, so 4,000 of config (Llama 3.1 405B's
# config.json is under 1,000) and 20 menu names of 40 leave room to spare. The page keeps 20,000:
# a browser's form encodes a pasted config's ASCII in 1 to 3 bytes each.
ApiConfig = Annotated[
    str | None, Query(max_length=4_000, description="a pasted config.json, with model=custom")
]
ApiCompare = Annotated[
    list[Annotated[str, Field(max_length=40)]] | None,
    Query(max_length=20, description="more models on the chart (a name not on the menu is left out)"),
]


def _choice(described: str, choices: Iterable[str]) -> Any:
    """A menu of the API: its choices stated in the document ("" is the default, as the page's
    form sends a menu left alone); calculate() refuses anything else, naming the field."""
    return Query(max_length=40, description=described, json_schema_extra={"enum": ["", *choices]})


# A number of the API: an integer in the bounds calculate() checks, or "" for the default.
Context = Annotated[Annotated[int, Field(ge=1, le=MAX_CONTEXT)] | Literal[""] | None, Query()]
Batch = Annotated[Annotated[int, Field(ge=1, le=MAX_BATCH)] | Literal[""] | None, Query()]


@router.get("", response_model=CalcPublic)
def api_calculate(
    model: Annotated[
        str | None, _choice("a model of the menu, or custom with config", [*ALL_MODELS, CUSTOM])
    ] = None,
    gpu: Annotated[str | None, _choice("the GPU", GPUS)] = None,
    weights: Annotated[str | None, _choice("the weights' dtype", WEIGHT_DTYPES)] = None,
    cache: Annotated[str | None, _choice("the cache's dtype", CACHE_DTYPES)] = None,
    context: Context = None,
    batch: Batch = None,
    config: ApiConfig = None,
    compare: ApiCompare = None,
) -> CalcPublic:
    # The page's form sends its numbers as typed ("8,192"); the API takes integers.
    typed = {name: None if n is None else str(n) for name, n in (("context", context), ("batch", batch))}
    form = CalcForm.from_query(model, gpu, weights, cache, typed["context"], typed["batch"], config, compare)
    result = calculate(form.to_input())
    return CalcPublic.model_validate({**result.to_json(), "chart": result.chart})


@pages.get("", response_class=HTMLResponse)
def calculator_page(
    request: Request,
    model: Text = None,
    gpu: Text = None,
    weights: Text = None,
    cache: Text = None,
    context: Text = None,
    batch: Text = None,
    config: Config = None,
    compare: Compare = None,
) -> HTMLResponse:
    form = CalcForm.from_query(model, gpu, weights, cache, context, batch, config, compare)
    result, error = None, None
    try:
        result = calculate(form.to_input())
    except CalcError as exc:
        error = {"field": exc.field, "message": str(exc)}
    return templates.TemplateResponse(
        request,
        "calculator/index.html",
        {
            "form": form,
            "result": result,
            "error": error,
            "models": ALL_MODELS,
            "custom": CUSTOM,
            "gpus": GPUS,
            "weight_dtypes": WEIGHT_DTYPES,
            "cache_dtypes": CACHE_DTYPES,
            "fmt_bytes": fmt_bytes,
            "fmt_count": fmt_count,
            "fmt_intensity": fmt_intensity,
        },
    )


def calculator_url(figure_names: list[str]) -> str | None:
    """The calculator preset to a card's own case, for cards whose figures name a model's cache."""
    preset = preset_for_figures(figure_names)
    return "/calculator?" + urlencode(preset) if preset else None
