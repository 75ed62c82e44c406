"""Host tests of the harness: the matrix records, the expectations files and their loader, the qemu-run command of
each boot, the parsing of a boot's output and the judgement of results. Run by scripts/host-test
(python3 -m unittest discover -s tests/harness)."""

import argparse
import contextlib
import io
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import expectations  # noqa: E402
import harness  # noqa: E402
import matrix  # noqa: E402
import qemu_run_lib  # noqa: E402  (harness puts scripts/ on the path)


def command(entry, driver="rust", suites=None, full=(), l1_selftest=True, module=None, papi=None, dtbs=None):
    suites = matrix.entry_suites(entry, list(matrix.SUITES) if suites is None else suites)
    return harness.qemu_run_command(entry, driver, suites, "OUT", 1500, module, ["--skip", "check/x"], list(full),
                                    dtbs or {}, papi, l1_selftest)


def guest_part(cmd):
    return cmd[cmd.index("--") + 1:]


class Matrix(unittest.TestCase):
    def test_every_entry_parses_as_qemu_run_options(self):
        for name, e in matrix.ENTRIES.items():
            with self.subTest(entry=name):
                self.assertEqual(e.name, name)
                a = qemu_run_lib.parse_args(list(e.qemu) + ["--", "true"])
                self.assertGreater(e.minutes, 0)
                self.assertTrue(e.about)
                self.assertLessEqual(set(e.suites or ()), set(matrix.SUITES))
                if a.icount and not a.nested:
                    self.assertEqual(a.smp, 1)

    def test_suites_per_entry(self):
        asked = ["checks", "kselftest", "perftest", "papi"]
        self.assertEqual(matrix.entry_suites("sscofpmf-icount", asked), asked)
        self.assertEqual(matrix.entry_suites("sscofpmf-smp2", asked), ["checks", "kselftest", "perftest"])
        for name in ("kvm", "no-pmu", "sbi02", "dtmap", "dtmap-malformed"):
            self.assertEqual(matrix.entry_suites(name, asked), ["checks"], name)
        self.assertEqual(matrix.entry_suites("kvm", ["perftest"]), [])
        # The order asked for is kept.
        self.assertEqual(matrix.entry_suites("sscofpmf-smp2", ["perftest", "checks"]), ["perftest", "checks"])


