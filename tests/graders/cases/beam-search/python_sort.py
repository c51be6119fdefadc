# expect: passed
# A right answer written apart from the worked solution: Python tuples sorted by (-score, b, t),
# the reorder index built from the parents, the final ranking by (-final score, finish order).
import torch


def beam_search(model, prompt, beam_width, max_new_tokens, eos_id=None, length_penalty=1.0):
    prompt = list(prompt)
    log_probs, cache = model.prefill(prompt)
    rows = [log_probs.tolist()]
    beams = [((), 0.0)]
    done = []
    for position in range(max_new_tokens):
        if position:
            cache = model.reorder(cache, torch.tensor(parents, dtype=torch.long))
            log_probs, cache = model.step(torch.tensor([h[-1] for h, _ in beams], dtype=torch.long), cache)
            rows = log_probs.tolist()
        proposals = sorted(
            ((s + rows[b][t], b, t) for b, (_, s) in enumerate(beams) for t in range(len(rows[b]))),
            key=lambda p: (-p[0], p[1], p[2]),
        )
        chosen = []
        for rank, (score, b, t) in enumerate(proposals):
            if eos_id is not None and t == eos_id:
                if rank < beam_width:
                    done.append((beams[b][0] + (t,), score))
            else:
                chosen.append((b, t, score))
                if len(chosen) == beam_width:
                    break
        parents = [b for b, _, _ in chosen]
        beams = [(beams[b][0] + (t,), score) for b, t, score in chosen]
        if len(done) >= beam_width:
            break
    everything = [(s / len(h) ** length_penalty, i, h) for i, (h, s) in enumerate(done + beams)]
    everything.sort(key=lambda x: (-x[0], x[1]))
    return [(prompt + list(h), float(score)) for score, _, h in everything[:beam_width]]
