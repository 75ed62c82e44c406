#!/usr/bin/env python3
"""Print what the harness and scripts/qemu-run would do, without building or booting anything.

usage: tests/harness/plan_dump.py [--harness-only | --qemu-only] > plan.txt

For a refactor of the test infrastructure that must not change its behaviour: run it before and after, and diff.
It prints
  - the harness's plan for every matrix entry and driver, under make test's, make test-full's and make
    test-kvm's options: its progress lines, the order of the boots and each boot's scripts/qemu-run arguments
    (suites, --skip and --only globs included), from the harness's own main() with the build scripts and the
    boots replaced by stand-ins that return at once;
  - the expectation (kind and reason) that applies to every known test id on every entry and driver: the ids
    of the C baseline, the expectation rows' own globs and an id each glob matches;
  - for each of those qemu-run argument lists, and for those of the project's other callers (make run, make
    bench, make stress), what scripts/qemu-run would start: the QEMU argv, the kernel command line, the
    guest's settings (run.conf), its command, the initramfs parts and, nested, the L2 guest's QEMU arguments,
    from qemu-run's own main() with the build scripts, the archive packing and QEMU replaced by stand-ins.
Paths of the clone, of the cache and of temporary directories are printed as TOP, OUT and WORK.
"""

import contextlib
import importlib.machinery
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(name, path):
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class FakeProc:
    """A boot that printed nothing and exited 0."""

    def __init__(self):
        self.stdout = iter([])
        self.returncode = 0

    def wait(self):
        return 0


def fake_run(cmd, *a, **kw):
    """The harness's build steps: each succeeds at once and prints what its caller reads."""
    name = os.path.basename(cmd[0])
    out = {"make-dtmap-dtb": "DTMAP/valid.dtb DTMAP/malformed.dtb\n", "build-papi": "PAPI/papi.tar.gz\n"}.get(name, "")
    return subprocess.CompletedProcess(cmd, 0, out if kw.get("text") else out.encode(), None)


# (drivers, extra harness options): make test's, make test-full's, make test-kvm's, and one driver alone (the
# C driver then runs KVM's L1 selftest; the Rust driver alone runs it itself).
HARNESS_CONFIGS = [
    ("c,rust", []),
    ("c,rust", ["--full", "all"]),
    ("c,rust", ["--entries", "kvm", "--suites", "checks", "--full", "kvm"]),
    ("rust", []),
    ("c", ["--full", "sscofpmf-smp2,dtmap"]),
]


def harness_plan(harness, out, qemu_argvs):
    real_run, real_popen = subprocess.run, subprocess.Popen
    for drivers, extra in HARNESS_CONFIGS:
        argv = ["harness.py", "--drivers", drivers, "--jobs", "1", "--out", out] + extra
        print(f"=== harness {' '.join(argv[1:])}")
        cmds = []

        def popen(cmd, *a, **kw):
            cmds.append(list(cmd))
            return FakeProc()

        subprocess.run, subprocess.Popen = fake_run, popen
        # The plan as on a fresh clone: the module not built yet (the harness then says it builds it).
        real_isfile = os.path.isfile
        os.path.isfile = lambda p: False if p.endswith("riscv_pmu_sbi_rust.ko") else real_isfile(p)
        buf = io.StringIO()
        old_argv = sys.argv
        sys.argv = argv
        try:
            with contextlib.redirect_stdout(buf):
                try:
                    rc = harness.main()
                except SystemExit as e:
                    rc = f"exit {e.code}"
        finally:
            sys.argv = old_argv
            subprocess.run, subprocess.Popen = real_run, real_popen
            os.path.isfile = real_isfile
            shutil.rmtree(out, ignore_errors=True)
        for line in buf.getvalue().splitlines():
            # A boot's end is said from the main thread while the next boot starts in the pool's: their order
            # varies from run to run.
            if ": done in " not in line:
                print(f"out: {line}")
        print(f"rc: {rc}")
        for cmd in cmds:
            print("qemu-run: " + json.dumps(cmd))
            if cmd not in qemu_argvs:
                qemu_argvs.append(cmd)


