// SPDX-License-Identifier: GPL-2.0

//! Scenarios of the driver core against the firmware model: the context switch cost, the snapshot
//! overflow path, the fallbacks when firmware lacks a feature, and the errno of every failure.

use fwmodel::harness::System;
use fwmodel::reference::PerEvent;
use fwmodel::spec::{self, Function, Version};
use fwmodel::{Config, Mode, Model, SimEvent};
use sbi_pmu::abi::{CfgFlags, EventIdx, Fid, HwGeneralEvent, SbiError, SbiVersion};
use sbi_pmu::counters::{HesState, HwEvent, HwFlags};
use sbi_pmu::counters::{HwPerfEvent, PmuInfo};
use sbi_pmu::errno::{EINVAL, ENOENT, ENOTSUPP};
use sbi_pmu::events::{
    EventAttr, MapError, StdEvents, PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW,
};
use sbi_pmu::firmware::Firmware;
use sbi_pmu::pmu::{AddError, CpuHwEvents};

fn hw_attr(config: u64) -> EventAttr {
    EventAttr {
        ty: PERF_TYPE_HARDWARE,
        config,
        ..EventAttr::default()
    }
}

fn raw_attr(config: u64) -> EventAttr {
    EventAttr {
        ty: PERF_TYPE_RAW,
        config,
        ..EventAttr::default()
    }
}

fn fw_attr(code: u64) -> EventAttr {
    raw_attr(1 << 63 | code)
}

const CYCLES: SimEvent = SimEvent::Hw(spec::hw_general_event(spec::SBI_PMU_HW_CPU_CYCLES));
const INSTRUCTIONS: SimEvent = SimEvent::Hw(spec::hw_general_event(spec::SBI_PMU_HW_INSTRUCTIONS));
const CACHE_REFERENCES: SimEvent =
    SimEvent::Hw(spec::hw_general_event(spec::SBI_PMU_HW_CACHE_REFERENCES));
const BRANCHES: SimEvent =
    SimEvent::Hw(spec::hw_general_event(spec::SBI_PMU_HW_BRANCH_INSTRUCTIONS));

fn calls_of<D>(sys: &System<D>, cpu: usize, f: Function) -> u64 {
    sys.cpus[cpu].model.calls_of(f)
}

/// Opens counting events, adds them on CPU 0 and runs some events.
fn counting_system(cfg: Config, attrs: &[EventAttr]) -> (System, Vec<usize>) {
    let mut sys = System::new(cfg, 1);
    let events: Vec<usize> = attrs.iter().map(|a| sys.open(*a, 0).unwrap()).collect();
    sys.disable(0);
    for e in &events {
        sys.add(*e, 0, true).unwrap();
    }
    sys.enable(0);
    sys.check_invariants();
    (sys, events)
}

/// One monitored task switched out and back in: perf core deletes its events in one disable window
/// and adds them back in another.
fn context_switch(sys: &mut System, events: &[usize]) -> (u64, u64) {
    let before = sys.calls_since_boot();
    sys.disable(0);
    for e in events {
        sys.del(*e);
    }
    sys.enable(0);
    let out = sys.calls_since_boot() - before;
    sys.check_invariants();
    let before = sys.calls_since_boot();
    sys.disable(0);
    for e in events {
        sys.add(*e, 0, true).unwrap();
    }
    sys.enable(0);
    sys.check_invariants();
    (out, sys.calls_since_boot() - before)
}

#[test]
fn context_switch_of_counting_events_makes_no_sbi_call() {
    // The counters of counting hardware events keep running while their task is out, with snapshot
    // memory or without: no call either way, and what they count meanwhile is not added to the
    // events.
    let attrs = [hw_attr(0), hw_attr(1), hw_attr(4), raw_attr(0x11)];
    for (version, snapshot) in [
        (Version::V0_3, false),
        (Version::V2_0, false),
        (Version::V2_0, true),
        (Version::V3_0, false),
        (Version::V3_0, true),
    ] {
        for bits in [32, 48, 64] {
            let mut cfg = Config::opensbi_like(version, 6, bits);
            cfg.snapshot = snapshot;
            let (mut sys, events) = counting_system(cfg, &attrs);
            assert_eq!(sys.cpus[0].pmu.snapshot_enabled(), snapshot);
            let matches = calls_of(&sys, 0, Function::CounterConfigMatching);
            for round in 0..3 {
                sys.tick(0, CYCLES, Mode::U, 1000);
                sys.tick(0, SimEvent::Raw(0x11), Mode::S, 77);
                let (out, back) = context_switch(&mut sys, &events);
                assert_eq!(
                    (out, back),
                    (0, 0),
                    "{version:?} snapshot {snapshot} {bits} bits round {round}"
                );
                assert_eq!(calls_of(&sys, 0, Function::CounterConfigMatching), matches);
            }
            sys.tick(0, INSTRUCTIONS, Mode::S, 5);
            sys.settle();
            sys.check_counts();
            assert_eq!(sys.events[events[0]].count, 3000);
            assert_eq!(sys.events[events[1]].count, 5);
            assert_eq!(sys.events[events[3]].count, 231);
        }
    }
}

