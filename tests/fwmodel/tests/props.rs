// SPDX-License-Identifier: GPL-2.0

//! Property tests of the driver core against the firmware model: arbitrary sequences of perf
//! operations, simulated events, overflows, context switches and migrations between two CPUs.

use fwmodel::csrs::QEMU_VIRT_SELECTORS;
use fwmodel::harness::{CpuDriver, System};
use fwmodel::reference::PerEvent;
use fwmodel::spec::{self, Function, Version};
use fwmodel::{Config, Mode, Model, SimEvent};
use proptest::prelude::*;
use sbi_pmu::abi::SbiVersion;
use sbi_pmu::counters::HwPerfEvent;
use sbi_pmu::events::{EventAttr, PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW};
use sbi_pmu::pmu::CpuHwEvents;

const NCPUS: usize = 2;

/// The proptest configuration: `cases` cases, or `PROPTEST_CASES` when set (for longer soak runs),
/// and no regression files written into the tree.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The platform of one case.
#[derive(Clone, Debug)]
struct Setup {
    version: Version,
    snapshot: bool,
    sscofpmf: bool,
    /// Width of the programmable counters.
    bits: u32,
    programmable: usize,
    /// How large simulated event bursts are: 0 small, 1 up to a quarter range, 2 several ranges.
    scale: u8,
    seed: u64,
    /// Whether user mode reads any configured counter (KVM): then nothing is parked.
    reads_configured: bool,
    /// Whether the hart delegates its hardware counters (Smcdeleg/Ssccfg) and has QEMU virt's
    /// events, which the driver then programs with CSRs.
    deleg: bool,
}

impl Setup {
    fn config(&self) -> Config {
        let mut cfg = Config::opensbi_like(self.version, self.programmable, self.bits);
        cfg.snapshot = self.snapshot && self.version >= Version::V2_0;
        cfg.sscofpmf = self.sscofpmf;
        cfg.seed = self.seed;
        cfg.reads_configured_counters = self.reads_configured;
        if self.deleg {
            cfg = cfg.with_cdeleg();
            cfg.hw_events = Some(QEMU_VIRT_SELECTORS.iter().map(|(idx, _)| *idx).collect());
        }
        cfg
    }

    fn tick_max(&self) -> u64 {
        if !self.sscofpmf {
            // Without overflow interrupts a counter must not wrap twice between reads.
            return 1 << 20;
        }
        match self.scale {
            0 => 1 << 10,
            1 => 1u64 << (self.bits - 2).min(56),
            _ => 1u64 << (self.bits + 1).min(56),
        }
    }
}

fn setup_strategy() -> impl Strategy<Value = Setup> {
    (
        prop_oneof![
            Just(Version::V0_3),
            Just(Version::V2_0),
            Just(Version::V3_0)
        ],
        any::<bool>(),
        prop_oneof![3 => Just(true), 1 => Just(false)],
        prop_oneof![
            Just(32u32),
            Just(33),
            Just(40),
            Just(47),
            Just(48),
            Just(56),
            Just(63),
            Just(64),
            32u32..=64
        ],
        2usize..=8,
        0u8..3,
        any::<u64>(),
        prop_oneof![3 => Just(false), 1 => Just(true)],
        any::<bool>(),
    )
        .prop_map(
            |(
                version,
                snapshot,
                sscofpmf,
                bits,
                programmable,
                scale,
                seed,
                reads_configured,
                deleg,
            )| {
                Setup {
                    deleg,
                    version,
                    snapshot,
                    sscofpmf,
                    bits,
                    programmable,
                    scale,
                    seed,
                    reads_configured,
                }
            },
        )
}

/// One perf event of a case.
#[derive(Clone, Debug)]
struct EvSpec {
    kind: u8,
    code: u8,
    exclude_user: bool,
    exclude_kernel: bool,
    guest: bool,
    /// 0: counting; otherwise scaled to a sampling period.
    period: u32,
}

fn ev_strategy() -> impl Strategy<Value = EvSpec> {
    (
        0u8..6,
        any::<u8>(),
        any::<bool>(),
        any::<bool>(),
        prop_oneof![4 => Just(false), 1 => Just(true)],
        prop_oneof![2 => Just(0u32), 1 => any::<u32>()],
    )
        .prop_map(
            |(kind, code, exclude_user, exclude_kernel, guest, period)| EvSpec {
                kind,
                code,
                exclude_user,
                exclude_kernel,
                guest,
                period,
            },
        )
}

