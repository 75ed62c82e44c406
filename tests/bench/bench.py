#!/usr/bin/python3
"""Benchmark the C and the Rust SBI PMU drivers side by side on the bench kernels.

usage: tests/bench/bench.py [--quick] [--kernel LIST] [--firmware LIST] [--out DIR] [--report FILE]
                            [--readme FILE] [--jobs N] [--timeout SECONDS]

For each kernel (Linux 6.12 and 7.3, or --kernel LIST), builds (or reuses) its bench kernel (the test kernel
without its debug options; the 7.3 one is preemptible, as every riscv 7.x kernel), the Rust module against it and
the guest root filesystem, then boots that bench kernel once per driver and firmware, so that the Rust driver is
measured against the same kernel's own C driver on the same kernel image. The firmware (OpenSBI 1.5, QEMU's own,
OpenSBI 1.9, Debian's, OpenSBI 1.5 on a hart with counter delegation, where the Rust driver programs the hardware
counters itself, and KVM's SBI PMU in a nested guest, whose L1 guest runs on OpenSBI 1.5) in QEMU's
deterministic mode (-smp 1 -icount shift=0,sleep=off, where a guest nanosecond is a guest instruction; nested,
an L2 nanosecond is an L1 instruction), two boots at once, and runs the benchmark programs of tests/bench/progs
through tests/bench/guest/run-bench in each. The nested guest gets no overflow interrupts (the outer QEMU does not
raise them for KVM's counters), so the sampling figures are left out there. Linux 7.3 boots on the firmware its
matrix entries of make test cover (OpenSBI 1.5 and 1.9) unless --firmware names others. It prints, per kernel and
firmware, a table of C, Rust, Rust/C, the floor (the
same operation on software events, which touches no PMU hardware) and Rust/floor, then the Rust driver's SBI
calls per operation, and writes to DIR (default $RPMU_CACHE/bench):
  bench.txt          the printed tables
  bench.csv          the tables, with the SBI calls per operation (ids of a kernel other than the first
                     prefixed with "KERNEL:", of firmware other than the first with "FIRMWARE:")
  bench.prev.csv     the previous run's table; the run reports every figure that differs from it
  ctxsw.png          the context-switch cost against the number of events, for C, Rust and the floor (the
                     first firmware), one panel per kernel
  raw/               the guest output and kernel console log of each boot, and the module build logs
and writes the same tables, with the run's date, commit, kernels, QEMU and firmware, into one reST document,
Documentation/driver-api/perf/riscv_pmu_sbi_rust-bench.rst in the clone (or --report FILE), replacing the previous
run's; the chart it shows is Documentation/images/bench-ctxsw.png, where the run copies ctxsw.png. The summary
table between the bench markers of the README (or --readme FILE) is replaced as well.
The chart needs Debian's python3-matplotlib for the system Python (scripts/setup-deps installs it).
"""

import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVERS = ("c", "rust")
# The kernels (scripts/build-kernel --kernel), each with its own bench kernel and C driver: the first is the
# reference of the unprefixed figures.
KERNELS = ("6.12", "7.3")
# The firmware of the boots (scripts/qemu-run --bios, or kvm): the first is the reference of the chart and of the
# unprefixed figures.
FIRMWARE = ("opensbi-1.5", "opensbi-1.9", "cdeleg", "kvm")
# The firmware a kernel boots on when --firmware does not say: Linux 7.3 on that of its make test entries
# (7.3-sscofpmf-*, 7.3-sbi3); the matrix has no 7.3 entry with counter delegation or KVM to check those paths.
KERNEL_FIRMWARE = {"7.3": ("opensbi-1.5", "opensbi-1.9")}
# kvm: KVM's SBI PMU (snapshot memory) in a nested guest, scripts/qemu-run --nested: the drivers run in an L2 guest
# with one vCPU under KVM in an L1 guest (OpenSBI 1.5, the hypervisor extension, one hart at -icount), so an L2
# nanosecond is an L1 instruction, KVM's included.
NESTED = "kvm"
# cdeleg: QEMU's OpenSBI 1.5 on a hart with counter delegation (Smcdeleg/Ssccfg, Smcsrind/Sscsrind), which that
# firmware enables for S-mode: the Rust driver's column is its delegation path (hardware counters programmed with
# CSRs), the C driver's the SBI path it always takes. The Rust driver's SBI path on the same firmware is the
# opensbi-1.5 table's.
CDELEG = "cdeleg"
CDELEG_CPU = "rv64,sscofpmf=true,smcdeleg=true,ssccfg=true,smcsrind=true,sscsrind=true"
# The nine functions of the SBI PMU extension, as the Rust driver's statistics name them; the file's other
# columns (flushes, reused, errors) count the driver's own work, not SBI calls.
SBI_FUNCTIONS = ("num_counters", "counter_get_info", "counter_config_matching", "counter_start", "counter_stop",
                 "counter_fw_read", "counter_fw_read_hi", "snapshot_set_shmem", "event_get_info")
# Context-switch figures: (benchmark, number of events, label); the floor of each is the same number of
# software events.
CTXSW = (("hw1", 1, "1 hardware event"), ("hw2", 2, "2 hardware events"), ("hw4", 4, "4 hardware events"),
         ("hw8", 8, "8 hardware events"), ("fw3", 3, "3 firmware events"),
         ("hw5fw3", 8, "5 hardware + 3 firmware events"))
# Single operations: (benchmark, its floor, label).
OPS = (("read-hw", "read-sw", "read() of a hardware counter"),
       ("read-fw", "read-sw", "read() of a firmware counter"),
       ("toggle-hw", "toggle-sw", "IOC_DISABLE + IOC_ENABLE, hardware event"),
       ("open-hw", "open-sw", "perf_event_open + close, hardware event"),
       ("group-hw", "group-sw", "group read of 4 hardware events"))


