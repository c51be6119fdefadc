"""A GPT-2-small-shaped decoder with a KV cache: the reference model the lab measures.

It belongs to the reference code, not to the lab: its attention is attention.py's (the same
head split, causal mask and explicit and fused paths every attention challenge is graded
against), and tests/graders/reference/ tests it with the rest. The lab (app/lab) owns no
model; it imports this one to time prefill and decode and to size its cache.

The shape is GPT-2 small's (Radford et al., 2019, Language Models are Unsupervised
Multitask Learners): 12 layers, 12 heads, 768 wide, 1,024 learned positions, a
vocabulary of 50,257, pre-LayerNorm blocks, a 4x MLP with the tanh GELU, and the
output head tied to the token embedding. The weights are random (a fixed seed), so the
text it generates is noise; its timings and its cache are the real model's.

Weights are stored as Hugging Face's GPT-2 stores them (`Conv1D`: `y = x @ W + b`, W of
shape (in, out)), under the same names, so `load_hf_state_dict` copies a
`GPT2LMHeadModel` state dict without transposes, and the projections follow the
attention challenges' layout (`x @ w_qkv`, then split into q, k, v).

The cache is one `(k, v)` pair per layer, each `(B, n_head, t, hd)`, concatenated on
dim=-2 as transformers' DynamicCache does. A position past `n_positions` has no row in
the position table and raises IndexError, as the real model does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from graders.reference.attention import attend, attend_fused, head_size, merge_heads, split_heads

LayerCache = tuple[torch.Tensor, torch.Tensor]  # k, v: each (B, n_head, t, hd)


@dataclass(frozen=True)
class GPT2Config:
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    n_positions: int = 1024
    vocab_size: int = 50257
    layer_norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        head_size(self.n_embd, self.n_head, "n_head")  # ValueError naming both when it does not divide

    @property
    def head_dim(self) -> int:
        return head_size(self.n_embd, self.n_head, "n_head")

    def kv_bytes_per_token(self, bytes_per_element: int = 4) -> int:
        """2 (k and v) x layers x heads x head size x bytes: 72 KiB for GPT-2 small in fp32."""
        return 2 * self.n_layer * self.n_head * self.head_dim * bytes_per_element


class Conv1D(nn.Module):
    """y = x @ weight + bias, weight (n_in, n_out): Hugging Face GPT-2's projection layout."""

    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], -1)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = Conv1D(config.n_embd, 3 * config.n_embd)
        self.c_proj = Conv1D(config.n_embd, config.n_embd)

    def forward(
        self, x: torch.Tensor, past: LayerCache | None = None, *, fused: bool = True
    ) -> tuple[torch.Tensor, LayerCache]:
        """x (B, T, d) are the next T tokens after the t_past in `past`; returns y (B, T, d) and the cache."""
        d = x.shape[-1]
        q, k, v = self.c_attn(x).split(d, dim=-1)  # each (B, T, d)
        q, k, v = (split_heads(t, self.n_head) for t in (q, k, v))  # each (B, H, T, hd)
        if past is not None:
            k = torch.cat([past[0], k], dim=-2)  # (B, H, t_past + T, hd)
            v = torch.cat([past[1], v], dim=-2)  # (B, H, t_past + T, hd)
        # Query i sits at position t_past + i and sees keys 0..t_past + i (attention.causal_mask).
        y = (attend_fused if fused else attend)(q, k, v)  # (B, H, T, hd)
        return self.c_proj(merge_heads(y)), (k, v)  # (B, T, d), heads merged in order


class MLP(nn.Module):
    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.c_fc = Conv1D(config.n_embd, 4 * config.n_embd)
        self.c_proj = Conv1D(4 * config.n_embd, config.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))  # GPT-2's "gelu_new"


class Block(nn.Module):
    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_eps)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_eps)
        self.mlp = MLP(config)

    def forward(
        self, x: torch.Tensor, past: LayerCache | None, *, fused: bool
    ) -> tuple[torch.Tensor, LayerCache]:
        a, present = self.attn(self.ln_1(x), past, fused=fused)
        x = x + a
        return x + self.mlp(self.ln_2(x)), present


class Transformer(nn.Module):
    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        self.h = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_eps)


class GPT2(nn.Module):
    """forward(tokens, cache) -> (logits, cache): a prompt, a chunk or one token at a time."""

    def __init__(self, config: GPT2Config | None = None, *, seed: int = 0) -> None:
        super().__init__()
        self.config = config or GPT2Config()
        self.transformer = Transformer(self.config)
        self._init_weights(seed)

    def _init_weights(self, seed: int) -> None:
        """GPT-2's initialisation (normal, std 0.02; residual projections scaled by 1/sqrt(2 n_layer))."""
        gen = torch.Generator().manual_seed(seed)
        residual_std = 0.02 / math.sqrt(2 * self.config.n_layer)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    p.normal_(0.0, residual_std, generator=gen)
                elif name.endswith((".weight",)) and p.dim() == 2:
                    p.normal_(0.0, 0.02, generator=gen)
                elif "ln_" in name and name.endswith(".weight"):
                    p.fill_(1.0)
                else:
                    p.zero_()

    def forward(
        self, tokens: torch.Tensor, cache: list[LayerCache] | None = None, *, fused: bool = True
    ) -> tuple[torch.Tensor, list[LayerCache]]:
        """tokens (B, T) follow the t_past tokens in `cache`; returns logits (B, T, V) and the new cache."""
        B, T = tokens.shape
        t_past = cache[0][0].shape[-2] if cache else 0
        positions = torch.arange(t_past, t_past + T, device=tokens.device)  # (T,)
        if t_past + T > self.config.n_positions:
            # The table has n_positions rows: the next position has none, as in the real model.
            # Counted as the cards count: token k (from 1) needs position index k - 1 (from 0).
            raise IndexError(
                f"token {t_past + T} needs position index {t_past + T - 1}, past the "
                f"{self.config.n_positions}-row position table (indices 0 to {self.config.n_positions - 1})"
            )
        x = self.transformer.wte(tokens) + self.transformer.wpe(positions)  # (B, T, d)
        presents: list[LayerCache] = []
        for i, block in enumerate(self.transformer.h):
            x, present = block(x, cache[i] if cache else None, fused=fused)
            presents.append(present)
        x = self.transformer.ln_f(x)
        logits = x @ self.transformer.wte.weight.T  # (B, T, V): the head is tied to the embedding
        return logits, presents

    @torch.no_grad()
    def generate(self, prompt: torch.Tensor, n_new: int, *, use_cache: bool = True) -> torch.Tensor:
        """Greedy decoding of n_new tokens after prompt (B, T); returns (B, T + n_new)."""
        tokens = prompt
        logits, cache = self(prompt)
        for i in range(n_new):
            nxt = logits[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1)
            tokens = torch.cat([tokens, nxt], dim=1)
            if i == n_new - 1:
                break
            if use_cache:
                logits, cache = self(nxt, cache)
            else:  # re-run the whole sequence: the same logits, all the work again
                logits, _ = self(tokens)
        return tokens

    def load_hf_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Copy a Hugging Face GPT2LMHeadModel state dict (same names; lm_head is our tied wte)."""
        ours = {
            k: v for k, v in state.items() if not k.startswith("lm_head.") and not k.endswith(".attn.bias")
        }
        ours = {k: v for k, v in ours.items() if not k.endswith(".attn.masked_bias")}
        self.load_state_dict(ours, strict=True)
