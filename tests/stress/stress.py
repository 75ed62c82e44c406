#!/usr/bin/env python3
"""Stress both SBI PMU drivers on the stress kernel: fuzzing, CPU hotplug, module reloads, sampling storms.

usage: tests/stress/stress.py [--drivers c,rust] [--fuzz N] [--seed S] [--hotplug N] [--reloads N]
                              [--storm-periods "1 10 100"] [--only LOOPS] [--timeout SECONDS] [--kasan]
                              [--out DIR]

Boots the stress kernel (the test kernel plus kmemleak: scripts/build-kernel --variant stress, built on first
use; with --kasan the kasan variant, which adds the kernel address sanitizer) once per driver, one boot at a
time, with two harts and Sscofpmf, and runs tests/stress/guest-stress.sh in it: the seeded perf_event_attr
fuzzer (tools/testing/selftests/riscv_pmu_sbi/pfuzz.c), CPU1 offline/online cycles while `perf stat -a` and
`perf record -a` run, module unload/load cycles with events opened and closed in between (Rust driver;
the C driver is built in), and sampling storms (periods 1 to 100 on every CPU, user-only and kernel-inclusive).
After each loop the guest checks that no counter is in use (the Rust driver's debugfs `counters` file), that
kmemleak finds no leak and that the kernel log has no report. The fuzzer's digest of open outcomes must be the
same for both drivers. Prints progress, then a summary per driver; logs go to DIR (default
$RPMU_CACHE/stress). Exits 1 on any failure.
"""

import argparse
import os
import re
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUEST = os.path.join(TOP, "tests/stress/guest-stress.sh")
QEMU_EXIT = {240: "timeout", 241: "guest died (panic or QEMU error)", 242: "kernel log has a BUG/WARNING/Oops/lockdep report",
             243: "module failed to load"}
CHECK = re.compile(r"^(not ok|ok) (\S+)(?:\s+#\s*SKIP\s*(.*)|\s+(.*))?$")
VALUE = re.compile(r"^value (\S+) (.+?)\s*$")
SUMMARY = re.compile(r"^summary (\S+) (\S+)\s*$")


# Results of the C driver that are known differences, with their cause; the Rust driver must pass them.
_C_STALL = ("seen in every full run here, not traced to its end; the path that explains it: the C driver's "
            "overflow handler stops every hardware counter, then returns IRQ_NONE without "
            "starting them again when the overflow CSR shows no overflow (pmu_sbi_ovf_handler(), 'No overflow bit "
            "is set'): an overflow interrupt that finds no overflow bit leaves the events of that CPU stopped; "
            "the Rust driver restarts them")
C_KNOWN = {"storm_p1_cycles:u_completed": _C_STALL}


def say(msg):
    print(f"[stress] {msg}", flush=True)


