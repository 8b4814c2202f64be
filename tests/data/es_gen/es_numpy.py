#!/usr/bin/env python3
"""The float ES algebra in numpy, given the noise: a transcription of Fucina's src/es.zig
(perturb, restore, update, anchored decay) written from its formulas, not from forgia's
code, so that tests/interop/test_es_numpy.cpp can require forgia's trajectory to be its bits.

    es_numpy.py DIR

DIR/manifest.txt:
    config sigma=S alpha=A|none population=N antithetic=0|1 norm=z_score|centered_ranks|none
           anchor=none|l1|l2 lambda=L iterations=K          (one line; S, A, L: f32 bits)
    slot NAME f32|f16|bf16 COUNT                            (one line per float slot, in order)
Inputs: init_<k>.bin (slot k's bytes), rewards_<i>.f32 (iteration i's N rewards), and
noise_<i>_<s>_<k>.f32 (iteration i, noise stream s, slot k: the f32 values eps; stream s is
member s, or the pair 2s/2s+1 under antithetic, whose odd member applies -eps).
Each iteration: every member m in order is perturbed (p = N(W(p) + W(N(sign * sigma * eps))))
and restored (the same with -sigma; the (x + t) - t drift stays), then the update
(statistics, coefficients, antithetic fold, acc += C_s * eps_s in f32, p = N(W(p) +
W(N(scale * acc)))), then anchored decay toward the initial parameters. Outputs:
pert_<i>_<m>_<k>.bin, rest_<i>_<m>_<k>.bin, upd_<i>_<k>.bin, and stats_<i>.txt
(`mean std min max`: f64 bits, f64 bits, f32 bits, f32 bits, hex).

Every array operation is one numpy float32 ufunc, which rounds once (IEEE binary32, no
fusing), so the results are exact, not approximate; the statistics are Python floats (IEEE
binary64) summed sequentially in member order.
"""
import math
import pathlib
import struct
import sys

import numpy as np

F32 = np.float32


def bf16_from_f32(x):
    """f32 -> bf16 bits by Fucina's rule: round half to even on the upper
    half, NaN kept quiet."""
    b = np.asarray(x, dtype=F32).view(np.uint32).astype(np.uint64)
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF
    nan = ((b >> 16) | 0x40) & 0xFFFF
    return np.where((b & 0x7FFFFFFF) > 0x7F800000, nan, rounded).astype(np.uint16)


def widen(dtype, stored):
    if dtype == "f32":
        return stored.astype(F32)
    if dtype == "f16":
        return stored.astype(F32)  # float16 -> float32 is exact
    return (stored.astype(np.uint32) << 16).view(F32)


def narrow(dtype, x):
    """f32 values to the slot's storage: f16 by numpy's round-to-nearest-even conversion."""
    x = np.asarray(x, dtype=F32)
    if dtype == "f32":
        return x.copy()
    if dtype == "f16":
        return x.astype(np.float16)
    return bf16_from_f32(x)


def rnd(dtype, x):
    """N then W: the value x takes in the slot's dtype."""
    return widen(dtype, narrow(dtype, x))


def storage(dtype, raw):
    t = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}[dtype]
    return np.frombuffer(raw, dtype=t).copy()


def f32_of_bits(h):
    return struct.unpack("<f", struct.pack("<I", int(h, 16)))[0]


def stats(rewards):
    n = len(rewards)
    mean = 0.0
    for r in rewards:
        mean += float(r)
    mean /= n
    var = 0.0
    for r in rewards:
        d = float(r) - mean
        var += d * d
    var /= n
    return mean, math.sqrt(var), min(rewards), max(rewards)


def coefficients(norm, rewards, mean, std):
    n = len(rewards)
    if norm == "z_score":
        return [F32((float(r) - mean) / (std + 1e-8)) for r in rewards]
    if norm == "centered_ranks":
        order = sorted(range(n), key=lambda m: (float(rewards[m]), m))
        c = [F32(0)] * n
        for rank, m in enumerate(order):
            c[m] = F32(F32(rank) / F32(n - 1)) - F32(0.5)
        return c
    return [F32(r) for r in rewards]


