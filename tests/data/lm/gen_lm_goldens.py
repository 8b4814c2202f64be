#!/usr/bin/env python3
"""The runtime's reference goldens: transformers + torch, fp32 on the CPU, on a real GGUF
(transformers dequantizes it as ggml does and runs its own implementation of the
architecture). For each model, into OUT/<model>.json:

  ids     eval.txt tokenized by the GGUF's tokenizer as transformers loads it, the BOS first
          where the GGUF's tokenizer.ggml.add_bos_token says so (what `forgia tokenize` and
          `forgia eval` do by default)
  nll     nll[i] = -log softmax(logits[i])[ids[i + 1]], in f64 from the fp32 logits of one
          causal pass over all ids (rounded to 1e-9)
  ppl     exp(mean(nll)), from the unrounded values
  greedy  for each prompt: its ids (tokenized the same way), the GREEDY_NEW ids that
          model.generate(do_sample=False) appends, and the smallest top-1 / top-2 logit gap
          along the way (a near tie is where another fp32 implementation may part ways)

    python gen_lm_goldens.py --cache DIR [--out DIR] [--models smollm2,gemma3] [--threads N]

The models come from fetch_models.py (same --cache). Needs torch, transformers, accelerate
and gguf (tests/data/lm/make_ref_venv.sh makes such a venv).
"""
import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fetch_models  # noqa: E402

GREEDY_NEW = 32
PROMPTS = [
    "The three most important inventions of the nineteenth century were",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Once upon a time, in a small village by the sea, there lived",
]


def add_bos(path):
    """The GGUF's tokenizer.ggml.add_bos_token; a file without the key adds none (as the
    SmolLM2 file, a byte-level BPE, has it)."""
    import gguf
    r = gguf.GGUFReader(path)
    f = r.fields.get("tokenizer.ggml.add_bos_token")
    bos = r.fields.get("tokenizer.ggml.bos_token_id")
    return (bool(f.contents()) if f is not None else False), (int(bos.contents()) if bos is not None else None)


def reference(name, path, threads):
    # Everything is local: no look-up on the Hub (which a CI runner may not reach anyway).
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    t0 = time.time()
    folder, file = os.path.split(path)
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=file)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    print(f"gen_lm_goldens: {name}: loaded in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    bos_on, bos_id = add_bos(path)

    def encode(text):
        ids = tok(text, add_special_tokens=False).input_ids
        return ([bos_id] if bos_on else []) + list(ids)

    with open(os.path.join(HERE, "eval.txt"), encoding="utf-8") as f:
        ids = encode(f.read())
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
    nll = []
    for r in range(0, len(ids) - 1, 64):  # f64 rows in slices: Gemma's are 262,144 wide
        rows = logits[r:min(r + 64, len(ids) - 1)].to(torch.float64)
        nll += (-torch.log_softmax(rows, dim=-1).gather(1, torch.tensor(ids[r + 1:r + 1 + len(rows)])[:, None])[:, 0]).tolist()
    greedy = []
    for p in PROMPTS:
        pid = encode(p)
        with torch.no_grad():
            out = model.generate(torch.tensor([pid]), attention_mask=torch.ones(1, len(pid), dtype=torch.long),
                                 do_sample=False, max_new_tokens=GREEDY_NEW,
                                 output_scores=True, return_dict_in_generate=True, pad_token_id=tok.pad_token_id)
        gen = out.sequences[0, len(pid):].tolist()
        # An end-of-generation id before GREEDY_NEW would leave forgia's stopping rule to
        # decide the comparison: the prompts are chosen so that none comes.
        if len(gen) != GREEDY_NEW:
            sys.exit(f"gen_lm_goldens: {name}: {p!r} stopped after {len(gen)} ids (an end id): pick another prompt")
        gap = min(float(s[0].topk(2).values[0] - s[0].topk(2).values[1]) for s in out.scores)
        greedy.append({"prompt": p, "prompt_ids": pid, "ids": gen, "min_top2_gap": round(gap, 6)})
    return {
        "model": name,
        "file": file,
        "sha256": fetch_models.MODELS[name]["sha256"],
        "reference": f"transformers {transformers.__version__}, torch {torch.__version__}, fp32 CPU, eager attention",
        "add_bos": bos_on,
        "tokens": len(ids),
        "ids": ids,
        "nll": [round(x, 9) for x in nll],
        "ppl": math.exp(sum(nll) / len(nll)),
        "greedy": greedy,
    }


def write(golden, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, golden["model"] + ".json")
    with open(path, "w") as f:
        # One line per list keeps the file small and its diffs readable.
        f.write("{\n")
        items = list(golden.items())
        for k, (key, v) in enumerate(items):
            f.write(f"  {json.dumps(key)}: {json.dumps(v, separators=(',', ':'), ensure_ascii=False)}")
            f.write(",\n" if k + 1 < len(items) else "\n")
        f.write("}\n")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", required=True, help="fetch_models.py's cache folder")
    ap.add_argument("--out", default=os.path.join(HERE, "golden"))
    ap.add_argument("--models", default="smollm2,gemma3")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    for name in a.models.split(","):
        path = fetch_models.assemble(a.cache, name)
        g = reference(name, path, a.threads)
        print(f"{write(g, a.out)}: {g['tokens']} tokens, ppl {g['ppl']:.6f}, "
              f"greedy min top-2 gap {min(x['min_top2_gap'] for x in g['greedy'])}", flush=True)


if __name__ == "__main__":
    main()
