#!/usr/bin/env python3
"""The adversarial suite's runner: each case of cases.py builds its inputs in a folder of
its own, runs the forgia CLI once or a few times, and checks

  - the exit code (130 / 143 also accept a death by SIGINT / SIGTERM: a shell shows both
    the same way);
  - on failure, exactly one line on stderr, "forgia CMD: ...", with one prefix, matching the
    case's message class (a regex that names the file and the problem);
  - no raw control byte (other than newline and tab) on stderr, nor on stdout unless the
    command writes binary (cat);
  - no sanitizer report;
  - peak RSS of the child (wait4's ru_maxrss) under the case's bound;
  - a work bound: the child is killed and the case fails past its wall-clock limit. The
    limits are generous (about 20-50x what the linear code needs) so that they never trip on
    a loaded machine, yet far below what a hang or a quadratic parse takes (minutes): a
    hang guard, not a timing assertion;
  - the files the case says must survive (inputs, device nodes, FIFOs, modes) unchanged, no
    temporary file (*.fgtmp.*) left behind, and the case's own post-conditions.

With --sanitized (the ASan+UBSan build) RSS bounds are not checked (ASan's shadow memory
and quarantine make RSS meaningless) and wall-clock limits are multiplied by 5.

Usage: run.py --cli PATH/forgia --shim PATH/libadv_shim.so [--spawn PATH/adv_spawn]
              [--sanitized] [--jobs N] [--only REGEX] [--list] [--keep] [--work DIR]
(without --spawn, RSS is the child's ru_maxrss, which counts the runner's own size too).
Exit 0 when every case passes; each failure is listed with its reasons."""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as C  # noqa: E402

CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
SANITIZER = re.compile(rb"(ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer)")


def snapshot(paths):
    """kind, mode, target and content hash of each path (folders: of everything inside)."""
    out = {}

    def one(p):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            out[p] = None
            return
        info = [stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode)]
        if stat.S_ISLNK(st.st_mode):
            info.append(os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            h = hashlib.sha256()
            with open(p, "rb") as f:
                for blk in iter(lambda: f.read(1 << 20), b""):
                    h.update(blk)
            info.append(h.hexdigest())
        elif stat.S_ISDIR(st.st_mode):
            for name in sorted(os.listdir(p)):
                one(os.path.join(p, name))
        out[p] = tuple(info)

    for p in paths:
        one(p)
    return out


def temp_leftovers(folder):
    found = []
    for root, dirs, files in os.walk(folder):
        found += [os.path.join(root, f) for f in files if ".fgtmp." in f]
    return found


class Result:
    def __init__(self):
        self.rc = None
        self.timed_out = False
        self.rss_kb = 0
        self.seconds = 0.0
        self.stdout = b""
        self.stderr = b""


def spawn(argv, env, cwd, stdout_to, limit, launcher):
    """Runs argv; returns a Result with the exit code (negative: killed by that signal),
    peak RSS and captured output. stdout_to: None (captured) or a path (e.g. /dev/full).
    launcher: adv_spawn (spawn.c), which reports the command's own peak RSS."""
    r = Result()
    report = None
    if launcher:
        fd, report = tempfile.mkstemp(prefix="adv-rss-")
        os.close(fd)
        argv = [launcher, report] + argv
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sink = open(stdout_to, "wb") if stdout_to else out
        try:
            t0 = time.monotonic()
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=sink, stderr=err, env=env, cwd=cwd,
                                 start_new_session=True)
        finally:
            if stdout_to:
                sink.close()
        delay = 0.001
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > limit:
                r.timed_out = True
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(delay)
            delay = min(delay * 2, 0.02)
        p.returncode = 0  # reaped here; keep Popen from waiting again
        r.seconds = time.monotonic() - t0
        r.rc = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        r.rss_kb = ru.ru_maxrss
        if report:
            with open(report) as f:
                text = f.read().strip()
            os.unlink(report)
            if text:
                r.rss_kb = int(text)
        out.seek(0)
        err.seek(0)
        r.stdout = out.read()
        r.stderr = err.read()
    return r


def exit_ok(rc, want):
    wants = want if isinstance(want, (tuple, list)) else (want,)
    for w in wants:
        if rc == w or (w == 130 and rc == -signal.SIGINT) or (w == 143 and rc == -signal.SIGTERM):
            return True
    return False