class QemuRunCommand(unittest.TestCase):
    def test_kvm_short_version(self):
        cmd = command("kvm", "rust", l1_selftest=False)
        self.assertTrue(cmd[0].endswith("scripts/qemu-run"))
        self.assertEqual(cmd[1:7], ["--driver", "rust", "--nested", "--icount", "--smp", "2"])
        self.assertIn("--lean-root", cmd)
        self.assertIn("--no-l1-selftest", cmd)
        self.assertEqual(guest_part(cmd), ["/opt/rpmu/run-suites", "--skip", "check/x", "--only", "check/snapshot",
                                           "--only", "check/leader_sampling", "--only",
                                           "check/sbi_calls_per_switch", "--only", "check/kvm_sampling",
                                           "checks"])

    def test_only_the_kvm_entry_runs_the_patched_outer_qemu(self):
        cmd = command("kvm", "c", l1_selftest=True)
        self.assertEqual(cmd[cmd.index("--outer-qemu") + 1], "patched")
        self.assertIn("patched outer QEMU", matrix.ENTRIES["kvm"].about)
        patched = [e for e in matrix.ENTRIES if "--outer-qemu" in command(e, "c", l1_selftest=True)]
        self.assertEqual(patched, ["kvm", "7.3-kvm"])

    def test_full_entry_runs_every_test(self):
        self.assertNotIn("--only", command("kvm", full=["kvm"]))
        self.assertNotIn("--only", command("no-pmu", full=["all"]))
        self.assertIn("--only", command("no-pmu", full=["kvm"]))

    def test_c_boot_runs_the_l1_selftest(self):
        self.assertNotIn("--no-l1-selftest", command("kvm", "c", l1_selftest=True))

    def test_papi_entry_adds_papi_and_needs_the_full_root(self):
        cmd = command("sscofpmf-icount", papi="P/papi.tar.gz")
        self.assertNotIn("--lean-root", cmd)
        i = cmd.index("P/papi.tar.gz")
        self.assertEqual(cmd[i - 1], "--add")
        self.assertEqual(cmd[i + 1:i + 3], ["--add", harness.PAPI_CHECK])
        self.assertEqual(guest_part(cmd)[-4:], ["checks", "kselftest", "perftest", "papi"])

    def test_board_entry_fills_in_device_trees_and_takes_no_module(self):
        dtbs = {"DTMAP_DTB": "D/valid.dtb", "DTMAP_MALFORMED_DTB": "D/bad.dtb"}
        cmd = command("dtmap-malformed", module="M/riscv_pmu_sbi_rust.ko", dtbs=dtbs)
        self.assertEqual(cmd[cmd.index("--dtb") + 1], "D/valid.dtb")
        self.assertEqual(cmd[cmd.index("--kernel-dtb") + 1], "D/bad.dtb")
        self.assertNotIn("--module", cmd)
        self.assertIn("--module", command("sscofpmf-smp2", module="M/riscv_pmu_sbi_rust.ko"))

    def test_7_3_entry_boots_7_3_with_its_own_modules(self):
        cmd = command("7.3-sbi3", module="M/riscv_pmu_sbi_rust.ko")
        self.assertEqual(cmd[cmd.index("--kernel") + 1], "7.3")
        # --module is 6.12's: a 7.3 boot takes qemu-run's module for its kernel.
        self.assertNotIn("--module", cmd)
        added = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--add"]
        self.assertEqual(added, harness.test_modules("7.3"))
        self.assertTrue(all("7.3-test-kmod" in a for a in added), added)
        self.assertEqual(matrix.ENTRIES["7.3-sbi3"].kernel, "7.3")
        self.assertEqual(matrix.ENTRIES["sbi3"].kernel, "6.12")

    def test_7_3_kvm_is_the_kvm_entry_on_7_3(self):
        self.assertIn("7.3-kvm", matrix.DEFAULT_ENTRIES)
        cmd = command("7.3-kvm")
        self.assertEqual(cmd[cmd.index("--kernel") + 1], "7.3")
        self.assertIn("--nested", cmd)
        self.assertEqual(matrix.ENTRIES["7.3-kvm"].only, matrix.ENTRIES["kvm"].only)

    def test_test_full_boots_every_entry_on_both_kernels(self):
        six_twelve = [e for e in matrix.ENTRIES if matrix.ENTRIES[e].kernel == "6.12"]
        for name in six_twelve:
            self.assertIn("7.3-" + name, matrix.FULL_ENTRIES)
        full_only = [e for e in matrix.FULL_ENTRIES if e not in matrix.DEFAULT_ENTRIES]
        self.assertTrue(full_only)
        for name in full_only:
            base = matrix.ENTRIES[name[len("7.3-"):]]
            self.assertEqual(matrix.ENTRIES[name].only, base.only)
            cmd = command(name)
            self.assertEqual(cmd[cmd.index("--kernel") + 1], "7.3")
        # make test-full's harness run takes them without being told; make test's does not.
        saved = sys.argv
        try:
            sys.argv = ["harness.py", "--full", "all"]
            self.assertEqual(harness.parse_args().entries, list(matrix.FULL_ENTRIES))
            sys.argv = ["harness.py"]
            self.assertEqual(harness.parse_args().entries, list(matrix.DEFAULT_ENTRIES))
        finally:
            sys.argv = saved

    def test_console_log_per_boot(self):
        cmd = command("sbi3", "c")
        self.assertEqual(cmd[cmd.index("--console-log") + 1], os.path.join("OUT", "sbi3-c", "console.log"))
        self.assertEqual(cmd[cmd.index("--timeout") + 1], "1500")