impl EvSpec {
    fn attr(&self, sscofpmf: bool) -> EventAttr {
        let (ty, config) = match self.kind {
            0 => (PERF_TYPE_HARDWARE, 0),
            1 => (PERF_TYPE_HARDWARE, 1),
            2 => (PERF_TYPE_HARDWARE, 2 + u64::from(self.code % 8)),
            3 => (
                PERF_TYPE_HW_CACHE,
                u64::from(self.code % 7)
                    | u64::from(self.code / 7 % 3) << 8
                    | u64::from(self.code / 21 % 2) << 16,
            ),
            4 => (PERF_TYPE_RAW, 0x10 + u64::from(self.code % 4)),
            _ => (PERF_TYPE_RAW, 1 << 63 | u64::from(self.code % 22)),
        };
        // perf refuses exclude bits on a PMU without filtering (PERF_PMU_CAP_NO_EXCLUDE).
        EventAttr {
            ty,
            config,
            config1: u64::from(self.guest && sscofpmf),
            exclude_user: self.exclude_user && sscofpmf,
            exclude_kernel: self.exclude_kernel && sscofpmf,
            ..EventAttr::default()
        }
    }

    fn sample_period(&self, setup: &Setup) -> u64 {
        // Only hardware events sample, and only with an overflow interrupt.
        if self.period == 0 || self.kind == 5 || !setup.sscofpmf {
            return 0;
        }
        let max = setup.tick_max();
        (max / 128).max(1) + u64::from(self.period) % max.saturating_mul(4)
    }
}

/// One operation of a case; indices are taken modulo what exists, and operations that do not apply
/// to the current state are skipped, as perf would never issue them.
#[derive(Clone, Debug)]
enum Op {
    Add { ev: u8, cpu: u8, start: bool },
    Del { ev: u8 },
    Start { ev: u8 },
    Stop { ev: u8 },
    Read { ev: u8 },
    Tick { cpu: u8, ev: u8, mode: u8, n: u64 },
    Disable { cpu: u8 },
    Enable { cpu: u8 },
    Switch { cpu: u8 },
    Migrate { ev: u8, cpu: u8 },
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<u8>(), any::<u8>(), prop_oneof![4 => Just(true), 1 => Just(false)])
            .prop_map(|(ev, cpu, start)| Op::Add { ev, cpu, start }),
        2 => any::<u8>().prop_map(|ev| Op::Del { ev }),
        2 => any::<u8>().prop_map(|ev| Op::Start { ev }),
        2 => any::<u8>().prop_map(|ev| Op::Stop { ev }),
        2 => any::<u8>().prop_map(|ev| Op::Read { ev }),
        8 => (any::<u8>(), any::<u8>(), any::<u8>(), any::<u64>())
            .prop_map(|(cpu, ev, mode, n)| Op::Tick { cpu, ev, mode, n }),
        2 => any::<u8>().prop_map(|cpu| Op::Disable { cpu }),
        2 => any::<u8>().prop_map(|cpu| Op::Enable { cpu }),
        2 => any::<u8>().prop_map(|cpu| Op::Switch { cpu }),
        2 => (any::<u8>(), any::<u8>()).prop_map(|(ev, cpu)| Op::Migrate { ev, cpu }),
    ]
}