def check_step(step, r, opts, fmt):
    """Reasons the step's run is wrong (empty when right)."""
    bad = []
    want = step.exit
    if r.timed_out:
        return ["still running after %.0f s (hang or blow-up): killed" % (step.timeout * opts.slow)]
    if SANITIZER.search(r.stderr):
        bad.append("sanitizer report: " + r.stderr.decode(errors="replace")[-2000:])
    if not exit_ok(r.rc, want):
        bad.append("exit %s, expected %s" % (r.rc, want))
    if CONTROL.search(r.stderr):
        bad.append("raw control bytes on stderr: %r" % r.stderr[:300])
    if step.text_stdout and CONTROL.search(r.stdout):
        m = CONTROL.search(r.stdout)
        bad.append("raw control bytes on stdout: %r" % r.stdout[max(0, m.start() - 40):m.start() + 40])
    failed = r.rc != 0 and r.rc != -signal.SIGKILL
    if failed and step.one_line:
        lines = [ln for ln in r.stderr.decode(errors="replace").split("\n") if ln.strip()]
        cmd = step.argv[0] if step.argv and not step.argv[0].startswith("-") and step.argv[0] in C.COMMANDS else None
        # `forgia help X` may speak as help or as forgia itself
        prefixes = ["forgia %s: " % cmd] if cmd else ["forgia: "]
        if cmd == "help":
            prefixes.append("forgia: ")
        if len(lines) != 1:
            bad.append("%d stderr lines, expected exactly one:\n      %s" % (len(lines), "\n      ".join(lines[:6])))
        line = lines[-1] if lines else ""
        if lines and not any(lines[0].startswith(p) for p in prefixes):
            bad.append("stderr does not start with %r: %r" % (prefixes[0], lines[0][:200]))
        if re.match(r"^forgia (\S+): (forgia )?\1: ", line):
            bad.append("doubled prefix: %r" % line[:200])
        if step.msg is not None:
            rx = fmt(step.msg, regex=True)
            if not any(re.search(rx, ln) for ln in lines):
                bad.append("no stderr line matches /%s/: %r" % (rx, lines[:3]))
    if step.rss_mb and not opts.sanitized and r.rss_kb > step.rss_mb * 1024:
        bad.append("peak RSS %.0f MiB over the %d MiB bound" % (r.rss_kb / 1024, step.rss_mb))
    return bad


