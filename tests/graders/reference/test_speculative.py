"""The reference accept/reject step: both paths agree, and the first token is distributed as p[0]."""

from __future__ import annotations

from fractions import Fraction

import torch

from graders.reference.speculative import accept_draft, accept_draft_vectorised, acceptance_rate


def test_the_loop_and_the_vectorised_step_agree() -> None:
    gen = torch.Generator().manual_seed(0)
    for _ in range(200):
        gamma, V = int(torch.randint(1, 5, (1,), generator=gen)), 6
        q = torch.softmax(torch.randn(gamma, V, generator=gen), -1)
        p = torch.softmax(torch.randn(gamma + 1, V, generator=gen), -1)
        draft = torch.multinomial(q, 1, generator=gen).flatten()
        u = torch.rand(gamma, generator=gen)
        us = float(torch.rand(1, generator=gen))
        assert accept_draft(draft, q, p, u, us) == accept_draft_vectorised(draft, q, p, u, us)


def test_over_a_grid_the_first_token_is_distributed_as_p0() -> None:
    q = torch.tensor([[4, 4, 4, 4]]) / 16
    p = torch.tensor([[7, 5, 3, 1], [1, 1, 1, 13]]) / 16
    counts = [Fraction(0)] * 4
    grid = [(i + 0.5) / 4 for i in range(4)]
    for x0 in range(4):
        for ua in grid:
            for us in grid:
                first = accept_draft(torch.tensor([x0]), q, p, torch.tensor([ua]), us)[0]
                counts[first] += Fraction(int(q[0, x0] * 16), 16) / 16
    assert counts == [Fraction(c, 16) for c in (7, 5, 3, 1)]
    assert abs(float(acceptance_rate(q, p)[0]) - 0.75) < 1e-7


def test_the_acceptance_boundary_is_strict_and_the_bonus_comes_from_p_gamma() -> None:
    q = torch.tensor([[0.5, 0.5], [0.5, 0.5]])
    p = torch.tensor([[0.25, 0.75], [0.5, 0.5], [0.0, 1.0]])
    draft = torch.tensor([0, 1])
    assert accept_draft(draft, q, p, torch.tensor([0.5, 0.0]), 0.0) == [1]  # rejected: the residual
    assert accept_draft(draft, q, p, torch.tensor([0.49, 0.3]), 0.0) == [0, 1, 1]
