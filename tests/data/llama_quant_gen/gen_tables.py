#!/usr/bin/env python3
"""Run llama-quantize on every source model for every case and write the golden tables.

usage: gen_tables.py QUANTIZE_BIN MODELS_DIR GOLDEN_DIR [MODEL ...]

MODELS_DIR holds <model>.gguf, <model>.shapes.txt and <model>.imatrix.gguf (gen_models.py,
gen_imatrix.py). For each model this writes GOLDEN_DIR/<model>.txt:
    CASE <TAB> tensor_name <TAB> ggml_type_name      one line per tensor, output file order
    CASE <TAB> general.file_type <TAB> N             the llama_ftype written
    CASE <TAB> error <TAB> message                   when llama-quantize refused the case
and copies <model>.shapes.txt. For tiny_llama it also writes tiny_llama.sha256.txt (whole
file and per-tensor sha256 of every output) and tiny_llama.kv.txt (the key/values of two
outputs, in file order), and copies the source model and its imatrix.
The case list (names and llama-quantize arguments) is written to GOLDEN_DIR/cases.txt.
Outputs are deleted as soon as they are read.
"""
import hashlib
import os
import shutil
import subprocess
import sys

import gguf_parse

MIXTURES = [
    "Q1_0", "Q2_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0",
    "Q2_K", "Q2_K_S", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M",
    "Q6_K", "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4_MOE",
    "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS", "IQ3_S", "IQ3_M",
    "IQ1_S", "IQ1_M", "F16", "BF16",
]

# (case name, options before the file names, mixture); IMATRIX is replaced by the imatrix
# file name (relative: llama-quantize records the path it was given in the output)
CASES = []
for _m in MIXTURES:
    CASES.append((_m, [], _m))
for _m in MIXTURES:
    CASES.append((_m + "+imatrix", ["--imatrix", "IMATRIX"], _m))
CASES += [
    ("Q4_K_M+pure", ["--pure"], "Q4_K_M"),
    ("Q4_K_M+output_q8_0+embd_q4_0",
     ["--output-tensor-type", "q8_0", "--token-embedding-type", "q4_0"], "Q4_K_M"),
    ("Q4_K_M+tensor_attn_v_q8_0", ["--tensor-type", "attn_v=q8_0"], "Q4_K_M"),
    ("Q4_K_M+tensor_ffn_down_blk0_2_q8_0", ["--tensor-type", r"blk\.[0-2]\.ffn_down=q8_0"],
     "Q4_K_M"),
    ("Q4_K_M+leave_output", ["--leave-output-tensor"], "Q4_K_M"),
    ("Q6_K+pure", ["--pure"], "Q6_K"),
    ("IQ2_XXS+imatrix+pure", ["--imatrix", "IMATRIX", "--pure"], "IQ2_XXS"),
]

THREADS = "2"


def error_message(log):
    msg = None
    offending = None
    for line in log.splitlines():
        if "failed to quantize:" in line:
            msg = line.split("failed to quantize:", 1)[1].strip()
        if "offending tensor:" in line:
            offending = line.split("offending tensor:", 1)[1].strip()
        if "target type:" in line and offending:
            offending += " -> " + line.split("target type:", 1)[1].strip()
    if msg is None:
        # an abort inside ggml (no error path): name the assertion and the tensor it hit
        current = None
        for line in log.splitlines():
            if line.startswith("[") and "/" in line.split("]")[0]:
                current = line.split("]", 1)[1].split()[0]
            if "GGML_ASSERT" in line:
                assertion = line[line.index("GGML_ASSERT"):].strip()
                return f"aborted: {assertion} while converting {current}"
    if msg is None:
        tail = [l for l in log.splitlines() if l.strip()][-3:]
        msg = " | ".join(tail)
    if offending:
        msg += f" (offending tensor {offending})"
    return msg


def check_with_gguf_py(path, info):
    """Cross-check names, shapes and types against gguf-py where it knows every type."""
    import gguf
    known = {t.value for t in gguf.GGMLQuantizationType}
    if any(t["type_id"] not in known for t in info["tensors"]):
        return
    r = gguf.GGUFReader(path)
    got = [(t.name, [int(x) for x in t.shape], int(t.tensor_type)) for t in r.tensors]
    want = [(t["name"], t["ne"], t["type_id"]) for t in info["tensors"]]
    if got != want:
        raise SystemExit(f"{path}: gguf-py and gguf_parse disagree")
    for t, rt in zip(info["tensors"], r.tensors):
        if int(rt.n_bytes) != t["nbytes"] or int(rt.data_offset) != info["data_start"] + t["offset"]:
            raise SystemExit(f"{path}: {t['name']}: size/offset disagree with gguf-py")