#[test]
fn coasting_counters_count_nothing_for_their_events() {
    // While the task is out its counters coast; what happens then (here enough to wrap a 32-bit
    // counter, whose overflow interrupt stops it) counts for no event, and the events find their
    // counters again.
    let attrs = [hw_attr(0), hw_attr(1), raw_attr(0x11)];
    for bits in [32, 64] {
        let mut cfg = Config::opensbi_like(Version::V2_0, 6, bits);
        cfg.snapshot = false;
        let (mut sys, events) = counting_system(cfg, &attrs);
        let matches = calls_of(&sys, 0, Function::CounterConfigMatching);
        sys.tick(0, CYCLES, Mode::U, 1000);
        sys.disable(0);
        for e in &events {
            sys.del(*e);
        }
        sys.enable(0);
        assert_eq!(
            sys.cpus[0].pmu.masks().coasting().count_ones(),
            3,
            "{bits} bits"
        );
        sys.check_invariants();
        sys.tick(0, CYCLES, Mode::U, 3 << 31);
        sys.tick(0, SimEvent::Raw(0x11), Mode::S, 9);
        sys.check_invariants();
        sys.disable(0);
        for e in &events {
            sys.add(*e, 0, true).unwrap();
        }
        sys.enable(0);
        sys.check_invariants();
        assert_eq!(calls_of(&sys, 0, Function::CounterConfigMatching), matches);
        sys.tick(0, SimEvent::Raw(0x11), Mode::S, 4);
        sys.settle();
        sys.check_counts();
        assert_eq!(sys.events[events[0]].count, 1000, "{bits} bits");
        assert_eq!(sys.events[events[2]].count, 4, "{bits} bits");
    }
}

#[test]
fn context_switch_with_firmware_events_adds_only_their_reads() {
    // Without snapshot memory firmware counters are read with an SBI call when perf stops them;
    // nothing else is added.
    let attrs = [hw_attr(0), fw_attr(5), fw_attr(7)];
    let mut cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    cfg.snapshot = false;
    let (mut sys, events) = counting_system(cfg, &attrs);
    sys.tick(0, SimEvent::Fw(5), Mode::S, 3);
    let reads = calls_of(&sys, 0, Function::CounterFwRead);
    let (out, back) = context_switch(&mut sys, &events);
    assert_eq!(out, 1 + 2);
    assert_eq!(back, 1);
    assert_eq!(calls_of(&sys, 0, Function::CounterFwRead) - reads, 2);
    sys.tick(0, SimEvent::Fw(7), Mode::S, 4);
    sys.settle();
    sys.check_counts();
    assert_eq!(sys.events[events[1]].count, 3);
    assert_eq!(sys.events[events[2]].count, 4);
}

#[test]
fn nested_windows_defer_their_work_to_the_outermost_enable() {
    // perf core calls pmu_enable only when its count of windows returns to 0 (a window opened inside
    // a context's, say): the stop the inner window records waits for the outer one's end, and events
    // that come back before it leave their counters running.
    let attrs = [fw_attr(5), fw_attr(7)];
    let mut cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    cfg.snapshot = false;
    let (mut sys, events) = counting_system(cfg, &attrs);
    let before = sys.calls_since_boot();
    let stops = calls_of(&sys, 0, Function::CounterStop);
    sys.disable(0);
    sys.disable(0);
    for e in &events {
        sys.del(*e);
    }
    sys.enable(0);
    // Only the firmware counters' reads so far: the stop waits.
    assert_eq!(calls_of(&sys, 0, Function::CounterStop), stops);
    assert_eq!(sys.calls_since_boot() - before, 2);
    for e in &events {
        sys.add(*e, 0, true).unwrap();
    }
    sys.enable(0);
    // The counters left and came back within the window: they never stopped, nothing to start.
    assert_eq!(calls_of(&sys, 0, Function::CounterStop), stops);
    assert_eq!(sys.calls_since_boot() - before, 2);
    sys.tick(0, SimEvent::Fw(7), Mode::S, 4);
    sys.settle();
    sys.check_counts();
    assert_eq!(sys.events[events[1]].count, 4);
}

#[test]
fn context_switch_with_snapshot_stops_firmware_counters_once_and_reads_hardware_ones() {
    // With snapshot memory the first stop of the window stops every counter that cannot coast (the
    // firmware ones) with TAKE_SNAPSHOT and their events are updated from the saved values; the
    // hardware counters coast, read at del and at add: 5 hardware and 3 firmware events switch out
    // with one call and back in with one, with no firmware read and two CSR reads per hardware event.
    let attrs = [
        hw_attr(0),
        hw_attr(1),
        hw_attr(2),
        hw_attr(4),
        hw_attr(5),
        fw_attr(5),
        fw_attr(7),
        fw_attr(8),
    ];
    let cfg = Config::opensbi_like(Version::V2_0, 8, 48);
    assert!(cfg.snapshot);
    let (mut sys, events) = counting_system(cfg, &attrs);
    assert!(sys.cpus[0].pmu.snapshot_enabled());
    for round in 0..3u64 {
        sys.tick(0, CYCLES, Mode::U, 1000);
        sys.tick(0, SimEvent::Fw(5), Mode::S, 3);
        sys.tick(0, SimEvent::Fw(8), Mode::S, 2);
        let reads = calls_of(&sys, 0, Function::CounterFwRead);
        let csr_reads = sys.cpus[0].model.csr_reads();
        let (out, back) = context_switch(&mut sys, &events);
        assert_eq!((out, back), (1, 1), "round {round}");
        assert_eq!(
            calls_of(&sys, 0, Function::CounterFwRead),
            reads,
            "round {round}"
        );
        assert_eq!(
            sys.cpus[0].model.csr_reads(),
            csr_reads + 10,
            "round {round}"
        );
    }
    sys.tick(0, SimEvent::Fw(7), Mode::S, 4);
    sys.settle();
    sys.check_counts();
    assert_eq!(sys.events[events[0]].count, 3000);
    assert_eq!(sys.events[events[5]].count, 9);
    assert_eq!(sys.events[events[6]].count, 4);
    assert_eq!(sys.events[events[7]].count, 6);
}

