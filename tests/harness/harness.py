#!/usr/bin/env python3
"""Run the guest test suites on each driver across the QEMU matrix and judge the results.

For every matrix entry (tests/harness/matrix.py) and driver the harness boots the test kernel once
(scripts/qemu-run), runs tests/guest/run-suites, parses the kselftest TAP, the `perf test` result lines and the
project's guest checks, applies the expectations (tests/expectations/: test selection, known failures, C-vs-Rust
differences), compares the Rust driver with the C driver of the same run (and the C driver with its committed
baseline, tests/expectations/baseline-c.tsv) and prints one closing line `N passed, N failed, N skipped`. It exits 1
on any unexpected result.
"""

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [HERE, os.path.join(TOP, "scripts")]
import expectations  # noqa: E402
import qemu_run_lib  # noqa: E402  (scripts/qemu-run's options, exit statuses and their meanings)
from matrix import DEFAULT_ENTRIES, ENTRIES, FULL_ENTRIES, LEAN_SUITES, entry_suites, runs_in_full  # noqa: E402

BASELINE = os.path.join(TOP, "tests/expectations/baseline-c.tsv")

# Test modules the guest checks load, from /root (scripts/module-build --test-modules builds them).
TEST_MODULE_NAMES = ["rpmu_pm_check.ko"]
TEST_MODULES = [os.path.join(TOP, "tests/kmod", n) for n in TEST_MODULE_NAMES]


