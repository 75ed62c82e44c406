"""The pure part of scripts/qemu-run: its options, the guest's settings, the kernel command line, the QEMU argv
(plain, board and nested) and the judgement of a finished boot from its kernel log and exit marker.

Nothing here reads or writes a file, runs a program or looks at the host: every function maps its arguments to a
value, so that scripts/qemu-run, the harness (tests/harness/harness.py) and the host tests
(tests/harness/test_qemu_run_lib.py) share one definition. scripts/qemu-run does the rest: it builds or finds the
kernel, the firmware and the root filesystem, packs the guest's archives, starts QEMU and streams its output.
"""

import argparse
import os
import re
import shlex

DESCRIPTION = "Boot the test kernel in QEMU's RISC-V virt machine and run one command in the guest."
MODULE_PATH = "drivers/perf/riscv_pmu_sbi_rust/riscv_pmu_sbi_rust.ko"
GUEST_MODULE = "/root/riscv_pmu_sbi_rust.ko"
KERNEL_VARIANTS = ["test", "bench", "stress", "kasan", "intree"]
# The kernel sources (scripts/build-kernel --kernel).
KERNELS = ["6.12", "7.3"]

# The QEMU this script starts (--outer-qemu): the host's (Debian's qemu-system-riscv, found on PATH), or the same
# release with the project's patches, built into the cache by scripts/build-qemu (see OUTER_QEMU_HELP).
SYSTEM_QEMU = "qemu-system-riscv64"
OUTER_QEMUS = ["system", "patched"]
OUTER_QEMU_HELP = (
    "the QEMU this script starts, the L1 guest's with --nested (the L2 guest's is always Debian's riscv64 QEMU of "
    "scripts/build-kvm-kit): system, the host's qemu-system-riscv64 (the default), or patched, the same release "
    "with the project's patches (scripts/qemu/patches/: an overflow interrupt of a counter whose earlier deadline "
    "lay beyond QEMU's timer range is no longer lost, which KVM guests' sampling needs), built into the cache by "
    "scripts/build-qemu on first use")

# Debian's u-boot-qemu: U-Boot for QEMU's RISC-V virt machine in S-mode, run by OpenSBI as its payload.
UBOOT = "/usr/lib/u-boot/qemu-riscv64_smode/u-boot.bin"

# qemu-run's own exit statuses, beside the guest command's, and what each means (the harness reports these words).
EXIT_TIMEOUT = 240
EXIT_CRASH = 241
EXIT_KERNEL_LOG = 242
EXIT_MODULE = 243
EXIT_MEANING = {EXIT_TIMEOUT: "timeout", EXIT_CRASH: "guest died (panic or QEMU error)",
                EXIT_KERNEL_LOG: "kernel log has BUG/WARNING/Oops/lockdep", EXIT_MODULE: "module failed to load"}

# Kernel log lines that fail a run. They are reports of kernel bugs, never normal output.
BAD_LOG = re.compile(
    r"BUG:|WARNING:|Oops|Kernel panic|Call Trace:|Unable to handle kernel|"
    r"possible circular locking|possible recursive locking|inconsistent lock state|"
    r"INFO: lockdep|lockdep is turned off|KASAN|UBSAN|scheduling while atomic|"
    r"sleeping function called from invalid context|list_add corruption|list_del corruption|"
    r"rcu_sched self-detected stall|hung_task|soft lockup|hard LOCKUP"
)
# The guest's last line on the command's console: the command's exit status (tests/guest/init).
EXIT_MARK = re.compile(r"^RPMU-EXIT (\d+)$")
# Around the L2 guest's kernel log, which the L1 guest prints at the end in the deterministic nested mode.
L2_LOG_BEGIN, L2_LOG_END = "RPMU-L2-LOG-BEGIN", "RPMU-L2-LOG-END"

