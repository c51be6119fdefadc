# expect: passed
# A correct variant: plain Python floats, the acceptance test written as u * q < p.
def accept_draft(draft_tokens, q_probs, p_probs, u_accept, u_sample):
    q, p = q_probs.double().tolist(), p_probs.double().tolist()
    out = []
    for i, x in enumerate(draft_tokens.tolist()):
        if float(u_accept[i]) * q[i][x] < p[i][x]:
            out.append(x)
            continue
        return out + [_draw([max(0.0, a - b) for a, b in zip(p[i], q[i])], u_sample)]
    return out + [_draw(p[len(out)], u_sample)]


def _draw(w, u):
    target, total = u * sum(w), 0.0
    for t, x in enumerate(w):
        total += x
        if total > target:
            return t
    return max(t for t, x in enumerate(w) if x > 0)