#[test]
fn where_user_mode_reads_configured_counters_none_stays_configured_for_a_switched_out_task() {
    // Under KVM user mode reads any configured counter, whatever the guest's scounteren says: the
    // counters of events that leave the CPU are stopped with RESET in one call at the flush (no
    // parking, no coasting), configured again when the events come back, and the counts stay exact.
    for snapshot in [false, true] {
        let mut cfg = Config::opensbi_like(Version::V2_0, 6, 48);
        cfg.snapshot = snapshot;
        cfg.reads_configured_counters = true;
        let attrs = [hw_attr(0), hw_attr(1), raw_attr(0x11), fw_attr(5)];
        let (mut sys, events) = counting_system(cfg, &attrs);
        for round in 0..3 {
            sys.tick(0, CYCLES, Mode::U, 1000);
            sys.tick(0, SimEvent::Raw(0x11), Mode::S, 77);
            sys.tick(0, SimEvent::Fw(5), Mode::S, 3);
            let idxs: Vec<usize> = events
                .iter()
                .map(|e| sys.events[*e].hw.counter().unwrap())
                .collect();
            let matches = calls_of(&sys, 0, Function::CounterConfigMatching);
            let stops = calls_of(&sys, 0, Function::CounterStop);
            sys.disable(0);
            for e in &events {
                sys.del(*e);
            }
            sys.enable(0);
            for idx in &idxs {
                assert_eq!(
                    sys.cpus[0].model.counter_event(*idx),
                    None,
                    "snapshot {snapshot} round {round}: counter {idx} still configured"
                );
            }
            assert!(
                calls_of(&sys, 0, Function::CounterStop) <= stops + 2,
                "snapshot {snapshot} round {round}"
            );
            assert_eq!(sys.cpus[0].pmu.masks().parked, 0);
            sys.check_invariants();
            sys.disable(0);
            for e in &events {
                sys.add(*e, 0, true).unwrap();
            }
            sys.enable(0);
            assert_eq!(
                calls_of(&sys, 0, Function::CounterConfigMatching),
                matches + 4,
                "snapshot {snapshot} round {round}"
            );
            sys.check_invariants();
        }
        sys.tick(0, INSTRUCTIONS, Mode::S, 5);
        sys.settle();
        sys.check_counts();
        assert_eq!(sys.events[events[0]].count, 3000);
        assert_eq!(sys.events[events[1]].count, 5);
        assert_eq!(sys.events[events[2]].count, 231);
        assert_eq!(sys.events[events[3]].count, 9);
    }
}

#[test]
fn an_event_leaving_and_returning_in_one_window_gets_a_counter_where_user_mode_reads_them() {
    // The counter an event left waits for its reset until the flush; an event that needs it in the
    // same window (here the only counter it may use) has it reset at once and configured again.
    let mut cfg = Config::opensbi_like(Version::V2_0, 1, 48);
    cfg.reads_configured_counters = true;
    let (mut sys, events) = counting_system(cfg, &[raw_attr(0x11)]);
    sys.tick(0, SimEvent::Raw(0x11), Mode::S, 10);
    sys.disable(0);
    sys.del(events[0]);
    sys.add(events[0], 0, true).unwrap();
    sys.enable(0);
    sys.check_invariants();
    sys.tick(0, SimEvent::Raw(0x11), Mode::S, 7);
    sys.settle();
    sys.check_counts();
    assert_eq!(sys.events[events[0]].count, 17);
}

#[test]
fn reference_issues_the_c_driver_calls() {
    let cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    let mut sys = System::<PerEvent>::with_driver(cfg, 1);
    let e = sys.open(hw_attr(0), 0).unwrap();
    let calls = |sys: &System<PerEvent>| {
        [
            Function::CounterConfigMatching,
            Function::CounterStart,
            Function::CounterStop,
        ]
        .map(|f| calls_of(sys, 0, f))
    };
    let before = calls(&sys);
    sys.disable(0);
    sys.add(e, 0, true).unwrap();
    sys.enable(0);
    // config_matching, then start with an initial value, at once.
    let after = calls(&sys);
    assert_eq!(after, [before[0] + 1, before[1] + 1, before[2]]);
    let idx = sys.events[e].hw.counter().unwrap();
    sys.disable(0);
    sys.del(e);
    sys.enable(0);
    // stop, then stop with RESET, which drops the mapping.
    assert_eq!(calls(&sys), [after[0], after[1], after[2] + 2]);
    assert_eq!(sys.cpus[0].model.counter_event(idx), None);
    assert_eq!(sys.calls_since_boot(), 4);
    sys.check_invariants();
}