# QEMU's deterministic mode (--icount). Time is counted in instructions, and what the guest would otherwise take
# from the host is fixed too, the random seed QEMU puts in the device tree (/chosen/rng-seed, which seeds the
# kernel's random numbers: address-space layout, hash tables) and the real-time clock. sleep=off: while the guest
# idles, virtual time jumps to the next timer deadline (with sleep=on it runs with host time, and a timer
# interrupt after an idle period fell on different instructions from run to run). ioeventfd=off: a virtio-mmio
# queue notification is handled within the guest's write (by default it goes through an eventfd to the main loop
# thread even without KVM, and the completion interrupt came at a host-dependent instruction).
DETERMINISTIC = ["-icount", "shift=0,sleep=off", "-seed", "1", "-rtc", "base=2026-01-01T00:00:00,clock=vm",
                 "-global", "virtio-mmio.ioeventfd=off"]
# Where the L1 guest finds the QEMU tree when it comes in its initramfs (tests/guest/kvm-host).
L1_KIT = "/opt/rpmu/kit"
# Where the L1 guest finds qemu-run's --l1-hook program.
L1_HOOK = "/opt/rpmu/l1-hook"
# The L1 CPU of --nested: the hypervisor extension, and Sscofpmf with AIA, without which 6.12's KVM offers its
# guests neither Sscofpmf nor overflow interrupts.
L1_CPU = "rv64,sscofpmf=true,h=true,smaia=true,ssaia=true"

# The root is a ramfs: the kernel fills it from the initramfs a quarter faster than a tmpfs (3.25 -> 2.48 s of
# guest time at -icount), and the guest never needs a size limit or swap there (/tmp is a tmpfs).
BASE_CMDLINE = "console=ttyS0 earlycon=sbi rdinit=/init panic=-1 loglevel=7 rootfstype=ramfs"
# With --driver rust the C drivers' initcalls do not run: the legacy driver would register `cpu` itself once the
# SBI driver has not probed.
RUST_ONLY = "initcall_blacklist=pmu_sbi_devinit,riscv_pmu_legacy_devinit"
# With --driver c on the kernel with both drivers built in: the built-in Rust driver's initcall (module! names it
# after the module).
C_ONLY_INTREE = "initcall_blacklist=__riscv_pmu_sbi_rust_init"
# The L1 guest of --nested is the host of the guest under test: it runs KVM and the C driver, never the driver
# under test, and handles every exit of the L2 guest. Lock validation there checks neither driver and cost a tenth
# of the nested entries' time, so it is off; the L2 guest keeps it.
L1_CMDLINE = BASE_CMDLINE + " lockdep.prove_locking=0"


