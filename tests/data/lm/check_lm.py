#!/usr/bin/env python3
"""forgia's runtime against the reference goldens of gen_lm_goldens.py, on a real GGUF:

    python check_lm.py --forgia CLI --model GGUF --golden JSON [--live] [--mode M]
    python check_lm.py --self-test --golden JSON [--model GGUF --live]

Runs `forgia eval MODEL --file eval.txt --ctx N --json` and, for each greedy prompt,
`forgia generate MODEL --ids "..." -n 32 --temp 0 --print-ids`, and requires
  the same token ids, max |nll diff| <= 2e-3, |ppl / ppl_ref - 1| <= 1e-4, greedy ids equal.
It prints the largest NLL difference (and where), the ppl difference and the smallest top-2
logit gap of each greedy path.

--live first re-runs the reference (transformers + torch; run this script with that venv's
Python) and requires the committed golden to equal it: ids and greedy ids exactly, NLL within
--live-tol (1e-6) and ppl within 1e-6 relative, so the generator itself is checked too.

--self-test checks this comparison: the golden (or with --live, the live reference) stands
in for forgia's output and must pass, and each perturbation of it (an id changed, a token
dropped, one NLL moved by 3e-3, every NLL moved by 1.5e-3 so that ppl moves ~1.5e-3, a
greedy id changed, a greedy path cut short) must fail; one within tolerance (every NLL
moved by 1e-3 with alternating signs) must pass.
"""
import argparse
import copy
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EVAL_TXT = os.path.join(HERE, "eval.txt")
NLL_TOL = 2e-3
PPL_TOL = 1e-4


def compare(golden, ev, greedy, nll_tol=NLL_TOL, ppl_tol=PPL_TOL, label="forgia"):
    """Failures (a list of strings) of an eval result {"ids", "nll", "ppl", "tokens"} and greedy
    id lists (one per golden prompt) against the golden; prints the differences found."""
    bad = []
    if ev.get("ids") != golden["ids"]:
        g, w = ev.get("ids") or [], golden["ids"]
        at = next((i for i in range(min(len(g), len(w))) if g[i] != w[i]), min(len(g), len(w)))
        bad.append(f"ids differ at token {at} of {len(w)} (got {len(g)}): {label} {g[at:at + 5]}, reference {w[at:at + 5]}")
    if ev.get("tokens") != golden["tokens"]:
        bad.append(f"tokens: {label} {ev.get('tokens')}, reference {golden['tokens']}")
    nll, want = ev.get("nll") or [], golden["nll"]
    if len(nll) != len(want):
        bad.append(f"nll: {label} has {len(nll)} values, reference {len(want)} (tokens - 1)")
    elif want:
        d = [abs(a - b) if math.isfinite(a) else math.inf for a, b in zip(nll, want)]
        i = max(range(len(d)), key=d.__getitem__)
        print(f"  max |nll diff| {d[i]:.3e} at token {i + 1} (id {golden['ids'][i + 1]}: {label} {nll[i]:.9f},"
              f" reference {want[i]:.9f}); mean |diff| {sum(d) / len(d):.3e}; tolerance {nll_tol:g}")
        if not d[i] <= nll_tol:
            bad.append(f"nll: max |diff| {d[i]:.3e} > {nll_tol:g} at token {i + 1}")
    ppl = ev.get("ppl")
    rel = abs(ppl / golden["ppl"] - 1) if isinstance(ppl, (int, float)) else math.inf
    print(f"  ppl {label} {ppl}, reference {golden['ppl']:.9f}: relative diff {rel:.3e}; tolerance {ppl_tol:g}")
    if not rel <= ppl_tol:
        bad.append(f"ppl: relative diff {rel:.3e} > {ppl_tol:g}")
    for k, (g, want) in enumerate(zip(greedy, golden["greedy"])):
        same = g == want["ids"]
        at = next((i for i in range(min(len(g), len(want["ids"]))) if g[i] != want["ids"][i]), None)
        print(f"  greedy {k}: {'equal' if same else 'DIFFERENT'} ({len(g)} ids; reference min top-2 gap"
              f" {want['min_top2_gap']})")
        if not same:
            where = f"first at {at}" if at is not None else f"length {len(g)} vs {len(want['ids'])}"
            bad.append(f"greedy {k} ({want['prompt']!r}): ids differ, {where}: {label} {g}, reference {want['ids']}")
    if len(greedy) != len(golden["greedy"]):
        bad.append(f"greedy: {len(greedy)} continuations, reference {len(golden['greedy'])}")
    return bad


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"check_lm: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-4000:]}")
    return p.stdout


def run_forgia(cli, model, golden, mode):
    extra = ["--mode", mode] if mode else []
    out = run([cli, "eval", model, "--file", EVAL_TXT, "--ctx", str(golden["tokens"]), "--json"] + extra)
    try:
        ev = json.loads(out)
    except json.JSONDecodeError as e:
        sys.exit(f"check_lm: forgia eval --json printed no JSON object ({e}): {out[:400]!r}")
    greedy = []
    for g in golden["greedy"]:
        out = run([cli, "generate", model, "--ids", " ".join(map(str, g["prompt_ids"])), "-n", str(len(g["ids"])),
                   "--temp", "0", "--print-ids"] + extra)
        try:
            greedy.append([int(x) for x in out.split()])
        except ValueError:
            sys.exit(f"check_lm: forgia generate --print-ids printed more than ids: {out[:400]!r}")
    return ev, greedy