def cache_dir():
    """The build cache (scripts/lib.sh's RPMU_CACHE)."""
    return os.environ.get("RPMU_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "riscv_pmu_sbi_rust")


def test_modules(kernel):
    """The test modules built against a kernel's test kernel: 6.12's in the clone, another's in the copy
    scripts/module-build --kernel K --test-modules builds in the cache."""
    if kernel == "6.12":
        return TEST_MODULES
    return [os.path.join(cache_dir(), "module", f"{kernel}-test-kmod", n) for n in TEST_MODULE_NAMES]
PAPI_CHECK = os.path.join(TOP, "tests/papi/papi-check.sh")

# qemu-run's own exit statuses (a boot that went wrong) and what each means.
QEMU_EXIT = qemu_run_lib.EXIT_MEANING

SECTION_BEGIN = re.compile(r"^### BEGIN (\S+) (.*)$")
SECTION_END = re.compile(r"^### END (\S+) (.*) rc=(\d+|skip)(?: ms=(\d+))?$")
TAP_LINE = re.compile(r"^(not )?ok \d+ (.*?)(?:\s+#\s*(SKIP|XFAIL|TODO)\b\s*(.*))?$")
TAP_PLAN = re.compile(r"^1\.\.(\d+)")
PERF_LINE = re.compile(r"^\s*(\d+)(?:\.(\d+))?:\s(.*?)\s*:\s(Ok|FAILED!|Skip(?:\s.*)?)\s*$")
PLAIN_LINE = re.compile(r"^(not ok|ok) (\S+)(?:\s+#\s*SKIP\s*(.*)|\s+(.*))?$")
# The kselftest collection of the project's checks (tools/testing/selftests/riscv_pmu_sbi).
CHECK_COLLECTION = "selftests: riscv_pmu_sbi: "
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# A value is the rest of the line: "errno ENOENT" and "<outcome> <outcome>" values hold spaces.
VALUE_LINE = re.compile(r"^value (\S+) (.+?)\s*$")


def say(msg):
    print(f"[harness] {msg}", flush=True)


class Run:
    """The results of one boot: one driver on one matrix entry."""

    def __init__(self, entry, driver):
        self.entry, self.driver = entry, driver
        self.results = {}  # test id -> (status "pass"|"fail"|"skip", detail)
        self.values = {}  # value name -> string
        self.seconds = 0.0
        self.durations = {}  # section -> seconds

    def add(self, test, status, detail=""):
        # A test id seen twice keeps the worse result.
        old = self.results.get(test)
        if old is None or (old[0] != "fail" and status == "fail"):
            self.results[test] = (status, detail)


def parse_output(run, text, qemu_status):
    sections, cur, lines = [], None, []
    done = False
    for line in text.splitlines():
        line = ANSI.sub("", line)
        if line == "### ALL-DONE":
            done = True
            continue
        m = SECTION_BEGIN.match(line)
        if m and cur is None:
            cur, lines = (m.group(1), m.group(2)), []
            continue
        m = SECTION_END.match(line)
        if m and cur is not None and m.group(3) == "skip":
            run.add(f"{cur[0]}/{cur[1]}", "skip", "not run on this entry (expectations)")
            cur = None
            continue
        if m and cur is not None:
            sections.append((cur[0], cur[1], int(m.group(3)), lines))
            if m.group(4):
                run.durations[f"{cur[0]}/{cur[1]}"] = int(m.group(4)) / 1000
            cur = None
            continue
        if cur is not None:
            lines.append(line)
    if cur is not None:
        sections.append((cur[0], cur[1], None, lines))

    for kind, name, rc, body in sections:
        if kind == "kselftest":
            parse_kselftest(run, name, rc, body)
        elif kind == "perftest":
            parse_perftest(run, name, rc, body)
        elif kind == "check":
            parse_check(run, name, rc, body)
        elif kind == "papi":
            parse_plain(run, kind, rc, body)
        elif kind == "l1kvm":
            parse_kvm_selftest(run, name, rc, body)

    if qemu_status in QEMU_EXIT:
        run.add("boot/completed", "fail", QEMU_EXIT[qemu_status])
    elif not done:
        run.add("boot/completed", "fail", f"no completion marker (guest command exit {qemu_status})")
    else:
        run.add("boot/completed", "pass")
    if qemu_status != qemu_run_lib.EXIT_MODULE:
        bad_log = qemu_status == qemu_run_lib.EXIT_KERNEL_LOG
        run.add("boot/kernel-log-clean", "fail" if bad_log else "pass", QEMU_EXIT[qemu_status] if bad_log else "")


def rc_detail(rc):
    return "timeout" if rc in (124, 137) else ("killed (no end marker)" if rc is None else f"exit {rc}")


def add_tap_result(run, prefix, m, reason=""):
    """Records one KTAP result line (a TAP_LINE match) as PREFIX/NAME; returns whether it failed."""
    name = m.group(2).strip()
    test = f"{prefix}/{name}"
    if m.group(3) == "SKIP":
        run.add(test, "skip", m.group(4) or "")
    elif m.group(1):
        run.add(test, "fail", m.group(4) or reason)
        return True
    else:
        run.add(test, "pass")
    return False


def parse_kselftest(run, binary, rc, body):
    plan, seen = None, 0
    for line in body:
        m = TAP_PLAN.match(line)
        if m:
            plan = int(m.group(1))
            continue
        m = TAP_LINE.match(line)
        if not m:
            continue
        seen += 1
        add_tap_result(run, f"kselftest/{binary}", m)
    if rc is None or rc in (124, 137) or (plan is not None and seen < plan) or seen == 0:
        run.add(f"kselftest/{binary}", "fail", f"{rc_detail(rc)}, {seen} of {plan} results")


def parse_perftest(run, desc, rc, body):
    seen = 0
    parent = None
    for line in body:
        m = PERF_LINE.match(line)
        if not m:
            continue
        seen += 1
        num, sub, name, res = m.groups()
        if sub is None:
            parent = name
            test = f"perftest/{name}"
        else:
            test = f"perftest/{parent or desc}/{name}"
        if res == "Ok":
            run.add(test, "pass")
        elif res.startswith("Skip"):
            run.add(test, "skip", res[4:].strip(" ()"))
        else:
            run.add(test, "fail", "FAILED!")
    if seen == 0 or rc is None or rc in (124, 137):
        run.add(f"perftest/{desc}", "fail", f"{rc_detail(rc)}; " + (body[-1] if body else "no output"))


def parse_check(run, script, rc, body):
    """A check is one test of the kselftest collection riscv_pmu_sbi, run by run_kselftest.sh: its own KTAP
    (results, "# value NAME VALUE" lines, "# NAME: REASON" before a failure) is nested, each line prefixed with
    "# ", and run_kselftest.sh's own result line says how the script ended."""
    outer, plan, seen, failed, reasons = None, None, 0, 0, {}
    for line in body:
        if not line.startswith("#"):
            m = TAP_LINE.match(line)
            if m and CHECK_COLLECTION in m.group(2):
                outer = m
            continue
        inner = line[2:] if line.startswith("# ") else line[1:]
        if inner.startswith("# "):
            diag = inner[2:]
            m = VALUE_LINE.match(diag)
            if m:
                run.values[m.group(1)] = m.group(2)
                continue
            m = re.match(r"^(\S+): (.*)$", diag)
            if m:
                reasons[m.group(1)] = m.group(2)
            continue
        m = TAP_PLAN.match(inner)
        if m:
            plan = int(m.group(1))
            continue
        m = TAP_LINE.match(inner)
        if not m:
            continue
        seen += 1
        failed += add_tap_result(run, f"check/{script}", m, reasons.get(m.group(2).strip(), ""))
    # The script's own result: it ran to its end and reported every result it planned. Its failed results are
    # counted above, one by one; here a script that ended otherwise fails.
    if outer is None:
        detail = rc_detail(rc) if rc not in (0, None) else "killed (no end marker)" if rc is None else "no result line"
        run.add(f"check/{script}", "fail", f"run_kselftest.sh gave no result for it ({detail})")
    elif outer.group(3) == "SKIP":
        run.add(f"check/{script}", "skip", outer.group(4) or "")
    elif not outer.group(1):
        run.add(f"check/{script}", "pass" if plan == seen else "fail",
                "" if plan == seen else f"{seen} results, plan {plan}")
    else:
        end = (outer.group(2).split("#", 1) + [""])[1].strip()
        ended = failed > 0 and end == "exit=1" and plan == seen
        run.add(f"check/{script}", "pass" if ended else "fail",
                "" if ended else f"{end or 'not ok'}; {seen} results, plan {plan}, {failed} failed")


def parse_kvm_selftest(run, binary, rc, body):
    """KVM's selftest kvm/riscv/sbi_pmu_test, run by the L1 guest of a nested entry (tests/guest/kvm-host): one
    "SBI PMU <name> test : PASS" line per part that passed; exit status 0 when all passed, 4 (KSFT_SKIP) when KVM
    lacks what the test needs, anything else when an assertion failed (its message is the last lines)."""
    test = f"l1/{binary}"
    for line in body:
        m = re.match(r"^SBI PMU (.+) test : PASS\s*$", line)
        if m:
            run.add(f"{test}/{m.group(1).replace(' ', '_')}", "pass")
    last = " | ".join(ln.strip() for ln in body[-3:] if ln.strip()) or "no output"
    if rc == 0:
        run.add(test, "pass")
    elif rc == 4:
        run.add(test, "skip", last)
    else:
        run.add(test, "fail", f"{rc_detail(rc)}: {last}")


def parse_plain(run, kind, rc, body):
    """Results as "ok NAME", "not ok NAME REASON", "ok NAME # SKIP REASON" and "value NAME VALUE" lines (the PAPI
    check). The script's own result says whether it ran to its end; failed results are counted one by one."""
    seen = 0
    for line in body:
        m = VALUE_LINE.match(line)
        if m:
            run.values[m.group(1)] = m.group(2)
            continue
        m = PLAIN_LINE.match(line)
        if not m:
            continue
        seen += 1
        test = f"{kind}/{m.group(2)}"
        if m.group(3) is not None:
            run.add(test, "skip", m.group(3))
        elif m.group(1) == "not ok":
            run.add(test, "fail", m.group(4) or "")
        else:
            run.add(test, "pass")
    ended = rc in (0, 1) and seen > 0
    run.add(f"{kind}/completed", "pass" if ended else "fail", "" if ended else f"{rc_detail(rc)}, {seen} results")


def load_expectations():
    """The expectation rules, in lookup order; a file that breaks its format ends the run, naming file and line."""
    try:
        return expectations.load()
    except expectations.FormatError as err:
        sys.exit(f"tests/expectations/{err}")


# (kind, reason) of the first rule that matches a test on an entry and driver, or (None, None).
expectation = expectations.lookup


def load_baseline():
    base = {}
    if os.path.exists(BASELINE):
        with open(BASELINE, encoding="utf-8") as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                entry, test, status = line.rstrip("\n").split("\t")
                base[(entry, test)] = status
    return base


def entry_options(entry):
    """The entry's scripts/qemu-run options as qemu-run reads them."""
    return qemu_run_lib.parse_args(list(ENTRIES[entry].qemu) + ["--", "true"])


def dtmap_dtbs(entry):
    """The device trees of the dtmap entries (valid, malformed) for the entry's -cpu and -smp, made once and cached
    by scripts/make-dtmap-dtb."""
    opts = entry_options(entry)
    res = subprocess.run([os.path.join(TOP, "scripts/make-dtmap-dtb"), "--cpu", opts.cpu, "--smp", str(opts.smp)],
                         stdout=subprocess.PIPE, text=True)
    if res.returncode != 0:
        sys.exit("scripts/make-dtmap-dtb failed")
    valid, malformed = res.stdout.split()
    return {"DTMAP_DTB": valid, "DTMAP_MALFORMED_DTB": malformed}


def qemu_run_command(entry, driver, suites, outdir, timeout, module, skips, full, dtbs, papi, l1_selftest):
    """The scripts/qemu-run command of one boot: the entry's options (its device trees filled in), the driver, the
    files the suites need, and run-suites with the --skip globs, the short version's --only globs (unless the entry
    runs in full) and the suites."""
    opts = [dtbs.get(o, o) for o in ENTRIES[entry].qemu]
    parsed = entry_options(entry)
    rdir = os.path.join(outdir, f"{entry}-{driver}")
    cmd = [os.path.join(TOP, "scripts/qemu-run"), "--driver", driver, *opts, "--timeout", str(timeout),
           "--console-log", os.path.join(rdir, "console.log")]
    # --module names a module for the 6.12 test kernel; the other kernels' boots take qemu-run's own.
    if module and parsed.kernel_variant != "intree" and parsed.kernel == "6.12":
        cmd += ["--module", module]
    for ko in test_modules(parsed.kernel):
        cmd += ["--add", ko]
    if "papi" in suites and papi:
        cmd += ["--add", papi, "--add", PAPI_CHECK]
    if set(suites) <= set(LEAN_SUITES):
        cmd += ["--lean-root"]
    if parsed.nested and not l1_selftest:
        cmd += ["--no-l1-selftest"]
    only = [] if runs_in_full(entry, full) else [a for glob in ENTRIES[entry].only for a in ("--only", glob)]
    return cmd + ["--", "/opt/rpmu/run-suites", *skips, *only, *suites]


def boot(entry, driver, cmd, outdir):
    """Runs one boot's qemu-run command and parses its output."""
    rdir = os.path.join(outdir, f"{entry}-{driver}")
    os.makedirs(rdir, exist_ok=True)
    start = time.monotonic()
    # The log is written as the guest prints, so a long run can be followed with tail -f.
    out = []
    with open(os.path.join(rdir, "output.log"), "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        for line in proc.stdout:
            log.write(line)
            log.flush()
            out.append(line)
        proc.wait()
    text = "".join(out)
    run = Run(entry, driver)
    run.seconds = time.monotonic() - start
    parse_output(run, text, proc.returncode)
    # qemu-run's own messages (timeouts, kernel log reports) go to the log; show the kernel report lines.
    if proc.returncode in QEMU_EXIT:
        for line in text.splitlines():
            if line.startswith("[qemu]") or line.startswith("  "):
                print(f"    {line}")
    return run


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--drivers", default="c", help="comma-separated drivers to run: c, rust (default: c)")
    p.add_argument("--entries",
                   help=f"matrix entries (default: {','.join(DEFAULT_ENTRIES)}; with --full all also "
                        f"{','.join(e for e in FULL_ENTRIES if e not in DEFAULT_ENTRIES)}; named only: "
                        f"{','.join(e for e in ENTRIES if e not in FULL_ENTRIES) or 'none'})")
    p.add_argument("--suites", default="checks,kselftest,perftest,papi",
                   help="guest suites to run (papi runs in sscofpmf-icount only)")
    p.add_argument("--full", default="", help="comma-separated entries (or all) that run every test, not make "
                   "test's short version")
    p.add_argument("--out", default=os.path.join(os.environ.get("RPMU_CACHE", os.path.expanduser(
        os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "riscv_pmu_sbi_rust"))), "harness"),
        help="directory for logs and results")
    p.add_argument("--timeout", type=int, default=1500, help="per-boot wall-clock limit in seconds")
    p.add_argument("--jobs", type=int, default=int(os.environ.get("HARNESS_JOBS", "1")),
                   help="boots to run at once (default: 1, or $HARNESS_JOBS)")
    p.add_argument("--module", help="module path for the rust driver (default: qemu-run's)")
    p.add_argument("--update-baseline", action="store_true",
                   help="write this run's C-driver results to tests/expectations/baseline-c.tsv")
    args = p.parse_args()
    args.drivers = [d for d in args.drivers.split(",") if d]
    args.suites = [s for s in args.suites.split(",") if s]
    args.full = args.full.split(",")
    if args.entries is None:
        args.entries = ",".join(FULL_ENTRIES if "all" in args.full else DEFAULT_ENTRIES)
    args.entries = [e for e in args.entries.split(",") if e]
    for e in args.entries:
        if e not in ENTRIES:
            sys.exit(f"unknown matrix entry '{e}' (known: {', '.join(ENTRIES)})")
    for d in args.drivers:
        if d not in ("c", "rust"):
            sys.exit(f"unknown driver '{d}' (known: c, rust)")
    return args


def build(args):
    """Builds (or finds up to date) what the boots share, once, so that boots running side by side never build
    the same thing at the same time. Returns the device trees of the board entries and the PAPI archive."""
    drivers, entries, suites = args.drivers, args.entries, args.suites
    if "rust" in drivers and not args.module and not os.path.isfile(
            os.path.join(TOP, "drivers/perf/riscv_pmu_sbi_rust/riscv_pmu_sbi_rust.ko")):
        say("building the module for the rust driver (scripts/module-build)")
        if subprocess.run([os.path.join(TOP, "scripts/module-build")]).returncode != 0:
            sys.exit("building the module failed")
    # The test modules some checks load, for both drivers; a few seconds, so always rebuilt (make skips what is
    # up to date).
    say("building the test modules (scripts/module-build --test-modules)")
    if subprocess.run([os.path.join(TOP, "scripts/module-build"), "--test-modules"]).returncode != 0:
        sys.exit("building the test modules failed")
    # The other kernels' entries: their kernel, module and test modules, built here once rather than by the first
    # of their boots (two boots side by side would build the same thing).
    for kernel in sorted({ENTRIES[e].kernel for e in entries} - {"6.12"}):
        say(f"Linux {kernel}: the test kernel, the module and the test modules (scripts/module-build --kernel {kernel})")
        for opts in ([], ["--test-modules"]):
            if subprocess.run([os.path.join(TOP, "scripts/module-build"), "--kernel", kernel, *opts]).returncode:
                sys.exit(f"building the module or the test modules for Linux {kernel} failed")
        if subprocess.run([os.path.join(TOP, "scripts/build-rootfs"), "--kernel", kernel]).returncode:
            sys.exit(f"building the guest root filesystem (kselftests) for Linux {kernel} failed")
    # The entries on a kernel without the export patches: that kernel (a copy of the patched one's tree with the
    # patches reverted) and the module built against it.
    for kernel in sorted({ENTRIES[e].kernel for e in entries if "--unpatched" in ENTRIES[e].qemu}):
        say(f"Linux {kernel} without the export patches: the kernel and the module "
            f"(scripts/module-build --kernel {kernel} --unpatched)")
        if subprocess.run([os.path.join(TOP, "scripts/module-build"), "--kernel", kernel, "--unpatched"]).returncode:
            sys.exit(f"building the module for Linux {kernel} without the export patches failed")
    # The patched outer QEMU of the entries that ask for it, built once (its first build takes minutes).
    if any(entry_options(e).outer_qemu == "patched" for e in entries):
        say("the patched outer QEMU (scripts/build-qemu)")
        if subprocess.run([os.path.join(TOP, "scripts/build-qemu")]).returncode != 0:
            sys.exit("building the patched QEMU failed")
    dtbs = {}
    boards = [e for e in entries if "DTMAP_DTB" in ENTRIES[e].qemu]
    if boards:
        dtbs = dtmap_dtbs(boards[0])
        # The board entries' kernel has the driver built in, one per kernel.
        for kernel in sorted({ENTRIES[e].kernel for e in boards}):
            say(f"the {kernel} kernel with both drivers built in (scripts/in-tree-build --kernel {kernel})")
            if subprocess.run([os.path.join(TOP, "scripts/in-tree-build"), "--kernel", kernel]).returncode != 0:
                sys.exit(f"building the {kernel} kernel with the driver built in failed")
    # PAPI from Debian unstable (scripts/build-papi), fetched and built once; if that fails, the papi suite
    # fails in every boot that has it and the rest runs.
    papi = None
    if any("papi" in entry_suites(e, suites) for e in entries):
        say("PAPI for the guest (scripts/build-papi)")
        res = subprocess.run([os.path.join(TOP, "scripts/build-papi"), "--print"], stdout=subprocess.PIPE, text=True)
        if res.returncode == 0 and res.stdout.strip():
            papi = res.stdout.strip().splitlines()[-1]
        else:
            say("scripts/build-papi failed: the papi suite will fail")
    return dtbs, papi


def plan(args, rules, dtbs, papi):
    """The boots, as (entry, driver, suites, qemu-run command), in the order they start: entry by entry (with
    --jobs 2 the two drivers of one entry boot side by side, under the same host load), the longest entries first,
    so that the last boots of the two slots end close together."""
    jobs = [(entry, driver) for entry in args.entries for driver in args.drivers if entry_suites(entry, args.suites)]
    boots = []
    for entry, driver in sorted(jobs, key=lambda job: -ENTRIES[job[0]].minutes):
        suites = entry_suites(entry, args.suites)
        # KVM's selftest checks the L1 guest, the same in both boots: the C boot runs it (some entries only in
        # full).
        l1_selftest = (driver == "c" or "c" not in args.drivers) and (
            not ENTRIES[entry].l1_selftest_in_full_only or runs_in_full(entry, args.full))
        cmd = qemu_run_command(entry, driver, suites, args.out, args.timeout, args.module,
                               expectations.skips(rules, entry, driver, args.full), args.full, dtbs, papi,
                               l1_selftest)
        boots.append((entry, driver, suites, cmd))
    return jobs, boots


def run_boots(boots, jobs, outdir):
    """Runs the boots, `jobs` at a time; returns their Runs by (entry, driver)."""
    runs = {}
    started = iter(range(1, len(boots) + 1))

    def start(entry, driver, suites, cmd):
        # Said when the boot starts, not when it is queued.
        say(f"boot {next(started)} of {len(boots)}: {entry} ({ENTRIES[entry].about}), driver {driver}: "
            f"booting and running {', '.join(suites)}")
        return boot(entry, driver, cmd, outdir)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(start, *b): b[:2] for b in boots}
        for fut in concurrent.futures.as_completed(futures):
            entry, driver = futures[fut]
            run = fut.result()
            runs[(entry, driver)] = run
            n = {s: sum(1 for r in run.results.values() if r[0] == s) for s in ("pass", "fail", "skip")}
            slow = ", ".join(f"{k} {v:.0f} s" for k, v in sorted(run.durations.items(), key=lambda kv: -kv[1])[:3])
            say(f"{entry} driver {driver}: done in {run.seconds:.0f} s: {n['pass']} pass, {n['fail']} fail, "
                f"{n['skip']} skip (raw); slowest: {slow}")
    return runs


