// SPDX-License-Identifier: GPL-2.0

//! The `riscv,pmu` event maps in the driver: the maps of the two boards in the kernel tree that carry
//! them (the Allwinner D1s, `arch/riscv/boot/dts/allwinner/sun20i-d1s.dtsi`, and the T-Head TH1520,
//! `arch/riscv/boot/dts/thead/th1520.dtsi`, copied here as cells), the counters they let each event
//! use, the events they refuse, the availability they answer without firmware calls, and the exact
//! group check against a brute-force search.

use fwmodel::harness::{DtCells, System};
use fwmodel::spec::Version;
use fwmodel::Config;
use proptest::prelude::*;
use sbi_pmu::abi::{CacheId, CacheOp, CacheResult, EventIdx, HwGeneralEvent};
use sbi_pmu::counters::{group_fits, HwEvent};
use sbi_pmu::dt::{DtError, DtErrorKind, DtPmuMaps, DtProperty};
use sbi_pmu::errno::ENOENT;
use sbi_pmu::events::{
    EventAttr, StdEvents, PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW,
};
use sbi_pmu::pmu::AddError;

/// `sun20i-d1s.dtsi`: every event on one counter of the C906.
const D1S_EVENT_TO_MHPMCOUNTERS: [u32; 30] = [
    0x00003, 0x00003, 0x00000008, 0x00004, 0x00004, 0x00000010, 0x00005, 0x00005, 0x00000200,
    0x00006, 0x00006, 0x00000100, 0x10000, 0x10000, 0x00004000, 0x10001, 0x10001, 0x00008000,
    0x10002, 0x10002, 0x00010000, 0x10003, 0x10003, 0x00020000, 0x10019, 0x10019, 0x00000040,
    0x10021, 0x10021, 0x00000020,
];
const D1S_EVENT_TO_MHPMEVENT: [u32; 30] = [
    0x00003, 0x00000000, 0x00000001, 0x00004, 0x00000000, 0x00000002, 0x00005, 0x00000000,
    0x00000007, 0x00006, 0x00000000, 0x00000006, 0x10000, 0x00000000, 0x0000000c, 0x10001,
    0x00000000, 0x0000000d, 0x10002, 0x00000000, 0x0000000e, 0x10003, 0x00000000, 0x0000000f,
    0x10019, 0x00000000, 0x00000004, 0x10021, 0x00000000, 0x00000003,
];

/// The D1s's raw rows: selectors 0x1-0x7 and 0xb-0xf, each on counter `selector + 2`.
fn d1s_raw() -> Vec<u32> {
    [1u32, 2, 3, 4, 5, 6, 7, 0xb, 0xc, 0xd, 0xe, 0xf]
        .iter()
        .flat_map(|&sel| [0, sel, !0, !0, 1 << (sel + 2)])
        .collect()
}

fn d1s() -> DtCells {
    DtCells {
        event_to_mhpmevent: Some(D1S_EVENT_TO_MHPMEVENT.to_vec()),
        event_to_mhpmcounters: Some(D1S_EVENT_TO_MHPMCOUNTERS.to_vec()),
        raw_event_to_mhpmcounters: Some(d1s_raw()),
    }
}

/// `th1520.dtsi`: events 3-10, 0x10000-0x10003 and 0x10010-0x10013 on hpmcounter3 to
/// hpmcounter18, selectors 1 to 0x13, raw selectors 1 to 0x2a on the same counters.
fn th1520() -> DtCells {
    let events: Vec<u32> = (3..=10)
        .chain(0x10000..=0x10003)
        .chain(0x10010..=0x10013)
        .collect();
    let selectors = [
        1u32, 2, 7, 6, 8, 9, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf, 0x10, 0x11, 0x12, 0x13,
    ];
    let order = [3u32, 4, 6, 5, 7, 8, 9, 10];
    let sel_events: Vec<u32> = order
        .iter()
        .copied()
        .chain(0x10000..=0x10003)
        .chain(0x10010..=0x10013)
        .collect();
    DtCells {
        event_to_mhpmevent: Some(
            sel_events
                .iter()
                .zip(selectors)
                .flat_map(|(&e, s)| [e, 0, s])
                .collect(),
        ),
        event_to_mhpmcounters: Some(events.iter().flat_map(|&e| [e, e, 0x7fff8]).collect()),
        raw_event_to_mhpmcounters: Some((1..=0x2a).flat_map(|s| [0, s, !0, !0, 0x7fff8]).collect()),
    }
}

