#!/usr/bin/env python3
"""Fine-tuning throughput: `forgia finetune` against torch + transformers + peft on the same
model, data, LoRA shape, optimizer and threads, in the same run. Prints each side's training
tokens per second (steps after the first, which both spend warming up) and peak RSS, and
their ratio. --full compares full fine-tuning instead: `forgia finetune --full` on the model's
f32 export (`forgia export --dtype f32`, made here) against torch training every parameter.

    python bench/ft_vs_torch.py --forgia BIN --model GGUF [--steps 8] [--ctx 256] [--threads N] [--full]

Needs torch, transformers and peft (tests/data/lm/make_ref_venv.sh makes such a venv): run it
with that venv's python. transformers dequantizes the GGUF to fp32; forgia trains over the
stored blocks (fast mode). Same text windows, LoRA rank 8 / alpha 16 on q,k,v,o,gate,up,down,
AdamW lr 1e-4, batch 1."""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

TEXT = ("It was a bright cold day in April, and the clocks were striking thirteen. " * 60)


def forgia_side(a, text_path, work):
    metrics = os.path.join(work, "m.jsonl")
    model, extra = a.model, []
    if a.full:
        model = os.path.join(work, "f32.gguf")
        subprocess.run([a.forgia, "export", "--from-gguf", a.model, "--dtype", "f32", "--out", model], check=True,
                       capture_output=True)
        extra = ["--full", "--weight-decay", "0"]
    t0 = time.time()
    r = subprocess.run([a.forgia, "finetune", model, "--data", text_path, "--ctx", str(a.ctx), "--steps",
                        str(a.steps), "--lr", "1e-4", "--threads", str(a.threads), "--metrics", metrics, "--quiet",
                        *extra], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"forgia failed: {r.stderr}")
    wall = time.time() - t0
    rows = [json.loads(x) for x in open(metrics)]
    toks = sum(x["tokens"] for x in rows[1:])
    secs = sum(x["seconds"] for x in rows[1:])
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return toks / secs, rss, wall, rows[0]["loss"], rows[-1]["loss"]


def torch_side(a, ids):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(a.threads)
    folder, file = os.path.split(a.model)
    m = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, torch_dtype=torch.float32)
    if a.full:
        pm = m
        opt = torch.optim.AdamW(pm.parameters(), lr=1e-4, weight_decay=0.0)
    else:
        pm = get_peft_model(m, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, bias="none",
                                          target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                          "up_proj", "down_proj"]))
        opt = torch.optim.AdamW([p for p in pm.parameters() if p.requires_grad], lr=1e-4)
    windows = [ids[i:i + a.ctx] for i in range(0, len(ids), a.ctx) if len(ids[i:i + a.ctx]) > 1]
    toks, secs, losses = 0, 0.0, []
    for s in range(a.steps):
        w = torch.tensor([windows[s % len(windows)]])
        t0 = time.time()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(pm(input_ids=w).logits[0, :-1], w[0, 1:])
        loss.backward()
        opt.step()
        dt = time.time() - t0
        losses.append(float(loss))
        if s:
            toks += w.shape[1]
            secs += dt
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return toks / secs, rss, losses[0], losses[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--forgia", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--full", action="store_true", help="full fine-tuning (every weight) instead of LoRA")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as w:
        tp = os.path.join(w, "text.txt")
        with open(tp, "w") as f:
            f.write(TEXT)
        ids = [int(x) for x in subprocess.run([a.forgia, "tokenize", a.model, "--file", tp], capture_output=True,
                                              text=True, check=True).stdout.split()]
        ft, frss, fwall, fl0, fl1 = forgia_side(a, tp, w)
    tt, trss, tl0, tl1 = torch_side(a, ids)
    kind = "full fine-tuning (f32)" if a.full else "LoRA fine-tuning"
    peer = "torch (fp32):       " if a.full else "torch + peft (fp32):"
    print(f"{kind}, {os.path.basename(a.model)}, ctx {a.ctx}, {a.steps} steps, {a.threads} threads")
    print(f"  forgia finetune (fast): {ft:8.1f} tokens/s  peak RSS {frss / 2**20:7.0f} MiB  loss {fl0:.4f} -> {fl1:.4f}")
    print(f"  {peer}   {tt:8.1f} tokens/s  peak RSS {trss / 2**20:7.0f} MiB  loss {tl0:.4f} -> {tl1:.4f}")
    print(f"  ratio forgia / torch:   {ft / tt:.2f}x tokens/s, {frss / trss:.2f}x memory")


if __name__ == "__main__":
    main()