def known_ids(harness, rules):
    ids = {test for (_, test) in harness.load_baseline()}
    for rule in rules:
        glob = rule[0]
        ids.add(glob)
        ids.add(glob.replace("[!d]", "c").replace("*", "x"))
    return sorted(ids)


def expectations_table(harness):
    rules = harness.load_expectations()
    ids = known_ids(harness, rules)
    print(f"=== expectations: {len(ids)} known test ids")
    for entry in harness.ENTRIES:
        for driver in ("c", "rust"):
            for test in ids:
                kind, reason = harness.expectation(rules, entry, driver, test)
                if kind is not None:
                    print(f"{entry}\t{driver}\t{test}\t{kind}\t{reason}")


# The project's other callers of scripts/qemu-run (scripts/demo, tests/bench/bench.py, tests/stress/stress.py) and
# options no caller gives yet.
OTHER_CALLERS = [
    ["--driver", "rust", "--cpu", "rv64,sscofpmf=true", "--timeout", "600", "--", "/opt/rpmu/demo"],
    ["--driver", "c", "--cpu", "rv64", "--timeout", "600", "--", "/opt/rpmu/demo"],
    ["--kernel-variant", "bench", "--bios", "opensbi-1.5", "--driver", "rust", "--icount", "--timeout", "900",
     "--console-log", "OUT/console.log", "--add", "OUT/rpmu_sbi_cost.ko", "--", "/opt/rpmu/bench/run-bench"],
    ["--kernel-variant", "bench", "--bios", "opensbi-1.9", "--driver", "c", "--icount", "--timeout", "900",
     "--", "/opt/rpmu/bench/run-bench", "--quick"],
    ["--kernel-variant", "bench", "--nested", "--smp", "1", "--no-l1-selftest", "--driver", "c", "--icount",
     "--timeout", "900", "--", "/opt/rpmu/bench/run-bench"],
    ["--driver", "rust", "--kernel-variant", "stress", "--cpu", "rv64,sscofpmf=true", "--smp", "2", "--timeout",
     "3600", "--add", "OUT/guest-stress.sh", "--", "bash", "/root/guest-stress.sh", "--fuzz", "100000"],
    ["--driver", "c", "--kernel-variant", "kasan", "--cpu", "rv64,sscofpmf=true", "--smp", "2", "--", "true"],
    ["--driver", "rust", "--nested", "--smp", "2", "--", "true"],
    ["--driver", "c", "--nested", "--l1-cpu", "rv64,h=true", "--", "true"],
    ["--driver", "rust", "--kernel-variant", "intree", "--", "true"],
    ["--driver", "c", "--kernel-variant", "intree", "--dtb", "DTMAP/valid.dtb", "--", "true"],
    ["--driver", "rust", "--append", "quiet foo=1", "--memory", "1G", "--qemu-arg=-plugin",
     "--qemu-arg=FILE,ARGS", "--bios", "FIRMWARE/own.bin", "--", "true"],
    ["--driver", "rust", "--module", "OUT/other.ko", "--lean-root", "--", "true"],
    ["--driver", "c", "--cpu", "max", "--smp", "4", "--verbose", "--", "sh", "-c", "echo 'a b'"],
    # Usage errors.
    ["--driver", "c"],
    ["--kernel-dtb", "x.dtb", "--", "true"],
    ["--nested", "--dtb", "x.dtb", "--", "true"],
    ["--kernel-variant", "intree", "--module", "x.ko", "--", "true"],
]


class Booted(Exception):
    pass


