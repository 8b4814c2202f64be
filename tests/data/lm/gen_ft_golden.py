#!/usr/bin/env python3
"""The fine-tuning reference golden: transformers + peft + torch (fp32, CPU) on SmolLM2's GGUF,
from forgia's own initial adapters. Into OUT (golden/ft_smollm2.json):

  ids      FT_TEXT tokenized by the GGUF's tokenizer as transformers loads it (no BOS: the
           SmolLM2 file adds none): one sequence every step uses
  lr, rank, alpha, seed   the run's settings (`forgia finetune` takes the same)
  loss     the mean next-token cross-entropy over ids[1:] before SGD step 1 and before step 2
  sketch   per adapter tensor, after two SGD steps, of B and of A - A0 (the update, as A0 is
           forgia's draw): its norm and its projections on two fixed pseudo-random unit vectors
  full     full fine-tuning of the same model (every weight, f32, torch.optim.SGD at full.lr,
           the tied embedding one parameter): the loss before steps 1 and 2, and the sketches of
           every weight's update after one step (sketch1: -lr times torch autograd's gradient)
           and after two (sketch), under its GGUF name (Q/K rows in the GGUF's order)

Adapters: peft's LoRA on q, k, v, o, gate, up, down of every layer, dropout 0, scale
alpha / rank, A and B loaded from `forgia finetune --steps 0`'s adapters.safetensors (B zero).
forgia runs the GGUF's Q/K rows as llama.cpp's converter permuted them, so the q and k adapters'
B rows are in that order: they are unpermuted into peft's and back.

    python gen_ft_golden.py --forgia BIN --model GGUF --out FILE [--threads N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

FT_TEXT = ("The recipe needs three eggs, two cups of flour and a pinch of salt. "
           "Mix the eggs with the flour, add the salt, and bake for twenty minutes.")
LR = 0.05
LR_FULL = 0.003
RANK = 8
ALPHA = 16.0
SEED = 7
TARGETS = ["q", "k", "v", "o", "gate", "up", "down"]
HF = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
      "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}


def sketch_vectors(n):
    i = np.arange(n, dtype=np.float64)
    return np.sin(i * 0.7071 + 1.0), np.cos(i * 1.3 + 0.5)


def sketch(x):
    """[|x|, x . r1 / |r1|, x . r2 / |r2|]: every component at most |x| in size."""
    x = np.asarray(x, dtype=np.float64).ravel()
    r1, r2 = sketch_vectors(x.size)
    return [float(np.linalg.norm(x)), float(x @ r1) / float(np.linalg.norm(r1)), float(x @ r2) / float(np.linalg.norm(r2))]


def permute_rows(b, heads):
    """HF row order -> llama.cpp's GGUF order (per head: the two halves interleaved)."""
    out, r = b.shape
    return b.reshape(heads, 2, out // heads // 2, r).swapaxes(1, 2).reshape(out, r)


def unpermute_rows(b, heads):
    out, r = b.shape
    return b.reshape(heads, out // heads // 2, 2, r).swapaxes(1, 2).reshape(out, r)


def read_adapters(path):
    from safetensors.numpy import load_file
    return {k: v.astype(np.float64) for k, v in load_file(path).items()}


def forgia_init(forgia, model, text_path, work):
    d = os.path.join(work, "init")
    subprocess.run([forgia, "finetune", model, "--data", text_path, "--ctx", "128", "--steps", "0", "--lora-rank",
                    str(RANK), "--lora-alpha", str(ALPHA), "--seed", str(SEED), "--save", d, "--quiet"], check=True)
    return read_adapters(os.path.join(d, "adapters.safetensors"))


# Hugging Face parameter names -> the GGUF's (per layer and model-wide).
GGUF_OF = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
           "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
           "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def gguf_name(hf):
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    _, _, layer, rest = hf.split(".", 3)
    return f"blk.{layer}.{GGUF_OF[rest.rsplit('.', 1)[0]]}.weight"


def reference_full(model, ids):
    import torch
    from transformers import AutoModelForCausalLM
    folder, file = os.path.split(model)
    m = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, torch_dtype=torch.float32)
    cfg = m.config
    heads = {"attn_q": cfg.num_attention_heads, "attn_k": cfg.num_key_value_heads}
    w0 = {n: p.detach().clone() for n, p in m.named_parameters()}
    opt = torch.optim.SGD(m.parameters(), lr=LR_FULL)
    x = torch.tensor([ids])
    losses = []

    def sketches():
        sk = {}
        for n, p in m.named_parameters():
            d = (p.detach() - w0[n]).double().numpy()
            g = gguf_name(n)
            kind = g.split(".")[2] if g.startswith("blk.") else ""
            if kind in heads:
                d = permute_rows(d, heads[kind])
            sk[g] = sketch(d)
        return sk

    for step in range(2):
        opt.zero_grad()
        logits = m(input_ids=x).logits[0, :-1].float()
        loss = torch.nn.functional.cross_entropy(logits, x[0, 1:])
        losses.append(float(loss.detach()))
        loss.backward()
        opt.step()
        if step == 0:
            sk1 = sketches()
    return {"lr": LR_FULL, "loss": losses, "sketch1": sk1, "sketch": sketches()}


def reference(forgia, model, threads):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(threads)
    folder, file = os.path.split(model)
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=file)
    ids = tok(FT_TEXT, add_special_tokens=False)["input_ids"]
    with tempfile.TemporaryDirectory() as work:
        tp = os.path.join(work, "text.txt")
        with open(tp, "w") as f:
            f.write(FT_TEXT)
        a0 = forgia_init(forgia, model, tp, work)
    t0 = time.time()
    m = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, torch_dtype=torch.float32)
    cfg = m.config
    heads = {"q": cfg.num_attention_heads, "k": cfg.num_key_value_heads}
    pm = get_peft_model(m, LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=0.0, bias="none",
                                      target_modules=[HF[t].split(".")[1] for t in TARGETS]))
    layers = pm.base_model.model.model.layers
    mods = {}
    for l in range(cfg.num_hidden_layers):
        for t in TARGETS:
            sub, name = HF[t].split(".")
            mod = getattr(getattr(layers[l], sub), name)
            a = a0[f"layers.{l}.{t}.lora_a"]
            b = a0[f"layers.{l}.{t}.lora_b"]
            if t in heads:
                b = unpermute_rows(b, heads[t])
            with torch.no_grad():
                mod.lora_A["default"].weight.copy_(torch.from_numpy(a).float())
                mod.lora_B["default"].weight.copy_(torch.from_numpy(b).float())
            mods[(l, t)] = mod
    params = [p for p in pm.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=LR)
    x = torch.tensor([ids])
    losses = []
    for _ in range(2):
        opt.zero_grad()
        logits = pm(input_ids=x).logits[0, :-1].float()
        loss = torch.nn.functional.cross_entropy(logits, x[0, 1:])
        losses.append(float(loss))
        loss.backward()
        opt.step()
    sk = {}
    for (l, t), mod in mods.items():
        a = mod.lora_A["default"].weight.detach().double().numpy()
        b = mod.lora_B["default"].weight.detach().double().numpy()
        if t in heads:
            b = permute_rows(b, heads[t])
        sk[f"layers.{l}.{t}.lora_a"] = sketch(a - a0[f"layers.{l}.{t}.lora_a"])
        sk[f"layers.{l}.{t}.lora_b"] = sketch(b)
    full = reference_full(model, ids)
    print(f"gen_ft_golden: losses {losses}, full {full['loss']}, {time.time() - t0:.1f} s", file=sys.stderr)
    return {"text": FT_TEXT, "ids": ids, "lr": LR, "rank": RANK, "alpha": ALPHA, "seed": SEED, "loss": losses,
            "sketch": sk, "full": full}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--forgia", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    g = reference(a.forgia, a.model, a.threads)
    with open(a.out, "w") as f:
        json.dump(g, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
