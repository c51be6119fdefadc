# expect: failed
# diagnosis: should be a list of Python ints
# hypotheses' tokens as a LongTensor instead of a list of ints.
import torch


def beam_search(model, prompt, beam_width, max_new_tokens, eos_id=None, length_penalty=1.0):
    log_probs, cache = model.prefill(list(prompt))
    log_probs = log_probs.reshape(1, -1)  # (1, V): one beam, the prompt
    V = log_probs.shape[-1]
    beams = [([], 0.0)]  # live beams: (generated tokens, summed log-prob)
    finished = []  # (generated tokens with eos, summed log-prob), in the order they finish
    parents = []
    for position in range(max_new_tokens):
        if position > 0:
            # Row i of the cache must hold the history of the beam live beam i extends.
            cache = model.reorder(cache, torch.tensor(parents))
            last = torch.tensor([tokens[-1] for tokens, _ in beams])  # (N,)
            log_probs, cache = model.step(last, cache)  # (N, V)
        scores = torch.tensor([s for _, s in beams], dtype=torch.float64)
        total = (scores[:, None] + log_probs.double()).flatten()  # (N * V,), index b * V + t
        # A stable sort keeps equal scores in index order: the lower beam, then the lower token.
        order = torch.sort(total, descending=True, stable=True).indices
        live = []
        for rank, index in enumerate(order.tolist()):
            b, t = divmod(index, V)
            s = total[index].item()
            if t == eos_id:
                if rank < beam_width:  # an eos further down the list is dropped
                    finished.append((beams[b][0] + [t], s))
                continue
            live.append((b, t, s))
            if len(live) == beam_width:
                break
        parents = [b for b, _, _ in live]
        beams = [(beams[b][0] + [t], s) for b, t, s in live]
        if len(finished) >= beam_width:
            break

    pool = finished + beams  # the live beams join after every finished one

    def final(i):
        tokens, s = pool[i]
        return s / len(tokens) ** length_penalty  # eos counts, the prompt does not

    ranked = sorted(range(len(pool)), key=lambda i: (-final(i), i))  # ties: the earlier finished
    return [(torch.tensor(list(prompt) + pool[i][0]), final(i)) for i in ranked[:beam_width]]