#[test]
fn parked_counter_is_reset_when_another_event_needs_it() {
    // Two programmable counters; three different events take turns.
    let cfg = Config::opensbi_like(Version::V2_0, 2, 48);
    let mut sys = System::new(cfg, 1);
    let a = sys.open(hw_attr(4), 0).unwrap();
    let b = sys.open(hw_attr(5), 0).unwrap();
    let c = sys.open(raw_attr(0x42), 0).unwrap();
    sys.add(a, 0, true).unwrap();
    sys.add(b, 0, true).unwrap();
    sys.check_invariants();
    sys.del(a);
    assert_eq!(sys.cpus[0].pmu.masks().parked.count_ones(), 1);
    // The only free counter is parked with event a: it is reset and given to c.
    sys.add(c, 0, true).unwrap();
    sys.check_invariants();
    assert_eq!(sys.cpus[0].pmu.masks().parked, 0);
    sys.tick(0, SimEvent::Raw(0x42), Mode::U, 9);
    // Now every counter is taken: a cannot come back.
    assert_eq!(
        sys.add(a, 0, true),
        Err(AddError::Sbi(SbiError::NotSupported))
    );
    for kernel_major in [6, 7] {
        assert_eq!(
            AddError::Sbi(SbiError::NotSupported).errno(kernel_major),
            ENOTSUPP
        );
    }
    sys.settle();
    sys.check_counts();
    // When the CPU goes down, parked counters lose their mapping too.
    sys.del(b);
    let parked = sys.cpus[0].pmu.masks().parked;
    assert_eq!(parked.count_ones(), 1);
    let c = &mut sys.cpus[0];
    c.pmu.cpu_dying(&mut c.model).unwrap();
    assert_eq!(c.pmu.masks().parked, 0);
    assert_eq!(
        c.model.counter_event(parked.trailing_zeros() as usize),
        None
    );
}

#[test]
fn counting_is_exact_across_wraps_at_narrow_widths() {
    for bits in [32u32, 33, 40, 47] {
        let cfg = Config::opensbi_like(Version::V2_0, 3, bits);
        let (mut sys, events) = counting_system(cfg, &[hw_attr(2), hw_attr(3)]);
        // Several full ranges of the counter: overflow interrupts keep the count exact.
        for _ in 0..5 {
            sys.tick(0, CACHE_REFERENCES, Mode::S, (1u64 << bits) + 12345);
        }
        sys.settle();
        sys.check_counts();
        assert_eq!(sys.events[events[0]].count, 5 * ((1u64 << bits) + 12345));
    }
}

#[test]
fn without_sscofpmf_one_wrap_between_reads_is_counted() {
    let mut cfg = Config::opensbi_like(Version::V2_0, 3, 32);
    cfg.sscofpmf = false;
    let (mut sys, events) = counting_system(cfg, &[hw_attr(4)]);
    for _ in 0..4 {
        sys.tick(0, BRANCHES, Mode::U, 3 << 30);
        sys.read(events[0]);
    }
    sys.settle();
    sys.check_counts();
    assert_eq!(sys.events[events[0]].count, 12 << 30);
}

#[test]
fn sampling_overflow_with_snapshot_restarts_in_one_call() {
    let cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    let mut sys = System::new(cfg, 1);
    assert!(sys.cpus[0].pmu.snapshot_enabled());
    let s1 = sys.open(hw_attr(0), 1000).unwrap();
    let s2 = sys.open(hw_attr(0), 1500).unwrap();
    let c = sys.open(hw_attr(1), 0).unwrap();
    for e in [s1, s2, c] {
        sys.add(e, 0, true).unwrap();
    }
    let stops = calls_of(&sys, 0, Function::CounterStop);
    let starts = calls_of(&sys, 0, Function::CounterStart);
    let csr_reads = sys.cpus[0].model.csr_reads();
    // 3000 cycles: overflows at 1000, 1500, 2000, 3000 (two counters at once).
    sys.tick(0, CYCLES, Mode::S, 3000);
    let irqs = sys.cpus[0].pmu.stats().overflows;
    assert_eq!(irqs, 4);
    assert_eq!(calls_of(&sys, 0, Function::CounterStop) - stops, irqs);
    assert_eq!(calls_of(&sys, 0, Function::CounterStart) - starts, irqs);
    // The overflow bitmap and the counter values come from the page: no scountovf or counter read.
    assert_eq!(sys.cpus[0].model.csr_reads(), csr_reads);
    sys.settle();
    sys.check_counts();
    assert_eq!(sys.events[s1].samples, 3);
    assert_eq!(sys.events[s2].samples, 2);
    sys.check_invariants();
}

#[test]
fn sampling_overflow_without_snapshot_reloads_each_counter() {
    let mut cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    cfg.snapshot = false;
    let mut sys = System::new(cfg, 1);
    assert!(!sys.cpus[0].pmu.snapshot_enabled());
    let s1 = sys.open(hw_attr(0), 1000).unwrap();
    let c = sys.open(hw_attr(1), 0).unwrap();
    sys.add(s1, 0, true).unwrap();
    sys.add(c, 0, true).unwrap();
    let starts = calls_of(&sys, 0, Function::CounterStart);
    sys.tick(0, CYCLES, Mode::S, 1000);
    // One plain start for the counting counter, one SET_INIT_VALUE start for the reload.
    assert_eq!(calls_of(&sys, 0, Function::CounterStart) - starts, 2);
    sys.settle();
    sys.check_counts();
    assert_eq!(sys.events[s1].samples, 1);
}