def live_reference(golden, model, tol):
    """Re-runs the generator on MODEL into a temp dir; fails unless it equals the golden."""
    sys.path.insert(0, HERE)
    import gen_lm_goldens
    with tempfile.TemporaryDirectory() as d:
        live = gen_lm_goldens.reference(golden["model"], model, os.cpu_count())
        with open(gen_lm_goldens.write(live, d)) as f:
            live = json.load(f)
    print(f"live reference ({live['reference']}) against the committed golden:")
    bad = compare(live, golden, [g["ids"] for g in golden["greedy"]], nll_tol=tol, ppl_tol=1e-6, label="golden")
    for k, (a, b) in enumerate(zip(live["greedy"], golden["greedy"])):
        if a["prompt_ids"] != b["prompt_ids"]:
            bad.append(f"greedy {k}: prompt ids differ: live {a['prompt_ids']}, golden {b['prompt_ids']}")
    if live["sha256"] != golden["sha256"] or live["add_bos"] != golden["add_bos"]:
        bad.append("sha256 / add_bos differ between the live reference and the golden")
    if bad:
        sys.exit("check_lm: the committed golden is not what the reference gives now:\n  " + "\n  ".join(bad))
    return live


def self_test(ref):
    ev = {k: copy.deepcopy(ref[k]) for k in ("ids", "nll", "ppl", "tokens")}
    greedy = [list(g["ids"]) for g in ref["greedy"]]

    def with_nll(nll):
        e = copy.deepcopy(ev)
        e["nll"] = nll
        e["ppl"] = math.exp(sum(nll) / len(nll))
        return e

    def changed(f):
        e, g = copy.deepcopy(ev), copy.deepcopy(greedy)
        f(e, g)
        return e, g

    n = len(ev["nll"])
    cases = [
        ("the reference itself", ev, greedy, True),
        ("every nll moved by +-1e-3 (alternating)", with_nll([x + (1e-3 if i % 2 else -1e-3) for i, x in enumerate(ev["nll"])]), greedy, True),
        ("an id changed", *changed(lambda e, g: e["ids"].__setitem__(n // 2, e["ids"][n // 2] + 1)), False),
        ("the last token dropped", *changed(lambda e, g: (e["ids"].pop(), e["nll"].pop(), e.__setitem__("tokens", e["tokens"] - 1))), False),
        ("one nll moved by 3e-3", with_nll([x + (3e-3 if i == n // 3 else 0) for i, x in enumerate(ev["nll"])]), greedy, False),
        ("every nll moved by 1.5e-3 (ppl by ~1.5e-3)", with_nll([x + 1.5e-3 for x in ev["nll"]]), greedy, False),
        ("ppl alone moved by 2e-4", *changed(lambda e, g: e.__setitem__("ppl", e["ppl"] * (1 + 2e-4))), False),
        ("a NaN nll", *changed(lambda e, g: e["nll"].__setitem__(0, math.nan)), False),
        ("a greedy id changed", *changed(lambda e, g: g[1].__setitem__(5, g[1][5] + 1)), False),
        ("a greedy path cut short", *changed(lambda e, g: g[2].pop()), False),
        ("a greedy path missing", *changed(lambda e, g: g.pop()), False),
    ]
    wrong = []
    for name, e, g, should_pass in cases:
        print(f"self-test: {name} (expected to {'pass' if should_pass else 'fail'})")
        bad = compare(ref, e, g)
        for b in bad:
            print("  -> " + b)
        if (not bad) != should_pass:
            wrong.append(name)
    if wrong:
        sys.exit("check_lm: self-test: the comparison got these cases wrong: " + "; ".join(wrong))
    print(f"self-test: all {len(cases)} cases as expected")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--forgia", help="the forgia CLI")
    ap.add_argument("--model", help="the GGUF (fetch_models.py)")
    ap.add_argument("--golden", required=True)
    ap.add_argument("--live", action="store_true", help="re-run the reference first and check the golden against it")
    ap.add_argument("--live-tol", type=float, default=1e-6, help="NLL tolerance of --live (default 1e-6)")
    ap.add_argument("--reference-only", action="store_true",
                    help="with --live: stop after checking the golden against the live reference (forgia's side "
                    "against the golden is slow.lm_*: together, the live comparison)")
    ap.add_argument("--mode", choices=("exact", "fast"), help="passed to forgia eval / generate")
    ap.add_argument("--self-test", action="store_true", help="check the comparison itself (no forgia needed)")
    a = ap.parse_args()
    with open(a.golden) as f:
        golden = json.load(f)
    if (a.live or not a.self_test) and not a.model:
        ap.error("--model is needed unless --self-test alone")
    if a.model:
        sys.path.insert(0, HERE)
        import fetch_models
        got = fetch_models.sha256(a.model)
        if got != golden["sha256"]:
            sys.exit(f"check_lm: {a.model}: sha256 {got}, the golden was made from {golden['sha256']}")
    ref = live_reference(golden, a.model, a.live_tol) if a.live else golden
    if a.self_test:
        self_test(ref)
        return
    if a.live and a.reference_only:
        print("check_lm: the live reference equals the committed golden")
        return
    if not a.forgia:
        ap.error("--forgia is needed unless --self-test")
    print(f"forgia ({a.forgia}) against {a.golden} ({golden['reference']}):")
    ev, greedy = run_forgia(a.forgia, a.model, golden, a.mode)
    bad = compare(golden, ev, greedy)
    if bad:
        sys.exit("check_lm: forgia differs from the reference:\n  " + "\n  ".join(bad))
    print(f"check_lm: {golden['model']}: forgia equals the reference within the targets")


if __name__ == "__main__":
    main()
