"""Host tests of scripts/qemu_run_lib.py, the pure part of scripts/qemu-run: options, kernel command line, QEMU
argv and the judgement of a boot. Run by scripts/host-test (python3 -m unittest discover -s tests/harness)."""

import contextlib
import io
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "scripts"))
import qemu_run_lib as lib  # noqa: E402

RUST_BLACKLIST = "initcall_blacklist=pmu_sbi_devinit,riscv_pmu_legacy_devinit"


def args(*opts, command=("true",)):
    return lib.parse_args(list(opts) + ["--"] + list(command))


def usage_error(*argv):
    """The exit status and message of a usage error."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), unittest.TestCase().assertRaises(SystemExit) as cm:
        lib.parse_args(list(argv))
    return cm.exception.code, err.getvalue()


def plain(a, image="IMG", initrd="INITRD", console="CON", out="OUT", disk=None):
    return lib.qemu_argv(a, "default", image, initrd, lib.kernel_cmdline(a), console, out, disk)


def after(argv, opt):
    return argv[argv.index(opt) + 1]


class ParseArgs(unittest.TestCase):
    def test_defaults(self):
        a = args()
        self.assertEqual((a.driver, a.kernel_variant, a.cpu, a.smp, a.memory, a.bios),
                         ("rust", "test", "rv64,sscofpmf=true", 2, "2G", "opensbi-1.5"))
        self.assertEqual(a.command, ["true"])

    def test_icount_means_one_hart(self):
        self.assertEqual(args("--smp", "4", "--icount").smp, 1)

    def test_outer_qemu_is_the_hosts_unless_patched_is_asked_for(self):
        self.assertEqual(args().outer_qemu, "system")
        self.assertEqual(args("--nested", "--outer-qemu", "patched").outer_qemu, "patched")
        code, msg = usage_error("--outer-qemu", "newest", "--", "true")
        self.assertEqual(code, 2)
        self.assertIn("invalid choice: 'newest'", msg)

    def test_nested_icount_keeps_the_vcpus(self):
        self.assertEqual(args("--nested", "--icount", "--smp", "2").smp, 2)

    def test_command_after_double_dash_keeps_its_options(self):
        a = args("--driver", "c", command=["/opt/rpmu/run-suites", "--skip", "check/fuzz", "checks"])
        self.assertEqual(a.command, ["/opt/rpmu/run-suites", "--skip", "check/fuzz", "checks"])
        self.assertEqual(a.driver, "c")

    def test_usage_errors(self):
        code, msg = usage_error("--driver", "c")
        self.assertEqual(code, 2)
        self.assertIn("no guest command given", msg)
        code, msg = usage_error("--kernel-dtb", "k.dtb", "--", "true")
        self.assertEqual(code, 2)
        self.assertIn("--kernel-dtb needs --dtb", msg)
        code, msg = usage_error("--nested", "--dtb", "b.dtb", "--", "true")
        self.assertIn("--nested and --dtb do not combine", msg)
        code, msg = usage_error("--driver", "go", "--", "true")
        self.assertEqual(code, 2)
        self.assertIn("invalid choice", msg)
        code, msg = usage_error("--unpatched", "--kernel-variant", "intree", "--", "true")
        self.assertEqual(code, 2)
        self.assertIn("--unpatched and --kernel-variant intree do not combine", msg)

    def test_unpatched_kernel_is_named_in_the_boot_line(self):
        self.assertIn("booting: Linux 7.3 test kernel without the export patches, driver rust",
                      lib.boot_summary(args("--kernel", "7.3", "--unpatched")))
        self.assertIn("booting: bench kernel without the export patches, driver c",
                      lib.boot_summary(args("--kernel-variant", "bench", "--unpatched", "--driver", "c")))
        self.assertIn("booting: driver rust", lib.boot_summary(args()))


class KernelCmdline(unittest.TestCase):
    def test_rust_driver_blacklists_the_c_drivers(self):
        line = lib.kernel_cmdline(args("--driver", "rust"))
        self.assertEqual(line, "console=ttyS0 earlycon=sbi rdinit=/init panic=-1 loglevel=7 rootfstype=ramfs "
                         + RUST_BLACKLIST)

    def test_c_driver_on_the_test_kernel_blacklists_nothing(self):
        line = lib.kernel_cmdline(args("--driver", "c"))
        self.assertNotIn("initcall_blacklist", line)
        self.assertTrue(line.endswith("rootfstype=ramfs"))

    def test_c_driver_on_the_intree_kernel_blacklists_the_rust_driver(self):
        line = lib.kernel_cmdline(args("--driver", "c", "--kernel-variant", "intree"))
        self.assertIn("initcall_blacklist=__riscv_pmu_sbi_rust_init", line)
        self.assertNotIn("pmu_sbi_devinit", line)

    def test_rust_driver_on_the_intree_kernel_blacklists_the_c_drivers(self):
        line = lib.kernel_cmdline(args("--driver", "rust", "--kernel-variant", "intree"))
        self.assertIn(RUST_BLACKLIST, line)
        self.assertNotIn("__riscv_pmu_sbi_rust_init", line)

    def test_append_comes_last(self):
        line = lib.kernel_cmdline(args("--driver", "c", "--append", "quiet foo=1"))
        self.assertTrue(line.endswith("rootfstype=ramfs quiet foo=1"), line)


class QemuArgv(unittest.TestCase):
    def test_icount_is_deterministic_on_one_hart(self):
        q = plain(args("--icount"))
        i = q.index("-icount")
        self.assertEqual(q[i:i + 2], ["-icount", "shift=0,sleep=off"])
        self.assertEqual(after(q, "-smp"), "1")
        self.assertEqual(after(q, "-seed"), "1")
        self.assertEqual(after(q, "-rtc"), "base=2026-01-01T00:00:00,clock=vm")
        self.assertEqual(after(q, "-global"), "virtio-mmio.ioeventfd=off")

    def test_program_is_the_hosts_qemu_or_the_one_given(self):
        self.assertEqual(plain(args())[0], "qemu-system-riscv64")
        a = args("--outer-qemu", "patched")
        q = lib.qemu_argv(a, "default", "IMG", "INITRD", lib.kernel_cmdline(a), "CON", "OUT",
                          qemu="Q/bin/qemu-system-riscv64")
        self.assertEqual(q, ["Q/bin/qemu-system-riscv64"] + plain(args())[1:])

    def test_without_icount_time_is_the_hosts(self):
        q = plain(args("--cpu", "rv64", "--smp", "2"))
        for opt in ("-icount", "-seed", "-rtc"):
            self.assertNotIn(opt, q)
        self.assertEqual((after(q, "-cpu"), after(q, "-smp")), ("rv64", "2"))

    def test_plain_boot_passes_kernel_initrd_and_cmdline(self):
        a = args("--driver", "rust", "--memory", "1G")
        q = plain(a, image="K/Image", initrd="W/initrd.cpio")
        self.assertEqual(q[0], "qemu-system-riscv64")
        self.assertEqual(after(q, "-M"), "virt")
        self.assertEqual(after(q, "-kernel"), "K/Image")
        self.assertEqual(after(q, "-initrd"), "W/initrd.cpio")
        self.assertEqual(after(q, "-append"), lib.kernel_cmdline(a))
        self.assertEqual(after(q, "-m"), "1G")
        self.assertEqual(after(q, "-bios"), "default")

    def test_consoles_are_files(self):
        q = plain(args(), console="W/console.log", out="W/command.out")
        self.assertIn("file,id=con,path=W/console.log", q)
        self.assertIn("file,id=out,path=W/command.out", q)
        self.assertEqual(after(q, "-serial"), "chardev:con")

    def test_extra_qemu_args_come_last(self):
        q = plain(args("--icount", "--qemu-arg=-plugin", "--qemu-arg=lib.so,arg=1"))
        self.assertEqual(q[-2:], ["-plugin", "lib.so,arg=1"])

    def test_board_boot_goes_through_uboot(self):
        a = args("--driver", "c", "--kernel-variant", "intree", "--icount", "--dtb", "D/valid.dtb")
        q = plain(a, disk="W/boot.img")
        self.assertEqual(after(q, "-kernel"), lib.UBOOT)
        self.assertEqual(after(q, "-dtb"), "D/valid.dtb")
        self.assertIn("file=W/boot.img,format=raw,if=none,id=boot", q)
        self.assertNotIn("-append", q)
        self.assertNotIn("-initrd", q)


class Nested(unittest.TestCase):
    def test_l2_runs_under_kvm_without_icount(self):
        a = args("--nested", "--icount", "--smp", "2")
        l2 = lib.nested_l2_args(plain(a, console="W/console.log"))
        self.assertNotIn("qemu-system-riscv64", l2)
        self.assertEqual(l2[-2:], ["-accel", "kvm"])
        self.assertNotIn("-icount", l2)
        self.assertEqual(after(l2, "-cpu"), "host")
        self.assertEqual(after(l2, "-m"), "1G")
        self.assertEqual(after(l2, "-bios"), "none")
        self.assertEqual(after(l2, "-smp"), "2")
        self.assertEqual(after(l2, "-kernel"), "/l2/Image")
        self.assertEqual(after(l2, "-initrd"), "/l2/initrd.cpio")
        self.assertIn("file,id=con,path=/l2/console.log", l2)
        self.assertIn("stdio,id=out,signal=off", l2)
        self.assertIn(RUST_BLACKLIST, after(l2, "-append"))
        # The rest of the deterministic mode stays.
        self.assertEqual(after(l2, "-seed"), "1")

    def test_l1_icount_has_one_hart_and_no_9p(self):
        a = args("--nested", "--icount", "--smp", "2")
        q = lib.nested_l1_argv(a, "default", "K/Image", "W/l1-initrd.cpio", "W/console.log", "W/command.out",
                               "KIT", "W/l2")
        self.assertEqual(after(q, "-M"), "virt,aia=aplic-imsic")
        self.assertEqual(after(q, "-cpu"), lib.L1_CPU)
        self.assertEqual(after(q, "-smp"), "1")
        self.assertEqual(after(q, "-m"), "3G")
        self.assertEqual(after(q, "-append"), "console=ttyS0 earlycon=sbi rdinit=/init panic=-1 loglevel=7 "
                         "rootfstype=ramfs lockdep.prove_locking=0")
        self.assertEqual(after(q, "-icount"), "shift=0,sleep=off")
        self.assertNotIn("-fsdev", q)

    def test_l1_program_is_the_outer_qemu(self):
        a = args("--nested", "--icount", "--smp", "2", "--outer-qemu", "patched")
        l1 = lib.nested_l1_argv(a, "default", "K/Image", "I", "C", "O", "KIT", "W/l2")
        self.assertEqual(l1[0], "qemu-system-riscv64")
        patched = lib.nested_l1_argv(a, "default", "K/Image", "I", "C", "O", "KIT", "W/l2",
                                     qemu="Q/bin/qemu-system-riscv64")
        self.assertEqual(patched, ["Q/bin/qemu-system-riscv64"] + l1[1:])
        # The L2 guest's program is the kit's whatever the outer one is: its arguments start with the machine.
        l2 = lib.nested_l2_args(lib.qemu_argv(a, "default", "IMG", "INITRD", "", "CON", "OUT",
                                              qemu="Q/bin/qemu-system-riscv64"))
        self.assertEqual(l2[:2], ["-M", "virt"])

    def test_l1_without_icount_lends_the_kit_and_l2_files_over_9p(self):
        a = args("--nested", "--l1-cpu", "rv64,h=true", "--smp", "2")
        q = lib.nested_l1_argv(a, "default", "K/Image", "I", "C", "O", "KIT", "W/l2")
        self.assertEqual((after(q, "-cpu"), after(q, "-smp")), ("rv64,h=true", "2"))
        self.assertIn("local,id=kit,path=KIT,security_model=none,readonly=on", q)
        self.assertIn("local,id=l2,path=W/l2,security_model=none", q)
        self.assertNotIn("-icount", q)

    def test_l1_settings(self):
        self.assertEqual(lib.l1_settings(args("--nested")),
                         {"RPMU_DRIVER": "c", "RPMU_ICOUNT": "0", "RPMU_SSCOFPMF": "0", "RPMU_L1_SELFTEST": "1"})
        self.assertEqual(lib.l1_settings(args("--nested", "--no-l1-selftest"))["RPMU_L1_SELFTEST"], "0")


class GuestSettings(unittest.TestCase):
    def test_sscofpmf_follows_the_cpu(self):
        self.assertEqual(lib.guest_settings(args("--cpu", "rv64,sscofpmf=true"), False)["RPMU_SSCOFPMF"], "1")
        self.assertEqual(lib.guest_settings(args("--cpu", "rv64"), False)["RPMU_SSCOFPMF"], "0")
        self.assertEqual(lib.guest_settings(args("--cpu", "max"), False)["RPMU_SSCOFPMF"], "1")

    def test_nested_guest_has_sscofpmf_only_with_the_l1_hosts_sscofpmf_and_aia(self):
        self.assertEqual(lib.guest_settings(args("--nested"), False)["RPMU_SSCOFPMF"], "1")
        conf = lib.guest_settings(args("--nested", "--l1-cpu", "rv64,sscofpmf=true,h=true"), False)
        self.assertEqual((conf["RPMU_SSCOFPMF"], conf["RPMU_SBI_PMU"]), ("0", "1"))
        conf = lib.guest_settings(args("--nested", "--l1-cpu", "rv64,h=true"), False)
        self.assertEqual((conf["RPMU_SSCOFPMF"], conf["RPMU_SBI_PMU"], conf["RPMU_NESTED"]), ("0", "0", "1"))

    def test_opensbi_0_9_has_no_pmu_extension(self):
        self.assertEqual(lib.guest_settings(args("--bios", "opensbi-0.9", "--icount"), False)["RPMU_SBI_PMU"], "0")
        self.assertEqual(lib.guest_settings(args("--bios", "opensbi-1.9"), False)["RPMU_SBI_PMU"], "1")

    def test_unpatched_kernel_is_said_only_when_booted(self):
        self.assertEqual(lib.guest_settings(args("--kernel", "7.3", "--unpatched"), False)["RPMU_UNPATCHED"], "1")
        self.assertNotIn("RPMU_UNPATCHED", lib.guest_settings(args("--kernel", "7.3"), False))

    def test_module_builtin_and_order(self):
        conf = lib.guest_settings(args("--driver", "c", "--icount"), True)
        self.assertEqual(list(conf), ["RPMU_DRIVER", "RPMU_BUILTIN", "RPMU_ICOUNT", "RPMU_SSCOFPMF", "RPMU_NESTED",
                                      "RPMU_SBI_PMU", "RPMU_MODULE"])
        self.assertEqual((conf["RPMU_DRIVER"], conf["RPMU_ICOUNT"], conf["RPMU_MODULE"]),
                         ("c", "1", "/root/riscv_pmu_sbi_rust.ko"))
        conf = lib.guest_settings(args("--kernel-variant", "intree"), False)
        self.assertEqual(conf["RPMU_BUILTIN"], "1")
        self.assertNotIn("RPMU_MODULE", conf)


CLEAN_LOG = """\
[    0.000000] Linux version 6.12.57 (riscv64)
[    0.512000] riscv-pmu-sbi: SBI PMU extension is available
[    1.200000] riscv_pmu_sbi_rust: 16 firmware and 6 hardware counters
[    2.000000] Run /init as init process
[    9.100000] reboot: Power down
"""


class LogJudgement(unittest.TestCase):
    def test_clean_log_is_clean(self):
        self.assertEqual(lib.bad_log_lines(CLEAN_LOG), [])
        self.assertEqual(lib.exit_status(False, 0, lib.bad_log_lines(CLEAN_LOG)), 0)

    def test_reports_fail_the_run(self):
        reports = [
            "[   12.3] WARNING: CPU: 1 PID: 210 at kernel/events/core.c:2391 event_sched_out+0x1f4/0x200",
            "[   12.3] BUG: sleeping function called from invalid context at kernel/locking/mutex.c:585",
            "[   12.3] Oops - load access fault [#1]",
            "[   12.3] WARNING: possible circular locking dependency detected",
            "[   12.3] INFO: lockdep is turned off.",
            "[   12.3] Kernel panic - not syncing: Fatal exception",
            "[   12.3] BUG: KASAN: slab-use-after-free in riscv_pmu_del+0x20/0x80",
            "[   12.3] rcu: INFO: rcu_sched self-detected stall on CPU",
            "[   12.3] watchdog: BUG: soft lockup - CPU#0 stuck for 22s!",
        ]
        for line in reports:
            with self.subTest(line=line):
                bad = lib.bad_log_lines(CLEAN_LOG + line + "\n")
                self.assertEqual(bad, [line])
                self.assertEqual(lib.exit_status(False, 0, bad), 242)

    def test_prefix_names_the_guest(self):
        self.assertEqual(lib.bad_log_lines("ok\n[1.0] Oops: x\n", "L1: "), ["L1: [1.0] Oops: x"])

    def test_exit_status_precedence(self):
        bad = ["[1.0] BUG: x"]
        self.assertEqual(lib.exit_status(True, 0, bad), 240)  # killed at the timeout, whatever the log says
        self.assertEqual(lib.exit_status(False, None, bad), 241)  # no exit marker: the guest died
        self.assertEqual(lib.exit_status(False, 243, bad), 242)  # a bad log outranks the module's failure
        self.assertEqual(lib.exit_status(False, 243, []), 243)
        self.assertEqual(lib.exit_status(False, 5, []), 5)

    def test_exit_mark(self):
        self.assertEqual(lib.EXIT_MARK.match("RPMU-EXIT 17").group(1), "17")
        self.assertIsNone(lib.EXIT_MARK.match("echo RPMU-EXIT 17"))

    def test_every_exit_status_has_a_meaning(self):
        self.assertEqual(sorted(lib.EXIT_MEANING), [240, 241, 242, 243])
        self.assertIn("BUG/WARNING/Oops/lockdep", lib.EXIT_MEANING[lib.EXIT_KERNEL_LOG])


class Summary(unittest.TestCase):
    def test_board_boot(self):
        a = args("--driver", "c", "--kernel-variant", "intree", "--icount", "--dtb", "D/valid.dtb",
                 "--kernel-dtb", "D/malformed.dtb", command=["/opt/rpmu/run-suites", "--skip", "check/a b"])
        self.assertEqual(lib.boot_summary(a), "booting: U-Boot with malformed.dtb, intree kernel, driver c, "
                         "cpu rv64,sscofpmf=true, smp 1, icount; guest command: /opt/rpmu/run-suites --skip "
                         "'check/a b'")

    def test_nested(self):
        self.assertEqual(lib.boot_summary(args("--nested", "--smp", "2")),
                         f"booting: driver rust, L2 under KVM (L1 cpu {lib.L1_CPU}), vCPUs 2; guest command: true")

    def test_patched_outer_qemu(self):
        self.assertEqual(lib.boot_summary(args("--nested", "--icount", "--smp", "2", "--outer-qemu", "patched")),
                         f"booting: driver rust, L2 under KVM (L1 cpu {lib.L1_CPU}), vCPUs 2, icount, patched QEMU; "
                         "guest command: true")


if __name__ == "__main__":
    unittest.main()