def main():
    d = pathlib.Path(sys.argv[1])
    cfg, slots = {}, []
    for line in (d / "manifest.txt").read_text().splitlines():
        w = line.split()
        if not w:
            continue
        if w[0] == "config":
            cfg = dict(kv.split("=", 1) for kv in w[1:])
        elif w[0] == "slot":
            slots.append((w[1], w[2], int(w[3])))
    sigma = F32(f32_of_bits(cfg["sigma"]))
    # The default alpha is sigma / 2, one f32 division.
    alpha = sigma / F32(2.0) if cfg["alpha"] == "none" else F32(f32_of_bits(cfg["alpha"]))
    pop = int(cfg["population"])
    anti = cfg["antithetic"] == "1"
    anchor_kind = cfg["anchor"]
    lam = F32(f32_of_bits(cfg["lambda"]))
    params = [storage(dt, (d / f"init_{k}.bin").read_bytes()) for k, (_, dt, _) in enumerate(slots)]
    for k, (_, _, n) in enumerate(slots):
        assert params[k].size == n, f"slot {k}: {params[k].size} values, manifest says {n}"
    anchor = [widen(dt, p) for (_, dt, _), p in zip(slots, params)]
    n_streams = pop // 2 if anti else pop

    for it in range(int(cfg["iterations"])):
        noise = [[np.fromfile(d / f"noise_{it}_{s}_{k}.f32", dtype=F32) for k in range(len(slots))]
                 for s in range(n_streams)]
        for m in range(pop):
            stream, nsign = (m // 2, F32(-1.0 if m % 2 else 1.0)) if anti else (m, F32(1.0))
            for tag, sign in (("pert", F32(1.0)), ("rest", F32(-1.0))):
                scaled = F32(sign * nsign) * sigma
                for k, (_, dt, _) in enumerate(slots):
                    t = rnd(dt, scaled * noise[stream][k])
                    params[k] = narrow(dt, widen(dt, params[k]) + t)
                    (d / f"{tag}_{it}_{m}_{k}.bin").write_bytes(params[k].tobytes())

        rewards = list(np.fromfile(d / f"rewards_{it}.f32", dtype=F32))
        assert len(rewards) == pop
        mean, std, lo, hi = stats(rewards)
        c = coefficients(cfg["norm"], rewards, mean, std)
        sc = [F32(c[2 * s] - c[2 * s + 1]) for s in range(n_streams)] if anti else c
        scale = alpha / F32(pop)
        for k, (_, dt, n) in enumerate(slots):
            acc = np.zeros(n, dtype=F32)
            for s in range(n_streams):
                acc = acc + sc[s] * noise[s][k]
            delta = rnd(dt, scale * acc)
            params[k] = narrow(dt, widen(dt, params[k]) + delta)

        if anchor_kind != "none":
            step = alpha * lam
            for k, (_, dt, _) in enumerate(slots):
                a = anchor[k]
                diff = rnd(dt, widen(dt, params[k]) - a)
                if anchor_kind == "l2":
                    kept = rnd(dt, diff * (F32(1.0) - step))
                    params[k] = narrow(dt, kept + a)
                else:
                    th = rnd(dt, np.abs(diff) - step)
                    cl = np.maximum(th, F32(0.0))
                    params[k] = narrow(dt, np.where(diff < 0, -cl, cl) + a)
        for k in range(len(slots)):
            (d / f"upd_{it}_{k}.bin").write_bytes(params[k].tobytes())
        (d / f"stats_{it}.txt").write_text("%016x %016x %08x %08x\n" % (
            struct.unpack("<Q", struct.pack("<d", mean))[0], struct.unpack("<Q", struct.pack("<d", std))[0],
            struct.unpack("<I", struct.pack("<f", lo))[0], struct.unpack("<I", struct.pack("<f", hi))[0]))


if __name__ == "__main__":
    main()