def setup_out_of_process(case, d):
    """Runs the case's generator in a fresh interpreter. The runner must stay small: a
    child's ru_maxrss counts the memory it had between fork and exec, that is the runner's,
    so a runner grown by a 100 MB generator would make every child look 100 MB large."""
    p = subprocess.run([sys.executable, "-B", os.path.abspath(__file__), "--setup", case.id, d],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if p.returncode != 0:
        raise RuntimeError("setup of %s failed:\n%s" % (case.id, p.stderr.decode(errors="replace")))
    return json.loads(p.stdout)


def run_case(case, opts, root):
    d = os.path.join(root, case.id)
    os.makedirs(d)
    reasons = []
    try:
        ctx = dict(setup_out_of_process(case, d) if case.setup else {}, d=d)

        def fmt(s, regex=False):
            vals = {k: (re.escape(str(v)) if regex else v) for k, v in ctx.items()}
            return s.format(**vals)

        keep = [fmt(p) for p in case.unchanged]
        before = snapshot(keep)
        results = []
        for step in case.steps:
            env = dict(os.environ, LC_ALL="C")
            env.pop("FORGIA_VERBOSE", None)
            fired = os.path.join(d, ".shim-fired-%d" % len(results))
            if step.inject:
                env["LD_PRELOAD"] = opts.shim
                env["FG_ADV_ON"] = fmt(step.inject[0])
                env["FG_ADV_DO"] = fmt(step.inject[1])
                env["FG_ADV_FIRED"] = fired
                if opts.sanitized:
                    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0").lstrip(":")
            argv = [opts.cli] + [fmt(a) for a in step.argv]
            stdout_to = fmt(step.stdout_to) if step.stdout_to else None
            r = spawn(argv, env, d, stdout_to, step.timeout * opts.slow, opts.spawn)
            results.append(r)
            why = check_step(step, r, opts, fmt)
            if step.inject and not os.path.exists(fired):
                why.append("the injection point (%s) was never reached: the case tested nothing" % env["FG_ADV_ON"])
            if why:
                reasons += ["step %d `%s`: %s" % (len(results), " ".join(step.argv)[:160], w) for w in why]
            for post in step.post:
                msg = post(ctx, r)
                if msg:
                    reasons.append("step %d: %s" % (len(results), msg))
        after = snapshot(keep)
        for p in keep:
            changed = [q for q in after if (q == p or q.startswith(p + "/")) and after.get(q) != before.get(q)]
            changed += [q for q in before if (q == p or q.startswith(p + "/")) and q not in after]
            if changed:
                reasons.append("changed: %s" % ", ".join(sorted(set(changed))[:5]))
        if not case.allow_tmp:
            left = temp_leftovers(d)
            if left:
                reasons.append("temporary files left: %s" % ", ".join(left[:5]))
        return case, reasons, results, d
    except Exception as e:  # a broken generator is a failure of the suite, not a pass
        import traceback
        return case, ["harness error: %s\n%s" % (e, traceback.format_exc())], [], d
    finally:
        if not opts.keep:
            shutil.rmtree(d, ignore_errors=True)


def group_checks(done):
    """Cases of one `same_message` group must print the same problem after the prefix."""
    groups, bad = {}, []
    for case, reasons, results, d in done:
        if case.same_message and results:
            line = results[-1].stderr.decode(errors="replace").strip().split("\n")[-1]
            line = re.sub(r"^forgia \S+: ", "", line).replace(d, "{d}")
            groups.setdefault(case.same_message, []).append((case.id, line))
    for g, members in sorted(groups.items()):
        texts = {t for _, t in members}
        if len(texts) > 1:
            bad.append("group %s: one file, %d different messages:\n    %s" %
                       (g, len(texts), "\n    ".join("%s: %s" % m for m in members)))
    return bad


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--setup":  # internal: one case's generator
        case = {c.id: c for c in C.all_cases()}[sys.argv[2]]
        json.dump(case.setup(sys.argv[3]) or {}, sys.stdout)
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--spawn", default=None, help="adv_spawn, for each command's own peak RSS")
    ap.add_argument("--sanitized", action="store_true")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--work", default=None)
    opts = ap.parse_args()
    opts.cli = os.path.abspath(opts.cli)
    opts.shim = os.path.abspath(opts.shim)
    opts.spawn = os.path.abspath(opts.spawn) if opts.spawn else None
    opts.slow = 5.0 if opts.sanitized else 1.0
    todo = [c for c in C.all_cases() if re.search(opts.only, c.id)]
    if opts.list:
        for c in todo:
            print("%-40s %-10s %s" % (c.id, c.cls, " ; ".join(" ".join(s.argv) for s in c.steps)))
        return 0
    for path, what in ((opts.cli, "--cli"), (opts.shim, "--shim")):
        if not os.path.exists(path):
            print("run.py: %s %s does not exist" % (what, path), file=sys.stderr)
            return 2
    root = tempfile.mkdtemp(prefix="forgia-adversarial-", dir=os.path.abspath(opts.work) if opts.work else None)
    t0 = time.monotonic()
    done, failed = [], 0
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as ex:
            futs = [ex.submit(run_case, c, opts, root) for c in todo]
            for f in concurrent.futures.as_completed(futs):
                case, reasons, results, d = f.result()
                done.append((case, reasons, results, d))
                rss = max((r.rss_kb for r in results), default=0) / 1024
                secs = sum(r.seconds for r in results)
                if reasons:
                    failed += 1
                    print("FAIL %-40s [%s] %.2f s, %.0f MiB" % (case.id, case.cls, secs, rss))
                    for why in reasons:
                        print("     - " + why)
                else:
                    print("ok   %-40s [%s] %.2f s, %.0f MiB" % (case.id, case.cls, secs, rss))
                sys.stdout.flush()
    finally:
        if not opts.keep:
            shutil.rmtree(root, ignore_errors=True)
    gbad = group_checks(done)
    for g in gbad:
        print("FAIL " + g)
    total = len(done) + len(gbad)
    print("\n%d of %d checks failed (%d cases, %.1f s)%s" % (failed + len(gbad), total, len(done),
                                                           time.monotonic() - t0,
                                                           ", sanitized: RSS bounds skipped" if opts.sanitized else ""))
    return 1 if failed or gbad else 0


if __name__ == "__main__":
    sys.exit(main())