def parse_args(argv):
    """qemu-run's options, checked: QEMU_OPTIONS... -- GUEST_COMMAND... (argparse exits 2 on a usage error)."""
    p = argparse.ArgumentParser(
        prog="scripts/qemu-run", description=DESCRIPTION,
        usage="%(prog)s [options] -- GUEST_COMMAND...",
        epilog="Exit status: the guest command's; 240 timeout, 241 guest died, 242 bad kernel log, "
               "243 module failed to load.")
    p.add_argument("--driver", choices=["c", "rust"], default="rust",
                   help="which `cpu` PMU driver runs (default: rust; c is the built-in baseline)")
    p.add_argument("--kernel", choices=KERNELS, default="6.12",
                   help="the kernel source: 6.12 (default) or 7.3 (scripts/build-kernel --kernel)")
    p.add_argument("--kernel-variant", choices=KERNEL_VARIANTS, default="test",
                   help="which kernel boots (default: test, with debug options; bench has none; stress adds "
                        "kmemleak; kasan adds KASAN to that; intree has both drivers built in)")
    p.add_argument("--unpatched", action="store_true",
                   help="boot the variant built without the project's kernel patches (scripts/build-kernel "
                        "--unpatched), which export what sampling from a module needs, with the module built "
                        "against it: it counts and refuses sampling")
    p.add_argument("--bios", default="opensbi-1.5",
                   help="the SBI firmware: opensbi-1.5 (QEMU's own, SBI v2.0; the default), opensbi-1.9 (Debian's, "
                        "SBI v3.0) or opensbi-0.9 (Debian 11's, SBI v0.2, no PMU extension; give it a --cpu "
                        "without the extensions it predates, see the harness's sbi02 entry), both fetched into the "
                        "cache by scripts/fetch-opensbi, or a firmware file")
    p.add_argument("--cpu", default="rv64,sscofpmf=true",
                   help="QEMU -cpu value (default: rv64,sscofpmf=true; rv64 has no Sscofpmf)")
    p.add_argument("--smp", type=int, default=2, help="number of harts (default: 2)")
    p.add_argument("--icount", action="store_true",
                   help="deterministic mode: -smp 1 -icount shift=0,sleep=off (exact, repeatable counts)")
    p.add_argument("--outer-qemu", choices=OUTER_QEMUS, default="system", help=OUTER_QEMU_HELP)
    p.add_argument("--nested", action="store_true",
                   help="run the command in an L2 guest under KVM in an L1 guest (see above)")
    p.add_argument("--l1-cpu", default=L1_CPU,
                   help=f"QEMU -cpu of the L1 guest with --nested (default: {L1_CPU})")
    p.add_argument("--no-l1-selftest", action="store_true",
                   help="with --nested: do not run KVM's selftest riscv/sbi_pmu_test in the L1 guest first (it checks "
                   "the L1 guest, which is the same whichever driver the L2 guest runs)")
    p.add_argument("--l1-hook", metavar="HOST_FILE",
                   help="with --nested: a program the L1 guest runs with the argument start before it starts the L2 "
                   "guest and with stop after it, its output passed on (to trace the L1 side, e.g. "
                   "tests/envprobe/l1-trace)")
    p.add_argument("--add", action="append", default=[], metavar="HOST_FILE",
                   help="copy a file into the guest as /root/<basename> (repeatable)")
    p.add_argument("--module", help="the module for --driver rust (default: the one built against the kernel)")
    p.add_argument("--timeout", type=float, default=600, help="wall-clock limit in seconds (default: 600)")
    p.add_argument("--memory", default="2G", help="guest memory (default: 2G)")
    p.add_argument("--append", default="", help="extra kernel command-line arguments")
    p.add_argument("--lean-root", action="store_true",
                   help="boot a root filesystem without the Python and Perl libraries, the binutils and the headers "
                   "(half the size, copied into memory at every boot): enough for the project's checks, not for "
                   "perf test")
    p.add_argument("--qemu-arg", action="append", default=[], metavar="ARG",
                   help="an extra QEMU argument (repeatable), e.g. --qemu-arg=-plugin --qemu-arg=FILE,ARGS")
    p.add_argument("--dtb", metavar="FILE",
                   help="boot through U-Boot, which hands the kernel this device tree (firmware gets it too)")
    p.add_argument("--kernel-dtb", metavar="FILE",
                   help="with --dtb: the device tree U-Boot hands the kernel, when it differs from firmware's")
    p.add_argument("--console-log", help="keep the kernel console log in this file")
    p.add_argument("--verbose", action="store_true", help="also stream the kernel console to stderr")
    if "--" in argv:
        i = argv.index("--")
        opts, cmd = argv[:i], argv[i + 1:]
    else:
        opts, cmd = argv, []
    args = p.parse_args(opts)
    if not cmd:
        p.error("no guest command given (put it after --)")
    args.command = cmd
    if args.kernel_dtb and not args.dtb:
        p.error("--kernel-dtb needs --dtb")
    if args.nested and args.dtb:
        p.error("--nested and --dtb do not combine")
    if args.l1_hook and not args.nested:
        p.error("--l1-hook needs --nested")
    if args.unpatched and args.kernel_variant == "intree":
        p.error("--unpatched and --kernel-variant intree do not combine (a built-in driver needs no patch)")
    if args.icount and not args.nested:
        args.smp = 1
    return args


def has_extension(cpu, ext):
    """Whether a QEMU -cpu value turns the extension on (or is `max`, which has every extension)."""
    return re.search(rf"{ext}=(true|on)|^max\b", cpu) is not None


