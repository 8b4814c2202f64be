#!/usr/bin/env python3
"""The reference's speed on the runtime's benchmark model: transformers + torch, fp32 on the
CPU, SmolLM2-135M-Instruct Q4_1 dequantized from its GGUF (tests/data/lm/fetch_models.py).

    python bench/lm_transformers.py --model GGUF [--threads N] [--pp 512] [--tg 128] [--reps 3]

Prints one JSON object: prompt processing (one causal forward of --pp tokens, no cache:
pp tokens/s) and generation (--tg greedy tokens after a 16-token prompt, with the KV cache:
tg tokens/s), each the best of --reps runs after one warm-up, under torch.set_num_threads(N).
The token ids are fixed (a pseudo-random sequence from a seeded generator), so every run
and every implementation sees the same input.
"""
import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--pp", type=int, default=512)
    ap.add_argument("--tg", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    import torch
    import transformers
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(a.threads)
    folder, file = os.path.split(os.path.abspath(a.model))
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=torch.float32)
    model.eval()
    g = torch.Generator().manual_seed(1)
    vocab = model.config.vocab_size
    pp_ids = torch.randint(0, vocab, (1, a.pp), generator=g)
    tg_ids = torch.randint(0, vocab, (1, 16), generator=g)

    def pp():
        with torch.no_grad():
            model(pp_ids, use_cache=False)

    def tg():
        with torch.no_grad():
            out = model.generate(tg_ids, attention_mask=torch.ones_like(tg_ids), do_sample=False,
                                 max_new_tokens=a.tg, min_new_tokens=a.tg, pad_token_id=0)
        assert out.shape[1] == 16 + a.tg

    def best(f):
        f()
        times = []
        for _ in range(a.reps):
            t = time.perf_counter()
            f()
            times.append(time.perf_counter() - t)
        return min(times)

    t_pp, t_tg = best(pp), best(tg)
    print(json.dumps({
        "impl": f"transformers {transformers.__version__}, torch {torch.__version__}, fp32 CPU",
        "model": file, "threads": a.threads,
        "pp_tokens": a.pp, "pp_s": round(t_pp, 4), "pp_tok_s": round(a.pp / t_pp, 2),
        # The prompt's own forward is part of generate's time; with 16 tokens it is small.
        "tg_tokens": a.tg, "tg_s": round(t_tg, 4), "tg_tok_s": round(a.tg / t_tg, 2),
    }))


if __name__ == "__main__":
    main()