/// Opens the events and runs the operations with driver `D`, checking the invariants after each one.
/// Returns the system and the outcome of every add, so two runs can be compared.
fn run<D: CpuDriver>(setup: &Setup, evs: &[EvSpec], ops: &[Op]) -> (System<D>, Vec<bool>) {
    let mut sys = System::<D>::with_driver(setup.config(), NCPUS);
    let events: Vec<usize> = evs
        .iter()
        .filter_map(|e| {
            sys.open(e.attr(setup.sscofpmf), e.sample_period(setup))
                .ok()
        })
        .collect();
    let mut outcomes = Vec::new();
    if events.is_empty() {
        return (sys, outcomes);
    }
    let pick = |i: u8| events[usize::from(i) % events.len()];
    let cpu_of = |i: u8| usize::from(i) % NCPUS;
    for op in ops {
        match *op {
            Op::Add { ev, cpu, start } => {
                let e = pick(ev);
                if sys.events[e].cpu.is_none() {
                    outcomes.push(sys.add(e, cpu_of(cpu), start).is_ok());
                }
            }
            Op::Del { ev } => {
                let e = pick(ev);
                if sys.events[e].cpu.is_some() {
                    sys.del(e);
                }
            }
            Op::Start { ev } => {
                let e = pick(ev);
                if sys.events[e].cpu.is_some() && !sys.events[e].active {
                    sys.start(e);
                }
            }
            Op::Stop { ev } => {
                let e = pick(ev);
                if sys.events[e].active {
                    sys.stop(e);
                }
            }
            Op::Read { ev } => sys.read(pick(ev)),
            Op::Tick { cpu, ev, mode, n } => {
                let cpu = cpu_of(cpu);
                if sys.cpus[cpu].window == 0 {
                    let stream = sys.events[pick(ev)].stream;
                    let mode = Mode::ALL[usize::from(mode) % Mode::ALL.len()];
                    sys.tick(cpu, stream, mode, 1 + n % setup.tick_max());
                }
            }
            Op::Disable { cpu } => {
                let cpu = cpu_of(cpu);
                if sys.cpus[cpu].window < 3 {
                    sys.disable(cpu);
                }
            }
            Op::Enable { cpu } => {
                let cpu = cpu_of(cpu);
                if sys.cpus[cpu].window > 0 {
                    sys.enable(cpu);
                }
            }
            Op::Switch { cpu } => {
                let cpu = cpu_of(cpu);
                let on = sys.events_on(cpu);
                let active: Vec<bool> = on.iter().map(|e| sys.events[*e].active).collect();
                sys.disable(cpu);
                for e in &on {
                    sys.del(*e);
                }
                sys.enable(cpu);
                sys.check_invariants();
                sys.disable(cpu);
                for (e, start) in on.iter().zip(active) {
                    outcomes.push(sys.add(*e, cpu, start).is_ok());
                }
                sys.enable(cpu);
            }
            Op::Migrate { ev, cpu } => {
                let e = pick(ev);
                let to = cpu_of(cpu);
                if let Some(from) = sys.events[e].cpu {
                    let start = sys.events[e].active;
                    sys.disable(from);
                    sys.del(e);
                    sys.enable(from);
                    sys.disable(to);
                    outcomes.push(sys.add(e, to, start).is_ok());
                    sys.enable(to);
                }
            }
        }
        sys.check_invariants();
    }
    sys.settle();
    sys.check_invariants();
    sys.check_counts();
    (sys, outcomes)
}

proptest! {
    #![proptest_config(config(160))]

    /// Every event's count equals the number of simulated events it should have counted, at every
    /// counter width, with the crate's driver; allocation, running state and firmware mappings stay
    /// consistent after every operation.
    #[test]
    fn counts_match_simulated_events(
        setup in setup_strategy(),
        evs in proptest::collection::vec(ev_strategy(), 1..8),
        ops in proptest::collection::vec(op_strategy(), 1..60),
    ) {
        run::<CpuHwEvents>(&setup, &evs, &ops);
    }

    /// With counter delegation, hardware events make no SBI call after boot: configuration, start,
    /// stop, read, context switches, migrations and overflow interrupts are CSR accesses only,
    /// while counts stay exact (checked by `run`). Enough programmable counters for every event,
    /// so none falls back to the fixed counters, which stay with the SBI implementation.
    #[test]
    fn delegated_hardware_events_make_no_sbi_call(
        mut setup in setup_strategy(),
        evs in proptest::collection::vec(ev_strategy(), 1..8),
        ops in proptest::collection::vec(op_strategy(), 1..60),
    ) {
        setup.deleg = true;
        setup.programmable = 8;
        let evs: Vec<EvSpec> = evs.into_iter().filter(|e| e.kind != 5).collect();
        let (sys, _) = run::<CpuHwEvents>(&setup, &evs, &ops);
        let delegated = sys.cpus.iter().map(|c| c.deleg.delegated()).collect::<Vec<_>>();
        prop_assert!(delegated.iter().all(|d| *d == 0xff << 3), "delegated {:x?}", delegated);
        prop_assert_eq!(sys.calls_since_boot(), 0);
    }
}

