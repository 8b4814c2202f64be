#!/usr/bin/env python3
"""Writes tests/data/golden/es_reference.txt: what the ES reference implementations listed below
compute, run unmodified on CPU, with their inputs, so that tests/cpu/test_es_reference.cpp
can run forgia's ES ops (elem/op_es.h) on the same inputs and require the same bits.

References (pinned as Fucina's tools/fetch_refs.sh pins them; clone or `git archive` them):
  ES_AT_SCALE  github.com/VsonicV/es-at-scale 574a9d134da1ffce2a8bb812019899e5c96b588a:
               es_at_scale/utils/worker_extension.py (WorkerExtension.perturb_self_weights,
               restore_self_weights, update_weights_from_seeds) and
               es_at_scale/utils/reward_shaping.py (z_score)
  ES_AWD       github.com/kschweig/es-awd f432ff823a7d59f91d4ac2cf99e4923654c6f464:
               weight_update_utils.py (apply_reference_weight_decay_, l1 and l2)

    python3 tests/data/es_gen/gen_es_reference.py ES_AT_SCALE ES_AWD ZSCORE_PYTHON \
        > tests/data/golden/es_reference.txt

Run it with a Python that has torch (CPU wheels) and numpy. reward_shaping.py nests double
quotes inside an f-string, which only Python >= 3.12 parses, so z_score runs in ZSCORE_PYTHON
(any Python >= 3.12 with numpy; it may be the same interpreter).

The references draw their noise from torch's generator (torch.randn in the parameter's dtype,
reseeded with the member's seed for every tensor: Fucina's `correlated` scheme), which forgia
does not reproduce; so the file carries that noise, widened to f32 exactly as the references
widen it, and forgia's test feeds it to its cached-noise ops. What is compared is therefore
the algebra: the rounding of sigma * eps to the parameter's dtype and the widen-add-narrow
apply (perturb, restore), the coefficient cast, the f32 mul-then-add accumulation in member
order, the one scaling by alpha / population and the narrowed delta (update), and the
anchored decay's per-op roundings (l1, l2). The scalars are chosen so that the references'
f64 scalars (alpha / population, 1 - alpha * lambda, alpha * lambda, sigma) round to the
f32 values forgia derives from an f32 config (asserted below); the test derives them the
forgia way.

Not compared, because these references do not have them or do not do them Fucina's way:
centered ranks and antithetic pairs (not in es-at-scale), es-awd's own perturb and update
(torch's fused add_(x, alpha=s), one rounding of p + s * x where Fucina rounds s * x first,
and an accumulator in the parameter's dtype), and z-score statistics for populations of 8 or
more (the reference takes numpy's pairwise mean and std; Fucina and forgia sum in member
order; the two agree below 8 values, where numpy's sum is sequential).

Format: `case NAME key=value...`; `slot NAME DTYPE N` per parameter; then blocks, each a
line followed by one `v NAME WORDS` line per slot (8 hex digits per f32 word, 4 per f16/bf16
word): `init` (the parameters), `noise SEED` (that member's draw per slot, f32 words),
`perturb SEED`, `restore SEED`, `update SEED...` (the parameters after each), `anchor` (the
anchor), `decay` (after the decay). `zscore rewards=R... mean=M std=S coef=C...` records one
reference z_score call (rewards f32 bits; mean, std and coefficients f64 bits) before the
`update` that uses its coefficients.
"""
import contextlib
import importlib.util
import json
import pathlib
import struct
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "torch_gen"))
from golden_streams import bits, bits16, stream  # noqa: E402

REFS = {
    "es-at-scale": "574a9d134da1ffce2a8bb812019899e5c96b588a",
    "es-awd": "f432ff823a7d59f91d4ac2cf99e4923654c6f464",
}


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Model:
    """What WorkerExtension reads from vLLM's model runner: model.named_parameters()."""

    def __init__(self, params):
        self.model = self
        self._params = params

    def named_parameters(self):
        return list(self._params.items())


def quiet():
    """The references print progress lines; they go to stderr, not into the golden file."""
    return contextlib.redirect_stdout(sys.stderr)


def f32(x):
    return float(np.float32(x))


def f32hex(x):
    return "%08x" % struct.unpack("<I", struct.pack("<f", x))[0]


def f64hex(x):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", x))[0]


def words(t):
    return bits(t) if t.dtype == torch.float32 else bits16(t)


DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


def make_params(seed0):
    """Odd-length f32, f16 and bf16 tensors, integer-exact values (golden_streams.stream),
    two of them the same shape (the references' per-tensor reseeding gives them one draw)."""
    return {
        "w32": torch.nn.Parameter(stream(seed0, 35, 2.0).reshape(5, 7)),
        "w16": torch.nn.Parameter(stream(seed0 + 1, 33, 2.0).reshape(3, 11).to(torch.float16)),
        "wb16": torch.nn.Parameter(stream(seed0 + 2, 9, 4.0).to(torch.bfloat16)),
        "w32b": torch.nn.Parameter(stream(seed0 + 3, 35, 1.0).reshape(5, 7)),
    }


def print_slots(params):
    for name, p in params.items():
        print(f"slot {name} {DTYPES[p.dtype]} {p.numel()}")


def print_values(head, params):
    print(head)
    for name, p in params.items():
        print(f"v {name} {words(p.data.flatten())}")


def print_noise(params, seed):
    """The draw the references make for each tensor (worker_extension.py: a Generator seeded
    with the member's seed, torch.randn in p.dtype), widened to f32 as their update does."""
    print(f"noise {seed}")
    for name, p in params.items():
        gen = torch.Generator(device=p.device)
        gen.manual_seed(int(seed))
        noise = torch.randn(p.shape, dtype=p.dtype, device=p.device, generator=gen)
        print(f"v {name} {bits(noise.to(torch.float32).flatten())}")


