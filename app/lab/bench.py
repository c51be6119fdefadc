"""`kvprep bench lab`: the lab's decoder against Hugging Face's GPT2LMHeadModel, same weights, same run.

Both run GPT-2 small on one thread: a prefill of --prompt tokens and one cached decode step
after it, median of --repeats after a warm-up each. Prints both and the ratio (ours / theirs:
below 1 means ours is faster). transformers is a dev dependency (`pip install -e .[dev]`).
"""

from __future__ import annotations

import argparse
import sys

import torch

from app.lab.experiments import median_ms
from graders.reference.gpt2 import GPT2, GPT2Config


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kvprep bench lab", description=__doc__)
    parser.add_argument("--prompt", type=int, default=256, help="prompt tokens (default 256)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        import transformers
    except ImportError:
        print("kvprep bench lab needs transformers: pip install -e '.[dev]'", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config()).eval()
    ours = GPT2(GPT2Config()).eval()
    ours.load_hf_state_dict(hf.state_dict())
    tokens = torch.randint(0, 50257, (1, args.prompt + 1), generator=torch.Generator().manual_seed(0))
    prompt, nxt = tokens[:, :-1], tokens[:, -1:]

    with torch.no_grad():
        hf_past = hf(prompt, use_cache=True).cache
        _, our_cache = ours(prompt)
        torch.testing.assert_close(
            ours(nxt, our_cache)[0], hf(nxt, cache=hf_past).logits, rtol=1e-4, atol=1e-4
        )
        # transformers' cache object grows in place, so each timed step gets a fresh one, built untimed.
        fresh = [hf(prompt, use_cache=True).cache for _ in range(args.repeats + 1)]

        def hf_step() -> object:
            return hf(nxt, cache=fresh.pop(), use_cache=True)

        rows = [
            (
                f"prefill of {args.prompt} tokens",
                median_ms(lambda: ours(prompt), args.repeats),
                median_ms(lambda: hf(prompt, use_cache=True), args.repeats),
            ),
            (
                f"one cached decode step after {args.prompt}",
                median_ms(lambda: ours(nxt, our_cache), args.repeats),
                median_ms(hf_step, args.repeats),
            ),
        ]
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {args.threads} thread(s)")
    print(f"{'':40s} {'kvprep':>10s} {'transformers':>13s} {'ratio':>7s}")
    for name, a, b in rows:
        print(f"{name:40s} {a:8.2f} ms {b:10.2f} ms {a / b:7.2f}")
    return 0