class Verdicts:
    """What the judgement of the runs gathers: counts, notes, failures and the rows of results.json."""

    def __init__(self):
        self.totals = {"passed": 0, "failed": 0, "skipped": 0}
        self.failures, self.notes, self.report = [], [], []


def judge_results(v, rules, baseline, run, cref, counts, verdict):
    """Judges each test result of one run with the expectations and against the C driver: of this run for the
    Rust driver, of the committed baseline for C."""
    entry, driver = run.entry, run.driver
    for test, (status, detail) in sorted(run.results.items()):
        kind, reason = expectation(rules, entry, driver, test)
        outcome = status
        if status == "fail" and kind == "xfail":
            outcome = "xfail"
        elif status == "fail" and kind == "flaky":
            outcome = "flaky"
        elif status == "pass" and kind == "xfail":
            outcome = "xpass"
            v.notes.append(f"{entry} {driver}: {test}: passed, expected to fail ({reason})")
        if driver == "rust":
            ref = cref.results.get(test, (None,))[0] if cref else baseline.get((entry, test))
        else:
            ref = baseline.get((entry, test))
        if ref is None:
            cmp = "new"
        elif ref == status:
            cmp = "same"
        elif status == "pass" or (status == "skip" and ref == "fail"):
            cmp = "better"
        else:
            cmp = "worse"
        verdict[cmp] += 1
        if driver == "rust" and cmp == "worse":
            # Worse than the C driver fails the run, unless the expectations list it as a known gap of the
            # Rust driver (with its reason); it is still counted and reported.
            if kind == "xfail":
                outcome = "xfail"
                v.notes.append(f"{entry} rust: {test}: {status}, C driver {ref}: known gap ({reason})")
            elif kind == "flaky":
                # Flaky on this entry for both drivers (the reason says why); the entries that run the test
                # strictly judge the driver.
                outcome = "flaky"
                v.notes.append(f"{entry} rust: {test}: {status}, C driver {ref}: known flaky here ({reason})")
            else:
                outcome = "fail"
                detail = f"worse than the C driver ({ref} -> {status}) {detail}".strip()
        elif driver == "c" and cmp in ("worse", "better") and outcome in ("pass", "fail"):
            v.notes.append(f"{entry} c: {test}: {status}, baseline says {ref}")
        v.report.append({"entry": entry, "driver": driver, "test": test, "status": status, "outcome": outcome,
                         "detail": detail, "reference": ref, "comparison": cmp})
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome == "fail":
            v.failures.append(f"{entry} {driver}: {test}: {detail}")


