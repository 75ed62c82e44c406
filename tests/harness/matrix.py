"""The harness's QEMU matrix: one record per entry, everything about the entry in it.

To add an entry, add one Entry to ENTRIES: its scripts/qemu-run options, a one-line description, the suites it runs,
the tests its make-test (short) version limits it to and about how long its boots take. Expectations for it go in
tests/expectations/ (by entry name); the C driver's results in baseline-c.tsv come from a run with
--update-baseline.

The kernel is a dimension of the records: an entry that boots Linux 7.3 has qemu-run's --kernel 7.3 and a name
that starts with "7.3-" (expectations select a kernel's entries with that glob); the entries without it boot 6.12.
Each kernel's Rust driver is compared with that kernel's C driver, in the same run.
"""

from typing import NamedTuple, Optional, Tuple

# The guest suites (tests/guest/run-suites), in the order the harness asks for them by default.
SUITES = ("checks", "kselftest", "perftest", "papi")
# Suites that run on qemu-run's lean root (no Python, Perl or binutils; half the size to copy at boot): the
# project's checks and the kernel's perf_events selftests (static programs). perf test and PAPI need the rest.
LEAN_SUITES = ("checks", "kselftest")


class Entry(NamedTuple):
    name: str
    qemu: Tuple[str, ...]  # scripts/qemu-run options; DTMAP_DTB and DTMAP_MALFORMED_DTB stand for device trees
    about: str  # one line, for progress lines
    # About how long make test's boots of the entry take on a 2-core host, two at a time, in minutes: the order in
    # which the entries start (longest first).
    minutes: float
    # The suites that run here, of those asked for (None: every suite but the entry-only ones).
    suites: Optional[Tuple[str, ...]] = None
    # Suites that run on the entries that name them here only (see ENTRY_ONLY_SUITES).
    own_suites: Tuple[str, ...] = ()
    # In make test's short version, only the tests these globs match run here (run-suites --only); --full runs all.
    only: Tuple[str, ...] = ()
    # Whether the harness boots the entry when not told which (make test; make test-full if full_only); the others
    # run when named (--entries).
    default: bool = True
    # For nested entries: whether KVM's selftest runs in the L1 guest (C boot) only when the entry runs in full.
    l1_selftest_in_full_only: bool = False
    # Whether the entry boots only when every entry runs in full (make test-full: --full all) or when named; make
    # test leaves it out.
    full_only: bool = False

    @property
    def kernel(self) -> str:
        """The kernel source the entry boots (qemu-run's --kernel)."""
        q = list(self.qemu)
        return q[q.index("--kernel") + 1] if "--kernel" in q else "6.12"


CHECKS = ("checks",)

# QEMU's hart with counter delegation: Smcdeleg and Smcsrind for M-mode, Ssccfg and Sscsrind for S-mode.
CDELEG_CPU = "rv64,sscofpmf=true,smcdeleg=true,ssccfg=true,smcsrind=true,sscsrind=true"

