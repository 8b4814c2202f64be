#!/usr/bin/env python3
"""Summaries for scripts/gpu-run.sh, one Markdown section per stage.

  gpu-summary.py tests STAGE SECONDS RC CTEST_LOG...   tests passed / failed / skipped
  gpu-summary.py bench STAGE SECONDS RC JSONL STATUS   every figure with its limit and ratio
  gpu-summary.py build STAGE SECONDS RC LOG            configure and build outcome

STATUS holds one line per benchmark run: "name rc seconds". The section goes to stdout.
"""
import json
import re
import sys

# ctest's per-test line: "  3/60 Test  #12: cuda.CudaGemm.Exact ....   Passed    0.52 sec",
# with "***Failed", "***Skipped", "***Timeout", "***Exception: ..." or "***Not Run" otherwise.
# A parameterized test's name carries its parameter: "cuda.Rows/Fam.Case/op  # GetParam() = 0".
TEST_LINE = re.compile(r"Test\s+#\d+: (.+?) \.+\s*(?:\*\*\*)?(Passed|Failed|Skipped|Timeout|Not Run|Exception)[^\n]*?[\d.]+ sec")
NOT_RUN = re.compile(r"^\s*\d+ - (.+?) \((Skipped|Disabled|Not Run)\)")


def name_of(m):
    return m.group(1).split("  #")[0].strip()


def head(stage, secs, rc):
    state = "PASS" if rc == 0 else f"FAIL (exit {rc})"
    return f"## {stage}: {state}, {secs} s\n"


def tests(stage, secs, rc, logs):
    result = {}
    for path in logs:
        try:
            text = open(path, errors="replace").read()
        except OSError:
            continue
        for m in TEST_LINE.finditer(text):
            result[name_of(m)] = m.group(2).strip()
        for line in text.splitlines():
            m = NOT_RUN.match(line)
            if m and name_of(m) not in result:
                result[name_of(m)] = "Skipped"
    passed = sorted(n for n, s in result.items() if s == "Passed")
    skipped = sorted(n for n, s in result.items() if s == "Skipped")
    failed = sorted(f"{n} ({s})" for n, s in result.items() if s not in ("Passed", "Skipped"))
    out = [head(stage, secs, rc)]
    out.append(f"tests: {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped (of {len(result)})\n")
    if not result:
        out.append("no test ran (see the stage's log)\n")
    for title, names in (("failed", failed), ("skipped", skipped)):
        if names:
            out.append(f"\n{title}:\n")
            out.extend(f"- {n}\n" for n in names)
    return "".join(out)


def fmt(v):
    return f"{v:.6g}" if isinstance(v, (int, float)) else str(v)


def bench(stage, secs, rc, jsonl, status):
    out = [head(stage, secs, rc)]
    runs = []
    try:
        runs = [line.split() for line in open(status) if line.strip()]
    except OSError:
        pass
    if runs:
        out.append("\n| benchmark | exit | seconds |\n|---|---|---|\n")
        for r in runs:
            name, code, t = (r + ["?", "?", "?"])[:3]
            note = " (timed out)" if code == "124" else ""
            out.append(f"| {name} | {code}{note} | {t} |\n")
    rows = []
    try:
        for line in open(jsonl, errors="replace"):
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if "figure" in j:
                rows.append(j)
    except OSError:
        pass
    out.append(f"\nfigures: {len(rows)}\n")
    if rows:
        out.append("\n| bench | figure | value | limit | limit value | ratio |\n|---|---|---|---|---|---|\n")
        for j in rows:
            unit = j.get("unit", "")
            out.append(f"| {j.get('bench', '')} | {j.get('figure', '')} | {fmt(j.get('value', ''))} {unit} | "
                       f"{j.get('limit', '')} | {fmt(j.get('limit_value', ''))} {unit} | {fmt(j.get('ratio', ''))} |\n")
    return "".join(out)


def build(stage, secs, rc, log):
    out = [head(stage, secs, rc)]
    try:
        text = open(log, errors="replace").read()
    except OSError:
        text = ""
    for line in text.splitlines():
        if line.startswith("-- forgia:"):
            out.append(f"- {line[3:]}\n")
    warnings = len(re.findall(r"\bwarning\b", text))
    out.append(f"- compiler warnings in the log: {warnings}\n")
    if rc != 0:
        errs = [l for l in text.splitlines() if "error" in l.lower()][:10]
        out.extend(f"    {l}\n" for l in errs)
    return "".join(out)


def main(argv):
    if len(argv) < 5:
        sys.exit(__doc__)
    kind, stage, secs, rc = argv[1], argv[2], argv[3], int(argv[4])
    if kind == "tests":
        sys.stdout.write(tests(stage, secs, rc, argv[5:]))
    elif kind == "bench":
        sys.stdout.write(bench(stage, secs, rc, argv[5], argv[6]))
    elif kind == "build":
        sys.stdout.write(build(stage, secs, rc, argv[5]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