def compare_values(v, rules, run, cref, counts):
    """The Rust driver's values must match the C driver's of the same entry, unless differences.tsv explains."""
    entry, driver = run.entry, run.driver
    equal_other = 0
    for name in sorted(set(run.values) | set(cref.values)):
        a, b = cref.values.get(name), run.values.get(name)
        test = f"compare/{name}"
        kind, reason = expectation(rules, entry, driver, test)
        if a != b and kind == "differs":
            # A difference the expectations explain (the C driver of 6.12 lacks what the firmware offers).
            counts["pass"] += 1
            v.notes.append(f"{entry}: {name}: C {a}, Rust {b}: differs as expected ({reason})")
            v.report.append({"entry": entry, "driver": driver, "test": test, "status": "pass",
                             "outcome": "pass", "detail": f"c={a} rust={b} (expected: {reason})",
                             "reference": a, "comparison": "differs"})
            continue
        if a == b:
            counts["pass"] += 1
            # Counts are shown; the many outcome values (errnos, <not supported>) are summed up below.
            if a is not None and a.isdigit():
                v.notes.append(f"{entry}: {name}: C {a}, Rust {b}: equal")
            else:
                equal_other += 1
        else:
            counts["fail"] += 1
            v.failures.append(f"{entry} rust: {test}: C driver {a}, Rust driver {b}")
        v.report.append({"entry": entry, "driver": driver, "test": test, "status": "pass" if a == b else "fail",
                         "outcome": "pass" if a == b else "fail", "detail": f"c={a} rust={b}",
                         "reference": a, "comparison": "same" if a == b else "worse"})
    v.notes.append(f"{entry}: {equal_other} more values (outcomes, errnos, formats) equal to the C driver's; "
                   "all values are in results.json")