def qemu_plan(qemu_run_path, argvs, base):
    """What scripts/qemu-run starts for each argument list; nothing is built, packed or booted."""
    qr = load("qemu_run_dump", qemu_run_path)
    work = os.path.join(base, "work")
    record = {}

    def run_script(args):
        name = os.path.basename(args[0])
        if name == "fetch-opensbi":
            return [f"FIRMWARE/{args[-1]}/fw_dynamic.bin"]
        if name == "in-tree-build":
            return ["INTREE/arch/riscv/boot/Image"]
        if name == "build-kernel":
            return [f"KERNEL/{args[args.index('--variant') + 1]}"]
        if name == "build-rootfs":
            v = args[args.index("--kernel-variant") + 1]
            return [f"ROOTFS/{v}/base.cpio", f"ROOTFS/{v}/overlay.cpio"]
        if name == "build-kvm-kit":
            return ["KIT/tree"]
        if name == "build-qemu":
            return ["QEMU/bin/qemu-system-riscv64"]
        raise AssertionError(f"unexpected script {args}")

    def make_cpio(tree, dest):
        files = {}
        for root, _, names in os.walk(tree):
            for n in names:
                p = os.path.join(root, n)
                rel = os.path.relpath(p, tree)
                files[rel] = open(p, encoding="utf-8").read() if rel.startswith("etc/") else ""
        record.setdefault("archives", []).append((os.path.basename(dest), dict(sorted(files.items()))))
        open(dest, "wb").close()

    def write_initrd(dest, parts):
        record.setdefault("initrds", []).append((dest, list(parts)))
        open(dest, "wb").close()

    def make_boot_disk(disk, work_, image, initrd, dtb, cmdline):
        record["boot_disk"] = {"disk": disk, "image": image, "initrd": initrd, "dtb": dtb, "cmdline": cmdline}

    def copy2(src, dst):
        record.setdefault("copies", []).append((src, dst))
        open(dst, "wb").close()

    def mkdtemp(*a, **kw):
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        return work

    def popen(cmd, *a, **kw):
        record["qemu"] = list(cmd)
        for root, _, names in os.walk(work):
            if "qemu-args" in names:
                with open(os.path.join(root, "qemu-args")) as f:
                    record["l2_qemu_args"] = f.read().splitlines()
        raise Booted()

    qr.run_script = run_script
    qr.make_cpio = make_cpio
    qr.write_initrd = write_initrd
    qr.make_boot_disk = make_boot_disk
    qr.kit_archive = lambda kit: "KIT/l1-kit.cpio"
    qr.uncompressed = lambda a: a
    qr.lean = lambda a: a if a.endswith(".lean.cpio") else a.replace(".cpio", ".lean.cpio")
    saved = (shutil.copy2, shutil.which, tempfile.mkdtemp, subprocess.Popen, os.path.isfile)
    shutil.copy2, shutil.which, tempfile.mkdtemp, subprocess.Popen = copy2, (lambda t: f"/usr/bin/{t}"), mkdtemp, popen
    # Every file a caller names exists, as after a build: the module, the test modules, the device trees.
    os.path.isfile = lambda p: True
    try:
        for argv in argvs:
            record.clear()
            print(f"=== qemu-run {json.dumps(argv)}")
            err = io.StringIO()
            old_argv = sys.argv
            sys.argv = ["qemu-run"] + argv
            try:
                with contextlib.redirect_stderr(err):
                    try:
                        rc = qr.main()
                    except Booted:
                        rc = "booted"
                    except SystemExit as e:
                        rc = f"exit {e.code}"
            finally:
                sys.argv = old_argv
            print(f"rc: {rc}")
            for line in err.getvalue().splitlines():
                print(f"stderr: {line}")
            for key in sorted(record):
                print(f"{key}: {json.dumps(record[key], indent=None)}")
    finally:
        shutil.copy2, shutil.which, tempfile.mkdtemp, subprocess.Popen, os.path.isfile = saved


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else ""
    if which not in ("", "--harness-only", "--qemu-only"):
        sys.exit("usage: tests/harness/plan_dump.py [--harness-only | --qemu-only]")
    base = tempfile.mkdtemp(prefix="rpmu-plan-")
    out = os.path.join(base, "out")
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            qemu_argvs = []
            harness = load("harness_dump", os.path.join(TOP, "tests/harness/harness.py"))
            harness_plan(harness, out, qemu_argvs)
            if which != "--qemu-only":
                expectations_table(harness)
            if which != "--harness-only":
                qemu_plan(os.path.join(TOP, "scripts/qemu-run"), [a[1:] for a in qemu_argvs] + OTHER_CALLERS, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    text = buf.getvalue()
    if which == "--qemu-only":
        text = text[text.index("=== qemu-run "):]
    # Longest first: the work directory lies under the temporary base.
    for path, name in ((os.path.join(base, "work"), "WORK"), (out, "OUT"), (base, "BASE"), (TOP, "TOP")):
        text = text.replace(path, name)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
