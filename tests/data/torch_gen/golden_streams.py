"""What the torch golden generators share: the integer-exact splitmix64 input streams that
forgia's tests rebuild bit for bit (fg_rng_at), and the hex bit-pattern text of the goldens.

Value i of stream `seed` is ((at(seed, i) >> 40) * 2^-24 - 0.5) * scale, where at() is
splitmix64 in counter form; every operation is exact in f32, so both sides build it identically.
"""
import torch

G = 0x9E3779B97F4A7C15
M = (1 << 64) - 1


def at(seed, i):
    z = (seed + (i + 1) * G) & M
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


def stream(seed, n, scale):
    return torch.tensor([((at(seed, i) >> 40) * 2.0**-24 - 0.5) * scale for i in range(n)], dtype=torch.float32)


def bits(t):
    """The f32 bit patterns of t, 8 hex digits each, space-separated."""
    return " ".join(f"{v & 0xFFFFFFFF:08x}" for v in t.contiguous().view(torch.int32).flatten().tolist())


def bits16(t):
    """The 16-bit bit patterns of a bf16/f16 tensor, 4 hex digits each."""
    return " ".join(f"{v & 0xFFFF:04x}" for v in t.contiguous().view(torch.int16).flatten().tolist())