ENTRIES = {e.name: e for e in [
    Entry("sscofpmf-smp2", ("--cpu", "rv64,sscofpmf=true", "--smp", "2"), "Sscofpmf, 2 harts", 3.5),
    # PAPI (tests/papi) runs where counts are exact, so that the two drivers' counts through PAPI are compared
    # exactly.
    Entry("sscofpmf-icount", ("--cpu", "rv64,sscofpmf=true", "--icount"),
          "Sscofpmf, 1 hart, -icount shift=0 (exact)", 3.4, own_suites=("papi",)),
    Entry("no-sscofpmf", ("--cpu", "rv64", "--smp", "2"), "no Sscofpmf, 2 harts", 5),
    # Deterministic, so that its counts compare exactly with the C driver's and no timing-flaky rule is needed;
    # the SMP paths do not depend on the firmware's SBI version and run in sscofpmf-smp2.
    Entry("sbi3", ("--cpu", "rv64,sscofpmf=true", "--icount", "--bios", "opensbi-1.9"),
          "OpenSBI 1.9 (SBI v3.0), Sscofpmf, 1 hart, -icount shift=0 (exact)", 2.3),
    # Counter delegation (Smcdeleg/Ssccfg with Smcsrind/Sscsrind), which QEMU's OpenSBI 1.5 enables for S-mode
    # (menvcfg.CDE, mcounteren all ones): the Rust driver programs the hardware counters with CSRs, the 6.12 C
    # driver still makes SBI calls and is the reference for every count. Exact (-icount), so that the counts of
    # the counting, sampling, leader-sampling and user-access checks compare exactly; check/counter_delegation
    # shows no SBI call for hardware events and the same counts with the module reloaded on the SBI path, in the
    # same boot.
    Entry("cdeleg", ("--cpu", CDELEG_CPU, "--icount"),
          "counter delegation (Smcdeleg/Ssccfg), Sscofpmf, 1 hart, -icount shift=0 (exact)", 2.5, suites=CHECKS,
          only=("check/count_basic", "check/count_events", "check/sampling", "check/leader_sampling",
                "check/user_access", "check/sbi_calls_per_switch", "check/counter_delegation")),
    # The same on two harts: each hart finds its delegated counters as it starts (CPU hotplug and module reloads
    # included); check/counter_delegation also reloads the module on the SBI path and back, in the same boot.
    Entry("cdeleg-smp2", ("--cpu", CDELEG_CPU, "--smp", "2"), "counter delegation, Sscofpmf, 2 harts", 1,
          suites=CHECKS, only=("check/counter_delegation", "check/sbi_calls_per_switch", "check/cpu_hotplug",
                                "check/module_reload")),
    # Firmware without the SBI PMU extension, on TCG: OpenSBI 0.9 (SBI v0.2, before the extension existed), where
    # both drivers fall back to the base counters. The hart lacks the extensions that need M-mode set-up this
    # firmware predates (with Sstc the kernel's first stimecmp write traps in riscv_timer_starting_cpu). Its own
    # check runs there.
    Entry("sbi02", ("--cpu", "rv64,sstc=false,svpbmt=false,svadu=false,zicboz=false,zicbom=false", "--icount",
                    "--bios", "opensbi-0.9"),
          "OpenSBI 0.9 (SBI v0.2, no PMU extension), 1 hart, -icount shift=0 (exact)", 0.3,
          suites=CHECKS, only=("check/no_pmu_extension",)),
    # A board: U-Boot hands the kernel the board's device tree, with a riscv,pmu event map (scripts/dtmap/), and
    # both drivers are built into the kernel, the command line choosing one (no module). DTMAP_DTB stands for
    # the device tree scripts/make-dtmap-dtb makes for the entry's -cpu and -smp. The board entries run the guest
    # checks only (their kernel is the test kernel's with the driver built in; kselftests and perf test add
    # nothing the other entries do not cover).
    Entry("dtmap", ("--cpu", "rv64,sscofpmf=true", "--icount", "--kernel-variant", "intree", "--dtb", "DTMAP_DTB"),
          "U-Boot, board device tree with riscv,pmu event maps, both drivers built in, 1 hart, -icount", 2,
          suites=CHECKS),
    # The same with a malformed map in the kernel's device tree (firmware keeps the valid one).
    Entry("dtmap-malformed", ("--cpu", "rv64,sscofpmf=true", "--icount", "--kernel-variant", "intree",
                              "--dtb", "DTMAP_DTB", "--kernel-dtb", "DTMAP_MALFORMED_DTB"),
          "as dtmap, with an inconsistent map in the kernel's device tree", 0.6, suites=CHECKS),
    # KVM's SBI PMU, the one implementation with snapshot memory: the drivers run in an L2 guest (2 vCPUs) under
    # KVM in an L1 guest with the hypervisor extension, Sscofpmf and AIA on one exact (-icount) hart. Under nested
    # virtualisation every trap goes through a hypervisor that QEMU emulates, so a guest runs tens of times
    # slower: the nested entries run the project's checks only. Here make test runs the driver's detection of the
    # snapshot memory, the overflow path through it ({...}:S leader sampling with -c, where the C driver's
    # restart defect shows) and the SBI calls of the switch path with it (under KVM the counters are released at
    # every switch out: a counter_config_matching per event and one start in, one stop with RESET out, no counter
    # left configured: check/sbi_calls_per_switch) and check/kvm_sampling (perf record -c and -F against the
    # count, and whether a sampled event counts on after an overflow); make test-kvm (--full kvm) runs every
    # check there, check/sampling (-c, -F and a profile) included: nested, a check costs about eight times its guest time in
    # host time, and the C driver's check/sampling results are expected failures there (its snapshot restart
    # defect: see the expectations).
    # The outer QEMU is the host's release with the project's patch (scripts/build-qemu): the host's QEMU loses the
    # L1 hart's overflow interrupts after KVM restarts a counter with half its range (the far deadline QEMU keeps
    # as a leftover delays the next one: tests/envprobe/far_period.c), so an L2 guest got one to three samples
    # where the count gives 90.
    Entry("kvm", ("--nested", "--icount", "--smp", "2", "--outer-qemu", "patched"),
          "KVM's SBI PMU (snapshot memory) in a nested guest, 2 vCPUs on one exact L1 hart, patched outer QEMU", 3,
          suites=CHECKS, only=("check/snapshot", "check/leader_sampling", "check/sbi_calls_per_switch",
                                "check/kvm_sampling")),
    # Firmware without the SBI PMU extension: KVM offers its guests the extension only when the host has
    # Sscofpmf, so an L2 guest under an L1 hart without it has none. The legacy PMU's own check runs there. Nothing
    # overflows there, so the host's QEMU serves.
    Entry("no-pmu", ("--nested", "--l1-cpu", "rv64,h=true", "--icount", "--smp", "1"),
          "no SBI PMU extension (KVM guest of a host without Sscofpmf), 1 vCPU on one exact L1 hart", 1.4,
          suites=CHECKS, only=("check/no_pmu_extension",)),
    # Linux 7.3 (scripts/build-kernel --kernel 7.3), each driver against 7.3's C driver. make test runs where
    # 7.3 changed what the drivers see: exact counting under -icount with the kernel's perf_events selftests,
    # OpenSBI 1.9's SBI v3.0 (7.3's C driver uses event_get_info and raw events v2), and on two harts the
    # sampling and throttle storms (perf core 7.x stops a throttled group from inside the overflow handler).
    # make test-full runs every suite on each, and the other entries on 7.3 too (below).
    Entry("7.3-sscofpmf-icount", ("--kernel", "7.3", "--cpu", "rv64,sscofpmf=true", "--icount"),
          "Linux 7.3, Sscofpmf, 1 hart, -icount shift=0 (exact)", 3.4),
    Entry("7.3-sbi3", ("--kernel", "7.3", "--cpu", "rv64,sscofpmf=true", "--icount", "--bios", "opensbi-1.9"),
          "Linux 7.3, OpenSBI 1.9 (SBI v3.0), Sscofpmf, 1 hart, -icount shift=0 (exact)", 2.3),
    # The board entry on 7.3: both drivers built into the 7.3 kernel (scripts/in-tree-build --kernel 7.3).
    Entry("7.3-dtmap", ("--kernel", "7.3", "--cpu", "rv64,sscofpmf=true", "--icount", "--kernel-variant", "intree",
                        "--dtb", "DTMAP_DTB"),
          "Linux 7.3, U-Boot, board device tree with riscv,pmu event maps, both drivers built in, 1 hart, -icount", 2,
          suites=CHECKS),
    Entry("7.3-sscofpmf-smp2", ("--kernel", "7.3", "--cpu", "rv64,sscofpmf=true", "--smp", "2"),
          "Linux 7.3, Sscofpmf, 2 harts", 3.5,
          only=("check/storm", "check/sampling", "check/leader_sampling")),
    # The module on a kernel without the two export patches (scripts/build-kernel --unpatched): it counts, and
    # refuses sampling with one log line (check/no_sample_exports); the C driver is built in and samples there as
    # anywhere.
    Entry("7.3-unpatched", ("--kernel", "7.3", "--unpatched", "--cpu", "rv64,sscofpmf=true", "--icount"),
          "Linux 7.3 without the export patches, Sscofpmf, 1 hart, -icount shift=0 (exact)", 1.5, suites=CHECKS,
          only=("check/count_basic", "check/no_sample_exports")),
    # KVM's SBI PMU on 7.3: the L1 and L2 guests run the 7.3 kernel; the kvm entry's make test checks, on the
    # same patched outer QEMU. KVM's selftest in the L1 guest runs in make test-kvm only (--full): 7.3's overflow
    # test waits 2 s of guest time per interrupt, 20 s in all against 4 s for 6.12's, which took the C boot to 15
    # minutes on a loaded 2-core host; it checks the L1 guest's KVM, not the drivers.
    Entry("7.3-kvm", ("--kernel", "7.3", "--nested", "--icount", "--smp", "2", "--outer-qemu", "patched"),
          "Linux 7.3, KVM's SBI PMU (snapshot memory) in a nested guest, 2 vCPUs on one exact L1 hart, patched "
          "outer QEMU", 3, suites=CHECKS, only=("check/snapshot", "check/leader_sampling",
                                                "check/sbi_calls_per_switch", "check/kvm_sampling"),
          l1_selftest_in_full_only=True),
]}

