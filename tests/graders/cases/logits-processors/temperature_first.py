# expect: failed
# diagnosis: temperature is applied before the penalties: it comes after them, just before min-p
import torch


def process_logits(
    logits,
    tokens,
    repetition_penalty=1.0,
    presence_penalty=0.0,
    frequency_penalty=0.0,
    no_repeat_ngram_size=0,
    temperature=1.0,
    min_p=0.0,
):
    """logits (B, V), tokens: B lists of ids -> new logits (B, V); the input is left unchanged."""
    if repetition_penalty <= 0:
        raise ValueError("repetition_penalty must be positive")
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    if not 0 <= min_p <= 1:
        raise ValueError("min_p must lie in [0, 1]")
    if no_repeat_ngram_size < 0:
        raise ValueError("no_repeat_ngram_size must not be negative")
    out = logits / temperature  # every step below writes into the copy
    B, V = out.shape
    n = no_repeat_ngram_size
    for b, row in enumerate(tokens):
        ids = torch.tensor(row, dtype=torch.long)
        counts = torch.bincount(ids, minlength=V).to(out.dtype)  # (V,) occurrences of each id
        seen = counts > 0
        x = out[b]
        # (1) CTRL's penalty, once per id: a positive logit shrinks, a negative one grows more negative.
        penalised = torch.where(x > 0, x / repetition_penalty, x * repetition_penalty)
        x = torch.where(seen, penalised, x)
        # (2) OpenAI / vLLM: presence once, frequency per occurrence.
        x = x - presence_penalty * seen.to(out.dtype) - frequency_penalty * counts
        # (3) ban what would repeat an n-gram: n-grams whose first n - 1 tokens are the row's last n - 1.
        if n > 0 and len(row) >= n - 1:
            prefix = row[len(row) - (n - 1) :]  # not row[-(n - 1):], which is the whole row for n = 1
            banned = [row[i + n - 1] for i in range(len(row) - n + 1) if row[i : i + n - 1] == prefix]
            if banned:
                x[banned] = float("-inf")
        out[b] = x
    if min_p > 0:  # (5) on the tempered distribution
        p = torch.softmax(out, dim=-1)
        out = out.masked_fill(p < min_p * p.max(dim=-1, keepdim=True).values, float("-inf"))
    return out
