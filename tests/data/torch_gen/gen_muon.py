#!/usr/bin/env python3
"""Writes tests/data/golden/torch_muon.txt: Muon trajectories of Keller Jordan's reference
(muon.py: zeropower_via_newtonschulz5, muon_update, adam_update, SingleDeviceMuonWithAuxAdam's
step), written out here in torch, that tests/cpu/test_optim_muon.cpp reproduces with forgia
within a tolerance.

Run with a Python that has torch (CPU wheels are enough):
    python3 tests/data/torch_gen/gen_muon.py > tests/data/golden/torch_muon.txt

One deliberate change: the reference casts the Newton-Schulz input to bf16 (it runs on GPU
tensor cores); here the dtype is a parameter and the golden uses f32, so that the comparison
measures the algorithm, not bf16 rounding. Everything else follows the reference: the
momentum buffer starts at zero, M = lerp(M, G, 1 - beta), U = lerp(G, M, beta) with nesterov,
X / (||X||_F + 1e-7), five quintic steps with (3.4445, -4.7750, 2.0315), transposed when
rows > cols, update *= sqrt(max(1, rows / cols)), p *= 1 - lr * wd, p += -lr * update.
The auxiliary Adam (1-D parameters): m = lerp(m, g, 1 - b1), v = lerp(v, g^2, 1 - b2),
update = m_hat / (sqrt(v_hat) + eps), p *= 1 - lr * wd, p += -lr * update.

Inputs are the integer-exact splitmix64 streams of gen_optim.py: parameters w [6, 4] (tall),
x [3, 5] (wide), b [5] (aux Adam); parameter j starts from stream 100 + j (scale 2) and its
gradient at step k is stream 1000 * (j + 1) + k (scale 2). Each case prints, after every
step k, `s<k> <name>` and the f32 bit patterns.
"""
import math
import sys

import torch

from golden_streams import bits, stream


def zeropower_via_newtonschulz5(g, steps, dtype):
    a, b, c = (3.4445, -4.7750, 2.0315)
    x = g.to(dtype)
    if g.size(-2) > g.size(-1):
        x = x.mT
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for _ in range(steps):
        A = x @ x.mT
        B = b * A + c * A @ A
        x = a * x + B @ x
    if g.size(-2) > g.size(-1):
        x = x.mT
    return x


def muon_update(grad, momentum, beta, ns_steps, nesterov, dtype):
    momentum.lerp_(grad, 1 - beta)
    update = grad.lerp_(momentum, beta) if nesterov else momentum
    if update.ndim == 4:
        update = update.view(len(update), -1)
    update = zeropower_via_newtonschulz5(update, ns_steps, dtype)
    update *= max(1, grad.size(-2) / grad.size(-1)) ** 0.5
    return update


def adam_update(grad, buf1, buf2, step, betas, eps):
    buf1.lerp_(grad, 1 - betas[0])
    buf2.lerp_(grad.square(), 1 - betas[1])
    buf1c = buf1 / (1 - betas[0] ** step)
    buf2c = buf2 / (1 - betas[1] ** step)
    return buf1c / (buf2c.sqrt() + eps)


CASES = [
    dict(lr=0.02, momentum=0.95, nesterov=True, wd=0.0, steps=8),
    dict(lr=0.02, momentum=0.95, nesterov=False, wd=0.1, steps=8),
    dict(lr=0.01, momentum=0.9, nesterov=True, wd=0.01, steps=8),
]
SHAPES = {"w": (6, 4), "x": (3, 5), "b": (5,)}
ADAM = dict(lr=3e-4, betas=(0.9, 0.95), eps=1e-10, wd=0.0)


def main():
    out = sys.stdout
    out.write("# Keller Jordan's reference Muon (f32 Newton-Schulz); generator tests/data/torch_gen/gen_muon.py, torch %s\n"
              % torch.__version__)
    for c in CASES:
        out.write("case muon lr=%g momentum=%g nesterov=%d weight_decay=%g steps=%d\n"
                  % (c["lr"], c["momentum"], int(c["nesterov"]), c["wd"], c["steps"]))
        ps = {n: stream(100 + j, math.prod(s), 2.0).view(s).clone() for j, (n, s) in enumerate(SHAPES.items())}
        state = {n: {} for n in ps}
        for k in range(1, c["steps"] + 1):
            for j, (n, p) in enumerate(ps.items()):
                g = stream(1000 * (j + 1) + k, p.numel(), 2.0).view(p.shape)
                st = state[n]
                if p.ndim >= 2:
                    if not st:
                        st["momentum_buffer"] = torch.zeros_like(p)
                    u = muon_update(g, st["momentum_buffer"], c["momentum"], 5, c["nesterov"], torch.float32)
                    p.mul_(1 - c["lr"] * c["wd"])
                    p.add_(u.reshape(p.shape), alpha=-c["lr"])
                else:
                    if not st:
                        st["exp_avg"] = torch.zeros_like(p)
                        st["exp_avg_sq"] = torch.zeros_like(p)
                        st["step"] = 0
                    st["step"] += 1
                    u = adam_update(g, st["exp_avg"], st["exp_avg_sq"], st["step"], ADAM["betas"], ADAM["eps"])
                    p.mul_(1 - ADAM["lr"] * ADAM["wd"])
                    p.add_(u, alpha=-ADAM["lr"])
            for n, p in ps.items():
                out.write("s%d %s %s\n" % (k, n, bits(p)))


if __name__ == "__main__":
    with torch.no_grad():
        main()