#[test]
fn a_freed_events_parked_counters_are_given_back() {
    // Under a hypervisor (snapshot memory) every configured counter is a perf event of the host:
    // once perf frees an event, the counters it left parked, running or stopped, are reset.
    let cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    assert!(cfg.snapshot);
    let (mut sys, events) = counting_system(cfg, &[hw_attr(0), hw_attr(1)]);
    sys.tick(0, CYCLES, Mode::U, 1000);
    context_switch(&mut sys, &events);
    for e in &events {
        sys.del(*e);
    }
    let pmu = &sys.cpus[0].pmu;
    let (a, b) = (
        sys.events[events[0]].hw.counter(),
        sys.events[events[1]].hw.counter(),
    );
    assert_eq!((a, b), (None, None));
    let coasting = pmu.masks().coasting();
    assert_eq!(coasting.count_ones(), 2, "both counters coast");
    let stops = calls_of(&sys, 0, Function::CounterStop);
    let owner = sys.events[events[0]].hw.id();
    let c = &mut sys.cpus[0];
    c.pmu.release_parked_of(&mut c.model, owner);
    // One stop with RESET, for the first event's counter only.
    assert_eq!(calls_of(&sys, 0, Function::CounterStop), stops + 1);
    let left = sys.cpus[0].pmu.masks().coasting();
    assert_eq!(left.count_ones(), 1);
    assert_eq!(left & !coasting, 0);
    assert_eq!(sys.cpus[0].pmu.masks().parked, left);
    // An unknown owner or one that parked nothing changes nothing.
    let c = &mut sys.cpus[0];
    c.pmu.release_parked_of(&mut c.model, owner);
    c.pmu.release_parked_of(&mut c.model, 0);
    assert_eq!(calls_of(&sys, 0, Function::CounterStop), stops + 1);
    // The other event comes back to its counter without a call; the checks of the model hold.
    let calls = sys.calls_since_boot();
    sys.add(events[1], 0, true).unwrap();
    assert_eq!(sys.calls_since_boot(), calls);
    sys.tick(0, INSTRUCTIONS, Mode::S, 7);
    sys.settle();
    sys.check_invariants();
    assert_eq!(sys.events[events[1]].count, 7);
}

#[test]
fn overflow_updates_the_mmap_page_only_where_user_space_reads_the_counter() {
    let mut sys = System::new(Config::opensbi_like(Version::V2_0, 4, 48), 1);
    let direct = sys.open(hw_attr(0), 1000).unwrap();
    let plain = sys.open(hw_attr(1), 1000).unwrap();
    // What `event_mapped` sets when the sysctl lets user space read the counter.
    let hw = &mut sys.events[direct].hw;
    hw.set_hw_flags(hw.hw_flags() | HwFlags::USER_READ_CNT);
    sys.add(direct, 0, true).unwrap();
    sys.add(plain, 0, true).unwrap();
    sys.tick(0, CYCLES, Mode::S, 3000);
    sys.tick(0, INSTRUCTIONS, Mode::S, 2000);
    sys.settle();
    sys.check_counts();
    assert_eq!(sys.events[direct].samples, 3);
    assert_eq!(sys.events[plain].samples, 2);
    // The page's offset follows the reloaded counter where user space adds the counter to it; a page
    // without a counter index is read through read(2) and keeps its value until the next schedule.
    assert_eq!(sys.events[direct].page_updates, 3);
    assert_eq!(sys.events[plain].page_updates, 0);
}

#[test]
fn long_periods_are_clamped_to_half_the_counter_range() {
    let cfg = Config::opensbi_like(Version::V2_0, 3, 32);
    let mut sys = System::new(cfg, 1);
    let period = 5u64 << 31; // Two and a half times the half range.
    let e = sys.open(hw_attr(2), period).unwrap();
    sys.add(e, 0, true).unwrap();
    let idx = sys.events[e].hw.counter().unwrap();
    // The counter is loaded with -(2^31 - 1): left is clamped to width_mask >> 1.
    assert_eq!(
        sys.cpus[0].model.counter_value(idx),
        Some((1 << 32) - ((1 << 31) - 1))
    );
    sys.tick(0, CACHE_REFERENCES, Mode::U, 3 * period + 17);
    sys.settle();
    sys.check_counts();
    assert_eq!(sys.events[e].samples, 3);
}

#[test]
fn exclude_flags_filter_modes_with_sscofpmf() {
    let cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    let mut sys = System::new(cfg, 1);
    let user = sys
        .open(
            EventAttr {
                exclude_kernel: true,
                exclude_hv: true,
                ..hw_attr(1)
            },
            0,
        )
        .unwrap();
    let kernel = sys
        .open(
            EventAttr {
                exclude_user: true,
                ..hw_attr(1)
            },
            0,
        )
        .unwrap();
    let guest = sys
        .open(
            EventAttr {
                config1: 1,
                exclude_user: true,
                ..hw_attr(1)
            },
            0,
        )
        .unwrap();
    for e in [user, kernel, guest] {
        sys.add(e, 0, true).unwrap();
    }
    for (mode, n) in [
        (Mode::U, 10),
        (Mode::S, 100),
        (Mode::VU, 1000),
        (Mode::VS, 10000),
        (Mode::M, 5),
    ] {
        sys.tick(0, INSTRUCTIONS, mode, n);
    }
    sys.settle();
    sys.check_counts();
    assert_eq!(sys.events[user].count, 10 + 1000 + 10000 + 5);
    assert_eq!(sys.events[kernel].count, 100 + 1000 + 10000 + 5);
    // Guest event with exclude_user: VU inhibited, and nothing else.
    assert_eq!(sys.events[guest].count, 10 + 100 + 10000 + 5);
}