fn hw(e: HwGeneralEvent) -> EventIdx {
    EventIdx::hw(e)
}

fn attr(ty: u32, config: u64) -> EventAttr {
    EventAttr {
        ty,
        config,
        ..EventAttr::default()
    }
}

/// perf's `config` of a cache event.
fn cache_config(c: CacheId, op: CacheOp, r: CacheResult) -> u64 {
    c as u64 | (op as u64) << 8 | (r as u64) << 16
}

/// A D1s-like hart: cycle, time, instret, hpmcounter3..17, 64 bits as on the C906.
fn d1s_system() -> System {
    System::new(Config::opensbi_like(Version::V2_0, 15, 64), 1)
}

#[test]
fn allwinner_d1s_maps_parse() {
    let cells = d1s();
    let maps = cells.maps().expect("the D1s maps are valid");
    assert_eq!(maps.counter_ranges().count(), 10);
    assert_eq!(maps.selectors().count(), 10);
    assert_eq!(maps.raw_maps().count(), 12);
    assert_eq!(
        maps.hw_counters(hw(HwGeneralEvent::CacheReferences), 0),
        Some(1 << 3)
    );
    assert_eq!(
        maps.hw_counters(hw(HwGeneralEvent::BranchInstructions), 0),
        Some(1 << 9)
    );
    let dtlb_miss = EventIdx::cache(CacheId::Dtlb, CacheOp::Read, CacheResult::Miss);
    let itlb_miss = EventIdx::cache(CacheId::Itlb, CacheOp::Read, CacheResult::Miss);
    assert_eq!(maps.hw_counters(dtlb_miss, 0), Some(1 << 6));
    assert_eq!(maps.hw_counters(itlb_miss, 0), Some(1 << 5));
    // Cycles and instructions are not in the map: only their fixed counters count them.
    assert_eq!(maps.hw_counters(hw(HwGeneralEvent::CpuCycles), 0), None);
    assert_eq!(maps.selector(itlb_miss), Some(0x3));
    assert_eq!(maps.selector(hw(HwGeneralEvent::BusCycles)), None);
    assert_eq!(maps.hw_counters(EventIdx::RAW, 0x1), Some(1 << 3));
    assert_eq!(maps.hw_counters(EventIdx::RAW, 0xf), Some(1 << 17));
    assert_eq!(maps.hw_counters(EventIdx::RAW, 0x8), None);
}

#[test]
fn thead_th1520_maps_parse() {
    let cells = th1520();
    let maps = cells.maps().expect("the TH1520 maps are valid");
    assert_eq!(maps.counter_ranges().count(), 16);
    assert_eq!(maps.selectors().count(), 16);
    assert_eq!(maps.raw_maps().count(), 42);
    let ll_read = EventIdx::cache(CacheId::Ll, CacheOp::Read, CacheResult::Access);
    assert_eq!(maps.hw_counters(ll_read, 0), Some(0x7fff8));
    assert_eq!(maps.selector(ll_read), Some(0x10));
    assert_eq!(maps.selector(hw(HwGeneralEvent::RefCpuCycles)), Some(0xb));
    let node_miss = EventIdx::cache(CacheId::Node, CacheOp::Read, CacheResult::Miss);
    assert_eq!(maps.hw_counters(node_miss, 0), None);
    // hpmcounter3..18 of a TH1520-like hart.
    let mut sys = System::new(Config::opensbi_like(Version::V2_0, 16, 64), 1);
    sys.set_dt(cells).unwrap();
    assert!(sys.std_events.is_available(ll_read));
    assert!(!sys.std_events.is_available(node_miss));
}