# The other 6.12 entries on 7.3, for make test-full (--full all), which runs everything on both kernels. What they
# exercise (the fallbacks without Sscofpmf or without the PMU extension, counter delegation, a malformed device-tree
# map) does not change with the kernel, so make test runs them on 6.12 only.
for _e in [ENTRIES[n] for n in ("no-sscofpmf", "cdeleg", "cdeleg-smp2", "sbi02", "dtmap-malformed", "no-pmu")]:
    ENTRIES["7.3-" + _e.name] = _e._replace(name="7.3-" + _e.name, qemu=("--kernel", "7.3", *_e.qemu),
                                            about="Linux 7.3, " + _e.about, full_only=True)

# The entries the harness boots when not told which (make test).
DEFAULT_ENTRIES = tuple(name for name, e in ENTRIES.items() if e.default and not e.full_only)
# The same when every entry runs in full (make test-full).
FULL_ENTRIES = tuple(name for name, e in ENTRIES.items() if e.default)

# Suites that run only on the entries that list them in own_suites.
ENTRY_ONLY_SUITES = {s for e in ENTRIES.values() for s in e.own_suites}


def entry_suites(entry, suites):
    """The suites of `suites` (in that order) that run on the entry."""
    e = ENTRIES[entry]
    return [s for s in suites if (e.suites is None or s in e.suites)
            and (s not in ENTRY_ONLY_SUITES or s in e.own_suites)]


def runs_in_full(entry, full):
    """Whether the entry runs every test (`full`: the entry names of --full, or "all"), not make test's short
    version."""
    return entry in full or "all" in full