#[test]
fn migration_between_cpus_keeps_counts_and_periods() {
    let cfg = Config::opensbi_like(Version::V3_0, 4, 40);
    let mut sys = System::new(cfg, 2);
    let s = sys.open(hw_attr(0), 700).unwrap();
    let f = sys.open(fw_attr(6), 0).unwrap();
    for cpu in [0usize, 1, 0, 1] {
        sys.disable(cpu);
        sys.add(s, cpu, true).unwrap();
        sys.add(f, cpu, true).unwrap();
        sys.enable(cpu);
        sys.tick(cpu, CYCLES, Mode::U, 500);
        sys.tick(cpu, SimEvent::Fw(6), Mode::S, 2);
        sys.disable(cpu);
        sys.del(s);
        sys.del(f);
        sys.enable(cpu);
        sys.check_invariants();
    }
    sys.check_counts();
    assert_eq!(sys.events[s].count, 2000);
    assert_eq!(sys.events[s].samples, 2);
    assert_eq!(sys.events[f].count, 8);
}

#[test]
fn stop_and_start_in_one_window_reload_a_sampling_counter() {
    // perf_adjust_freq_unthr_context(): stop(UPDATE) then start(RELOAD) inside one window.
    let cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    let mut sys = System::new(cfg, 1);
    let e = sys.open(hw_attr(0), 400).unwrap();
    sys.add(e, 0, true).unwrap();
    sys.tick(0, CYCLES, Mode::U, 300);
    sys.disable(0);
    sys.stop(e);
    sys.events[e].hw.sample_period = 200;
    sys.start(e);
    sys.enable(0);
    sys.check_invariants();
    sys.tick(0, CYCLES, Mode::U, 200);
    sys.settle();
    assert_eq!(sys.events[e].count, 500);
    // 300 events, then period_left = 100 with the new period: the sample comes 100 events later.
    assert_eq!(sys.events[e].samples, 1);
}

#[test]
fn event_init_errnos_match_the_c_driver() {
    let cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    let mut sys = System::new(cfg, 1);
    assert_eq!(sys.open(hw_attr(10), 0).unwrap_err().errno(), EINVAL);
    let bad_cache = EventAttr {
        ty: PERF_TYPE_HW_CACHE,
        config: 7,
        ..EventAttr::default()
    };
    assert_eq!(sys.open(bad_cache, 0).unwrap_err().errno(), EINVAL);
    // Raw event bits above the event field are refused, as Linux 6.18 does (6.12 dropped them).
    assert_eq!(sys.open(raw_attr(1 << 48), 0).unwrap_err().errno(), ENOENT);
    assert_eq!(sys.open(raw_attr(1 << 62), 0).unwrap_err().errno(), ENOENT);
    assert_eq!(
        sys.open(
            EventAttr {
                ty: 1,
                ..EventAttr::default()
            },
            0
        )
        .unwrap_err()
        .errno(),
        ENOENT
    );
}

#[test]
fn unavailable_standard_events_are_enoent() {
    // QEMU counts cycles, instructions and three TLB events only.
    let dtlb = spec::SBI_PMU_HW_CACHE_DTLB;
    let itlb = spec::SBI_PMU_HW_CACHE_ITLB;
    let (read, write) = (
        spec::SBI_PMU_HW_CACHE_OP_READ,
        spec::SBI_PMU_HW_CACHE_OP_WRITE,
    );
    let miss = spec::SBI_PMU_HW_CACHE_RESULT_MISS;
    let present = [
        spec::hw_general_event(spec::SBI_PMU_HW_CPU_CYCLES),
        spec::hw_general_event(spec::SBI_PMU_HW_INSTRUCTIONS),
        spec::hw_cache_event(dtlb, read, miss),
        spec::hw_cache_event(dtlb, write, miss),
        spec::hw_cache_event(itlb, read, miss),
    ];
    for version in [Version::V2_0, Version::V3_0] {
        for event_info in [false, true] {
            let mut cfg = Config::opensbi_like(version, 4, 64);
            cfg.event_info = event_info && version >= Version::V3_0;
            cfg.hw_events = Some(present.to_vec());
            let mut sys = System::new(cfg, 1);
            let info_calls = calls_of(&sys, 0, Function::EventGetInfo);
            assert_eq!(
                info_calls,
                u64::from(version >= Version::V3_0),
                "{version:?} {event_info}"
            );
            // Every generic hardware and cache event perf knows, by its perf encoding: those the
            // hardware lacks are refused with ENOENT, the others open.
            let hw = (0..10).map(|id| (hw_attr(id), spec::hw_general_event(id as usize + 1)));
            let caches = (0..7usize).flat_map(|cache| {
                (0..3usize).flat_map(move |op| {
                    (0..2usize).map(move |result| {
                        let attr = EventAttr {
                            ty: PERF_TYPE_HW_CACHE,
                            config: (cache | op << 8 | result << 16) as u64,
                            ..EventAttr::default()
                        };
                        (attr, spec::hw_cache_event(cache, op, result))
                    })
                })
            });
            for (attr, idx) in hw.chain(caches) {
                let opened = sys.open(attr, 0);
                if present.contains(&idx) {
                    assert!(opened.is_ok(), "{attr:?}: {opened:?}");
                } else {
                    assert_eq!(opened, Err(MapError::Unavailable), "{attr:?}");
                    assert_eq!(MapError::Unavailable.errno(), ENOENT);
                }
            }
            // The probe left no counter configured.
            assert_eq!(sys.cpus[0].model.started_mask(), 0);
            for i in 0..30 {
                assert_eq!(sys.cpus[0].model.counter_event(i), None);
            }
        }
    }
}