def guest_settings(args, module_in_guest):
    """The guest's /etc/rpmu/run.conf (tests/guest/init reads it), as ordered (name, value) pairs."""
    # Under KVM the guest has Sscofpmf when its host has it and AIA (6.12's KVM).
    sscofpmf = (has_extension(args.l1_cpu, "sscofpmf") and has_extension(args.l1_cpu, "ssaia")) if args.nested \
        else has_extension(args.cpu, "sscofpmf")
    conf = {
        "RPMU_DRIVER": args.driver,
        "RPMU_BUILTIN": "1" if args.kernel_variant == "intree" else "0",
        "RPMU_ICOUNT": "1" if args.icount else "0",
        "RPMU_SSCOFPMF": "1" if sscofpmf else "0",
        "RPMU_NESTED": "1" if args.nested else "0",
        # KVM offers the SBI PMU extension only when its host has Sscofpmf (6.12); OpenSBI 0.9 predates the
        # extension; every other firmware here has it.
        "RPMU_SBI_PMU": "0" if (args.nested and not has_extension(args.l1_cpu, "sscofpmf"))
        or args.bios == "opensbi-0.9" else "1",
    }
    # A kernel without the export patches: the module counts and refuses sampling (check/no_sample_exports).
    if getattr(args, "unpatched", False):
        conf["RPMU_UNPATCHED"] = "1"
    # The module goes into every guest that can have it: with the C driver, checks use it to show that it refuses
    # to load.
    if module_in_guest:
        conf["RPMU_MODULE"] = GUEST_MODULE
    return conf


def l1_settings(args):
    """The L1 guest's run.conf under --nested. RPMU_ICOUNT=0: the L1 guest's perf throttle is off, as its KVM turns
    every L2 overflow into a host overflow interrupt of its own."""
    conf = {"RPMU_DRIVER": "c", "RPMU_ICOUNT": "0", "RPMU_SSCOFPMF": "0",
            "RPMU_L1_SELFTEST": "0" if args.no_l1_selftest else "1"}
    if getattr(args, "l1_hook", None):
        conf["RPMU_L1_HOOK"] = L1_HOOK
    return conf


def kernel_cmdline(args):
    """The kernel command line of the guest under test (the L2 guest's when nested)."""
    cmdline = BASE_CMDLINE
    if args.driver == "rust":
        cmdline += " " + RUST_ONLY
    elif args.kernel_variant == "intree":
        cmdline += " " + C_ONLY_INTREE
    if args.append:
        cmdline += " " + args.append
    return cmdline


def console_args(console, command_out):
    """The kernel console on the serial port, written to a file; the command's output on a virtio console, written to
    another file (not a pipe: QEMU's every write of it then completes at once, in the vCPU's own step; a pipe the
    reader has not emptied makes the virtio console wait for the host, and its completion interrupt then falls on a
    different guest instruction from run to run)."""
    return ["-display", "none", "-monitor", "none", "-nodefaults", "-no-reboot",
            "-chardev", f"file,id=con,path={console}", "-serial", "chardev:con",
            "-device", "virtio-serial-device",
            "-chardev", f"file,id=out,path={command_out}", "-device", "virtconsole,chardev=out"]


def qemu_argv(args, bios_file, image, initrd, cmdline, console, command_out, disk=None, qemu=SYSTEM_QEMU):
    """The QEMU command of a plain boot (the L2 guest's, from which nested_l2_args() derives, when nested), `qemu`
    the program (--outer-qemu's). With --dtb the kernel, initramfs and command line are on `disk` (see
    scripts/qemu-run's make_boot_disk), which U-Boot reads."""
    if args.dtb:
        boot = ["-kernel", UBOOT, "-dtb", args.dtb,
                "-drive", f"file={disk},format=raw,if=none,id=boot", "-device", "virtio-blk-device,drive=boot"]
    else:
        boot = ["-kernel", image, "-initrd", initrd, "-append", cmdline]
    argv = [qemu, "-M", "virt", "-cpu", args.cpu, "-smp", str(args.smp), "-m", args.memory,
            "-bios", bios_file, *boot, *console_args(console, command_out)]
    if args.icount:
        argv += DETERMINISTIC
    return argv + args.qemu_arg