def sbi_cost_ko(kernel):
    """The test module that times the firmware's SBI calls, built against KERNEL's bench kernel (where
    scripts/module-build --test-modules --kernel KERNEL --variant bench puts it)."""
    copy = "bench" if kernel == KERNELS[0] else f"{kernel}-bench"
    return os.path.join(cache_dir(), "module", f"{copy}-kmod", "rpmu_sbi_cost.ko")


def boot_tag(kernel, firmware, driver):
    """The name of a boot's files in raw/."""
    return f"{kernel}-{firmware}-{driver}"


def id_prefix(kernel, firmware, kernels, firmware_of):
    """The prefix of a figure's id in bench.csv: none for the first kernel's first firmware, so that a run of the
    default set compares with earlier runs of 6.12 alone."""
    return ((f"{kernel}:" if kernel != kernels[0] else "")
            + (f"{firmware}:" if firmware != firmware_of[kernel][0] else ""))


def say(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def die(msg):
    print(f"error: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def cache_dir():
    return os.environ.get("RPMU_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "riscv_pmu_sbi_rust")


def import_pyplot():
    """matplotlib's pyplot for files (no display), or a clear error naming the package."""
    try:
        import matplotlib
    except ImportError:
        die(f"the Python module matplotlib is missing for {sys.executable}: install the Debian package "
            "'python3-matplotlib' (scripts/setup-deps installs everything)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def run_step(what, cmd, log=None):
    """Run one of the project's build scripts: progress on stderr, its stdout into LOG (or discarded)."""
    out = open(log, "w") if log else subprocess.DEVNULL
    try:
        if subprocess.run(cmd, stdout=out).returncode != 0:
            die(f"{what} failed" + (f" (log: {log})" if log else ""))
    finally:
        if log:
            out.close()


def boot(kernel, firmware, driver, args, raw):
    """Boot KERNEL's bench kernel on FIRMWARE with DRIVER, run the benchmarks, and return the guest's output
    lines."""
    tag = boot_tag(kernel, firmware, driver)
    name = f"{kernel}, {firmware}, {driver}"
    guest_log = os.path.join(raw, f"guest-{tag}.log")
    if firmware == NESTED:
        where = ["--nested", "--smp", "1", "--no-l1-selftest"]
    elif firmware == CDELEG:
        where = ["--bios", "opensbi-1.5", "--cpu", CDELEG_CPU]
    else:
        where = ["--bios", firmware]
    cmd = [os.path.join(TOP, "scripts/qemu-run"), "--kernel", kernel, "--kernel-variant", "bench"] + where + [
           "--driver", driver, "--icount", "--timeout", str(args.timeout), "--console-log",
           os.path.join(raw, f"console-{tag}.log"), "--add", sbi_cost_ko(kernel), "--",
           "/opt/rpmu/bench/run-bench"] + (["--quick"] if args.quick else [])
    start = time.monotonic()
    lines, section = [], None
    with open(guest_log, "w") as log, open(os.path.join(raw, f"qemu-{tag}.log"), "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        for line in proc.stdout:
            log.write(line)
            log.flush()
            lines.append(line.rstrip("\n"))
            fields = line.split()
            if len(fields) > 1 and fields[0] == "RPMU-BENCH":
                kind = fields[1].split("/")[0]
                if kind != section:
                    section = kind
                    say(f"{name}: {section} benchmarks ({time.monotonic() - start:.0f} s)")
        rc = proc.wait()
    errors = [ln for ln in lines if ln.startswith("RPMU-BENCH-ERROR")]
    if rc != 0 or errors or "RPMU-BENCH-DONE" not in lines:
        for ln in errors:
            print(f"  {ln}", file=sys.stderr)
        die(f"the {driver} driver's boot of Linux {kernel} on {firmware} failed (qemu-run exit {rc}); logs: "
            f"{guest_log}, "
            f"{os.path.join(raw, f'qemu-{tag}.log')}, {os.path.join(raw, f'console-{tag}.log')}")
    say(f"{name}: done in {time.monotonic() - start:.0f} s")
    return lines


def parse(lines):
    """{benchmark: [{key: value} per run]} from the RPMU-BENCH lines of one boot."""
    runs = {}
    for ln in lines:
        fields = ln.split()
        if len(fields) < 2 or fields[0] != "RPMU-BENCH":
            continue
        values = {}
        for f in fields[2:]:
            k, _, v = f.partition("=")
            try:
                values[k] = float(v)
            except ValueError:
                values[k] = v
        runs.setdefault(fields[1], []).append(values)
    return runs


def median(runs, bench, key):
    if bench not in runs:
        die(f"the guest printed no result for {bench}")
    return statistics.median(r.get(key, 0.0) for r in runs[bench])


def sbi_per_op(runs, bench, per):
    """{SBI column: calls per operation} (median over runs), every column that changed."""
    keys = sorted({k for r in runs[bench] for k in r if k.startswith("sbi.")})
    return {k[4:]: statistics.median(r.get(k, 0.0) / per(r) for r in runs[bench]) for k in keys}


def sample_costs(runs, p1, p2):
    """Per run pair: (guest ns, SBI calls) per overflow interrupt, from the difference of the two periods."""
    costs = []
    for a, b in zip(runs[f"sample/p{p1}"], runs[f"sample/p{p2}"]):
        ds = b["samples"] - a["samples"]
        if ds <= 0:
            die(f"sampling: {a['samples']:.0f} samples with period {p1}, {b['samples']:.0f} with {p2}")
        calls = {k[4:]: (b.get(k, 0.0) - a.get(k, 0.0)) / ds for k in set(a) | set(b) if k.startswith("sbi.")}
        costs.append(((b["ns"] - a["ns"]) / ds, calls))
    return costs


def figures(results):
    """The table rows: dicts with id, figure, unit, c, rust, floor (Rust boot), floor_c (C boot), sbi."""
    rows = []

    def per_op(run):
        return run["ops"]

    # A round trip switches the monitored task out and back in once, but now and then the scheduler adds a
    # switch: the SBI calls of a context switch are counted per switch.
    def per_switch(run):
        return run["switches"]

    def per_run(run):
        return 1.0

    for d in DRIVERS:
        results[d]["base"] = median(results[d]["runs"], "ctxsw/none", "ns_per_op")

    def ctx(d, b):
        return median(results[d]["runs"], f"ctxsw/{b}", "ns_per_op") - results[d]["base"]

    rust = results["rust"]["runs"]
    # What the firmware's calls cost (tests/kmod/rpmu_sbi_cost.c, timed in the Rust driver's boot): a stop and a
    # start over each set of counters, one fw_read, one config_matching with its release.
    fw_cost = {b[4:]: median(rust, b, "ns_per_op") for b in rust if b.startswith("sbi/")}

    def sbi_ns(calls, counters):
        """Guest ns of the SBI calls CALLS (per operation) make on the counters of set COUNTERS."""
        pairs = (calls.get("counter_stop", 0.0) + calls.get("counter_start", 0.0)) / 2
        return (pairs * fw_cost.get(f"stop_start_{counters}", 0.0)
                + calls.get("counter_fw_read", 0.0) * fw_cost.get("fw_read", 0.0)
                + calls.get("counter_config_matching", 0.0) * fw_cost.get("config_release", 0.0))

    rows.append(dict(id="ctxsw-none", figure="context switch, no events", unit="ns per round trip",
                     c=results["c"]["base"], rust=results["rust"]["base"], floor=None, floor_c=None,
                     sbi=sbi_per_op(rust, "ctxsw/none", per_switch)))
    # The counters a switch's stops and starts cover: the Rust driver leaves the counters of counting hardware
    # events running (coasting) while their task is out, so in the mix its calls stop and start the firmware
    # counters only (the host model checks that: tests/fwmodel/tests/driver.rs).
    covered = {"hw5fw3": "fw3"}
    for b, k, label in CTXSW:
        calls = sbi_per_op(rust, f"ctxsw/{b}", per_switch)
        # More events than counters: perf core rotates them, and every figure is then a different schedule.
        if any(r.get("scheduled", 1.0) == 0 for d in DRIVERS for r in results[d]["runs"][f"ctxsw/{b}"]):
            label += " (multiplexed)"
        rows.append(dict(id=f"ctxsw-{b}", figure=f"context switch, {label}", unit="added ns per round trip",
                         c=ctx("c", b), rust=ctx("rust", b), floor=ctx("rust", f"sw{k}"), floor_c=ctx("c", f"sw{k}"),
                         sbi=calls, sbi_ns=sbi_ns(calls, covered.get(b, b)), k=k))
    for b, floor, label in OPS:
        calls = sbi_per_op(rust, f"op/{b}", per_op)
        rows.append(dict(id=f"op-{b}", figure=label, unit="ns per call",
                         c=median(results["c"]["runs"], f"op/{b}", "ns_per_op"),
                         rust=median(rust, f"op/{b}", "ns_per_op"),
                         floor=median(rust, f"op/{floor}", "ns_per_op"),
                         floor_c=median(results["c"]["runs"], f"op/{floor}", "ns_per_op"),
                         sbi=calls, sbi_ns=sbi_ns(calls, "hw1")))
    periods = sorted({int(b.split("/p")[1]) for b in rust if b.startswith("sample/p")}, reverse=True)
    if periods:
        cost = {d: sample_costs(results[d]["runs"], periods[0], periods[1]) for d in DRIVERS}
        keys = set().union(*(calls for _, calls in cost["rust"]))
        sbi = {k: statistics.median(calls.get(k, 0.0) for _, calls in cost["rust"]) for k in keys}
        rows.append(dict(id="sample-overflow", figure="sampling, one overflow interrupt", unit="ns per interrupt",
                         c=statistics.median(c[0] for c in cost["c"]),
                         rust=statistics.median(c[0] for c in cost["rust"]), floor=None, floor_c=None, sbi=sbi))
    else:
        rows.append(skipped_row("sample-overflow", "sampling, one overflow interrupt", "ns per interrupt"))
    # The firmware's calls themselves, timed in both boots (the same firmware: the figures should agree).
    labels = {"stop_start_hw1": "stop + start, 1 hardware counter", "stop_start_hw2": "stop + start, 2 hardware",
              "stop_start_hw4": "stop + start, 4 hardware", "stop_start_hw8": "stop + start, 8 hardware",
              "stop_start_fw3": "stop + start, 3 firmware", "stop_start_hw5fw3": "stop + start, 5 hw + 3 fw",
              "fw_read": "fw_read of a firmware counter", "config_release": "config_matching + release"}
    for name in [n for n in labels if n in fw_cost]:
        what = labels[name]
        rows.append(dict(id=f"sbi-{name}", figure=f"SBI: {what}", unit="ns per call(s)",
                         c=median(results["c"]["runs"], f"sbi/{name}", "ns_per_op"), rust=fw_cost[name],
                         floor=None, floor_c=None, sbi={}))
    for tool, label in (("stat", "perf stat, 4 events"), ("record", "perf record -F 1000")):
        if f"gemm/{tool}" not in rust:
            rows.append(skipped_row(f"gemm-{tool}", f"GEMM overhead, {label}", "% of run time"))
            continue
        ov = {}
        for d in DRIVERS:
            none = median(results[d]["runs"], "gemm/none", "ns")
            ov[d] = 100.0 * (median(results[d]["runs"], f"gemm/{tool}", "ns") - none) / none
        rows.append(dict(id=f"gemm-{tool}", figure=f"GEMM overhead, {label}", unit="% of run time",
                         c=ov["c"], rust=ov["rust"], floor=None, floor_c=None,
                         sbi=sbi_per_op(rust, f"gemm/{tool}", per_run)))
    return rows


def skipped_row(rid, figure, unit):
    """A figure the guest left out (RPMU-BENCH-SKIP): shown as '-' in the tables and empty in the CSV."""
    return dict(id=rid, figure=f"{figure} (not run)", unit=unit, c=None, rust=None, floor=None, floor_c=None,
                sbi={})


def goal(r):
    """The floor plus the SBI calls the Rust driver makes: what no driver can go below without snapshot memory."""
    return None if r["floor"] is None else r["floor"] + r.get("sbi_ns", 0.0)


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def fmt(v, unit):
    if v is None:
        return "-"
    if unit.startswith("%"):
        return f"{v:.3f}"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.1f}"


def tables(rows, info, firmware, skips):
    """The two tables of FIRMWARE as text: the costs, then the Rust driver's SBI calls per operation."""
    out = []
    add = out.append
    reps = info.get("reps", "?")
    where = ("an L2 guest with one vCPU under KVM in an L1 guest at QEMU -smp 1 -icount shift=0,sleep=off (L2 ns = L1 "
             "instructions)" if firmware == NESTED else
             "QEMU -smp 1 -icount shift=0,sleep=off (guest ns = guest instructions)")
    add(f"\n{firmware}: bench kernel {info.get('kernel', '?')}, {where}, "
        f"{'one run' if reps == '1' else f'median of {reps} runs'} per figure; floor: the same "
        f"on software events (Rust driver's boot)\n")
    head = (f"{'figure':<46} {'unit':<24} {'C':>9} {'Rust':>9} {'Rust/C':>7} {'floor':>8} {'SBI':>7} "
            f"{'Rust/(floor+SBI)':>16}")
    add(head)
    add("-" * len(head))
    for r in rows:
        rc, rg = ratio(r["rust"], r["c"]), ratio(r["rust"], goal(r))
        add(f"{r['figure']:<46} {r['unit']:<24} {fmt(r['c'], r['unit']):>9} {fmt(r['rust'], r['unit']):>9} "
              f"{'-' if rc is None else f'{rc:.2f}':>7} {fmt(r['floor'], r['unit']):>8} "
              f"{fmt(r.get('sbi_ns') if r['floor'] is not None else None, r['unit']):>7} "
              f"{'-' if rg is None else f'{rg:.2f}':>16}")
    add("\nfloor: the same on software events; SBI: what the firmware's part of the Rust driver's SBI calls costs "
        "(tests/kmod/rpmu_sbi_cost.c times each kind of call on the same counters)")
    cols = [c for c in SBI_FUNCTIONS if any(round(r["sbi"].get(c, 0.0), 3) for r in rows)]
    names = {"counter_config_matching": "config_match", "counter_fw_read": "fw_read", "counter_start": "start",
             "counter_stop": "stop"}
    add("\nRust driver: SBI calls per operation (per switch out and back in, call, interrupt; per run for GEMM), "
          "from its debugfs statistics\n")
    head = f"{'figure':<46} " + " ".join(f"{names.get(c, c):>12}" for c in cols) + f" {'total':>8}"
    add(head)
    add("-" * len(head))
    for r in rows:
        total = sum(r["sbi"].get(c, 0.0) for c in SBI_FUNCTIONS)
        add(f"{r['figure']:<46} " + " ".join(f"{r['sbi'].get(c, 0.0):>12.2f}" for c in cols) + f" {total:>8.2f}")
    for name, reason in sorted(skips.items()):
        add(f"\nnot run: {name}: {reason}")
    return "\n".join(out) + "\n"


CSV_FIELDS = ("id", "figure", "unit", "c", "rust", "rust_over_c", "floor", "rust_over_floor", "sbi_ns",
              "rust_over_floor_sbi", "floor_c_boot", "sbi_calls_per_op", "sbi_detail")


def csv_rows(rows, prefix=""):
    out = []
    for r in rows:
        def num(v, digits=1):
            return "" if v is None else f"{v:.{3 if r['unit'].startswith('%') else digits}f}"
        rc, rf = ratio(r["rust"], r["c"]), ratio(r["rust"], r["floor"])
        total = sum(r["sbi"].get(c, 0.0) for c in SBI_FUNCTIONS)
        out.append({"id": prefix + r["id"], "figure": r["figure"], "unit": r["unit"], "c": num(r["c"]),
                    "rust": num(r["rust"]), "rust_over_c": "" if rc is None else f"{rc:.3f}",
                    "floor": num(r["floor"]), "rust_over_floor": "" if rf is None else f"{rf:.3f}",
                    "sbi_ns": "" if r["floor"] is None else num(r.get("sbi_ns", 0.0)),
                    "rust_over_floor_sbi": "" if goal(r) is None else f"{ratio(r['rust'], goal(r)):.3f}",
                    "floor_c_boot": num(r["floor_c"]), "sbi_calls_per_op": f"{total:.2f}",
                    "sbi_detail": ";".join(f"{k}={v:.3f}" for k, v in sorted(r["sbi"].items()))})
    return out


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        w.writerows(rows)


def compare(prev_path, rows):
    """Say how this run's table compares with the previous one's, figure by figure."""
    if not os.path.exists(prev_path):
        say("no previous run to compare with")
        return
    with open(prev_path, newline="") as f:
        prev = {r["id"]: r for r in csv.DictReader(f)}
    diffs = []
    for r in rows:
        p = prev.get(r["id"], {})
        pct = r["unit"].startswith("%")
        for k in ("c", "rust", "floor", "floor_c_boot", "sbi_calls_per_op"):
            if p.get(k, "") == r[k]:
                continue
            try:
                old, new = float(p[k]), float(r[k])
            except (KeyError, ValueError):
                diffs.append((float("inf"), f"{r['id']} {k}: {p.get(k, '(none)')} -> {r[k]}"))
                continue
            # A share of run time moves by percentage points: the change in run time it stands for.
            if pct and k != "sbi_calls_per_op":
                delta = abs(new - old)
                diffs.append((delta, f"{r['id']} {k}: {p[k]} -> {r[k]} ({delta:.3f} points of run time)"))
            else:
                rel = abs(new - old) / abs(old) * 100 if old else float("inf")
                diffs.append((rel, f"{r['id']} {k}: {p[k]} -> {r[k]} ({rel:.2f}%)"))
    if not diffs:
        say("every figure is identical to the previous run's")
        return
    diffs.sort(reverse=True)
    say(f"{len(diffs)} figure(s) differ from the previous run's (bench.prev.csv), the largest by "
        f"{diffs[0][0]:.2f}% of its value:")
    for _, text in diffs:
        print(f"  {text}", file=sys.stderr)


def chart(plt, panels, path):
    """The context-switch chart: one panel per (kernel, firmware, rows), side by side on one scale."""
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 4.4), dpi=100, sharey=True, squeeze=False)
    top = max(max(r["c"], r["rust"]) for _, _, rows in panels for r in rows if r["id"].startswith("ctxsw-hw"))
    for ax, (kernel, firmware, rows) in zip(axes[0], panels):
        ks = [r for r in rows if r["id"] in ("ctxsw-hw1", "ctxsw-hw2", "ctxsw-hw4", "ctxsw-hw8")]
        x = [r["k"] for r in ks]
        ax.plot(x, [r["c"] / 1000 for r in ks], "o-", color="tab:blue", label="C driver, k hardware events")
        ax.plot(x, [r["rust"] / 1000 for r in ks], "s-", color="tab:orange", label="Rust driver, k hardware events")
        ax.plot(x, [r["floor"] / 1000 for r in ks], "^--", color="tab:gray", label="floor: k software events")
        ax.plot(x, [goal(r) / 1000 for r in ks], "v:", color="tab:green",
                label="floor + the firmware's part of the Rust driver's SBI calls")
        for rid, k, text, dx in (("ctxsw-fw3", 3, "3 firmware", -20), ("ctxsw-hw5fw3", 8, "5 hw + 3 fw", -62)):
            r = next(r for r in rows if r["id"] == rid)
            first = rid == "ctxsw-fw3"
            ax.plot([k], [r["c"] / 1000], "o", mfc="none", color="tab:blue",
                    label="C driver, firmware mixes" if first else None)
            ax.plot([k], [r["rust"] / 1000], "s", mfc="none", color="tab:orange",
                    label="Rust driver, firmware mixes" if first else None)
            ax.annotate(text, (k, max(r["c"], r["rust"]) / 1000), textcoords="offset points", xytext=(dx, 6),
                        fontsize=8)
        ax.set_xticks([1, 2, 3, 4, 8])
        ax.set_xlabel("events on the monitored task (k)")
        ax.set_title("Pipe ping-pong, events on one side: cost above no events\n"
                     f"(Linux {kernel} bench kernel, {firmware}, QEMU -icount: 1 guest ns = 1 instruction)",
                     fontsize=9)
        ax.set_ylim(0, top / 1000 * 1.12)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8, loc="upper left")
    axes[0][0].set_ylabel("added guest µs per round trip")
    fig.tight_layout()
    fig.savefig(path, pil_kwargs={"optimize": True})
    plt.close(fig)


# The generated document: make bench's tables for the documentation, replaced by every run.
REPORT = os.path.join(TOP, "Documentation", "driver-api", "perf", "riscv_pmu_sbi_rust-bench.rst")
# The chart the document shows, relative to it: the committed copy of a run's ctxsw.png.
REPORT_CHART = "../../images/bench-ctxsw.png"
FIRMWARE_TITLES = {"opensbi-1.5": "OpenSBI 1.5 (QEMU's own, SBI v2.0)",
                   "opensbi-1.9": "OpenSBI 1.9 (Debian's, SBI v3.0)",
                   CDELEG: "Counter delegation (Smcdeleg/Ssccfg) on OpenSBI 1.5: Rust programs the counters, C calls SBI",
                   NESTED: "KVM's SBI PMU in a nested guest (L1 on OpenSBI 1.5)"}


def rst_title(text, mark, over=False):
    line = mark * len(text)
    return (f"{line}\n" if over else "") + f"{text}\n{line}\n"


def rst_para(text, first="", rest=None):
    """TEXT wrapped as a reST paragraph; FIRST starts its first line, REST (default: as wide as FIRST) the others."""
    return textwrap.fill(text, width=116, initial_indent=first, subsequent_indent=" " * len(first) if rest is None
                         else rest, break_long_words=False, break_on_hyphens=False)


def rst_literal(text):
    """TEXT as the body of a reST literal block: every line indented, no leading or trailing blank line."""
    return "\n".join(f"    {ln}" if ln.strip() else "" for ln in text.strip("\n").split("\n")) + "\n"


def report_rst(sections, meta):
    """The generated document. SECTIONS: [(kernel, firmware, text of tables())]; META: date, source (which run),
    kernels ({kernel: release and preemption model}), qemu, firmware ({(kernel, firmware): version found in its boot
    log}), quick, reps, and optionally note (a paragraph added to the header)."""
    out = [".. SPDX-License-Identifier: GPL-2.0", "",
           ".. Generated by make bench (tests/bench/bench.py), which replaces this file on every run: do not edit it.",
           "", rst_title("riscv_pmu_sbi_rust: make bench's tables", "=", over=True),
           rst_para(f"This document is generated by ``make bench`` (``tests/bench/bench.py``), which writes it anew on "
                    f"every run. Its figures come from {meta['source']}. How they are measured is in "
                    f":doc:`../../dev-tools/riscv_pmu_sbi_rust-testing` (\"Benchmarks: make bench\"); what they say "
                    f"about the driver is in :doc:`riscv_pmu_sbi_rust` (\"Costs measured by make bench\"). On each "
                    f"kernel the Rust driver is measured against that kernel's own C driver, on the same kernel "
                    f"image."), ""]
    if meta.get("note"):
        out += [rst_para(meta["note"]), ""]
    if meta.get("quick"):
        out += [".. warning::", "",
                rst_para("This run was made with ``--quick``: a tenth of the iterations and one run per figure, to "
                         "try the pipeline, not for figures.", "   "), ""]
    kernels = list(dict.fromkeys(k for k, _, _ in sections))
    versions = meta.get("firmware", {})
    fw = "; ".join(f"Linux {k}: " + ", ".join(f"``{f}``" + (f" ({versions[(k, f)]})" if versions.get((k, f)) else "")
                                              for kk, f, _ in sections if kk == k) for k in kernels)
    reps = meta.get("reps", "?")
    fields = (("Date", meta["date"]),
              ("Bench kernels", "; ".join(f"Linux {meta.get('kernels', {}).get(k) or k}" for k in kernels)),
              ("QEMU", meta.get("qemu") or "?"), ("Firmware", fw),
              ("Figures", f"{'one run' if reps == '1' else f'median of {reps} runs'} per figure, in QEMU's "
                          "deterministic mode (``-smp 1 -icount shift=0,sleep=off``: a guest nanosecond is a guest "
                          "instruction; nested, an L2 nanosecond is an L1 instruction)"))
    out += [rst_para(value, f":{name}: ", "   ") for name, value in fields]
    first = {k: next(f for kk, f, _ in sections if kk == k) for k in kernels}
    out += ["", ".. figure:: " + REPORT_CHART,
            rst_para("Context-switch cost against the number of events for the C driver, the Rust driver, the "
                     "software-event floor and the floor plus the firmware's calls, one panel per kernel",
                     "   :alt: ", "      "), "",
            rst_para("The context-switch cost against the number of events on "
                     + ", ".join(f"Linux {k} ({first[k]})" for k in kernels) + ". ``make bench`` draws it as "
                     "``ctxsw.png`` in its results directory and copies it to "
                     "``Documentation/images/bench-ctxsw.png``, committed with these tables.", "   "), ""]
    for kernel in kernels:
        out += [rst_title(f"Linux {kernel}", "=")]
        for k, firmware, text in sections:
            if k == kernel:
                out += [rst_title(FIRMWARE_TITLES.get(firmware, firmware), "-"), "::", "", rst_literal(text)]
    return "\n".join(out).rstrip("\n") + "\n"


def kernel_summary(kernel, kdir):
    """A bench kernel's release and preemption model, from its build tree."""
    release, model = kernel, "?"
    try:
        with open(os.path.join(kdir, "include", "config", "kernel.release")) as f:
            release = f.read().strip() or kernel
    except OSError:
        pass
    try:
        with open(os.path.join(kdir, ".config")) as f:
            config = f.read()
        for opt, text in (("PREEMPT_LAZY", "preemptible, PREEMPT_LAZY"), ("PREEMPT", "preemptible, PREEMPT"),
                          ("PREEMPT_VOLUNTARY", "not preemptible, PREEMPT_VOLUNTARY"),
                          ("PREEMPT_NONE", "not preemptible, PREEMPT_NONE")):
            if re.search(rf"^CONFIG_{opt}=y$", config, re.M):
                model = text
                break
    except OSError:
        pass
    return f"{release} ({model})"


def source_commit():
    """The commit the run measures, read when it starts (the tree may move on while it runs)."""
    commit = "an unknown commit"
    try:
        head = subprocess.run(["git", "-C", TOP, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
        if head.returncode == 0:
            commit = f"commit ``{head.stdout.strip()}``"
            # Changes to the documentation (this file, a previous run's chart) and to the README's summary do not
            # change the figures.
            st = subprocess.run(["git", "-C", TOP, "status", "--porcelain", "--untracked-files=no", "--", ".",
                                 ":(exclude)Documentation", ":(exclude)README.md"], capture_output=True, text=True)
            if st.returncode == 0 and st.stdout.strip():
                commit += " with local changes"
    except OSError:
        pass
    return commit


def run_meta(args, boots, results, raw, kernels, commit):
    """What the document's header says about this run: date, commit (source_commit()), kernels, QEMU and firmware
    versions. BOOTS: the (kernel, firmware) pairs; KERNELS: {kernel: kernel_summary()}."""
    info = results[boots[0]]["rust"]["info"]
    qemu = None
    try:
        v = subprocess.run(["qemu-system-riscv64", "--version"], capture_output=True, text=True)
        qemu = v.stdout.splitlines()[0].strip() if v.returncode == 0 and v.stdout else None
    except OSError:
        pass
    versions = {}
    for kernel, fw in boots:
        try:
            # OpenSBI's banner on the console; nested, on the L1 guest's (scripts/qemu-run keeps it in .l1).
            log = os.path.join(raw, f"console-{boot_tag(kernel, fw, 'rust')}.log" + (".l1" if fw == NESTED else ""))
            with open(log, errors="replace") as f:
                m = re.search(r"OpenSBI (v?\d[\w.-]*)", f.read())
            if m:
                versions[(kernel, fw)] = f"OpenSBI {m.group(1)}" + (" in L1" if fw == NESTED else "")
        except OSError:
            pass
    if qemu and any(fw == NESTED for _, fw in boots):
        qemu += " (the host's; the nested boots' L1 guest runs Debian trixie's riscv64 QEMU)"
    date = time.strftime("%Y-%m-%d", time.gmtime())
    return {"date": date, "source": f"the run of {date} of {commit}", "kernels": kernels, "qemu": qemu,
            "firmware": versions, "quick": args.quick, "reps": info.get("reps", "?")}


def write_report(path, sections, meta):
    """Replace the generated document at PATH."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(report_rst(sections, meta))
    os.replace(tmp, path)


# The README's summary of a run: the lines between these two markers, replaced by every run.
README = os.path.join(TOP, "README.md")
README_BEGIN = "<!-- make bench summary: generated by tests/bench/bench.py, which replaces it on every run -->"
README_END = "<!-- end of make bench summary -->"
# The figures of the summary, from each kernel's first firmware.
SUMMARY = ("ctxsw-hw1", "ctxsw-hw8", "ctxsw-fw3", "ctxsw-hw5fw3", "op-toggle-hw", "op-open-hw", "sample-overflow")


def readme_summary(rows, kernels, firmware_of, meta):
    """The README's summary (Markdown): the SUMMARY figures of each kernel's first firmware, C against Rust, and
    the chart. ROWS: {(kernel, firmware): figures()}."""
    head = "| figure (guest ns) | " + " | ".join(f"{k}: C | {k}: Rust | {k}: Rust/C" for k in kernels) + " |"
    out = [head, "|---|" + "---:|" * 3 * len(kernels)]
    for rid in SUMMARY:
        cells, label = [], None
        for k in kernels:
            r = next((r for r in rows[(k, firmware_of[k][0])] if r["id"] == rid), None)
            if r is None:
                cells += ["-", "-", "-"]
                continue
            label = label or r["figure"].replace("context switch, ", "context switch (added per round trip), ")
            rc = ratio(r["rust"], r["c"])
            cells += [fmt(r["c"], r["unit"]), fmt(r["rust"], r["unit"]), "-" if rc is None else f"{rc:.2f}"]
        out.append(f"| {label or rid} | " + " | ".join(cells) + " |")
    reps = meta.get("reps", "?")
    where = ", ".join(f"Linux {meta['kernels'].get(k, k)} on {firmware_of[k][0]}" for k in kernels)
    text = (f"From `make bench` of {meta['date']}, {'one run' if reps == '1' else f'the median of {reps} runs'} per "
            f"figure, in guest nanoseconds (QEMU `-icount`: a guest nanosecond is a guest instruction): {where}. "
            "Every table, the other firmware and the SBI calls per operation are in "
            "[the benchmark tables](Documentation/driver-api/perf/riscv_pmu_sbi_rust-bench.rst).")
    out += ["", textwrap.fill(text, width=116, break_long_words=False, break_on_hyphens=False), "",
            "![Context-switch cost against the number of hardware events, C and Rust drivers, per kernel]"
            "(Documentation/images/bench-ctxsw.png)"]
    return "\n".join(out) + "\n"


def write_readme(path, summary):
    """Replace the summary between the markers of the README at PATH; say so and leave it alone without them."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        say(f"README {path} not read ({e.strerror}): its summary is not updated")
        return
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        say(f"{path} has no make bench summary markers: its summary is not updated")
        return
    text = text[:begin + len(README_BEGIN)] + "\n" + summary + text[end:]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser(prog="tests/bench/bench.py", description=__doc__.split("\n\n")[0],
                                usage="%(prog)s [--quick] [--kernel LIST] [--firmware LIST] [--out DIR] "
                                      "[--report FILE] [--readme FILE] [--jobs N] [--timeout SECONDS]")
    p.add_argument("--quick", action="store_true",
                   help="a tenth of the iterations and one run each: to try the pipeline, not for figures")
    p.add_argument("--kernel", default=",".join(KERNELS),
                   help=f"comma-separated kernels, {' or '.join(KERNELS)} (default: {','.join(KERNELS)})")
    p.add_argument("--firmware",
                   help=f"comma-separated scripts/qemu-run --bios names, {CDELEG} for OpenSBI 1.5 on a hart with "
                        f"counter delegation, or {NESTED} for KVM's SBI PMU in a nested guest, for every kernel "
                        f"(default: {','.join(FIRMWARE)}; on Linux 7.3 "
                        f"{','.join(KERNEL_FIRMWARE['7.3'])})")
    p.add_argument("--out", default=os.path.join(cache_dir(), "bench"), help="results directory")
    p.add_argument("--report", default=REPORT,
                   help="the generated reST document of the tables (default: "
                        "Documentation/driver-api/perf/riscv_pmu_sbi_rust-bench.rst in the clone)")
    p.add_argument("--readme", default=README,
                   help="the file whose make bench summary (between its markers) is replaced (default: the clone's "
                        "README.md)")
    p.add_argument("--jobs", type=int, default=2, help="boots at a time (default: 2, a firmware's two drivers at once)")
    # The nested KVM boot takes about 13 minutes on 2 idle cores, over 30 beside a make test: the limit only
    # catches a hung boot.
    p.add_argument("--timeout", type=float, default=3600, help="wall-clock limit per boot (default: 3600 s)")
    args = p.parse_args()

    kernels = [k for k in args.kernel.split(",") if k]
    if not kernels or any(k not in KERNELS for k in kernels):
        die(f"--kernel {args.kernel}: name one or more of {', '.join(KERNELS)}")
    firmware_of = {}
    for k in kernels:
        firmware_of[k] = ([f for f in args.firmware.split(",") if f] if args.firmware is not None
                          else list(KERNEL_FIRMWARE.get(k, FIRMWARE)))
        if not firmware_of[k]:
            die("--firmware: no firmware named")

    plt = import_pyplot()
    start = time.monotonic()
    commit = source_commit()
    raw = os.path.join(args.out, "raw")
    os.makedirs(raw, exist_ok=True)

    summaries = {}
    for k in kernels:
        on = ["--kernel", k]
        say(f"1/4 Linux {k}: bench kernel (scripts/build-kernel --kernel {k} --variant bench)")
        kdir = subprocess.run([os.path.join(TOP, "scripts/build-kernel"), *on, "--variant", "bench", "--print-kdir"],
                              stdout=subprocess.PIPE, text=True)
        if kdir.returncode != 0 or not kdir.stdout.strip():
            die(f"building the Linux {k} bench kernel failed")
        summaries[k] = kernel_summary(k, kdir.stdout.strip().splitlines()[-1])
        say(f"2/4 Linux {k}: the Rust module and the test modules against the bench kernel "
            f"(scripts/module-build --kernel {k} --variant bench)")
        run_step("building the module", [os.path.join(TOP, "scripts/module-build"), *on, "--variant", "bench"],
                 os.path.join(raw, f"module-build-{k}.log"))
        run_step("building the test modules", [os.path.join(TOP, "scripts/module-build"), "--test-modules", *on,
                                                "--variant", "bench"], os.path.join(raw, f"test-modules-build-{k}.log"))
        say(f"3/4 Linux {k}: guest root filesystem (scripts/build-rootfs --kernel {k})")
        run_step("building the guest root filesystem",
                 [os.path.join(TOP, "scripts/build-rootfs"), *on, "--kernel-variant", "bench"])

    pairs = [(k, f) for k in kernels for f in firmware_of[k]]
    boots = [(k, f, d) for k, f in pairs for d in DRIVERS]
    # Minutes per firmware for both drivers, two boots at once on an idle 2-core host (nested, every trap goes
    # through the emulated hypervisor).
    minutes = sum(11 if f == NESTED else 4 for _, f in pairs) * (1 if args.jobs > 1 else 2)
    say("4/4 booting each driver on " + "; ".join(f"Linux {k}: {', '.join(firmware_of[k])}" for k in kernels)
        + f", {args.jobs} at a time"
        + (" (quick)" if args.quick else f" (about {minutes} minutes on an idle 2-core host)"))
    results = {pair: {} for pair in pairs}
    lock = threading.Lock()

    def one(kernel, fw, driver):
        lines = boot(kernel, fw, driver, args, raw)
        with lock:
            results[(kernel, fw)][driver] = {
                "runs": parse(lines),
                "info": dict(f.split("=", 1) for ln in lines if ln.startswith("RPMU-BENCH-INFO")
                             for f in ln.split()[1:] if "=" in f),
                "skips": {ln.split()[1]: " ".join(ln.split()[2:]) for ln in lines
                          if ln.startswith("RPMU-BENCH-SKIP") and len(ln.split()) > 1}}

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for fut in [pool.submit(one, k, f, d) for k, f, d in boots]:
            fut.result()

    text, table, rows, sections = "", [], {}, []
    for k, fw in pairs:
        rows[(k, fw)] = figures(results[(k, fw)])
        rust = results[(k, fw)]["rust"]
        sections.append((k, fw, tables(rows[(k, fw)], rust["info"], fw, rust["skips"])))
        text += f"\nLinux {k}, " + sections[-1][2].lstrip("\n")
        table += csv_rows(rows[(k, fw)], id_prefix(k, fw, kernels, firmware_of))
    print(text)
    with open(os.path.join(args.out, "bench.txt"), "w") as f:
        f.write(text)
    csv_path = os.path.join(args.out, "bench.csv")
    prev_path = os.path.join(args.out, "bench.prev.csv")
    if os.path.exists(csv_path):
        os.replace(csv_path, prev_path)
    write_csv(csv_path, table)
    compare(prev_path, table)
    png = os.path.join(args.out, "ctxsw.png")
    chart(plt, [(k, firmware_of[k][0], rows[(k, firmware_of[k][0])]) for k in kernels], png)
    meta = run_meta(args, pairs, results, raw, summaries, commit)
    write_report(args.report, sections, meta)
    if os.path.abspath(args.report) == REPORT:
        # The document shows the chart from the images directory; a report written elsewhere leaves it alone.
        shutil.copyfile(png, os.path.normpath(os.path.join(os.path.dirname(REPORT), REPORT_CHART)))
    write_readme(args.readme, readme_summary(rows, kernels, firmware_of, meta))
    say(f"results: {os.path.join(args.out, 'bench.txt')}, {csv_path}, {png}, raw logs in {raw}; tables also in "
        f"{args.report}, summary in {args.readme}")
    say(f"done in {(time.monotonic() - start) / 60:.1f} minutes")


if __name__ == "__main__":
    main()