#[test]
fn availability_comes_from_the_maps_without_firmware_calls() {
    let mut sys = d1s_system();
    let before = sys.total_calls();
    sys.set_dt(d1s()).unwrap();
    assert_eq!(sys.total_calls(), before);
    let mut expected = StdEvents::NONE;
    let dtlb_miss = EventIdx::cache(CacheId::Dtlb, CacheOp::Read, CacheResult::Miss);
    let itlb_miss = EventIdx::cache(CacheId::Itlb, CacheOp::Read, CacheResult::Miss);
    let l1d = |op, r| EventIdx::cache(CacheId::L1d, op, r);
    for idx in [
        hw(HwGeneralEvent::CpuCycles),
        hw(HwGeneralEvent::Instructions),
        hw(HwGeneralEvent::CacheReferences),
        hw(HwGeneralEvent::CacheMisses),
        hw(HwGeneralEvent::BranchInstructions),
        hw(HwGeneralEvent::BranchMisses),
        l1d(CacheOp::Read, CacheResult::Access),
        l1d(CacheOp::Read, CacheResult::Miss),
        l1d(CacheOp::Write, CacheResult::Access),
        l1d(CacheOp::Write, CacheResult::Miss),
        dtlb_miss,
        itlb_miss,
    ] {
        expected.set(idx, true);
    }
    assert_eq!(sys.std_events, expected);
    let bus = sys.open(attr(PERF_TYPE_HARDWARE, 6), 0);
    assert_eq!(bus.map(|_| ()).map_err(|e| e.errno()), Err(ENOENT));
}

#[test]
fn events_get_only_the_counters_the_maps_allow() {
    let mut sys = d1s_system();
    sys.set_dt(d1s()).unwrap();
    // cache-references on mhpmcounter3, branch-misses on mhpmcounter8.
    let refs = sys.open(attr(PERF_TYPE_HARDWARE, 2), 0).unwrap();
    let bmiss = sys.open(attr(PERF_TYPE_HARDWARE, 5), 0).unwrap();
    let dtlb = cache_config(CacheId::Dtlb, CacheOp::Read, CacheResult::Miss);
    let dtlb = sys.open(attr(PERF_TYPE_HW_CACHE, dtlb), 0).unwrap();
    let raw = sys.open(attr(PERF_TYPE_RAW, 0xd), 0).unwrap();
    let cycles = sys.open(attr(PERF_TYPE_HARDWARE, 0), 0).unwrap();
    let expected = [
        (refs, 1 << 3),
        (bmiss, 1 << 8),
        (dtlb, 1 << 6),
        (raw, 1 << 15),
        (cycles, 1),
    ];
    for (e, cmask) in expected {
        assert_eq!(sys.events[e].hw.pmu_private, cmask, "event {e}");
        sys.add(e, 0, true).unwrap();
        assert_eq!(
            sys.events[e].hw.counter(),
            Some(cmask.trailing_zeros() as usize),
            "event {e}"
        );
    }
    sys.check_invariants();
    // Raw selector 1 shares mhpmcounter3 with cache-references: no counter is left for it, and the
    // driver knows without asking firmware.
    let raw1 = sys.open(attr(PERF_TYPE_RAW, 0x1), 0).unwrap();
    let calls = sys.calls_since_boot();
    assert_eq!(
        sys.add(raw1, 0, true),
        Err(AddError::Sbi(sbi_pmu::abi::SbiError::NotSupported))
    );
    assert_eq!(sys.calls_since_boot(), calls);
}

#[test]
fn raw_events_no_row_matches_are_enoent() {
    let mut sys = d1s_system();
    sys.set_dt(d1s()).unwrap();
    for sel in [0u64, 8, 9, 0xa, 0x10, 0x10019] {
        let r = sys.open(attr(PERF_TYPE_RAW, sel), 0);
        assert_eq!(
            r.map(|_| ()).map_err(|e| e.errno()),
            Err(ENOENT),
            "{sel:#x}"
        );
    }
    // Firmware events are not in the maps' scope.
    assert!(sys.open(attr(PERF_TYPE_RAW, 1 << 63 | 5), 0).is_ok());
    // Without maps, raw events are left to firmware.
    let mut plain = d1s_system();
    let e = plain.open(attr(PERF_TYPE_RAW, 8), 0).unwrap();
    assert_eq!(plain.events[e].hw.pmu_private, 0);
}

#[test]
fn without_maps_events_keep_the_default_counters() {
    let mut sys = d1s_system();
    let e = sys.open(attr(PERF_TYPE_HARDWARE, 2), 0).unwrap();
    assert_eq!(sys.events[e].hw.pmu_private, 0);
    let idx = hw(HwGeneralEvent::CacheReferences);
    assert_eq!(
        sys.info.allowed_cmask(idx, 0),
        sys.info.default_event_cmask(idx)
    );
}