def z_score(zpython, es_at_scale, rewards):
    """reward_shaping.z_score itself, called the way es_trainer.py calls it (np.mean, np.std
    of the rewards), in an interpreter that can parse the module; floats travel as hex."""
    prog = (
        "import importlib.util, json, sys\n"
        "import numpy as np\n"
        "spec = importlib.util.spec_from_file_location('ref_reward_shaping', sys.argv[1])\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "r = [float.fromhex(h) for h in json.loads(sys.argv[2])]\n"
        "mean, std = float(np.mean(r)), float(np.std(r))\n"
        "out = m.z_score({i: {'avg_reward': v} for i, v in enumerate(r)}, mean_reward=mean, std_reward=std)\n"
        "print(json.dumps([mean.hex(), std.hex()] + [out[i]['norm_reward'].hex() for i in range(len(r))]))\n"
    )
    path = pathlib.Path(es_at_scale) / "es_at_scale" / "utils" / "reward_shaping.py"
    res = subprocess.run([zpython, "-c", prog, str(path), json.dumps([float(x).hex() for x in rewards])],
                         check=True, capture_output=True, text=True)
    vals = [float.fromhex(h) for h in json.loads(res.stdout.strip().splitlines()[-1])]
    return vals[0], vals[1], vals[2:]


def case_es_at_scale(es_at_scale, zpython):
    ext = load(pathlib.Path(es_at_scale) / "es_at_scale" / "utils" / "worker_extension.py", "ref_worker_extension")
    sigma, alpha, pop = f32(0.02), f32(0.01), 5
    # The reference scales by f32(alpha / population) computed in f64; forgia by
    # f32(alpha) / f32(population) in f32. Chosen so that they agree.
    assert np.float32(alpha / pop) == np.float32(alpha) / np.float32(pop)
    iterations = [
        ([12345, 67890, 424242, 1 << 29, 3], [0.3, -1.2, 0.75, 0.0, 2.5]),
        ([111, 222, 333, 444, 555], [1.0, 1.0, -0.5, 0.25, -2.0]),
        ([7, 77, 777, 7777, 77777], [0.125, -0.375, 2.0, 0.5, -1.5]),
    ]
    params = make_params(300)
    worker = ext.WorkerExtension()
    worker.model_runner = Model(params)
    print(f"case es_at_scale sigma={f32hex(sigma)} alpha={f32hex(alpha)} population={pop}")
    print_slots(params)
    print_values("init", params)
    for seeds, rewards in iterations:
        rewards = [f32(r) for r in rewards]  # forgia's rewards are f32
        for seed in seeds:
            print_noise(params, seed)
        # A training loop's evaluation: every member perturbed and restored in place, the
        # regenerate-restore drift kept.
        for seed in seeds:
            with quiet():
                worker.perturb_self_weights(seed, sigma, negate=False)
            print_values(f"perturb {seed}", params)
            with quiet():
                worker.restore_self_weights(seed, sigma)
            print_values(f"restore {seed}", params)
        mean, std, coef = z_score(zpython, es_at_scale, rewards)
        print(f"zscore rewards={','.join(f32hex(r) for r in rewards)} mean={f64hex(mean)} std={f64hex(std)} "
              f"coef={','.join(f64hex(c) for c in coef)}")
        with quiet():
            worker.update_weights_from_seeds(seeds, coef, alpha, pop)
        print_values("update " + " ".join(str(s) for s in seeds), params)


def case_awd(es_awd, name, kind, alpha, lam):
    wuu = load(pathlib.Path(es_awd) / "weight_update_utils.py", "ref_weight_update_utils")
    step = float(alpha) * float(lam)
    fstep = np.float32(alpha) * np.float32(lam)
    # The reference's f64 scalars against forgia's f32 derivation from an f32 config.
    assert np.float32(step) == fstep, (kind, alpha, lam)
    assert np.float32(1.0 - step) == np.float32(1.0) - fstep, (kind, alpha, lam)
    anchors = make_params(400)
    params = {}
    for j, (slot, a) in enumerate(anchors.items()):
        # Moved by up to 2 * step either way, so that l1's threshold zeroes some.
        d = stream(500 + j, a.numel(), 4.0 * step).reshape(a.shape)
        params[slot] = torch.nn.Parameter((a.data.to(torch.float32) + d).to(a.dtype))
    print(f"case {name} alpha={f32hex(alpha)} lambda={f32hex(lam)} kind={kind}")
    print_slots(params)
    print_values("init", params)
    print_values("anchor", anchors)
    for slot, p in params.items():
        with quiet():
            wuu.apply_reference_weight_decay_(parameter=p, reference_parameter=anchors[slot].data,
                                              weight_decay_type=kind, weight_decay_lambda=lam, alpha=alpha)
    print_values("decay", params)


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    es_at_scale, es_awd, zpython = sys.argv[1:]
    torch.set_num_threads(1)
    print("# ES reference implementations, run unmodified on CPU: es-at-scale "
          f"{REFS['es-at-scale']}, es-awd {REFS['es-awd']}")
    print(f"# torch {torch.__version__}; generator tests/data/es_gen/gen_es_reference.py")
    with torch.no_grad():
        case_es_at_scale(es_at_scale, zpython)
        for name, kind, alpha, lam in (("awd_l2", "l2", 0.5, 0.25), ("awd_l1", "l1", 0.5, 0.125),
                                       ("awd_l2_small", "l2", f32(0.025), 10.0),
                                       ("awd_l1_small", "l1", f32(0.025), 0.5)):
            case_awd(es_awd, name, kind, alpha, lam)


if __name__ == "__main__":
    main()