proptest! {
    #![proptest_config(config(64))]

    /// The same with the reference driver (the C driver's per-event calls), which checks the
    /// reference itself.
    #[test]
    fn reference_counts_match_simulated_events(
        setup in setup_strategy(),
        evs in proptest::collection::vec(ev_strategy(), 1..8),
        ops in proptest::collection::vec(op_strategy(), 1..60),
    ) {
        run::<PerEvent>(&setup, &evs, &ops);
    }

    /// With counters for every event, the crate's driver never makes more SBI calls than the C
    /// driver's per-event calls for the same operations, both count exactly, and both find a counter
    /// for the same adds. Overflow interrupts are compared per interrupt: their number follows the
    /// counter values (the crate's driver lets counting events continue from the value they hold,
    /// the C driver loads half the range), and each costs at most one stop and one start, plus one
    /// start per reloaded counter without snapshot memory.
    ///
    /// With snapshot memory firmware counter reads are left out of the comparison (the C driver
    /// reads a counter it has stopped from the snapshot page, the crate's driver also reads running
    /// ones), and each stop of every running counter in a window (`PmuStats::freezes`) may cost one
    /// start more, when perf still wants some of those counters.
    #[test]
    fn batching_never_costs_more_than_the_c_driver(
        mut setup in setup_strategy(),
        evs in proptest::collection::vec(ev_strategy(), 1..8),
        ops in proptest::collection::vec(op_strategy(), 1..60),
    ) {
        setup.programmable = 8;
        let (batched, a) = run::<CpuHwEvents>(&setup, &evs, &ops);
        let (reference, b) = run::<PerEvent>(&setup, &evs, &ops);
        prop_assert_eq!(&a, &b);
        let snapshot = setup.snapshot && setup.version >= Version::V2_0;
        let compared = |calls: u64, overflow_calls: u64, fw_reads: u64| {
            calls - overflow_calls - if snapshot { fw_reads } else { 0 }
        };
        let batched_calls = compared(
            batched.calls_since_boot(),
            batched.overflow_calls(),
            batched.calls_of(Function::CounterFwRead),
        );
        let reference_calls = compared(
            reference.calls_since_boot(),
            reference.overflow_calls(),
            reference.calls_of(Function::CounterFwRead),
        );
        // With snapshot memory a window's first stop stops every running counter at once (one call
        // for a whole context switch, with every event read from the saved values); when perf still
        // wants some of them, the flush starts them again: at most one call more per such stop.
        let freezes: u64 = batched.cpus.iter().map(|c| c.pmu.stats().freezes).sum();
        prop_assert!(
            batched_calls <= reference_calls + freezes,
            "batched {} > reference {} + {} freezes", batched_calls, reference_calls, freezes
        );
        let per_irq = if snapshot { 2 } else { 2 + 8 };
        for (calls, irqs) in [
            (batched.overflow_calls(), batched.overflows()),
            (reference.overflow_calls(), reference.overflows()),
        ] {
            prop_assert!(calls <= irqs * per_irq, "{} calls for {} interrupts", calls, irqs);
        }
    }

    /// A context switch of a task with counting hardware events costs no SBI call once the events
    /// have their counters (their counters coast while the task is out), at any width, with
    /// snapshot memory or without, and with events happening in between; except where user mode
    /// reads any configured counter (KVM), where nothing coasts.
    #[test]
    fn context_switch_makes_no_sbi_call(
        mut setup in setup_strategy(),
        evs in proptest::collection::vec(ev_strategy(), 1..8),
        ticks in proptest::collection::vec((any::<u8>(), any::<u8>(), any::<u64>()), 1..10),
    ) {
        setup.sscofpmf = true;
        setup.programmable = 8;
        setup.reads_configured = false;
        let mut sys = System::new(setup.config(), 1);
        let events: Vec<usize> = evs
            .iter()
            .filter(|e| e.kind != 5)
            .filter_map(|e| sys.open(EventAttr { exclude_kernel: e.exclude_kernel, ..e.attr(true) }, 0).ok())
            .collect();
        prop_assume!(!events.is_empty());
        sys.disable(0);
        for e in &events {
            sys.add(*e, 0, true).unwrap();
        }
        sys.enable(0);
        for (ev, mode, n) in ticks {
            let stream = sys.events[events[usize::from(ev) % events.len()]].stream;
            sys.tick(0, stream, Mode::ALL[usize::from(mode) % 5], 1 + n % setup.tick_max());
            let before = sys.cpus[0].model.calls();
            sys.disable(0);
            for e in &events {
                sys.del(*e);
            }
            sys.enable(0);
            sys.disable(0);
            for e in &events {
                sys.add(*e, 0, true).unwrap();
            }
            sys.enable(0);
            let after = sys.cpus[0].model.calls();
            let diff: Vec<u64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
            prop_assert_eq!(&diff[..], &[0u64; 9][..]);
            sys.check_invariants();
        }
        sys.settle();
        sys.check_counts();
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Arbitrary raw SBI calls: the model answers with a specified error code or success, never
    /// panics, and the typed conversion keeps the code.
    #[test]
    fn raw_calls_give_typed_errors(
        version in prop_oneof![Just(Version::V0_3), Just(Version::V2_0), Just(Version::V3_0)],
        calls in proptest::collection::vec((0usize..10, any::<[usize; 6]>(), any::<u8>()), 1..40),
    ) {
        let mut m = Model::new(Config::opensbi_like(version, 4, 40));
        for (fid, mut args, small) in calls {
            // Small arguments reach the interesting paths more often than random words.
            if small % 2 == 0 {
                for a in &mut args {
                    *a %= 64;
                }
            }
            let r = m.ecall(spec::EXT_PMU, fid, args);
            prop_assert!((-9..=0).contains(&r.error), "{fid} {args:?}: {r:?}");
            match r.result() {
                Ok(v) => prop_assert_eq!(v, r.value),
                Err(e) => prop_assert_eq!(e.code(), r.error),
            }
        }
    }

    /// Arbitrary per-event state handed to the driver core (as a corrupted `hw_perf_event` would
    /// be) never panics and never starts a counter no event holds.
    #[test]
    fn garbage_event_state_never_panics(
        evs in proptest::collection::vec((any::<i32>(), any::<u64>(), any::<u64>(), any::<u64>(), any::<u32>(), any::<u32>(), any::<u64>(), any::<i64>(), any::<u64>(), any::<u64>()), 1..20),
        ops in proptest::collection::vec(0u8..8, 1..40),
    ) {
        let cfg = Config::opensbi_like(Version::V3_0, 4, 40);
        let mut m = Model::new(cfg);
        let info = sbi_pmu::counters::PmuInfo::probe(&mut m, SbiVersion::V3_0).unwrap();
        let mut cpu = CpuHwEvents::new(&info);
        let _ = cpu.cpu_starting(&mut m, true);
        let mut hws: Vec<HwPerfEvent> = evs
            .iter()
            .map(|&(idx, event_base, config, config_base, flags, state, prev_count, period_left, sample_period, cmask)| {
                HwPerfEvent {
                    idx: idx % 70,
                    // Half the events have a valid `event_idx`, under any `last_tag`.
                    event_base: if event_base % 2 == 0 { (event_base & !0xffff_ffff) | ((event_base & 0xffff_ffff) % 0x40000) } else { event_base },
                    config,
                    config_base,
                    flags,
                    state,
                    prev_count,
                    period_left,
                    sample_period,
                    last_period: 0,
                    pmu_private: cmask,
                    id: 0,
                }
            })
            .collect();
        let n = hws.len();
        for (i, op) in ops.iter().enumerate() {
            let hw = &mut hws[i % n];
            match op {
                0 => { let _ = cpu.add(&mut m, hw, true); }
                1 => { cpu.del(&mut m, hw); }
                2 => cpu.start(&mut m, hw),
                3 => { cpu.stop(&mut m, hw); }
                4 => { cpu.read(&mut m, hw); }
                5 => cpu.pmu_disable(),
                6 => cpu.pmu_enable(&mut m),
                _ => {
                    let mask = cpu.overflow_begin(&mut m);
                    let _ = mask;
                    let _ = cpu.overflow_event(&mut m, hw);
                    cpu.overflow_end(&mut m);
                }
            }
            prop_assert!(m.anomalies().is_empty(), "{:?}", m.anomalies());
        }
    }
}

#[test]
fn simulated_events_reach_only_matching_counters() {
    // A sanity check of the harness itself: an event nobody counts changes nothing.
    let setup = Setup {
        version: Version::V2_0,
        snapshot: true,
        sscofpmf: true,
        bits: 48,
        programmable: 4,
        scale: 0,
        seed: 3,
        reads_configured: false,
        deleg: false,
    };
    let mut sys = System::new(setup.config(), 1);
    let e = sys
        .open(
            EventAttr {
                ty: PERF_TYPE_RAW,
                config: 0x11,
                ..EventAttr::default()
            },
            0,
        )
        .unwrap();
    sys.add(e, 0, true).unwrap();
    sys.tick(0, SimEvent::Raw(0x12), Mode::U, 100);
    sys.tick(0, SimEvent::Fw(3), Mode::U, 100);
    sys.settle();
    assert_eq!(sys.events[e].count, 0);
    sys.check_counts();
}