#[test]
fn add_failures_surface_as_typed_errors() {
    let mut cfg = Config::opensbi_like(Version::V2_0, 2, 48);
    cfg.raw_events = false;
    let mut sys = System::new(cfg, 1);
    // Raw events are not implemented: config_matching says NOT_SUPPORTED (errno ENOTSUPP).
    let r = sys.open(raw_attr(5), 0).unwrap();
    assert_eq!(
        sys.add(r, 0, true),
        Err(AddError::Sbi(SbiError::NotSupported))
    );
    // A reserved firmware event code.
    let f = sys.open(fw_attr(100), 0).unwrap();
    assert_eq!(
        sys.add(f, 0, true),
        Err(AddError::Sbi(SbiError::NotSupported))
    );
    // A corrupted event_base never reaches firmware.
    let c = sys.cpus.get_mut(0).unwrap();
    let mut hw = HwPerfEvent {
        event_base: 0x50000,
        ..HwPerfEvent::default()
    };
    assert_eq!(
        c.pmu.add(&mut c.model, &mut hw, true),
        Err(AddError::NoCounter)
    );
    for kernel_major in [6, 7] {
        assert_eq!(AddError::NoCounter.errno(kernel_major), ENOENT);
    }
    sys.check_invariants();
}

/// A firmware that answers config_matching with a counter the driver did not offer.
struct Liar(Model, usize);

impl Firmware for Liar {
    fn sbi_ecall(&mut self, fid: Fid, args: [usize; 6]) -> Result<usize, SbiError> {
        let r = self.0.sbi_ecall(fid, args);
        if fid == Fid::CounterConfigMatching {
            return r.map(|_| self.1);
        }
        r
    }

    fn read_counter_csr(&mut self, csr: u16) -> u64 {
        self.0.read_counter_csr(csr)
    }
}

#[test]
fn claim_rules_refuse_counters_firmware_should_not_return() {
    let cfg = Config::opensbi_like(Version::V0_3, 4, 48);
    for bogus in [1usize, 64, 1000, usize::MAX, 5] {
        let mut fw = Liar(Model::new(cfg.clone()), bogus);
        let info = PmuInfo::probe(&mut fw, SbiVersion::V0_3).unwrap();
        let mut cpu = CpuHwEvents::new(&info);
        let mut first = HwPerfEvent::default();
        info.event_init(
            &hw_attr(5),
            Default::default(),
            &StdEvents::ALL,
            None,
            &mut first,
        )
        .unwrap();
        let mut second = first;
        let r1 = cpu.add(&mut fw, &mut first, true);
        if bogus == 5 {
            // Counter 5 is valid and free the first time, taken the second time.
            assert_eq!(r1, Ok(()));
            assert_eq!(
                cpu.add(&mut fw, &mut second, true),
                Err(AddError::NoCounter)
            );
        } else {
            assert_eq!(r1, Err(AddError::NoCounter), "counter {bogus}");
        }
    }
}

#[test]
fn cpu_dying_disables_snapshot_and_starting_resets_counters() {
    let cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    let mut model = Model::new(cfg);
    let info = PmuInfo::probe(&mut model, SbiVersion::V2_0).unwrap();
    // A counter left running by an earlier kernel.
    let idx = model
        .counter_config_matching(
            0,
            0b1000,
            CfgFlags::AUTO_START,
            EventIdx::hw(HwGeneralEvent::BusCycles),
            0,
        )
        .unwrap();
    assert!(model.is_started(idx));
    let mut cpu = CpuHwEvents::new(&info);
    cpu.cpu_starting(&mut model, true).unwrap();
    assert!(!model.is_started(idx));
    assert_eq!(model.counter_event(idx), None);
    assert_eq!(model.snapshot_address(), Some(fwmodel::SNAPSHOT_PHYS));
    cpu.cpu_dying(&mut model).unwrap();
    assert_eq!(model.snapshot_address(), None);
    assert!(!cpu.snapshot_enabled());
    // Without snapshot support the CPU still starts; the error says why there is no snapshot.
    let mut cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    cfg.snapshot = false;
    let mut model = Model::new(cfg);
    assert_eq!(
        cpu.cpu_starting(&mut model, true),
        Err(SbiError::NotSupported)
    );
    assert!(!cpu.snapshot_enabled());
    // SBI v0.3 has no snapshot function: the driver does not try.
    let mut model = Model::new(Config::opensbi_like(Version::V0_3, 4, 48));
    let info = PmuInfo::probe(&mut model, SbiVersion::V0_3).unwrap();
    let mut cpu = CpuHwEvents::new(&info);
    assert_eq!(cpu.cpu_starting(&mut model, true), Ok(()));
    assert_eq!(model.calls_of(Function::SnapshotSetShmem), 0);
}

#[test]
fn throttled_event_stays_stopped_until_started() {
    let cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    let mut sys = System::new(cfg, 1);
    let s = sys.open(hw_attr(0), 1000).unwrap();
    let c = sys.open(hw_attr(1), 0).unwrap();
    sys.events[s].throttle_at = Some(2);
    sys.add(s, 0, true).unwrap();
    sys.add(c, 0, true).unwrap();
    sys.tick(0, CYCLES, Mode::S, 5000);
    // Throttled at the second sample: no interrupt and no count after it.
    assert_eq!(sys.events[s].samples, 2);
    assert_eq!(sys.cpus[0].pmu.stats().overflows, 2);
    let idx = sys.events[s].hw.counter().unwrap();
    assert_eq!(sys.cpus[0].pmu.masks().running & (1 << idx), 0);
    let other = sys.events[c].hw.counter().unwrap();
    assert_ne!(sys.cpus[0].pmu.masks().running & (1 << other), 0);
    sys.settle();
    sys.check_counts();
    // perf core unthrottles it: a full period later it samples again.
    sys.start(s);
    sys.tick(0, CYCLES, Mode::S, 1000);
    assert_eq!(sys.events[s].samples, 3);
    sys.settle();
    sys.check_counts();
    sys.check_invariants();
}

