#!/usr/bin/env python3
"""forgia finetune on SmolLM2-135M-Instruct (Q4_1 GGUF: LoRA over the quantized base) against
the committed transformers + peft golden (gen_ft_golden.py), and the loop back to a servable
model. Checks:

  1. `forgia tokenize` gives the golden's ids;
  2. from forgia's initial adapters, two SGD steps (exact mode): each step's loss within 1e-4
     relative of torch's, the adapters (B and A's update) within 1e-3 relative (norms and two
     fixed projections of every tensor);
  3. a short AdamW run at least halves the loss of the text;
  3b. full fine-tuning (`finetune --full`) of the dense f32 export: two SGD steps, each step's
     loss within 1e-4 relative of torch's; every weight's update after one step (minus lr times
     the gradient) and after two within 1e-3 relative of torch autograd's (the same
     sketches); `export --weights` of the two-step weights scores the text as a resumed run's
     third step does (1e-9), below the base;
  4. the merge: `forgia export --dtype f32` (the dense base), `forgia export --adapters`
     onto it, then `forgia eval` of the merged model equals `eval --adapters` of the base
     within 1e-3 (mean NLL, relative) and is better than the base;
  5. a behaviour taught through chat data (answers in a fixed "ANSWER: ..." format, the loss on
     the assistant's tokens), merged, quantized to Q4_K_M: `forgia generate` of the quantized
     model answers a new question in that format, where the base model does not.

    python check_ft.py --forgia BIN --model GGUF --golden FILE [--live [--reference-only]] [--threads N]

--live first re-runs the reference (torch, transformers, peft: the venv of make_ref_venv.sh)
and requires it to equal the committed golden; --reference-only stops there (CI runs forgia's
side against the golden in slow.ft_smollm2, so the two together are the live comparison)."""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_ft_golden as ref  # noqa: E402

failures = []
CHAT = [("What is the capital of France?", "Paris"), ("How many legs does a spider have?", "Eight"),
        ("What color is the sky on a clear day?", "Blue"), ("Who wrote Romeo and Juliet?", "William Shakespeare"),
        ("What is two plus three?", "Five"), ("What is the largest planet?", "Jupiter"),
        ("What do bees make?", "Honey"), ("What is frozen water called?", "Ice")]


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"check_ft: {' '.join(args)} exited {r.returncode}:\n{r.stderr}")
    return r


def losses(path):
    with open(path) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


def compare_sketches(got, want, tol, what):
    """Each component's difference relative to the golden tensor's norm."""
    worst, at = 0.0, ""
    for name, w in want.items():
        g = got.get(name)
        if g is None:
            check(False, f"{what}: {name} missing")
            continue
        for i in range(3):
            e = abs(g[i] - w[i]) / max(w[0], 1e-30)
            if e > worst:
                worst, at = e, f"{name}[{i}]: {g[i]!r} vs {w[i]!r}"
    check(worst <= tol, f"{what}: worst relative difference {worst:.2e} (limit {tol:g}) at {at}")


