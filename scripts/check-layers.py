#!/usr/bin/env python3
"""Reads the #include graph of the library, the CLI and the benchmarks and checks it
against the layer rule (docs/design.md, "Layers"):

    tools, bench -> training -> runtime -> host -> formats -> device API -> {core, elem}
    cpu/, cuda/  implement the device API and are reached only through it

Each arrow points one way: a layer includes the layers below it, never one above it
(host's loader reads the containers; formats reads files through core's mapping and never
includes host). A layer may skip the ones between (training includes core directly).

Prints every layer-to-layer edge found (with a count and one example) so a reviewer sees
the architecture in one screen, then every edge that runs against the rule, and exits 1
when there is any. Tests and fuzzers are not checked: they may open internals."""
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANNED = ["core", "device", "cpu", "cuda", "host", "formats", "runtime", "training", "tools", "bench", "include/forgia"]
EXTS = (".c", ".h", ".cu", ".cuh", ".cpp")

# Public headers, by the layer that implements them.
PUBLIC = {
    "api.h": "core", "status.h": "core", "cancel.h": "core", "dtype.h": "core", "version.h": "core",
    "device.h": "device", "topology.h": "device", "tensor.h": "device", "ops.h": "device",
    "rng.h": "device", "reduce.h": "device", "gemm.h": "device", "apollo.h": "device", "es_trits.h": "device", "rmsnorm.h": "device", "rope.h": "device", "attention.h": "device", "embed.h": "device",
    "linear.h": "device", "softmax.h": "device", "lm.h": "runtime", "lm_grad.h": "runtime", "lm_weights.h": "runtime", "sample.h": "runtime", "comm.h": "device",
    "mapping.h": "core", "output.h": "core", "load.h": "host",
    "gguf.h": "formats", "gguf_stream.h": "formats", "tokenizer.h": "formats", "chat.h": "formats", "jinja.h": "formats", "safetensors.h": "formats", "quant.h": "formats", "export.h": "formats",
    "imatrix.h": "formats", "quant_weighted.h": "formats",
    "ckpt.h": "formats", "ptqtp.h": "formats", "export_ptqtp.h": "formats", "export_merge.h": "formats", "optim_frame.h": "formats",
    "state_dict.h": "formats", "trainer_state.h": "formats", "ckpt_dir.h": "formats",
    "tensor_ckpt.h": "training", "optim.h": "training", "optimset.h": "training",
    "lr_schedule.h": "training", "muon.h": "training", "registry.h": "training", "lora.h": "training", "lm_adapters.h": "training", "lm_full.h": "training", "es.h": "training",
    "forgia.h": "umbrella",
}

# Which layers each layer may include: those below it in the rule. formats needs nothing
# from the device API today, so it may not include it.
ALLOWED = {
    "core": {"core"},
    "elem": {"elem"},
    "device": {"device", "core", "elem"},
    "cpu": {"cpu", "device", "core", "elem"},
    "cuda": {"cuda", "device", "core", "elem"},
    "formats": {"formats", "core", "elem"},
    "host": {"host", "formats", "device", "core", "elem"},
    "runtime": {"runtime", "formats", "host", "device", "core", "elem"},
    "training": {"training", "runtime", "formats", "host", "device", "core", "elem"},
    "tools": {"tools", "umbrella", "training", "runtime", "formats", "host", "device", "core", "elem"},
    "bench": {"bench", "umbrella", "training", "runtime", "formats", "host", "device", "core", "elem"},
    "umbrella": {"core", "elem", "device", "host", "formats", "runtime", "training"},
}
# Headers that include nothing at all, so any layer may include them: the fg_dtype enum is
# shared by core's dtype table and elem's decoders (elem may include only elem/).
LEAVES = {"include/forgia/elem/dtype_enum.h"}
# Folders above the device API see only public headers and header-only core utilities
# (core/clock.h, core/text.h); internal headers of lower layers stay private to them.
HEADER_ONLY_CORE = {"core/clock.h", "core/text.h"}
PUBLIC_ONLY_FROM = {"tools", "bench", "training", "runtime"}
# core and elem depend on nothing but the C library (and CUDA's own headers in elem). The other
# layers may include system headers, e.g. <mpi.h> and <nccl.h> in device/comm_mpi.c, comm_nccl.c.
SYSTEM_OK = re.compile(r"^(assert|ctype|dirent|errno|fcntl|float|inttypes|limits|math|pthread|setjmp|stdarg|stdatomic|"
                       r"stdbool|signal|stddef|stdint|stdio|stdlib|string|time|unistd|sys/\w+|cuda_fp16|cuda_bf16)\.h$")


def layer_of(rel):
    if rel.startswith("include/forgia/elem/"):
        return "elem"
    if rel.startswith("include/forgia/"):
        return PUBLIC.get(rel[len("include/forgia/"):], "unknown-public")
    top = rel.split("/", 1)[0]
    return top if top in ALLOWED else None


def resolve(src_rel, inc):
    """The repository path an #include "..." names, or None when it is outside the tree."""
    here = os.path.dirname(src_rel)
    for cand in (os.path.join(here, inc), inc, os.path.join("include", inc)):
        cand = os.path.normpath(cand)
        if os.path.isfile(os.path.join(ROOT, cand)):
            return cand
    return None


def main():
    edges = defaultdict(list)
    bad = []
    generated = set()
    inc_re = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
    for top in SCANNED:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                if not name.endswith(EXTS):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), ROOT)
                src = layer_of(rel)
                with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = inc_re.match(line)
                        if not m:
                            continue
                        kind, inc = m.groups()
                        where = f"{rel}:{lineno}"
                        if kind == "<":
                            if src in ("core", "elem") and not SYSTEM_OK.match(inc):
                                bad.append(f"{where}: {src} includes <{inc}>, not the C library")
                            continue
                        target = resolve(rel, inc)
                        if target is None:
                            generated.add(f"{rel} -> \"{inc}\"")  # made in the build tree
                            continue
                        dst = layer_of(target)
                        if dst == src:
                            continue
                        edges[(src, dst)].append(f"{rel} -> {target}")
                        ok = dst in ALLOWED.get(src, set()) or target in LEAVES
                        if ok and src in PUBLIC_ONLY_FROM and not target.startswith("include/") \
                                and target not in HEADER_ONLY_CORE:
                            ok = False
                        if not ok:
                            bad.append(f"{where}: {src} -> {dst} ({target})")
    order = ["tools", "bench", "umbrella", "training", "host", "formats", "device", "cpu", "cuda", "core", "elem"]
    rank = {k: i for i, k in enumerate(order)}
    print("include edges between layers (count, one example):")
    for (s, d), ex in sorted(edges.items(), key=lambda kv: (rank.get(kv[0][0], 99), rank.get(kv[0][1], 99))):
        print(f"  {s:>8} -> {d:<8} {len(ex):4d}  {ex[0]}")
    for g in sorted(generated):
        print(f"  generated in the build tree: {g}")
    for leaf in sorted(LEAVES):
        with open(os.path.join(ROOT, leaf), encoding="utf-8") as f:
            if re.search(r"^\s*#\s*include", f.read(), re.M):
                bad.append(f"{leaf}: a leaf header must include nothing")
    if bad:
        print(f"\n{len(bad)} include(s) against the layer rule:")
        for b in bad:
            print("  " + b)
        return 1
    print("\nlayer rule holds: tools/bench -> training -> runtime -> host -> formats -> device API -> {core, elem}; "
          "cpu/cuda only behind device/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