class Plan(unittest.TestCase):
    def test_longest_entries_first_both_drivers_side_by_side(self):
        args = argparse.Namespace(entries=["sbi02", "sscofpmf-smp2", "no-sscofpmf"], drivers=["c", "rust"],
                                  suites=["checks", "kselftest", "perftest", "papi"], full=[""], out="OUT",
                                  timeout=1500, module=None)
        jobs, boots = harness.plan(args, harness.load_expectations(), {}, None)
        self.assertEqual([(b[0], b[1]) for b in boots],
                         [("no-sscofpmf", "c"), ("no-sscofpmf", "rust"), ("sscofpmf-smp2", "c"),
                          ("sscofpmf-smp2", "rust"), ("sbi02", "c"), ("sbi02", "rust")])
        self.assertEqual(jobs[0], ("sbi02", "c"))

    def test_l1_selftest_on_7_3_kvm_in_full_only(self):
        def c_boot(entry, full):
            args = argparse.Namespace(entries=[entry], drivers=["c", "rust"], suites=["checks"], full=full,
                                      out="OUT", timeout=1500, module=None)
            return [b[3] for b in harness.plan(args, harness.load_expectations(), {}, None)[1] if b[1] == "c"][0]
        self.assertNotIn("--no-l1-selftest", c_boot("kvm", [""]))
        self.assertIn("--no-l1-selftest", c_boot("7.3-kvm", [""]))
        self.assertNotIn("--no-l1-selftest", c_boot("7.3-kvm", ["kvm", "7.3-kvm"]))
        self.assertNotIn("--no-l1-selftest", c_boot("7.3-kvm", ["all"]))