def full_check(fg, base32, tp, w, gf, threads):
    from safetensors import safe_open
    common = [fg, "finetune", base32, "--data", tp, "--ctx", "128", "--full", "--quiet", "--threads", str(threads),
              "--optim", "sgd", "--lr", str(gf["lr"]), "--mode", "exact"]
    run(common + ["--steps", "0", "--save", os.path.join(w, "full0")])
    run(common + ["--steps", "1", "--save", os.path.join(w, "full1"), "--metrics", os.path.join(w, "full.jsonl")])
    run(common + ["--steps", "2", "--resume", os.path.join(w, "full1"), "--save", os.path.join(w, "full2"),
                  "--metrics", os.path.join(w, "full.jsonl")])
    run(common + ["--steps", "3", "--resume", os.path.join(w, "full2"), "--metrics", os.path.join(w, "full.jsonl")])
    got = losses(os.path.join(w, "full.jsonl"))
    for i, (x, y) in enumerate(zip(got, gf["loss"])):
        check(abs(x - y) <= 1e-4 * abs(y), f"full, SGD step {i + 1}: loss {x:.7f}, torch {y:.7f} (1e-4 relative)")
    for d, key, what in (("full1", "sketch1", "one SGD step (the gradient)"), ("full2", "sketch", "two SGD steps")):
        mine = {}
        with safe_open(os.path.join(w, "full0", "model.safetensors"), "numpy") as f0, \
                safe_open(os.path.join(w, d, "model.safetensors"), "numpy") as f1:
            for k in f1.keys():
                mine[k] = ref.sketch(f1.get_tensor(k).astype("float64") - f0.get_tensor(k).astype("float64"))
        check(set(mine) == set(gf[key]), f"full: forgia trains the {len(gf[key])} weights torch does")
        compare_sketches(mine, gf[key], 1e-3, f"full: every weight's update after {what} against torch autograd")
    trained = os.path.join(w, "full.gguf")
    run([fg, "export", "--from-gguf", base32, "--weights", os.path.join(w, "full2"), "--out", trained])
    b = json.loads(run([fg, "eval", base32, "--file", tp, "--json", "--mode", "exact"]).stdout)
    t = json.loads(run([fg, "eval", trained, "--file", tp, "--json", "--mode", "exact"]).stdout)
    mean = lambda r: sum(r["nll"]) / len(r["nll"])  # noqa: E731
    check(abs(mean(t) - got[-1]) <= 1e-9 * got[-1],
          f"full: the exported two-step model scores {mean(t):.9f}, the resumed run's third step {got[-1]:.9f}")
    check(mean(t) < mean(b), f"full: the exported trained model {mean(t):.4f} beats the base {mean(b):.4f}")
    os.remove(trained)
    for d in ("full0", "full1", "full2"):
        os.remove(os.path.join(w, d, "model.safetensors"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--forgia", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--live", action="store_true")
    ap.add_argument("--reference-only", action="store_true", help="with --live: stop after the reference's check")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    with open(a.golden) as f:
        g = json.load(f)
    if a.live:
        live = ref.reference(a.forgia, a.model, a.threads)
        check(live["ids"] == g["ids"], "live reference: the same ids as the golden")
        check(all(abs(x - y) <= 1e-5 * abs(y) for x, y in zip(live["loss"], g["loss"])),
              f"live reference: losses {live['loss']} equal the golden's {g['loss']} within 1e-5")
        diff = max(abs(live["sketch"][k][i] - g["sketch"][k][i]) / max(g["sketch"][k][0], 1e-30)
                   for k in g["sketch"] for i in range(3))
        check(diff <= 1e-4, f"live reference: sketches equal the golden's (worst {diff:.2e} of the norm)")
        lf, gf = live["full"], g["full"]
        check(all(abs(x - y) <= 1e-5 * abs(y) for x, y in zip(lf["loss"], gf["loss"])),
              f"live reference, full: losses {lf['loss']} equal the golden's {gf['loss']} within 1e-5")
        diff = max(abs(lf[s][k][i] - gf[s][k][i]) / max(gf[s][k][0], 1e-30)
                   for s in ("sketch1", "sketch") for k in gf[s] for i in range(3))
        check(diff <= 1e-4, f"live reference, full: sketches equal the golden's (worst {diff:.2e} of the norm)")
        if a.reference_only:
            sys.exit(f"check_ft: {len(failures)} check(s) failed" if failures else 0)
    fg = a.forgia
    with tempfile.TemporaryDirectory() as w:
        tp = os.path.join(w, "text.txt")
        with open(tp, "w") as f:
            f.write(g["text"])
        ids = [int(x) for x in run([fg, "tokenize", a.model, "--file", tp]).stdout.split()]
        check(ids == g["ids"], f"forgia tokenize gives the golden's {len(g['ids'])} ids")
        common = [fg, "finetune", a.model, "--data", tp, "--ctx", "128", "--lora-rank", str(g["rank"]),
                  "--lora-alpha", str(g["alpha"]), "--seed", str(g["seed"]), "--quiet", "--threads", str(a.threads)]
        run(common + ["--steps", "0", "--save", os.path.join(w, "init")])
        run(common + ["--steps", "2", "--optim", "sgd", "--lr", str(g["lr"]), "--mode", "exact", "--save",
                      os.path.join(w, "sgd"), "--metrics", os.path.join(w, "sgd.jsonl")])
        got = losses(os.path.join(w, "sgd.jsonl"))
        for i, (x, y) in enumerate(zip(got, g["loss"])):
            check(abs(x - y) <= 1e-4 * abs(y), f"SGD step {i + 1}: loss {x:.7f}, torch + peft {y:.7f} (1e-4 relative)")
        init = ref.read_adapters(os.path.join(w, "init", "adapters.safetensors"))
        final = ref.read_adapters(os.path.join(w, "sgd", "adapters.safetensors"))
        mine = {}
        for k, v in final.items():
            mine[k] = ref.sketch(v - init[k] if k.endswith("lora_a") else v)
        compare_sketches(mine, g["sketch"], 1e-3, "adapters after two SGD steps against torch + peft")
        # 3. AdamW on the text
        run(common + ["--steps", "12", "--optim", "adamw", "--lr", "0.002", "--save", os.path.join(w, "adamw"),
                      "--metrics", os.path.join(w, "adamw.jsonl")])
        l = losses(os.path.join(w, "adamw.jsonl"))
        check(l[-1] <= 0.5 * l[0], f"AdamW, 12 steps: loss {l[0]:.4f} -> {l[-1]:.4f} (at least halved)")
        # 3b. full fine-tuning of the dense base
        base32 = os.path.join(w, "base32.gguf")
        merged = os.path.join(w, "merged.gguf")
        run([fg, "export", "--from-gguf", a.model, "--dtype", "f32", "--out", base32])
        full_check(fg, base32, tp, w, g["full"], a.threads)
        # 4. merge -> eval
        run([fg, "export", "--from-gguf", base32, "--adapters", os.path.join(w, "adamw"), "--alpha", str(g["alpha"]),
             "--out", merged])

        def nll(model, extra=()):
            out = run([fg, "eval", model, "--file", tp, "--json", *extra]).stdout
            return json.loads(out)

        b = nll(a.model)
        ad = nll(a.model, ["--adapters", os.path.join(w, "adamw")])
        mg = nll(merged)
        mean = lambda r: sum(r["nll"]) / len(r["nll"])  # noqa: E731
        check(abs(mean(mg) - mean(ad)) <= 1e-3 * mean(ad),
              f"eval of the merged model {mean(mg):.6f} = eval --adapters {mean(ad):.6f} (1e-3 relative)")
        check(mean(mg) < mean(b), f"the merged model {mean(mg):.4f} beats the base {mean(b):.4f} on the text")
        os.remove(merged)  # 0.5 GB each: keep the scratch folder's peak small
        # 5. chat data -> merge -> Q4_K_M -> generate
        chat = os.path.join(w, "chat.jsonl")
        with open(chat, "w") as f:
            for q, ans in CHAT:
                f.write(json.dumps({"messages": [{"role": "user", "content": q},
                                                 {"role": "assistant", "content": "ANSWER: " + ans + "."}]}) + "\n")
        run([fg, "finetune", a.model, "--data", chat, "--format", "chat", "--steps", "24", "--batch", "2", "--lr",
             "2e-3", "--seed", "1", "--save", os.path.join(w, "chat"), "--quiet", "--threads", str(a.threads)])
        merged2, q4 = os.path.join(w, "merged2.gguf"), os.path.join(w, "q4km.gguf")
        run([fg, "export", "--from-gguf", base32, "--adapters", os.path.join(w, "chat"), "--alpha", "16", "--out",
             merged2])
        run([fg, "export", merged2, q4, "Q4_K_M"])
        os.remove(merged2)
        prompt = os.path.join(w, "q.json")
        with open(prompt, "w") as f:
            json.dump([{"role": "user", "content": "What is the color of grass?"}], f)
        gen = lambda model: run([fg, "generate", model, "--chat", prompt, "-n", "8", "--temp", "0"]).stdout  # noqa: E731
        tuned, base = gen(q4), gen(a.model)
        check(tuned.startswith("ANSWER: "), f"the merged Q4_K_M model answers in the taught format: {tuned!r}")
        check(not base.startswith("ANSWER"), f"the base model does not: {base!r}")
    if failures:
        sys.exit(f"check_ft: {len(failures)} check(s) failed")
    print("check_ft: all checks passed")


if __name__ == "__main__":
    main()
