"""A lab run is named as the cards name things: the model and the experiments in words, never keys."""

from __future__ import annotations

from app.lab.experiments import EXPERIMENTS
from app.routes.lab import run_heading


def test_a_run_is_named_by_its_model_and_experiments_in_words() -> None:
    heading = run_heading("tiny", ["prefill", "position_limit"])
    assert heading == "a tiny model (128 positions) · prefill, the position limit"
    assert run_heading("full", []) == "GPT-2 small (1,024 positions) · every experiment"


def test_no_experiment_key_reaches_a_heading() -> None:
    heading = run_heading("full", list(EXPERIMENTS))
    assert "_" not in heading, heading