class ExpectationFiles(unittest.TestCase):
    """The committed files."""

    @classmethod
    def setUpClass(cls):
        cls.rules = expectations.load()

    def lookup(self, entry, driver, test):
        return expectations.lookup(self.rules, entry, driver, test)

    def test_selection_does_not_judge(self):
        # Left out of make test there; when it runs (--full), the known failures judge it as anywhere else.
        self.assertIn("perftest/perf record tests", expectations.skips(self.rules, "sscofpmf-smp2", "c", []))
        self.assertEqual(self.lookup("sscofpmf-smp2", "c", "perftest/perf record tests")[0], "flaky")
        self.assertEqual(self.lookup("7.3-no-sscofpmf", "rust", "perftest/Sigtrap")[0], "xfail")
        self.assertEqual(self.lookup("sbi3", "rust", "perftest/mmap interface tests"), (None, None))

    def test_known_failures(self):
        kind, reason = self.lookup("no-pmu", "c", "boot/completed")
        self.assertEqual(kind, "xfail")
        self.assertIn("never sets scounteren", reason)
        self.assertEqual(self.lookup("no-pmu", "rust", "boot/completed"), (None, None))
        kind, reason = self.lookup("sscofpmf-icount", "c", "perftest/Breakpoint overflow sampling")
        self.assertEqual((kind, reason), ("xfail", "riscv has no hardware breakpoints in 6.12 or 7.3: "
                                                   "PERF_TYPE_BREAKPOINT events cannot be opened"))
        self.assertEqual(self.lookup("sscofpmf-icount", "rust", "check/sampling/sample_fixed_period"), (None, None))
        self.assertEqual(self.lookup("sscofpmf-icount", "c", "check/sampling/sample_fixed_period")[0], "flaky")

    def test_composed_reason_is_expanded(self):
        kind, reason = self.lookup("kvm", "c", "check/samples/sample_self_monitor")
        self.assertEqual(kind, "flaky")
        self.assertTrue(reason.startswith("under KVM's snapshot memory the C driver's counters do not count"))
        self.assertTrue(reason.endswith("; the Rust driver passes; it failed in one of two runs of make test-kvm"))
        self.assertNotIn("{", reason)

    def test_differences(self):
        kind, reason = self.lookup("sbi3", "rust", "compare/format_event")
        self.assertEqual(kind, "differs")
        self.assertIn("SBI v3.0", reason)
        self.assertEqual(self.lookup("sscofpmf-icount", "rust", "compare/format_event"), (None, None))

    def test_skips(self):
        short = expectations.skips(self.rules, "sscofpmf-icount", "c", [""])
        full = expectations.skips(self.rules, "sscofpmf-icount", "c", ["sscofpmf-icount"])
        self.assertIn("check/module_reload", short)
        self.assertNotIn("check/module_reload", full)
        for skips in (short, full):
            self.assertIn("perftest/Setup struct perf_event_attr", skips)
            self.assertIn("check/fuzz", skips)
            self.assertEqual(skips[::2], ["--skip"] * (len(skips) // 2))
        self.assertEqual(expectations.skips(self.rules, "sscofpmf-smp2", "c", ["all"]), [])

    def test_every_reason_written_once(self):
        texts = [r.reason for r in self.rules]
        ids = {r.reason_id: r.reason for r in self.rules}
        self.assertEqual(len(set(ids.values())), len(ids))
        self.assertLess(len(ids), len(texts))

    def test_lines_are_short(self):
        for name in os.listdir(expectations.DIR):
            if name == "baseline-c.tsv":
                continue
            with open(os.path.join(expectations.DIR, name), encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    self.assertLessEqual(len(line.rstrip("\n")), 120, f"{name}:{n}")


class ExpectationFormat(unittest.TestCase):
    """The loader on files written here."""

    REASONS = "# comment\n\nbase\n  the base\n  reason\n\nderived\n  {base}; and more\n"
    KNOWN = "# test\tentry\tdriver\tkind\treason\ncheck/a/*\tkvm\tc\txfail\tderived\n"

    def load(self, reasons=REASONS, selection="check/b\tsbi3\t*\tbase\n", known=KNOWN, differences=""):
        with tempfile.TemporaryDirectory() as d:
            for name, text in (("reasons.txt", reasons), ("selection.tsv", selection),
                               ("known-failures.tsv", known), ("differences.tsv", differences)):
                with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                    f.write(text)
            return expectations.load(d)

    def error(self, **files):
        with self.assertRaises(expectations.FormatError) as cm:
            self.load(**files)
        return str(cm.exception)

    def test_rules_in_lookup_order_with_reasons_expanded(self):
        rules = self.load()
        self.assertEqual([(r.test, r.kind, r.reason) for r in rules],
                         [("check/b", "short", "the base reason"),
                          ("check/a/*", "xfail", "the base reason; and more")])
        self.assertEqual(rules[1].where, "known-failures.tsv:2")
        self.assertEqual(expectations.lookup(rules, "kvm", "c", "check/a/one"), ("xfail", "the base reason; and more"))
        self.assertEqual(expectations.lookup(rules, "kvm", "rust", "check/a/one"), (None, None))

    def test_selection_rows_do_not_judge(self):
        rules = self.load(selection="check/a/*\tkvm\t*\tbase\n")
        self.assertEqual(expectations.lookup(rules, "kvm", "c", "check/a/one")[0], "xfail")
        self.assertEqual(expectations.skips(rules, "kvm", "c", []), ["--skip", "check/a/*"])
        self.assertEqual(expectations.skips(rules, "kvm", "c", ["all"]), [])

    def test_unknown_reason_id(self):
        msg = self.error(known="check/a\tkvm\tc\txfail\tmissing\n")
        self.assertIn("known-failures.tsv:1", msg)
        self.assertIn("'missing'", msg)

    def test_unused_reason(self):
        self.assertIn("'derived' is used by no row", self.error(known=""))

    def test_unknown_reference(self):
        self.assertIn("{nowhere}", self.error(reasons=self.REASONS + "\nbad\n  see {nowhere}\n"))

    def test_reference_cycle(self):
        self.assertIn("refers to itself", self.error(reasons="base\n  {derived}\nderived\n  {base}\n"))

    def test_duplicate_id(self):
        self.assertIn("defined twice", self.error(reasons=self.REASONS + "\nbase\n  again\n"))

    def test_wrong_field_count_and_kind(self):
        self.assertIn("expected 5 tab-separated fields", self.error(known="check/a\tkvm\tc\tderived\n"))
        self.assertIn("kind 'short'", self.error(known="check/a\tkvm\tc\tshort\tderived\n"))
        self.assertIn("expected 4 tab-separated fields", self.error(selection="check/b\tsbi3\t*\tskip\tbase\n"))

    def test_compared_values_only_in_differences(self):
        self.assertIn("compare/ ids belong in differences.tsv",
                      self.error(known="compare/x\tkvm\trust\tflaky\tderived\n"))
        self.assertIn("compare/ ids belong in differences.tsv",
                      self.error(differences="check/x\tkvm\trust\tderived\n"))


class ParseOutput(unittest.TestCase):
    def parse(self, text, status):
        run = harness.Run("sscofpmf-icount", "rust")
        harness.parse_output(run, text, status)
        return run.results

    def test_clean_boot(self):
        res = self.parse("### BEGIN kselftest mmap\nok 1 a\nnot ok 2 b\n1..2\n### END kselftest mmap rc=1\n"
                         "### ALL-DONE\n", 0)
        self.assertEqual(res["boot/completed"], ("pass", ""))
        self.assertEqual(res["boot/kernel-log-clean"], ("pass", ""))
        self.assertEqual(res["kselftest/mmap/a"], ("pass", ""))
        self.assertEqual(res["kselftest/mmap/b"][0], "fail")

    def test_bad_kernel_log(self):
        res = self.parse("### ALL-DONE\n", qemu_run_lib.EXIT_KERNEL_LOG)
        self.assertEqual(res["boot/kernel-log-clean"], ("fail", "kernel log has BUG/WARNING/Oops/lockdep"))
        self.assertEqual(res["boot/completed"][0], "fail")

    def test_module_failure_leaves_the_log_unjudged(self):
        res = self.parse("", qemu_run_lib.EXIT_MODULE)
        self.assertEqual(res["boot/completed"], ("fail", "module failed to load"))
        self.assertNotIn("boot/kernel-log-clean", res)

    def test_no_completion_marker(self):
        res = self.parse("### BEGIN check count_basic\n", 0)
        self.assertEqual(res["boot/completed"], ("fail", "no completion marker (guest command exit 0)"))


class Judge(unittest.TestCase):
    RULES = [
        expectations.Rule("check/gap", "*", "rust", "xfail", "a known gap", "gap", "t:1"),
        expectations.Rule("compare/fmt", "e", "rust", "differs", "formats differ", "fmt", "t:2"),
    ]

    def runs(self, c_results, rust_results, c_values=None, rust_values=None):
        runs = {}
        for driver, results, values in (("c", c_results, c_values), ("rust", rust_results, rust_values)):
            run = harness.Run("e", driver)
            run.results = dict(results)
            run.values = dict(values or {})
            runs[("e", driver)] = run
        return runs

    def judge(self, runs, baseline=None):
        with contextlib.redirect_stdout(io.StringIO()):
            return harness.judge(runs, self.RULES, baseline or {})

    def test_rust_worse_than_c_fails(self):
        v = self.judge(self.runs({"check/t": ("pass", "")}, {"check/t": ("fail", "boom")}))
        self.assertEqual(v.totals["failed"], 1)
        self.assertIn("e rust: check/t: worse than the C driver (pass -> fail) boom", v.failures)

    def test_known_gap_is_skipped(self):
        v = self.judge(self.runs({"check/gap": ("pass", "")}, {"check/gap": ("fail", "")}))
        self.assertEqual(v.totals, {"passed": 1, "failed": 0, "skipped": 1})
        self.assertTrue(any("known gap (a known gap)" in n for n in v.notes))

    def test_values(self):
        v = self.judge(self.runs({}, {}, {"fmt": "config:0-47", "n": "5"}, {"fmt": "config:0-55", "n": "5"}))
        self.assertEqual(v.totals["failed"], 0)
        self.assertIn("e: fmt: C config:0-47, Rust config:0-55: differs as expected (formats differ)", v.notes)
        v = self.judge(self.runs({}, {}, {"n": "5"}, {"n": "6"}))
        self.assertEqual(v.failures, ["e rust: compare/n: C driver 5, Rust driver 6"])

    def test_c_against_baseline(self):
        v = self.judge({("e", "c"): self.runs({"check/t": ("fail", "")}, {})[("e", "c")]},
                       {("e", "check/t"): "pass"})
        self.assertEqual(v.totals["failed"], 1)
        self.assertIn("e c: check/t: fail, baseline says pass", v.notes)


if __name__ == "__main__":
    unittest.main()
