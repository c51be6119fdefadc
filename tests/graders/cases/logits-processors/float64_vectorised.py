# expect: passed
# The same rule, vectorised over the batch in float64 (scatter_add for the counts), cast back.
import torch


def process_logits(logits, tokens, repetition_penalty=1.0, presence_penalty=0.0, frequency_penalty=0.0,
                   no_repeat_ngram_size=0, temperature=1.0, min_p=0.0):
    if repetition_penalty <= 0 or temperature <= 0 or not 0 <= min_p <= 1 or no_repeat_ngram_size < 0:
        raise ValueError("bad argument")
    x = logits.double()
    B, V = x.shape
    counts = torch.zeros(B, V, dtype=torch.float64)
    for b, row in enumerate(tokens):
        counts[b].scatter_add_(0, torch.tensor(row, dtype=torch.long), torch.ones(len(row), dtype=torch.float64))
    seen = counts > 0
    x = torch.where(seen, torch.where(x > 0, x / repetition_penalty, x * repetition_penalty), x)
    x = x - presence_penalty * seen - frequency_penalty * counts
    n = no_repeat_ngram_size
    for b, row in enumerate(tokens):
        if n and len(row) >= n - 1:
            key = tuple(row[len(row) - n + 1:])
            for i in range(len(row) - n + 1):
                if tuple(row[i:i + n - 1]) == key:
                    x[b, row[i + n - 1]] = float("-inf")
    x = x / temperature
    if min_p:
        p = x.softmax(-1)
        x[p < min_p * p.amax(-1, keepdim=True)] = float("-inf")
    return x.to(logits.dtype)