def judge(runs, rules, baseline):
    v = Verdicts()
    for (entry, driver), run in runs.items():
        counts = {"pass": 0, "fail": 0, "skip": 0, "xfail": 0, "flaky": 0, "xpass": 0}
        cref = runs.get((entry, "c")) if driver == "rust" else None
        verdict = {"same": 0, "better": 0, "worse": 0, "new": 0}
        judge_results(v, rules, baseline, run, cref, counts, verdict)
        if driver == "rust" and cref:
            compare_values(v, rules, run, cref, counts)
        say(f"{entry} driver {driver}: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped, "
            f"{counts['xfail']} expected failures, {counts['flaky']} known-flaky failures, {counts['xpass']} "
            f"unexpected passes; vs {'C (same run)' if driver == 'rust' and cref else 'C baseline'}: "
            f"{verdict['same']} same, {verdict['better']} better, {verdict['worse']} worse, {verdict['new']} new")
        v.totals["passed"] += counts["pass"] + counts["xpass"]
        v.totals["failed"] += counts["fail"]
        v.totals["skipped"] += counts["skip"] + counts["xfail"] + counts["flaky"]
    return v


def update_baseline(baseline, entries, report):
    # The entries this run did not boot keep their committed results.
    rows = sorted([(e, t, st) for (e, t), st in baseline.items() if e not in entries]
                  + [(r["entry"], r["test"], r["status"]) for r in report if r["driver"] == "c"])
    with open(BASELINE, "w", encoding="utf-8") as f:
        f.write("# C driver results per matrix entry, written by `tests/harness/harness.py --update-baseline`.\n")
        f.write("# entry\ttest\tstatus\n")
        for row in rows:
            f.write("\t".join(row) + "\n")
    say(f"baseline written: {len(rows)} results")


def main():
    args = parse_args()
    rules = load_expectations()
    baseline = load_baseline()
    dtbs, papi = build(args)
    os.makedirs(args.out, exist_ok=True)
    jobs, boots = plan(args, rules, dtbs, papi)
    runs = run_boots(boots, args.jobs, args.out)
    runs = {k: runs[k] for k in jobs}
    v = judge(runs, rules, baseline)
    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(v.report, f, indent=1)
    if args.update_baseline:
        update_baseline(baseline, args.entries, v.report)
    for n in v.notes:
        say(f"note: {n}")
    for fl in v.failures:
        say(f"FAIL {fl}")
    say(f"logs and results.json in {args.out}")
    print(f"{v.totals['passed']} passed, {v.totals['failed']} failed, {v.totals['skipped']} skipped", flush=True)
    return 1 if v.totals["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