def cache_dir():
    return os.environ.get("RPMU_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "riscv_pmu_sbi_rust")


def run(driver, args, outdir):
    """One boot: returns (qemu-run status, checks, values, summary, seconds)."""
    cmd = [os.path.join(TOP, "scripts/qemu-run"), "--driver", driver, "--kernel-variant", args.variant,
           "--cpu", "rv64,sscofpmf=true", "--smp", "2", "--timeout", str(args.timeout),
           "--console-log", os.path.join(outdir, f"console-{driver}.log"), "--add", GUEST,
           "--", "bash", "/root/guest-stress.sh", "--fuzz", str(args.fuzz), "--seed", str(args.seed),
           "--hotplug", str(args.hotplug), "--reloads", str(args.reloads), "--storm-periods", args.storm_periods,
           "--only", args.only]
    checks, values, summary = {}, {}, {}
    start = time.monotonic()
    with open(os.path.join(outdir, f"output-{driver}.log"), "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        for line in proc.stdout:
            log.write(line)
            log.flush()
            line = line.rstrip("\n")
            m = VALUE.match(line)
            if m:
                values[m.group(1)] = m.group(2)
                continue
            m = SUMMARY.match(line)
            if m:
                summary[m.group(1)] = m.group(2)
                continue
            m = CHECK.match(line)
            if m:
                status = "skip" if m.group(3) is not None else ("fail" if m.group(1) == "not ok" else "pass")
                checks[m.group(2)] = (status, m.group(3) or m.group(4) or "")
                if status == "fail":
                    say(f"{driver}: FAIL {m.group(2)} {m.group(4) or ''}")
                continue
            # Progress lines of the guest and qemu-run's own messages.
            if line.startswith("# ") and not line.startswith(("# counters:", "# kmemleak:", "# log:")) \
                    or line.startswith("[qemu]") or line.startswith("  "):
                say(f"{driver}: {line.lstrip('# ')}")
        proc.wait()
    return proc.returncode, checks, values, summary, time.monotonic() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--drivers", default="c,rust", help="comma-separated drivers (default: c,rust)")
    p.add_argument("--fuzz", type=int, default=100000, help="fuzzer attempts per driver (default: 100000)")
    p.add_argument("--seed", type=int, default=1, help="the fuzzer's seed (default: 1)")
    p.add_argument("--hotplug", type=int, default=1000, help="CPU offline/online cycles (default: 1000)")
    p.add_argument("--reloads", type=int, default=100, help="module unload/load cycles (default: 100)")
    p.add_argument("--storm-periods", default="1 10 100", help="sample periods of the storms (default: '1 10 100')")
    p.add_argument("--only", default="fuzz,hotplug,reload,storm", help="loops to run (default: all four)")
    p.add_argument("--timeout", type=int, default=7200, help="per-boot wall-clock limit in seconds (default: 7200)")
    p.add_argument("--kasan", dest="variant", action="store_const", const="kasan", default="stress",
                   help="boot the stress kernel with KASAN too (scripts/build-kernel --variant kasan)")
    p.add_argument("--out", default=os.path.join(cache_dir(), "stress"), help="directory for logs")
    args = p.parse_args()
    drivers = [d for d in args.drivers.split(",") if d]
    for d in drivers:
        if d not in ("c", "rust"):
            sys.exit(f"unknown driver '{d}' (known: c, rust)")
    os.makedirs(args.out, exist_ok=True)

    if "rust" in drivers:
        # The module for the stress kernel, built before the first boot so that a build failure is said plainly.
        say(f"building the module for the {args.variant} kernel (scripts/module-build --variant {args.variant})")
        if subprocess.run([os.path.join(TOP, "scripts/module-build"), "--variant", args.variant]).returncode != 0:
            sys.exit(f"building the module for the {args.variant} kernel failed")

    results = {}
    for d in drivers:
        say(f"driver {d}: booting the {args.variant} kernel (fuzz {args.fuzz}, hotplug {args.hotplug}, reloads "
            f"{args.reloads}, storm periods {args.storm_periods}; loops: {args.only})")
        results[d] = run(d, args, args.out)
        say(f"driver {d}: done in {results[d][4]:.0f} s (guest command status {results[d][0]})")

    failures = []
    for d, (status, checks, values, summary, secs) in results.items():
        if status != 0:
            failures.append(f"{d}: guest command status {status}: {QEMU_EXIT.get(status, 'a check script failed')}")
        for name, (st, detail) in checks.items():
            if st != "fail":
                continue
            known = C_KNOWN.get(name) if d == "c" else None
            # A known C-driver result is reported with its cause; it fails the run if the Rust driver fails too.
            if known and results.get("rust", (None, {}))[1].get(name, ("fail",))[0] != "fail":
                say(f"known C-driver difference {name}: {detail} ({known})")
            else:
                failures.append(f"{d}: {name}: {detail}")
    # The fuzzer's outcomes must be the same on both drivers for the same seed.
    if "c" in results and "rust" in results:
        cv, rv = results["c"][2], results["rust"][2]
        for name in sorted(set(cv) | set(rv)):
            if "_raw_gap_" in name:
                # Raw events with bits between the event field and the class bits: the drivers differ by design
                # (tests/expectations/differences.tsv, compare/fuzz_s*_raw_gap_*).
                say(f"compare {name}: C {cv.get(name)}, Rust {rv.get(name)}: differs by design")
            elif cv.get(name) != rv.get(name):
                failures.append(f"compare {name}: C {cv.get(name)}, Rust {rv.get(name)}")
            elif name.endswith("_digest"):
                say(f"compare {name}: {cv[name]} on both drivers")

    keys = ["fuzz_attempts", "fuzz_opened", "fuzz_seconds", "hotplug_cycles", "hotplug_retried_writes",
            "hotplug_seconds", "reloads", "reload_rmmod_refused", "reload_seconds", "storms", "storm_seconds",
            "kernel_log_reports", "kmemleak_objects", "counters_left_in_use", "seconds"]
    say("summary:")
    print(f"  {'':24}" + "".join(f"{d:>12}" for d in results))
    for k in keys:
        print(f"  {k:24}" + "".join(f"{results[d][3].get(k, '-'):>12}" for d in results))
    print(f"  {'checks passed/failed':24}" + "".join(
        f"{sum(1 for s, _ in results[d][1].values() if s == 'pass'):>6}/"
        f"{sum(1 for s, _ in results[d][1].values() if s == 'fail'):<5}" for d in results))
    for f in failures:
        say(f"FAIL {f}")
    say(f"logs in {args.out}")
    print(f"stress: {'FAILED' if failures else 'passed'} ({len(failures)} failures)", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
