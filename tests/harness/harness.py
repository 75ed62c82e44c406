#!/usr/bin/env python3
"""Run the guest test suites on each driver across the QEMU matrix and judge the results.

For every matrix entry and driver the harness boots the test kernel once (scripts/qemu-run), runs
tests/guest/run-suites, parses the kselftest TAP, the `perf test` result lines and the project's guest checks,
applies tests/expectations/expectations.txt, compares the Rust driver with the C driver of the same run (and the C
driver with its committed baseline, tests/expectations/baseline-c.tsv) and prints one closing line
`N passed, N failed, N skipped`. It exits 1 on any unexpected result.
"""

import argparse
import concurrent.futures
import fnmatch
import json
import os
import re
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPECTATIONS = os.path.join(TOP, "tests/expectations/expectations.txt")
BASELINE = os.path.join(TOP, "tests/expectations/baseline-c.tsv")

# Test modules the guest checks load, from /root (scripts/module-build --test-modules builds them).
TEST_MODULES = [os.path.join(TOP, "tests/kmod/rpmu_pm_check.ko")]

# The matrix: (name, qemu-run options, description).
ENTRIES = {
    "sscofpmf-smp2": (["--cpu", "rv64,sscofpmf=true", "--smp", "2"], "Sscofpmf, 2 harts"),
    "sscofpmf-icount": (["--cpu", "rv64,sscofpmf=true", "--icount"], "Sscofpmf, 1 hart, -icount shift=0 (exact)"),
    "no-sscofpmf": (["--cpu", "rv64", "--smp", "2"], "no Sscofpmf, 2 harts"),
    # Deterministic, so that its counts compare exactly with the C driver's and no timing-flaky rule is needed;
    # the SMP paths do not depend on the firmware's SBI version and run in sscofpmf-smp2.
    "sbi3": (["--cpu", "rv64,sscofpmf=true", "--icount", "--bios", "opensbi-1.9"],
             "OpenSBI 1.9 (SBI v3.0), Sscofpmf, 1 hart, -icount shift=0 (exact)"),
    # Firmware without the SBI PMU extension, on TCG: OpenSBI 0.9 (SBI v0.2, before the extension existed), where
    # both drivers fall back to the base counters. The hart lacks the extensions that need M-mode set-up this
    # firmware predates (with Sstc the kernel's first stimecmp write traps in riscv_timer_starting_cpu).
    "sbi02": (["--cpu", "rv64,sstc=false,svpbmt=false,svadu=false,zicboz=false,zicbom=false", "--icount",
               "--bios", "opensbi-0.9"],
              "OpenSBI 0.9 (SBI v0.2, no PMU extension), 1 hart, -icount shift=0 (exact)"),
    # A board: U-Boot hands the kernel the board's device tree, with a riscv,pmu event map (scripts/dtmap/), and
    # both drivers are built into the kernel, the command line choosing one (no module). DTMAP_DTB stands for
    # the device tree scripts/make-dtmap-dtb makes for the entry's -cpu and -smp.
    "dtmap": (["--cpu", "rv64,sscofpmf=true", "--icount", "--kernel-variant", "intree", "--dtb", "DTMAP_DTB"],
              "U-Boot, board device tree with riscv,pmu event maps, both drivers built in, 1 hart, -icount"),
    # The same with a malformed map in the kernel's device tree (firmware keeps the valid one).
    "dtmap-malformed": (["--cpu", "rv64,sscofpmf=true", "--icount", "--kernel-variant", "intree",
                         "--dtb", "DTMAP_DTB", "--kernel-dtb", "DTMAP_MALFORMED_DTB"],
                        "as dtmap, with an inconsistent map in the kernel's device tree"),
    # KVM's SBI PMU, the one implementation with snapshot memory: the drivers run in an L2 guest (2 vCPUs) under
    # KVM in an L1 guest with the hypervisor extension, Sscofpmf and AIA on one exact (-icount) hart.
    "kvm": (["--nested", "--icount", "--smp", "2"],
            "KVM's SBI PMU (snapshot memory) in a nested guest, 2 vCPUs on one exact L1 hart"),
    # Firmware without the SBI PMU extension: KVM offers its guests the extension only when the host has
    # Sscofpmf, so an L2 guest under an L1 hart without it has none. The legacy PMU's own check runs there.
    "no-pmu": (["--nested", "--l1-cpu", "rv64,h=true", "--icount", "--smp", "1"],
               "no SBI PMU extension (KVM guest of a host without Sscofpmf), 1 vCPU on one exact L1 hart"),
}
# Under nested virtualisation every trap goes through a hypervisor that QEMU emulates, so a guest runs tens of
# times slower: the nested entries run the project's checks only; kselftest and perf test run in the others.
# The board entries run the guest checks too (their kernel is the test kernel's with the driver built in;
# kselftests and perf test add nothing the other entries do not cover).
ENTRY_SUITES = {"kvm": ["checks"], "no-pmu": ["checks"], "sbi02": ["checks"], "dtmap": ["checks"],
                "dtmap-malformed": ["checks"]}
