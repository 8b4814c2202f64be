#!/usr/bin/env python3
"""Writes tests/data/golden/torch_optim.txt: torch.optim trajectories that the optimizer tests
(tests/cpu/test_optim.cpp) reproduce with forgia.

Run with a Python that has torch (CPU wheels are enough):
    python3 tests/data/torch_gen/gen_optim.py > tests/data/golden/torch_optim.txt

Inputs are integer-exact so both sides build them identically: value i of stream `seed` is
((at(seed, i) >> 40) * 2^-24 - 0.5) * scale, where at() is splitmix64 in counter form
(forgia's fg_rng_at). Two parameters, shapes [7] and [4, 5]; parameter j starts from stream
100 + j (scale 2), and its gradient at step k (1-based) is stream 1000 * (j + 1) + k (scale 2).
Parameter 1 gets no gradient at steps listed in `skip` (torch skips it: p.grad = None).
Each case prints the final parameters (f32 bit patterns, and for 16-bit cases the parameter's
own bits) after `steps` steps. torch runs the single-tensor path (foreach=False), the order
forgia and Fucina follow.
"""
import math
import sys

import torch

from golden_streams import bits, bits16, stream

SHAPES = [(7,), (4, 5)]


def run(name, make_opt, steps=25, clip=None, skip=(), p16=None):
    params = [torch.nn.Parameter(stream(100 + j, math.prod(s), 2.0).reshape(s)) for j, s in enumerate(SHAPES)]
    if p16 is not None:  # a 16-bit parameter: torch steps the f32 master, the model holds its narrowing
        for p in params:
            p.data.copy_(p.data.to(p16).to(torch.float32))
    opt = make_opt(params)
    for k in range(1, steps + 1):
        for j, (p, s) in enumerate(zip(params, SHAPES)):
            p.grad = None if (j == 1 and k in skip) else stream(1000 * (j + 1) + k, math.prod(s), 2.0).reshape(s)
        if clip is not None:
            torch.nn.utils.clip_grad_norm_([p for p in params if p.grad is not None], clip, foreach=False)
        opt.step()
    line = f"case {name} steps={steps} clip={clip if clip is not None else 0} skip={','.join(map(str, skip)) or '-'}"
    line += f" p16={'-' if p16 is None else str(p16).split('.')[-1]}"
    print(line)
    for j, p in enumerate(params):
        print(f"p{j} {bits(p.data)}")
        if p16 is not None:
            print(f"p{j}_16 {bits16(p.data.to(p16))}")


def main():
    print(f"# torch {torch.__version__}; generator tests/data/torch_gen/gen_optim.py")
    sgd = torch.optim.SGD
    run("sgd lr=0.1", lambda ps: sgd(ps, lr=0.1, foreach=False))
    run("sgd lr=0.05 momentum=0.9 dampening=0.1 weight_decay=0.05",
        lambda ps: sgd(ps, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.05, foreach=False), skip=(4, 9))
    run("sgd lr=0.05 momentum=0.9 nesterov=1 weight_decay=0.01",
        lambda ps: sgd(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01, foreach=False))
    run("adam lr=0.01 weight_decay=0.1",
        lambda ps: torch.optim.Adam(ps, lr=0.01, weight_decay=0.1, foreach=False), skip=(3, 4, 17))
    run("adamw lr=0.01 weight_decay=0.1",
        lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1, foreach=False))
    run("adamw lr=0.003 weight_decay=0 beta1=0.8 beta2=0.95 eps=1e-6",
        lambda ps: torch.optim.AdamW(ps, lr=0.003, weight_decay=0.0, betas=(0.8, 0.95), eps=1e-6, foreach=False),
        skip=(2,))
    run("adamw lr=0.01 weight_decay=0.1", lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1, foreach=False),
        clip=1.0)
    run("sgd lr=0.05 momentum=0.9 dampening=0.1 weight_decay=0.05",
        lambda ps: sgd(ps, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.05, foreach=False), clip=0.5)
    run("adamw lr=0.01 weight_decay=0.1", lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1, foreach=False),
        p16=torch.bfloat16)
    run("adam lr=0.01 weight_decay=0.1", lambda ps: torch.optim.Adam(ps, lr=0.01, weight_decay=0.1, foreach=False),
        p16=torch.float16)
    run("sgd lr=0.05 momentum=0.9 nesterov=1 weight_decay=0.01",
        lambda ps: sgd(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01, foreach=False), p16=torch.bfloat16)


if __name__ == "__main__":
    main()