/// perf core 7.x throttles a group from inside `perf_event_overflow()`: it stops every member,
/// among them one whose counter overflowed in the same interrupt and that the handler has not
/// reached yet. That member is not handled again (no new period, no state change behind perf
/// core's back), the driver's own stop after perf core's finds the event stopped and makes no call,
/// and perf core's starts bring the whole group back.
#[test]
fn group_throttled_inside_overflow_stays_stopped_and_counts() {
    let cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    let mut sys = System::new(cfg, 1);
    let leader = sys.open(hw_attr(0), 1000).unwrap();
    let sibling = sys.open(hw_attr(0), 1000).unwrap();
    let counting = sys.open(hw_attr(1), 0).unwrap();
    sys.events[leader].throttle_at = Some(2);
    sys.events[leader].throttle_group = vec![leader, sibling, counting];
    for e in [leader, sibling, counting] {
        sys.add(e, 0, true).unwrap();
    }
    sys.tick(0, CYCLES, Mode::S, 2500);
    // Both sampling counters overflowed together twice; the second time the group was throttled
    // before the handler reached the sibling, whose second sample perf core never saw.
    assert_eq!(sys.events[leader].samples, 2);
    assert_eq!(sys.events[sibling].samples, 1);
    assert_eq!(sys.cpus[0].pmu.stats().overflows, 2);
    assert_eq!(
        sys.cpus[0].pmu.masks().running,
        0,
        "a counter of the throttled group still runs"
    );
    for e in [leader, sibling, counting] {
        assert!(
            HwEvent::hes(&sys.events[e].hw).contains(HesState::STOPPED),
            "event {e} is not stopped in its hw state"
        );
    }
    // Stopped counters count nothing more; the sibling's count includes the period whose sample
    // the throttle dropped.
    sys.tick(0, CYCLES, Mode::S, 3000);
    sys.settle();
    counts_match_truth(&sys);
    assert_eq!(sys.events[leader].count, 2000);
    assert_eq!(sys.events[sibling].count, 2000);
    // perf core unthrottles the group: every member starts, and a period later both sample.
    for e in [leader, sibling, counting] {
        sys.start(e);
    }
    sys.tick(0, CYCLES, Mode::S, 1000);
    assert_eq!(sys.events[leader].samples, 3);
    assert_eq!(sys.events[sibling].samples, 2);
    sys.settle();
    counts_match_truth(&sys);
    assert_eq!(sys.events[sibling].count, 3000);
    sys.check_invariants();
}

/// Every event counted exactly its simulated events ([`System::check_counts`] without its
/// samples-per-period check, for a test where perf core drops a sample).
fn counts_match_truth(sys: &System) {
    for (e, ev) in sys.events.iter().enumerate() {
        assert_eq!(
            ev.count, ev.truth,
            "event {e} counted {} of {}",
            ev.count, ev.truth
        );
    }
}

/// The CPU PM notifier's work as the driver does it: stop the running events in one window at the
/// enter, record their counters, and start exactly those in one window at the exit.
fn cpu_pm_cycle(sys: &mut System, low_power: impl FnOnce(&mut System)) {
    sys.disable(0);
    let mut saved = 0u64;
    for e in sys.events_on(0) {
        if sys.events[e].active {
            sys.stop(e);
            saved |= 1 << sys.events[e].hw.counter().unwrap();
        }
    }
    sys.enable(0);
    low_power(sys);
    sys.disable(0);
    for e in sys.events_on(0) {
        if saved & (1 << sys.events[e].hw.counter().unwrap()) != 0 {
            sys.start(e);
        }
    }
    sys.enable(0);
}

#[test]
fn cpu_pm_stops_and_starts_in_one_call_each_and_keeps_counts() {
    let cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    let (mut sys, events) = counting_system(cfg, &[hw_attr(0), hw_attr(1), raw_attr(0x10)]);
    // One event perf has stopped stays stopped across the cycle.
    sys.stop(events[2]);
    sys.tick(0, CYCLES, Mode::S, 700);
    let stops = calls_of(&sys, 0, Function::CounterStop);
    let starts = calls_of(&sys, 0, Function::CounterStart);
    // Cycles in the low-power state are not counted (the events are stopped).
    cpu_pm_cycle(&mut sys, |sys| sys.tick(0, CYCLES, Mode::S, 300));
    assert_eq!(calls_of(&sys, 0, Function::CounterStop) - stops, 1);
    assert_eq!(calls_of(&sys, 0, Function::CounterStart) - starts, 1);
    assert!(!sys.events[events[2]].active);
    assert!(sys.events[events[0]].active && sys.events[events[1]].active);
    sys.tick(0, CYCLES, Mode::S, 500);
    sys.settle();
    sys.check_counts();
    assert_eq!(sys.events[events[0]].count, 1200);
    sys.check_invariants();
}
