#!/usr/bin/env python3
"""PEFT goldens for forgia's LoRA adapters (tests/cpu/test_lora.cpp, PeftGolden).

For each case: a bias-free nn.Linear(in, out) wrapped by peft's LoraConfig(r, lora_alpha,
lora_dropout=0, target_modules=["lin"]), lora_A / lora_B set to given values (B nonzero, so
the delta is not trivially zero), then forward y = model(x), backward of sum(y * dy), and
merge_and_unload's merged weight. Every tensor is written as f32 hex words, row-major:
  case name in=I out=O r=R batch=N alpha=A scale=hex
  x|w|a|b|dy|y|dx|ga|gb|merged <hex> ...
Run: /work/torchvenv/bin/python tests/data/lora_gen/gen_peft.py > tests/data/golden/peft_lora.txt
"""
import struct
import sys

import peft
import torch
from torch import nn


def hexs(t):
    return " ".join("%08x" % struct.unpack("<I", struct.pack("<f", float(v)))[0] for v in t.detach().reshape(-1).tolist())


class M(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.lin = nn.Linear(i, o, bias=False)

    def forward(self, x):
        return self.lin(x)


CASES = [  # name, in, out, r, batch, alpha
    ("square", 16, 16, 4, 3, 8.0),
    ("wide", 24, 8, 2, 5, 16.0),
    ("tall", 8, 20, 8, 2, 3.0),
    ("rank1", 12, 10, 1, 4, 1.5),
]


def main():
    out = sys.stdout
    out.write("# PEFT %s, torch %s; generator tests/data/lora_gen/gen_peft.py\n" % (peft.__version__, torch.__version__))
    torch.manual_seed(1234)
    for name, i, o, r, n, alpha in CASES:
        m = M(i, o)
        w = torch.randn(o, i)
        with torch.no_grad():
            m.lin.weight.copy_(w)
        cfg = peft.LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules=["lin"])
        pm = peft.get_peft_model(m, cfg)
        layer = pm.base_model.model.lin
        a = torch.randn(r, i) * 0.5
        b = torch.randn(o, r) * 0.5
        with torch.no_grad():
            layer.lora_A["default"].weight.copy_(a)
            layer.lora_B["default"].weight.copy_(b)
        scale = layer.scaling["default"]
        x = torch.randn(n, i, requires_grad=True)
        dy = torch.randn(n, o)
        y = pm(x)
        (y * dy).sum().backward()
        ga = layer.lora_A["default"].weight.grad
        gb = layer.lora_B["default"].weight.grad
        merged = pm.merge_and_unload().lin.weight
        sc = struct.unpack("<I", struct.pack("<f", float(scale)))[0]
        out.write("case %s in=%d out=%d r=%d batch=%d alpha=%r scale=%08x\n" % (name, i, o, r, n, alpha, sc))
        for tag, t in (("x", x), ("w", w), ("a", a), ("b", b), ("dy", dy), ("y", y), ("dx", x.grad), ("ga", ga),
                       ("gb", gb), ("merged", merged)):
            out.write("%s %s\n" % (tag, hexs(t)))


if __name__ == "__main__":
    main()