#[test]
fn groups_on_one_constrained_counter_do_not_fit() {
    let mut sys = d1s_system();
    sys.set_dt(d1s()).unwrap();
    let refs = sys.open(attr(PERF_TYPE_HARDWARE, 2), 0).unwrap();
    let raw1 = sys.open(attr(PERF_TYPE_RAW, 0x1), 0).unwrap();
    let misses = sys.open(attr(PERF_TYPE_HARDWARE, 3), 0).unwrap();
    let mask = |sys: &System, e: usize| {
        let hw = &sys.events[e].hw;
        sys.info
            .allowed_cmask(hw.event_idx().unwrap(), hw.pmu_private)
    };
    assert!(!group_fits(&[mask(&sys, refs), mask(&sys, raw1)]));
    assert!(group_fits(&[mask(&sys, refs), mask(&sys, misses)]));
}

#[test]
fn malformed_board_maps_name_the_property_and_the_row() {
    let mut sys = d1s_system();
    // A fixed counter in the row of cache misses.
    let mut cells = d1s();
    cells.event_to_mhpmcounters.as_mut().unwrap()[5] |= 0x4;
    let expected = DtError {
        property: DtProperty::EventToMhpmcounters,
        row: 1,
        kind: DtErrorKind::FixedCounters,
    };
    assert_eq!(sys.set_dt(cells), Err(expected));
    // A raw row cut short.
    let mut cells = d1s();
    cells.raw_event_to_mhpmcounters.as_mut().unwrap().pop();
    let expected = DtError {
        property: DtProperty::RawEventToMhpmcounters,
        row: 11,
        kind: DtErrorKind::Length,
    };
    assert_eq!(sys.set_dt(cells), Err(expected));
    // A map for more counters than this hart has: hpmcounter17 is the D1s's last one.
    let mut small = System::new(Config::opensbi_like(Version::V2_0, 6, 64), 1);
    let expected = DtError {
        property: DtProperty::EventToMhpmcounters,
        row: 2,
        kind: DtErrorKind::UnknownCounters,
    };
    assert_eq!(small.set_dt(d1s()), Err(expected));
    // A refused map leaves the driver as without one.
    assert!(sys.dt.is_none());
    assert_eq!(sys.std_events, StdEvents::ALL);
}

/// Whether distinct counters can be given to every event, by trying every assignment.
fn brute_force_fits(masks: &[u64], used: u64) -> bool {
    match masks.split_first() {
        None => true,
        Some((first, rest)) => (0..64)
            .filter(|c| first & !used & (1 << c) != 0)
            .any(|c| brute_force_fits(rest, used | 1 << c)),
    }
}

proptest! {
    /// The exact group check agrees with a search over all assignments, for groups up to the
    /// number of counters, with masks as device tree maps make them (few counters per event).
    #[test]
    fn group_check_agrees_with_brute_force(
        ncounters in 1usize..=8,
        masks in proptest::collection::vec(any::<u8>(), 0..=8),
        shift in 0u32..56,
    ) {
        let n = masks.len().min(ncounters);
        let avail = (1u64 << ncounters) - 1;
        let masks: Vec<u64> = masks[..n]
            .iter()
            .map(|&m| (u64::from(m) & avail) << shift)
            .collect();
        prop_assert_eq!(group_fits(&masks), brute_force_fits(&masks, 0), "{:x?}", masks);
    }

    /// The same with maps that give each event one or two counters of a board-like hart, where
    /// groups often collide.
    #[test]
    fn group_check_agrees_with_brute_force_on_sparse_masks(
        picks in proptest::collection::vec((0u32..6, proptest::option::of(0u32..6)), 1..=6),
    ) {
        let masks: Vec<u64> = picks
            .iter()
            .map(|&(a, b)| 1u64 << (a + 3) | b.map_or(0, |b| 1 << (b + 3)))
            .collect();
        prop_assert_eq!(group_fits(&masks), brute_force_fits(&masks, 0), "{:x?}", masks);
    }

    /// Arbitrary property cells parse or fail with a typed error naming a row inside (or right at
    /// the end of) the property, never panic, and whatever parses answers lookups.
    #[test]
    fn dt_parsing_never_panics(
        sel in proptest::option::of(proptest::collection::vec(any::<u32>(), 0..16)),
        ctr in proptest::option::of(proptest::collection::vec(any::<u32>(), 0..30)),
        raw in proptest::option::of(proptest::collection::vec(any::<u32>(), 0..30)),
        probe in any::<u32>(),
        data in any::<u64>(),
    ) {
        match DtPmuMaps::parse([sel.as_deref(), ctr.as_deref(), raw.as_deref()]) {
            Ok(maps) => {
                if let Some(idx) = EventIdx::from_raw(probe & 0xfffff) {
                    let _ = maps.event_hw_counters(idx, data);
                    let _ = maps.selector(idx);
                }
                prop_assert!(maps.counter_ranges().all(|r| r.start <= r.end && r.end < 0x20000));
            }
            Err(e) => {
                let cells = match e.property {
                    DtProperty::EventToMhpmevent => &sel,
                    DtProperty::EventToMhpmcounters => &ctr,
                    DtProperty::RawEventToMhpmcounters => &raw,
                };
                let len = cells.as_ref().map_or(0, Vec::len);
                prop_assert!(e.row <= len / e.property.cells_per_row(), "{:?}", e);
            }
        }
    }
}

