"""The challenge page's Run: the visible examples and a custom input (graders/examples), JSON API.

    GET  /api/challenges/{slug}/examples   the examples and the custom-input schema
    POST /api/challenges/{slug}/run        run code on them; the results, the reference beside them

A Run is answered in the same request (no queue, no row stored: it is a try, not an attempt)
but it runs in a worker thread, so the event loop stays free; see app/services/challenge_runs.py
for why at most one Run per visitor runs at a time. Same size limit as a submission (413), its
own per-minute counts at the submissions' rate per visitor and at runs_per_address_per_minute
per client address (429), its own sandbox slots (app/services/challenge_runs.py); a guest can run.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field, StrictBool, StrictFloat, StrictInt
from starlette.concurrency import run_in_threadpool

from app.cookie_session import guest_token
from app.deps import (
    ChallengeDep,
    RunIpLimiter,
    RunsDep,
    SettingsDep,
    SubmitLimiter,
    Visitor,
    client_address,
)
from app.services import challenge_runs
from app.services.rate_limits import refuse_too_fast
from app.validation import ApiModel, SourceCode, refuse_oversized
from app.web import templates

router = APIRouter(prefix="/api/challenges", tags=["challenges"])

Number = StrictInt | StrictFloat | StrictBool  # bool first would turn 1 into True; "1" is no number


class RunBody(ApiModel):
    code: SourceCode = Field(description="Python source defining the challenge's entry point")
    input: dict[str, Number] | None = Field(
        default=None,
        description="The custom input, {parameter: value}; parameters left out take their defaults; "
        "null runs the examples alone",
    )


class ParamOut(BaseModel):
    name: str
    label: str
    kind: Literal["int", "float", "bool"]
    default: Number
    minimum: Number | None
    maximum: Number | None
    help: str


class ExampleOut(BaseModel):
    name: str = Field(description="what the example is about, in words")
    description: str = Field(description="its input in numbers")
    input: dict[str, Number]


class RunSchemaOut(BaseModel):
    challenge: str
    summary: str = Field(description="what one case does")
    params: list[ParamOut]
    examples: list[ExampleOut]


class SummaryOut(BaseModel):
    text: str
    shape: list[int] | None
    dtype: str | None
    leading: list[float | int] = Field(description="the first few values, flattened")


class MismatchOut(BaseModel):
    index: list[int]
    got: float | int
    expected: float | int


class TraceStepOut(BaseModel):
    step: str = Field(description="the call of the script: add A(8, 3), or step")
    got: str = Field(description="what the submission answered")
    expected: str = Field(description="what the reference answered")
    differs: bool
    first: bool = Field(description="the first row that differs")


class OutputOut(BaseModel):
    what: str = Field(description="the output compared, with its shape")
    passed: bool
    message: str
    expected: SummaryOut = Field(description="the reference's output")
    got: SummaryOut = Field(description="the submission's output")
    max_abs_diff: float | None
    tolerance: str = Field(description='"exact", or the allclose tolerances used')
    first_mismatch: MismatchOut | None
    trace: list[TraceStepOut] | None = Field(
        default=None, description="a step-by-step trace beside the reference's (the scheduler's Run)"
    )


class ReferenceOut(BaseModel):
    what: str = Field(description="the output, with its shape")
    expected: SummaryOut = Field(description="the reference's output")


class CaseOut(BaseModel):
    name: str
    description: str
    input: dict[str, Number]
    passed: bool
    message: str
    outputs: list[OutputOut]
    custom: bool
    reference: list[ReferenceOut] = Field(
        default_factory=list, description="the reference's outputs, when the code gave none to compare"
    )


class RunOut(BaseModel):
    challenge: str
    verdict: Literal["passed", "failed", "error", "timeout", "memory_limit"] = Field(
        description="over these cases only: a Run is not graded and is not stored"
    )
    message: str = Field(description="why the code did not run to the end, when it did not")
    examples: list[CaseOut]
    custom: CaseOut | None
    duration_ms: int
    output: str = Field(description="a capped excerpt of what the code printed")


# The page's Run panel (templates/_partials/challenges_run_panel.html) renders the same schema.
templates.env.globals["challenge_run_schema"] = challenge_runs.run_schema


@router.get("/{slug}/examples")
async def run_schema(challenge: ChallengeDep) -> RunSchemaOut:
    return RunSchemaOut.model_validate(challenge_runs.run_schema(challenge.slug))


@router.post(
    "/{slug}/run",
    responses={
        413: {"description": "Code over the size limit"},
        429: {
            "description": "Too many runs this minute (yours or your address's), a run of yours is "
            "still going, or every Run slot is busy"
        },
    },
)
async def run_code(
    challenge: ChallengeDep,
    payload: RunBody,
    request: Request,
    limiter: SubmitLimiter,
    ip_limiter: RunIpLimiter,
    settings: SettingsDep,
    user: Visitor,
    runs: RunsDep,
) -> RunOut:
    """Run `code` on the challenge's visible examples and, when `input` is given, on that custom input.

    422 names a refused custom parameter in `loc` (["body", "input", name]) as validation errors do.
    """
    slug = challenge.slug
    refuse_oversized(payload.code, settings)
    values = challenge_runs.custom_values(slug, payload.input)
    visitor = f"user:{user.id}" if user.id else f"guest:{guest_token(request)}"
    # Counted per client address first (a cookieless script is a new visitor each time), then
    # per visitor, apart from submissions'; off the event loop, like the run itself.
    address = client_address(request)
    await run_in_threadpool(
        refuse_too_fast,
        ip_limiter,
        settings,
        f"run:ip:{address}",
        "Too many Runs from your address: wait a minute",
    )
    await run_in_threadpool(
        refuse_too_fast, limiter, settings, f"run:{visitor}", "You are running code too fast"
    )
    result = await challenge_runs.run_for(runs, visitor, settings, slug, payload.code, values)
    return RunOut.model_validate(result.to_json())
