"""The golden submissions both golden-case harnesses grade, each with the verdict it must get.

Two sources:
  - tests/graders/cases/<slug>/<case>.py, each starting with header comments:
        # expect: passed | failed | error | timeout | memory_limit
        # diagnosis: a phrase the diagnosis or a failed test's message must contain (optional, repeatable)
        # outside-only: why (optional) - the verdict rests on a measurement taken from outside the
          submission's process (graders/sandbox/outside.py), which only the sandbox harness can take
  - questions/challenges/<slug>/solution.py (must pass) and starter.py (must fail, with the phrases in
    STARTER_DIAGNOSIS): read where users see them, so there is no copy to drift.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from graders.checks import CHALLENGE_MODULES

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "graders" / "cases"
CHALLENGES = ROOT / "questions" / "challenges"

# What each challenge's starter must be told, beyond failing.
STARTER_DIAGNOSIS: dict[str, list[str]] = {
    "decode-step": ["your code raised NotImplementedError"],
    "fix-causal-attention": [
        "the mask is applied after the softmax",
        "scores are divided by sqrt(d), not sqrt(head size)",
        "the heads are merged without transposing back to (B, T, n_heads, hd)",
    ],
    "gqa-attention": ["your code raised NotImplementedError"],
    "kv-cache-buffer": [],
    "kv-cache-bytes": [],
    "numpy-cached-generation": [],
    "rope-cached-attention": ["your code raised NotImplementedError"],
    "left-padded-decoding": ["your code raised NotImplementedError"],
    "tiled-attention": ["your code raised NotImplementedError"],
    "sliding-window-cache": ["your code raised NotImplementedError"],
    "paged-kv-cache": ["your code raised NotImplementedError"],
    "speculative-decoding": ["your code raised NotImplementedError"],
    "sampling": ["your code raised NotImplementedError"],
    "int8-kv-cache": ["your code raised NotImplementedError"],
    "moe-routing": ["your code raised NotImplementedError"],
    "logits-processors": ["your code raised NotImplementedError"],
    "continuous-batching": ["raised NotImplementedError"],
    "radix-prefix-cache": ["raised NotImplementedError"],
    "int4-weight-matmul": ["your code raised NotImplementedError"],
    "beam-search": ["your code raised NotImplementedError"],
    "mla-decode": ["your code raised NotImplementedError"],
    "tensor-parallel-attention": ["your code raised NotImplementedError"],
    "llama-block-decode": ["your code raised NotImplementedError"],
}


@dataclass(frozen=True)
class Case:
    slug: str
    path: Path

    @property
    def id(self) -> str:
        return f"{self.slug}/{self.path.stem}"

    def expected(self) -> tuple[str, list[str]]:
        """The verdict this submission must get, and the phrases its feedback must contain."""
        if self.path.parent == CHALLENGES / self.slug:
            if self.path.stem == "solution":
                return "passed", []
            return "failed", STARTER_DIAGNOSIS[self.slug]
        text = self.path.read_text()
        expect = re.search(r"^# expect: (\w+)", text, re.M)
        assert expect, f"{self.path} has no '# expect:' header"
        return expect.group(1), re.findall(r"^# diagnosis: (.+)$", text, re.M)

    @property
    def outside_only(self) -> bool:
        """The case forges what the child reports about itself: only the sandbox can judge it."""
        return self.path.parent != CHALLENGES / self.slug and bool(
            re.search(r"^# outside-only:", self.path.read_text(), re.M)
        )


def golden_cases() -> list[Case]:
    """Every case file, then each challenge's worked solution and starter."""
    files = sorted(p for p in CASES.glob("*/*.py") if p.parent.name in CHALLENGE_MODULES)
    cases = [Case(p.parent.name, p) for p in files]
    for slug in sorted(CHALLENGE_MODULES):
        cases += [Case(slug, CHALLENGES / slug / "solution.py"), Case(slug, CHALLENGES / slug / "starter.py")]
    return cases


def hints_of(slug: str) -> dict[str, str]:
    """The challenge's hint per named mistake (challenge.yaml's mistake_hints)."""
    from app.content.challenges import ChallengeMeta

    meta = ChallengeMeta.model_validate(yaml.safe_load((CHALLENGES / slug / "challenge.yaml").read_text()))
    return dict(meta.mistake_hints)
