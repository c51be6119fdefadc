"""What a challenge's Run offers: the parameters a user may edit, its visible examples, its case.

A *Run* (the challenge page's Run button) executes the submission on a few small, named
example inputs and on one custom input the user edits, and shows the reference's output
beside the user's. It is not the hidden battery (graders/checks): the examples are fixed,
seeded and public, the battery's inputs stay fresh and unseen, and nothing here reads them.

    Param      one editable number or switch: default, bounds, and the message naming it
    Example    a named, described set of values (the visible example tests)
    Compared   one output of a case: what the submission returned beside the reference's
    RunSpec    a challenge's params, examples and `case(session, values) -> [Compared]`
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from graders.sandbox.protocol import SubmissionLink

Value = int | float | bool
Variant = tuple[Sequence[str], torch.Tensor]  # (mistakes in interviewer words, their output)


class InvalidRunInput(ValueError):
    """A custom input the Run refuses; `field` names the parameter (None: the input as a whole)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True)
class Param:
    """One parameter of the custom input. Its kind follows its default: bool, int or float."""

    name: str
    label: str
    default: Value
    minimum: Value | None = None
    maximum: Value | None = None
    help: str = ""

    @property
    def kind(self) -> str:
        return type(self.default).__name__  # "bool", "int" or "float"

    def coerce(self, raw: Any) -> Value:
        """The value to use; InvalidRunInput naming this parameter for anything else."""
        if self.kind == "bool":
            if not isinstance(raw, bool):
                raise InvalidRunInput(f"{self.name} must be true or false", self.name)
            return raw
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise InvalidRunInput(f"{self.name} must be a number, got {_shown(raw)}", self.name)
        if self.kind == "int":
            if isinstance(raw, float) and not raw.is_integer():
                raise InvalidRunInput(f"{self.name} must be a whole number, got {raw}", self.name)
            value: Value = int(raw)
        else:
            if not math.isfinite(raw):
                raise InvalidRunInput(f"{self.name} must be a finite number", self.name)
            value = float(raw)
        if (self.minimum is not None and value < self.minimum) or (
            self.maximum is not None and value > self.maximum
        ):
            raise InvalidRunInput(
                f"{self.name} must be between {self.minimum} and {self.maximum}, got {value}", self.name
            )
        return value

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "kind": self.kind,
            "default": self.default,
            "minimum": self.minimum,
            "maximum": self.maximum,
            "help": self.help,
        }


def _shown(raw: Any) -> str:
    text = repr(raw)
    return text if len(text) <= 40 else text[:37] + "..."


SEED = Param("seed", "Seed", 0, 0, 2**31 - 1, "fixes the random inputs: the same seed, the same inputs")


@dataclass(frozen=True)
class Example:
    name: str  # what the case is about, in words: "one sequence, two heads"
    values: Mapping[str, Value]

    @property
    def description(self) -> str:
        """The inputs in numbers: "B=1, T=5, d=16, n_heads=2, seed=0"."""
        return describe_values(self.values)


def describe_values(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


@dataclass
class Compared:
    """One output of a case. `want` is the reference's; `exact` compares integers and lists exactly."""

    what: str
    got: Any
    want: Any
    exact: bool = False
    # Known-wrong outputs (fewest mistakes first), computed only when `got` does not match.
    variants: Callable[[], Sequence[Variant]] = list
    hint: str = ""  # said after a mismatch no variant explains
    # For a step-by-step trace (got and want lists of row texts): what each row is, in order.
    labels: tuple[str, ...] = ()


Case = Callable[[SubmissionLink, dict[str, Any]], list[Compared]]
Rule = Callable[[dict[str, Any]], None]  # raises InvalidRunInput for values that do not fit together


@dataclass(frozen=True)
class RunSpec:
    slug: str
    entry_point: str
    params: tuple[Param, ...]
    examples: tuple[Example, ...]
    case: Case
    rules: tuple[Rule, ...] = field(default_factory=tuple)
    summary: str = ""  # what one case does, in a sentence, shown above the custom-input form
    also_calls: tuple[str, ...] = ()  # top-level names a case calls besides the entry point

    @property
    def names(self) -> tuple[str, ...]:
        return (self.entry_point, *self.also_calls)

    def defaults(self) -> dict[str, Value]:
        return {p.name: p.default for p in self.params}

    def validate(self, raw: Mapping[str, Any] | None) -> dict[str, Any]:
        """Defaults filled in, every value checked against its bounds and the rules; InvalidRunInput."""
        if raw is not None and not isinstance(raw, Mapping):
            raise InvalidRunInput("the custom input must be an object of parameter values")
        raw = raw or {}
        names = {p.name for p in self.params}
        unknown = sorted(str(k) for k in raw if k not in names)
        if unknown:
            raise InvalidRunInput(
                f"{unknown[0]} is not a parameter of this challenge (it takes {', '.join(sorted(names))})",
                unknown[0],
            )
        values = {p.name: p.coerce(raw[p.name]) if p.name in raw else p.default for p in self.params}
        for rule in self.rules:
            rule(values)
        return values

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "params": [p.to_json() for p in self.params],
            "examples": [
                {"name": e.name, "description": e.description, "input": dict(e.values)} for e in self.examples
            ],
        }


def divisible(total: str, part: str) -> Rule:
    """A rule: values[total] is a multiple of values[part]."""

    def rule(values: dict[str, Any]) -> None:
        if values[total] % values[part]:
            raise InvalidRunInput(
                f"{total} must be a multiple of {part} ({values[total]} is not a multiple of {values[part]})",
                total,
            )

    return rule


def even_quotient(total: str, part: str, what: str) -> Rule:
    """A rule: values[total] // values[part] is even (RoPE pairs the components of a head)."""

    def rule(values: dict[str, Any]) -> None:
        if (values[total] // values[part]) % 2:
            raise InvalidRunInput(
                f"{total} / {part} ({what}) must be even, got {values[total] // values[part]}", total
            )

    return rule


def at_most(small: str, big: str, *, strictly: bool = False, when: str | None = None, why: str = "") -> Rule:
    """A rule: values[small] <= values[big] (< when strictly), only where values[when] is true."""

    def rule(values: dict[str, Any]) -> None:
        if when is not None and not values[when]:
            return
        a, b = values[small], values[big]
        if a > b or (strictly and a == b):
            relation = "less than" if strictly else "at most"
            condition = f" when {when}" if when else ""
            reason = f": {why}" if why else ""
            raise InvalidRunInput(f"{small} must be {relation} {big} ({b}){condition}{reason}", small)

    return rule


def generator(seed: int) -> torch.Generator:
    """The inputs of a case are a function of its seed alone."""
    return torch.Generator().manual_seed(seed)


def randn(gen: torch.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, generator=gen) * scale