#[test]
fn sysfs_lists_the_mapped_events_under_their_selectors() {
    let mut sys = d1s_system();
    sys.set_dt(d1s()).unwrap();
    let cells = d1s();
    let maps = cells.maps().unwrap();
    let listed: Vec<(EventIdx, u64)> = (0..StdEvents::COUNT)
        .filter_map(StdEvents::nth)
        .filter_map(|idx| {
            sys.info
                .listed_event_config(idx, &sys.std_events, &maps)
                .map(|c| (idx, c))
        })
        .collect();
    let l1d = |op, r| EventIdx::cache(CacheId::L1d, op, r);
    let expected = vec![
        (hw(HwGeneralEvent::CacheReferences), 0x1),
        (hw(HwGeneralEvent::CacheMisses), 0x2),
        (hw(HwGeneralEvent::BranchInstructions), 0x7),
        (hw(HwGeneralEvent::BranchMisses), 0x6),
        (l1d(CacheOp::Read, CacheResult::Access), 0xc),
        (l1d(CacheOp::Read, CacheResult::Miss), 0xd),
        (l1d(CacheOp::Write, CacheResult::Access), 0xe),
        (l1d(CacheOp::Write, CacheResult::Miss), 0xf),
        (
            EventIdx::cache(CacheId::Dtlb, CacheOp::Read, CacheResult::Miss),
            0x4,
        ),
        (
            EventIdx::cache(CacheId::Itlb, CacheOp::Read, CacheResult::Miss),
            0x3,
        ),
    ];
    assert_eq!(listed, expected);
    // What perf opens for `cpu/dTLB-load-misses/`: the raw event 0x4, on the dTLB counter.
    let e = sys.open(attr(PERF_TYPE_RAW, 0x4), 0).unwrap();
    assert_eq!(sys.events[e].hw.pmu_private, 1 << 6);
    // Without raw rows no selector can be opened as a raw event: nothing is listed.
    let no_raw = DtCells {
        raw_event_to_mhpmcounters: None,
        ..d1s()
    };
    let maps = no_raw.maps().unwrap();
    assert!((0..StdEvents::COUNT)
        .filter_map(StdEvents::nth)
        .all(|idx| sys
            .info
            .listed_event_config(idx, &sys.std_events, &maps)
            .is_none()));
}

#[test]
fn cycles_take_back_a_parked_programmable_counter_before_the_fixed_one() {
    // The map gives cycles the cycle counter and hpmcounter3, and raw selector 1 hpmcounter3 only.
    let cells = DtCells {
        event_to_mhpmevent: None,
        event_to_mhpmcounters: Some(vec![1, 1, 0x9, 2, 2, 0x14]),
        raw_event_to_mhpmcounters: Some(vec![0, 1, !0, !0, 0x8]),
    };
    let mut sys = System::new(Config::opensbi_like(Version::V2_0, 4, 64), 1);
    sys.set_dt(cells).unwrap();
    let raw = sys.open(attr(PERF_TYPE_RAW, 1), 0).unwrap();
    sys.add(raw, 0, true).unwrap();
    assert_eq!(sys.events[raw].hw.counter(), Some(3));
    // The raw event goes; its counter stays parked with its mapping.
    sys.del(raw);
    assert_eq!(sys.cpus[0].pmu.masks().parked, 1 << 3);
    // cycles may use the cycle counter and hpmcounter3: hpmcounter3 is taken back and offered to firmware
    // with the cycle counter (the model then picks the lowest; OpenSBI picks the programmable one).
    let cycles = sys.open(attr(PERF_TYPE_HARDWARE, 0), 0).unwrap();
    sys.add(cycles, 0, true).unwrap();
    assert_eq!(sys.cpus[0].pmu.masks().parked, 0);
    sys.check_invariants();
}
