#!/usr/bin/env python3
"""Writes tests/data/golden/torch_apollo.txt: APOLLO / APOLLO-Mini trajectories of the
reference implementation itself (the `apollo-torch` package, 1.0.3: apollo_torch/apollo.py's
AdamW and random_projector.py's GradientProjector, run unmodified), that
tests/cpu/test_optim_apollo.cpp reproduces with forgia within a tolerance.

Run with a Python that has torch (CPU wheels are enough), numpy and the package:
    pip install numpy apollo-torch==1.0.3 --no-deps
    python3 tests/data/torch_gen/gen_apollo.py > tests/data/golden/torch_apollo.txt

One deliberate change: the projection. The reference draws it from torch's generator
(seeded with the parameter's 1-based index, advanced by next_seed after each draw), which no
other implementation reproduces; Fucina (and so forgia) regenerates it from the scalar
gaussian with slot seed + chunk * 0x9E3779B97F4A7C15. The reference's stable_randn is
replaced by that gaussian (standard normal values, f64 libm Box-Muller, the seed chosen from
the projector's first seed and iter // update_proj_gap), so that both sides project with the
same matrix; the reference still divides it by sqrt(rank) in f32 itself. Everything else
(the moments, the bias correction, the channel/tensor scaling factor from torch.norm, the
norm-growth limiter, sqrt(scale) front or back, the step and the decay after it, the plain
AdamW path for the 1-D parameter) is the package's own code.

The 2-D parameters are the low-rank group (their seeds are set to forgia's rule: seed + main
index + 1); the [5] parameter is a regular group. Inputs are the integer-exact splitmix64
streams of gen_optim.py: "tall" [6, 4], param1 [3, 7], the [5] vector (forgia's fallback
param0); parameter j starts from stream 100 + j (scale 2) and its gradient at step k is
stream 1000 * (j + 1) + k (scale 2). The output has the format of fucina_apollo.txt without
state lines: `step k`, then `m0`, `m1`, `f0` with f32 bit patterns.
"""
import importlib.util
import math
import os
import struct
import sys
import types

import torch

from golden_streams import G, M, bits, stream

# apollo.py imports transformers only for a version check; the package __init__ also pulls
# bitsandbytes for other optimizers. Load the two modules the optimizer needs directly.
_tv = types.ModuleType("transformers.utils.versions")
_tv.require_version = lambda *a, **k: None
sys.modules.setdefault("transformers", types.ModuleType("transformers"))
sys.modules.setdefault("transformers.utils", types.ModuleType("transformers.utils"))
sys.modules["transformers.utils.versions"] = _tv
_pkg_dir = importlib.util.find_spec("apollo_torch").submodule_search_locations[0]
_pkg = types.ModuleType("apollo_torch")
_pkg.__path__ = [_pkg_dir]
sys.modules["apollo_torch"] = _pkg


def _load(name):
    spec = importlib.util.spec_from_file_location("apollo_torch." + name, os.path.join(_pkg_dir, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["apollo_torch." + name] = mod
    spec.loader.exec_module(mod)
    return mod


random_projector = _load("random_projector")
apollo = _load("apollo")


def gaussian(seed, n):
    """Fucina's gaussianFill with scale 1: sequential splitmix64 pairs, f64 Box-Muller."""
    out = []
    state = seed
    while len(out) < n:
        words = []
        for _ in range(2):
            state = (state + G) & M
            z = state
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
            words.append(z ^ (z >> 31))
        ua = ((words[0] >> 11) + 1) * 2.0**-53
        ub = (words[1] >> 11) * 2.0**-53
        r = math.sqrt(-2.0 * math.log(ua))
        th = 6.283185307179586 * ub
        out += [r * math.cos(th), r * math.sin(th)]
    return [struct.unpack("<f", struct.pack("<f", v))[0] for v in out[:n]]


_orig_project = random_projector.GradientProjector.project


def _project(self, full_rank_grad, iter):
    if not hasattr(self, "first_seed"):
        self.first_seed = self.seed
    self.chunk = iter // self.update_proj_gap
    return _orig_project(self, full_rank_grad, iter)


def _stable_randn(shape, seed, device=None, dtype=torch.float32):
    raise AssertionError("replaced by the projector patch below")


def _get_orthogonal_matrix(self, weights, rank, type, seed):
    shape = (weights.shape[0], rank) if type == "left" else (rank, weights.shape[1])
    n = shape[0] * shape[1]
    z = torch.tensor(gaussian((self.first_seed + self.chunk * G) & M, n), dtype=torch.float32).reshape(shape)
    return z / math.sqrt(rank)


random_projector.GradientProjector.project = _project
random_projector.GradientProjector.get_orthogonal_matrix = _get_orthogonal_matrix
random_projector.stable_randn = _stable_randn

cases = [
    "apollo rank=2 gap=3 steps=12",
    "apollo rank=2 gap=4 steps=12 scale_type=tensor weight_decay=0.1 limiter=0",
    "apollo rank=3 gap=5 steps=12 scale=4 scale_front=1 lr=0.02 seed=7",
    "mini gap=3 steps=12",
    "mini gap=6 steps=12 scale_front=1 weight_decay=0.05 correct_bias=0",
]


def run(line):
    kv = dict(x.split("=") for x in line.split()[1:])
    mini = line.split()[0] == "mini"
    f32 = lambda v: struct.unpack("<f", struct.pack("<f", float(v)))[0]
    lr = f32(kv.get("lr", "0.01"))
    wd = f32(kv.get("weight_decay", "0"))
    rank = int(kv.get("rank", "1" if mini else "128"))
    gap = int(kv["gap"])
    scale = f32(kv.get("scale", "128" if mini else "1"))
    scale_type = kv.get("scale_type", "tensor" if mini else "channel")
    seed = int(kv.get("seed", "0"))
    steps = int(kv["steps"])
    w0 = stream(100, 24, 2.0).reshape(6, 4).requires_grad_()
    w1 = stream(101, 21, 2.0).reshape(3, 7).requires_grad_()
    b = stream(102, 5, 2.0).requires_grad_()
    opt = apollo.AdamW(
        [
            {"params": [b]},
            {"params": [w0, w1], "rank": rank, "proj": "random", "proj_type": "std", "scale_type": scale_type,
             "update_proj_gap": gap, "scale": scale},
        ],
        lr=lr,
        betas=(f32(0.9), f32(0.999)),
        eps=f32(1e-6),
        weight_decay=wd,
        correct_bias=kv.get("correct_bias", "1") == "1",
        scale_front=kv.get("scale_front", "0") == "1",
        disable_nl=kv.get("limiter", "1") == "0",
    )
    for i, p in enumerate([w0, w1]):  # forgia's slot seeds (the reference: 1-based index)
        opt.state[p]["seed"] = seed + i + 1
    print("case " + line)
    for k in range(1, steps + 1):
        for j, p in enumerate([w0, w1, b]):
            p.grad = stream(1000 * (j + 1) + k, p.numel(), 2.0).reshape(p.shape)
        opt.step()
        print("step %d" % k)
        print("m0 " + bits(w0.detach()))
        print("m1 " + bits(w1.detach()))
        print("f0 " + bits(b.detach()))


print("# apollo-torch 1.0.3 (the reference), projection injected; generator tests/data/torch_gen/gen_apollo.py")
print("# torch " + torch.__version__)
for line in cases:
    run(line)