# Entries where only some tests run (run-suites --only). In the kvm entry `make test` runs the driver's
# detection of the snapshot memory, the overflow path through it ({...}:S leader sampling with -c, where the
# C driver's restart defect shows) and the SBI calls of the switch path with it (under KVM the counters are
# released at every switch out: a counter_config_matching per event and one start in, one stop with RESET out,
# no counter left configured: check/sbi_calls_per_switch); `make test-kvm` (--full kvm) runs every check there, check/sampling (-c,
# -F and a profile) included: nested, a check costs about eight times its guest time in host time, and most of
# check/sampling's results are expected failures there (see the expectations). The entries without the PMU
# extension have their own check.
ENTRY_ONLY = {"kvm": ["check/snapshot", "check/leader_sampling", "check/sbi_calls_per_switch"],
              "no-pmu": ["check/no_pmu_extension"], "sbi02": ["check/no_pmu_extension"]}
# About how long make test's boots of each entry take on a 2-core host, two at a time, in minutes: the order in
# which the entries start (longest first).
ENTRY_MINUTES = {"no-sscofpmf": 5, "sscofpmf-smp2": 3.5, "sscofpmf-icount": 3.4, "kvm": 3, "sbi3": 2.3,
                 "dtmap": 2, "no-pmu": 1.4, "dtmap-malformed": 0.6, "sbi02": 0.3}
# Suites that run on some entries only. PAPI (tests/papi) runs where counts are exact, so that the two drivers'
# counts through PAPI are compared exactly.
SUITE_ENTRIES = {"papi": ["sscofpmf-icount"]}
PAPI_CHECK = os.path.join(TOP, "tests/papi/papi-check.sh")


# Suites that run on qemu-run's lean root (no Python, Perl or binutils; half the size to copy at boot): the
# project's checks and the kernel's perf_events selftests (static programs). perf test and PAPI need the rest.
LEAN_SUITES = ["checks", "kselftest"]


def entry_suites(entry, suites):
    return [s for s in suites if s in ENTRY_SUITES.get(entry, suites) and entry in SUITE_ENTRIES.get(s, [entry])]