def nested_l2_args(plain):
    """The L2 guest's QEMU arguments (without the program), from the command of a plain boot: the kernel and the
    initramfs from the L1 guest's /l2, 1G of memory, no firmware of its own, the L1 hart's CPU under KVM, the
    command's output passed through the L1 guest's QEMU, and no -icount (the L2 guest runs on the L1 hart: its
    timing follows the L1 guest's, exact when that one is)."""
    l2 = list(plain[1:])

    def replace(opt, value):
        l2[l2.index(opt) + 1] = value

    replace("-kernel", "/l2/Image")
    replace("-initrd", "/l2/initrd.cpio")
    replace("-m", "1G")
    replace("-bios", "none")
    replace("-cpu", "host")
    l2[l2.index("-chardev") + 1] = "file,id=con,path=/l2/console.log"
    l2 = ["stdio,id=out,signal=off" if a.startswith("file,id=out,") else a for a in l2]
    if "-icount" in l2:
        i = l2.index("-icount")
        del l2[i:i + 2]
    return l2 + ["-accel", "kvm"]


def nested_l1_argv(args, bios_file, image, initrd, console, command_out, kit, l2_dir, qemu=SYSTEM_QEMU):
    """The QEMU command of the L1 guest under --nested, `qemu` the program (--outer-qemu's): AIA, --l1-cpu, one
    hart at -icount (with the QEMU tree and the L2 files in its initramfs) or --smp harts with both lent over 9p."""
    smp = 1 if args.icount else args.smp
    argv = [qemu, "-M", "virt,aia=aplic-imsic", "-cpu", args.l1_cpu, "-smp", str(smp),
            "-m", "3G", "-bios", bios_file, "-kernel", image, "-initrd", initrd, "-append", L1_CMDLINE,
            *console_args(console, command_out)]
    if args.icount:
        argv += DETERMINISTIC
    else:
        argv += ["-fsdev", f"local,id=kit,path={kit},security_model=none,readonly=on",
                 "-device", "virtio-9p-device,fsdev=kit,mount_tag=kit",
                 "-fsdev", f"local,id=l2,path={l2_dir},security_model=none",
                 "-device", "virtio-9p-device,fsdev=l2,mount_tag=l2"]
    return argv


def boot_summary(args):
    """qemu-run's progress line for a boot."""
    kernel = "" if args.kernel_variant == "test" else f"{args.kernel_variant} kernel, "
    if args.kernel != "6.12":
        kernel = f"Linux {args.kernel} " + (kernel or "test kernel, ")
    if getattr(args, "unpatched", False):
        kernel = (kernel or "test kernel, ").removesuffix(", ") + " without the export patches, "
    if args.dtb:
        kernel = f"U-Boot with {os.path.basename(args.kernel_dtb or args.dtb)}, " + kernel
    where = f"L2 under KVM (L1 cpu {args.l1_cpu}), vCPUs" if args.nested else f"cpu {args.cpu}, smp"
    outer = ", patched QEMU" if args.outer_qemu == "patched" else ""
    return (f"booting: {kernel}driver {args.driver}, {where} {args.smp}{', icount' if args.icount else ''}{outer}; "
            f"guest command: {shlex.join(args.command)}")


def bad_log_lines(log, prefix=""):
    """The lines of a kernel log that report a kernel bug (BAD_LOG), each with `prefix`."""
    return [prefix + ln for ln in log.splitlines() if BAD_LOG.search(ln)]


def exit_status(timed_out, status, bad):
    """qemu-run's exit status for a finished boot: the guest was killed at the timeout; it never printed its exit
    marker (`status` None: panic, QEMU error); its kernel log has report lines (`bad`); the module failed to load;
    otherwise the guest command's status. The first that applies wins."""
    if timed_out:
        return EXIT_TIMEOUT
    if status is None:
        return EXIT_CRASH
    if bad:
        return EXIT_KERNEL_LOG
    if status == EXIT_MODULE:
        return EXIT_MODULE
    return status