def run_case(qbin, work, model, case):
    name, opts, mix = case
    opts = [model + ".imatrix.gguf" if o == "IMATRIX" else o for o in opts]
    out = "out.gguf"
    if os.path.exists(os.path.join(work, out)):
        os.remove(os.path.join(work, out))
    cmd = [qbin] + opts + [model + ".gguf", out, mix, THREADS]
    p = subprocess.run(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        return None, error_message(p.stdout), p.stdout
    path = os.path.join(work, out)
    info = gguf_parse.parse(path)
    check_with_gguf_py(path, info)
    os.remove(path)
    return info, None, p.stdout


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    qbin, mdir, gdir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
    models = sys.argv[4:] or ["tiny_llama", "llama_gqa", "llama_tied", "llama_moe8",
                              "qwen2", "gemma3", "qwen3moe"]
    os.makedirs(gdir, exist_ok=True)
    with open(os.path.join(gdir, "cases.txt"), "w") as fh:
        fh.write("# CASE <TAB> llama-quantize arguments (MODEL = <model>.gguf, IMATRIX = "
                 "<model>.imatrix.gguf, nthread 2)\n")
        for name, opts, mix in CASES:
            fh.write(f"{name}\t{' '.join(opts + ['MODEL', 'out.gguf', mix, THREADS])}\n")
    logdir = os.path.join(mdir, "logs")
    os.makedirs(logdir, exist_ok=True)

    for model in models:
        lines = [f"# llama-quantize per-tensor types for {model}: see "
                 "tests/data/llama_quant_gen/README.md and cases.txt",
                 "# CASE\ttensor\tggml_type | CASE\tgeneral.file_type\tN | CASE\terror\tmessage"]
        sha_lines = ["# CASE\t@file\tgguf\tsize\tsha256 (whole output file) | "
                     "CASE\ttensor\ttype\tnbytes\tsha256\toffset (from the data section start)"]
        kv_lines = []
        for case in CASES:
            info, err, log = run_case(qbin, mdir, model, case)
            with open(os.path.join(logdir, f"{model}.{case[0]}.log"), "w") as fh:
                fh.write(log)
            if err is not None:
                lines.append(f"{case[0]}\terror\t{err}")
                print(f"{model} {case[0]}: error: {err}", flush=True)
                continue
            for t in info["tensors"]:
                lines.append(f"{case[0]}\t{t['name']}\t{t['type']}")
            ft = [v for k, _, v in info["kv"] if k == "general.file_type"]
            lines.append(f"{case[0]}\tgeneral.file_type\t{ft[0]}")
            if model == "tiny_llama":
                buf = info["buf"]
                sha_lines.append(f"{case[0]}\t@file\tgguf\t{info['size']}\t"
                                 f"{hashlib.sha256(buf).hexdigest()}")
                for t in info["tensors"]:
                    a = info["data_start"] + t["offset"]
                    d = buf[a:a + t["nbytes"]]
                    sha_lines.append(f"{case[0]}\t{t['name']}\t{t['type']}\t{t['nbytes']}\t"
                                     f"{hashlib.sha256(d).hexdigest()}\t{t['offset']}")
                if case[0] in ("Q4_K_M", "Q4_K_M+imatrix"):
                    for k, ty, v in info["kv"]:
                        if ty == "arr":
                            v = f"[{v[0]}] " + ",".join(str(x) for x in v[1])
                        elif ty == "f32":
                            v = f"{v:.9g}"
                        kv_lines.append(f"{case[0]}\tkv\t{k}\t{ty}\t{v}")
                    kv_lines.append(f"{case[0]}\tmeta_bytes\t{info['meta_end']}\t"
                                    f"data_start\t{info['data_start']}")
            print(f"{model} {case[0]}: ok", flush=True)
        with open(os.path.join(gdir, model + ".txt"), "w") as fh:
            fh.write("\n".join(lines) + "\n")
        shutil.copyfile(os.path.join(mdir, model + ".shapes.txt"),
                        os.path.join(gdir, model + ".shapes.txt"))
        if model == "tiny_llama":
            with open(os.path.join(gdir, "tiny_llama.sha256.txt"), "w") as fh:
                fh.write("\n".join(sha_lines) + "\n")
            with open(os.path.join(gdir, "tiny_llama.kv.txt"), "w") as fh:
                fh.write("# CASE\tkv\tkey\ttype\tvalue, in output file order\n")
                fh.write("\n".join(kv_lines) + "\n")
            for f in ("tiny_llama.gguf", "tiny_llama.imatrix.gguf"):
                shutil.copyfile(os.path.join(mdir, f), os.path.join(gdir, f))


if __name__ == "__main__":
    main()