QEMU_EXIT = {240: "timeout", 241: "guest died (panic or QEMU error)", 242: "kernel log has BUG/WARNING/Oops/lockdep",
             243: "module failed to load"}

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
    if qemu_status != 243:
        run.add("boot/kernel-log-clean", "fail" if qemu_status == 242 else "pass",
                QEMU_EXIT[242] if qemu_status == 242 else "")


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
    rules = []
    with open(EXPECTATIONS, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 5 or parts[3] not in ("xfail", "flaky", "skip", "short", "differs"):
                sys.exit(f"{EXPECTATIONS}:{n}: expected 5 tab-separated fields "
                         "(test glob, entry glob, driver glob, xfail|flaky|skip|short|differs, reason)")
            rules.append(parts)
    return rules


def expectation(rules, entry, driver, test):
    for tglob, eglob, dglob, kind, reason in rules:
        if fnmatch.fnmatchcase(test, tglob) and fnmatch.fnmatchcase(entry, eglob) \
                and fnmatch.fnmatchcase(driver, dglob):
            return kind, reason
    return None, None


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


def skips_for(rules, entry, driver, full):
    """The guest-side --skip options: whole sections the expectations say not to run on this entry, and the ones
    make test's short version leaves to another entry (kind "short"), unless the entry runs in full."""
    out = []
    for tglob, eglob, dglob, kind, _ in rules:
        if kind == "short" and (entry in full or "all" in full):
            continue
        if kind in ("skip", "short") and fnmatch.fnmatchcase(entry, eglob) and fnmatch.fnmatchcase(driver, dglob):
            out += ["--skip", tglob]
    return out


def dtmap_dtbs():
    """The device trees of the dtmap entries (valid, malformed), made once and cached by scripts/make-dtmap-dtb."""
    res = subprocess.run([os.path.join(TOP, "scripts/make-dtmap-dtb"), "--cpu", "rv64,sscofpmf=true", "--smp", "1"],
                         stdout=subprocess.PIPE, text=True)
    if res.returncode != 0:
        sys.exit("scripts/make-dtmap-dtb failed")
    valid, malformed = res.stdout.split()
    return {"DTMAP_DTB": valid, "DTMAP_MALFORMED_DTB": malformed}


def boot(entry, driver, suites, outdir, timeout, module, skips, full, dtbs, papi, l1_selftest):
    opts, _ = ENTRIES[entry]
    opts = [dtbs.get(o, o) for o in opts]
    suites = entry_suites(entry, suites)
    rdir = os.path.join(outdir, f"{entry}-{driver}")
    os.makedirs(rdir, exist_ok=True)
    cmd = [os.path.join(TOP, "scripts/qemu-run"), "--driver", driver, *opts, "--timeout", str(timeout),
           "--console-log", os.path.join(rdir, "console.log")]
    if module and "intree" not in opts:
        cmd += ["--module", module]
    for ko in TEST_MODULES:
        cmd += ["--add", ko]
    if "papi" in suites and papi:
        cmd += ["--add", papi, "--add", PAPI_CHECK]
    if set(suites) <= set(LEAN_SUITES):
        cmd += ["--lean-root"]
    if "--nested" in opts and not l1_selftest:
        cmd += ["--no-l1-selftest"]
    whole = entry in full or "all" in full
    only = [] if whole else [a for glob in ENTRY_ONLY.get(entry, []) for a in ("--only", glob)]
    cmd += ["--", "/opt/rpmu/run-suites", *skips, *only, *suites]
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


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--drivers", default="c", help="comma-separated drivers to run: c, rust (default: c)")
    p.add_argument("--entries", default=",".join(ENTRIES), help=f"matrix entries (default: {','.join(ENTRIES)})")
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

    drivers = [d for d in args.drivers.split(",") if d]
    entries = [e for e in args.entries.split(",") if e]
    for e in entries:
        if e not in ENTRIES:
            sys.exit(f"unknown matrix entry '{e}' (known: {', '.join(ENTRIES)})")
    for d in drivers:
        if d not in ("c", "rust"):
            sys.exit(f"unknown driver '{d}' (known: c, rust)")
    suites = [s for s in args.suites.split(",") if s]
    # Build the module once here, so that boots running side by side never build it at the same time.
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
    rules = load_expectations()
    baseline = load_baseline()
    dtbs = {}
    if any("DTMAP_DTB" in ENTRIES[e][0] for e in entries):
        dtbs = dtmap_dtbs()
        # The board entries' kernel has the driver built in: built (or found up to date) once here, so that
        # boots running side by side never build it at the same time.
        say("the kernel with both drivers built in (scripts/in-tree-build)")
        if subprocess.run([os.path.join(TOP, "scripts/in-tree-build")]).returncode != 0:
            sys.exit("building the kernel with the driver built in failed")
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
    os.makedirs(args.out, exist_ok=True)

    # Boots run entry by entry; with --jobs 2 the two drivers of one entry boot side by side, so they see the same
    # host load. The longest entries start first, so that the last boots of the two slots end close together.
    runs = {}
    jobs = [(entry, driver) for entry in entries for driver in drivers
            if entry_suites(entry, suites)]
    order = sorted(jobs, key=lambda job: -ENTRY_MINUTES.get(job[0], 0))
    started = iter(range(1, len(order) + 1))

    def start(entry, driver, run_suites, *rest):
        # Said when the boot starts, not when it is queued.
        say(f"boot {next(started)} of {len(order)}: {entry} ({ENTRIES[entry][1]}), driver {driver}: "
            f"booting and running {', '.join(run_suites)}")
        return boot(entry, driver, run_suites, *rest)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {}
        for entry, driver in order:
            run_suites = entry_suites(entry, suites)
            futures[pool.submit(start, entry, driver, run_suites, args.out, args.timeout, args.module,
                                skips_for(rules, entry, driver, args.full.split(",")), args.full.split(","),
                                dtbs, papi,
                                # KVM's selftest checks the L1 guest, the same in both boots: the C boot runs it.
                                driver == "c" or "c" not in drivers)] = (entry, driver)
        for fut in concurrent.futures.as_completed(futures):
            entry, driver = futures[fut]
            run = fut.result()
            runs[(entry, driver)] = run
            n = {s: sum(1 for r in run.results.values() if r[0] == s) for s in ("pass", "fail", "skip")}
            slow = ", ".join(f"{k} {v:.0f} s" for k, v in sorted(run.durations.items(), key=lambda kv: -kv[1])[:3])
            say(f"{entry} driver {driver}: done in {run.seconds:.0f} s: {n['pass']} pass, {n['fail']} fail, "
                f"{n['skip']} skip (raw); slowest: {slow}")
    runs = {k: runs[k] for k in jobs}

    totals = {"passed": 0, "failed": 0, "skipped": 0}
    failures, notes = [], []
    report = []
    for (entry, driver), run in runs.items():
        counts = {"pass": 0, "fail": 0, "skip": 0, "xfail": 0, "flaky": 0, "xpass": 0}
        cref = runs.get((entry, "c")) if driver == "rust" else None
        verdict = {"same": 0, "better": 0, "worse": 0, "new": 0}
        for test, (status, detail) in sorted(run.results.items()):
            kind, reason = expectation(rules, entry, driver, test)
            outcome = status
            if status == "fail" and kind == "xfail":
                outcome = "xfail"
            elif status == "fail" and kind == "flaky":
                outcome = "flaky"
            elif status == "pass" and kind == "xfail":
                outcome = "xpass"
                notes.append(f"{entry} {driver}: {test}: passed, expected to fail ({reason})")
            # Compare with the C driver: of this run for the Rust driver, of the committed baseline for C.
            if driver == "rust":
                ref = cref.results.get(test, (None,))[0] if cref else baseline.get((entry, test))
            else:
                ref = baseline.get((entry, test))
            if ref is None:
                verdict["new"] += 1
                cmp = "new"
            elif ref == status:
                verdict["same"] += 1
                cmp = "same"
            elif status == "pass" or (status == "skip" and ref == "fail"):
                verdict["better"] += 1
                cmp = "better"
            else:
                verdict["worse"] += 1
                cmp = "worse"
            if driver == "rust" and cmp == "worse":
                # Worse than the C driver fails the run, unless the expectations list it as a known gap of the
                # Rust driver (with its reason); it is still counted and reported.
                if kind == "xfail":
                    outcome = "xfail"
                    notes.append(f"{entry} rust: {test}: {status}, C driver {ref}: known gap ({reason})")
                elif kind == "flaky":
                    # Flaky on this entry for both drivers (the reason says why); the entries that run the test
                    # strictly judge the driver.
                    outcome = "flaky"
                    notes.append(f"{entry} rust: {test}: {status}, C driver {ref}: known flaky here ({reason})")
                else:
                    outcome = "fail"
                    detail = f"worse than the C driver ({ref} -> {status}) {detail}".strip()
            elif driver == "c" and cmp in ("worse", "better") and outcome in ("pass", "fail"):
                notes.append(f"{entry} c: {test}: {status}, baseline says {ref}")
            report.append({"entry": entry, "driver": driver, "test": test, "status": status, "outcome": outcome,
                           "detail": detail, "reference": ref, "comparison": cmp})
            counts[outcome] = counts.get(outcome, 0) + 1
            if outcome == "fail":
                failures.append(f"{entry} {driver}: {test}: {detail}")
        # Values must match the C driver's of the same entry.
        if driver == "rust" and cref:
            equal_other = 0
            for name in sorted(set(run.values) | set(cref.values)):
                a, b = cref.values.get(name), run.values.get(name)
                test = f"compare/{name}"
                kind, reason = expectation(rules, entry, driver, test)
                if a != b and kind == "differs":
                    # A difference the expectations explain (the C driver of 6.12 lacks what the firmware offers).
                    counts["pass"] += 1
                    notes.append(f"{entry}: {name}: C {a}, Rust {b}: differs as expected ({reason})")
                    report.append({"entry": entry, "driver": driver, "test": test, "status": "pass",
                                   "outcome": "pass", "detail": f"c={a} rust={b} (expected: {reason})",
                                   "reference": a, "comparison": "differs"})
                    continue
                if a == b:
                    counts["pass"] += 1
                    # Counts are shown; the many outcome values (errnos, <not supported>) are summed up below.
                    if a is not None and a.isdigit():
                        notes.append(f"{entry}: {name}: C {a}, Rust {b}: equal")
                    else:
                        equal_other += 1
                else:
                    counts["fail"] += 1
                    failures.append(f"{entry} rust: {test}: C driver {a}, Rust driver {b}")
                report.append({"entry": entry, "driver": driver, "test": test, "status": "pass" if a == b else "fail",
                               "outcome": "pass" if a == b else "fail", "detail": f"c={a} rust={b}",
                               "reference": a, "comparison": "same" if a == b else "worse"})
            notes.append(f"{entry}: {equal_other} more values (outcomes, errnos, formats) equal to the C driver's; "
                         "all values are in results.json")
        say(f"{entry} driver {driver}: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped, "
            f"{counts['xfail']} expected failures, {counts['flaky']} known-flaky failures, {counts['xpass']} "
            f"unexpected passes; vs {'C (same run)' if driver == 'rust' and cref else 'C baseline'}: "
            f"{verdict['same']} same, {verdict['better']} better, {verdict['worse']} worse, {verdict['new']} new")
        totals["passed"] += counts["pass"] + counts["xpass"]
        totals["failed"] += counts["fail"]
        totals["skipped"] += counts["skip"] + counts["xfail"] + counts["flaky"]

    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    if args.update_baseline:
        # The entries this run did not boot keep their committed results.
        rows = sorted([(e, t, st) for (e, t), st in baseline.items() if e not in entries]
                      + [(r["entry"], r["test"], r["status"]) for r in report if r["driver"] == "c"])
        with open(BASELINE, "w", encoding="utf-8") as f:
            f.write("# C driver results per matrix entry, written by `tests/harness/harness.py --update-baseline`.\n")
            f.write("# entry\ttest\tstatus\n")
            for row in rows:
                f.write("\t".join(row) + "\n")
        say(f"baseline written: {len(rows)} results")
    for n in notes:
        say(f"note: {n}")
    for fl in failures:
        say(f"FAIL {fl}")
    say(f"logs and results.json in {args.out}")
    print(f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped", flush=True)
    return 1 if totals["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
