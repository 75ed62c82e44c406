// SPDX-License-Identifier: GPL-2.0

//! The `riscv,pmu` event maps of the two boards in the kernel tree that carry them, compiled from the
//! kernel source by `scripts/host-test`: the Allwinner D1s (`sun20i-d1s.dtsi`, through
//! `sun20i-d1s-mangopi-mq.dts`) and the T-Head TH1520 (`th1520.dtsi`, through
//! `th1520-beaglev-ahead.dts`). The DTB paths come in `RPMU_DTB_D1S` and `RPMU_DTB_TH1520`; without
//! them these tests fail, so a run that skipped the device trees cannot pass.

use fwmodel::fdt::{self, FdtError};
use fwmodel::harness::System;
use fwmodel::{Config, DtProps, Mode, SimEvent};
use sbi_pmu::abi::{CacheId, CacheOp, CacheResult, EventIdx, HwGeneralEvent, SbiVersion};
use sbi_pmu::dt::{DtError, DtPmuMaps, DtProperty};
use sbi_pmu::events::{EventAttr, PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW};
use sbi_pmu::pmu::Strategy;

fn dtb(var: &str) -> Vec<u8> {
    let path = std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run scripts/host-test, which compiles the board device trees")
    });
    std::fs::read(&path).unwrap_or_else(|e| panic!("{var}={path}: {e}"))
}

fn pmu_props(var: &str) -> DtProps {
    let blob = dtb(var);
    let node = fdt::find_compatible(&blob, "riscv,pmu")
        .expect("readable DTB")
        .expect("a riscv,pmu node");
    DtProps {
        event_to_mhpmevent: node.props.get("riscv,event-to-mhpmevent").cloned(),
        event_to_mhpmcounters: node.props.get("riscv,event-to-mhpmcounters").cloned(),
        raw_event_to_mhpmcounters: node.props.get("riscv,raw-event-to-mhpmcounters").cloned(),
    }
}

fn hw(e: HwGeneralEvent) -> EventIdx {
    EventIdx::hw(e)
}

#[test]
fn allwinner_d1s_event_maps() {
    let props = pmu_props("RPMU_DTB_D1S");
    let maps = props.maps().expect("the D1s maps are valid");
    assert_eq!(maps.counter_ranges().count(), 10);
    assert_eq!(maps.selectors().count(), 10);
    assert_eq!(maps.raw_maps().count(), 12);
    // Each event has exactly one counter on the C906.
    assert_eq!(
        maps.hw_counters(hw(HwGeneralEvent::CacheReferences), 0),
        Some(1 << 3)
    );
    assert_eq!(
        maps.hw_counters(hw(HwGeneralEvent::CacheMisses), 0),
        Some(1 << 4)
    );
    assert_eq!(
        maps.hw_counters(hw(HwGeneralEvent::BranchInstructions), 0),
        Some(1 << 9)
    );
    assert_eq!(
        maps.hw_counters(hw(HwGeneralEvent::BranchMisses), 0),
        Some(1 << 8)
    );
    let l1d_read = EventIdx::cache(CacheId::L1d, CacheOp::Read, CacheResult::Access);
    let dtlb_miss = EventIdx::cache(CacheId::Dtlb, CacheOp::Read, CacheResult::Miss);
    let itlb_miss = EventIdx::cache(CacheId::Itlb, CacheOp::Read, CacheResult::Miss);
    assert_eq!(maps.hw_counters(l1d_read, 0), Some(1 << 14));
    assert_eq!(maps.hw_counters(dtlb_miss, 0), Some(1 << 6));
    assert_eq!(maps.hw_counters(itlb_miss, 0), Some(1 << 5));
    // Cycles and instructions are not in the map: only their fixed counters count them.
    assert_eq!(maps.hw_counters(hw(HwGeneralEvent::CpuCycles), 0), None);
    assert_eq!(
        maps.selector(hw(HwGeneralEvent::BranchInstructions)),
        Some(0x7)
    );
    assert_eq!(maps.selector(itlb_miss), Some(0x3));
    assert_eq!(maps.selector(hw(HwGeneralEvent::BusCycles)), None);
    // Raw events are unique IDs (mask all ones): 0x1-0x7 and 0xb-0xf, each on its own counter.
    assert_eq!(maps.hw_counters(EventIdx::RAW, 0x1), Some(1 << 3));
    assert_eq!(maps.hw_counters(EventIdx::RAW, 0xf), Some(1 << 17));
    assert_eq!(maps.hw_counters(EventIdx::RAW, 0x8), None);
    assert_eq!(maps.hw_counters(EventIdx::RAW_V2, 0xe), Some(1 << 16));
}

#[test]
fn thead_th1520_event_maps() {
    let props = pmu_props("RPMU_DTB_TH1520");
    let maps = props.maps().expect("the TH1520 maps are valid");
    assert_eq!(maps.counter_ranges().count(), 16);
    assert_eq!(maps.selectors().count(), 16);
    // Every listed event may use hpmcounter3 to hpmcounter18.
    for r in maps.counter_ranges() {
        assert_eq!(r.counters, 0x7fff8, "{r:?}");
    }
    for raw in maps.raw_maps() {
        assert_eq!(raw.counters, 0x7fff8);
        assert_eq!(raw.select_mask, u64::MAX);
    }
    assert!(maps.raw_maps().count() >= 16);
    let ll_read = EventIdx::cache(CacheId::Ll, CacheOp::Read, CacheResult::Access);
    assert_eq!(maps.hw_counters(ll_read, 0), Some(0x7fff8));
    assert_eq!(maps.selector(ll_read), Some(0x10));
    assert_eq!(maps.selector(hw(HwGeneralEvent::RefCpuCycles)), Some(0xb));
    let node_miss = EventIdx::cache(CacheId::Node, CacheOp::Read, CacheResult::Miss);
    assert_eq!(maps.hw_counters(node_miss, 0), None);
}

#[test]
fn d1s_constraints_drive_allocation_and_counting() {
    // A D1s-like hart: cycle, time, instret, hpmcounter3..17 (64 bits as on the C906), the board's
    // event maps in firmware and in the driver.
    let mut cfg = Config::opensbi_like(SbiVersion::V2_0, 15, 64);
    cfg.dt = Some(pmu_props("RPMU_DTB_D1S"));
    let mut sys = System::new(cfg, 1, Strategy::Batched, true);
    // Standard events the board does not map are unavailable; cycles stays on its fixed counter.
    assert!(!sys.std_events.is_available(hw(HwGeneralEvent::BusCycles)));
    assert!(sys.std_events.is_available(hw(HwGeneralEvent::CpuCycles)));
    let attr = |ty, config| EventAttr {
        ty,
        config,
        ..EventAttr::default()
    };
    let branches = sys.open(attr(PERF_TYPE_HARDWARE, 4), 0).unwrap();
    let dtlb = sys.open(attr(PERF_TYPE_HW_CACHE, 3 | 1 << 16), 0).unwrap();
    let raw = sys.open(attr(PERF_TYPE_RAW, 0xc), 0).unwrap();
    let raw_again = sys.open(attr(PERF_TYPE_RAW, 0xc), 0).unwrap();
    let cycles = sys.open(attr(PERF_TYPE_HARDWARE, 0), 0).unwrap();
    for e in [branches, dtlb, raw, cycles] {
        sys.add(e, 0, true).unwrap();
    }
    assert_eq!(sys.events[branches].hw.idx, 9);
    assert_eq!(sys.events[dtlb].hw.idx, 6);
    assert_eq!(sys.events[raw].hw.idx, 14);
    assert_eq!(sys.events[cycles].hw.idx, 0);
    // The second raw 0xc event has no counter left: refused without asking firmware.
    assert!(sys.add(raw_again, 0, true).is_err());
    sys.tick(0, SimEvent::Raw(0xc), Mode::U, 500);
    sys.tick(
        0,
        SimEvent::Hw(hw(HwGeneralEvent::BranchInstructions)),
        Mode::S,
        70,
    );
    sys.settle();
    sys.check_invariants();
    sys.check_counts();
    assert_eq!(sys.events[raw].count, 500);
}

#[test]
fn malformed_board_properties_are_typed_errors() {
    let props = pmu_props("RPMU_DTB_D1S");
    let ctr = props.event_to_mhpmcounters.clone().unwrap();
    let raw = props.raw_event_to_mhpmcounters.clone().unwrap();
    let sel = props.event_to_mhpmevent.clone().unwrap();
    // Truncated by one byte.
    assert_eq!(
        DtPmuMaps::parse(None, Some(&ctr[..ctr.len() - 1]), None),
        Err(DtError::Length {
            property: DtProperty::EventToMhpmcounters,
            len: ctr.len() - 1
        })
    );
    // The first row duplicated: overlapping ranges, and a selector mapped twice.
    let doubled: Vec<u8> = ctr[..12].iter().chain(&ctr).copied().collect();
    assert_eq!(
        DtPmuMaps::parse(None, Some(&doubled), None),
        Err(DtError::Overlap {
            property: DtProperty::EventToMhpmcounters,
            row: 1
        })
    );
    let sel2: Vec<u8> = sel.iter().chain(&sel[..12]).copied().collect();
    assert_eq!(
        DtPmuMaps::parse(Some(&sel2), Some(&ctr), None),
        Err(DtError::DuplicateSelector { row: 10 })
    );
    // A raw row that claims the fixed counters.
    let mut raw_fixed = raw.clone();
    raw_fixed[19] |= 1;
    assert_eq!(
        DtPmuMaps::parse(None, None, Some(&raw_fixed)),
        Err(DtError::FixedCounters {
            property: DtProperty::RawEventToMhpmcounters,
            row: 0
        })
    );
    // A range row naming raw events.
    let mut ranged = ctr.clone();
    ranged[0..4].copy_from_slice(&0x20000u32.to_be_bytes());
    ranged[4..8].copy_from_slice(&0x20000u32.to_be_bytes());
    assert_eq!(
        DtPmuMaps::parse(None, Some(&ranged), None),
        Err(DtError::RawEventInRange { row: 0 })
    );
    // Selectors without counters.
    assert_eq!(
        DtPmuMaps::parse(Some(&sel), None, Some(&raw)),
        Err(DtError::SelectorsWithoutCounters)
    );
    // Every truncation of every property fails cleanly or parses.
    for cut in 0..ctr.len() {
        let _ = DtPmuMaps::parse(
            Some(&sel[..cut.min(sel.len())]),
            Some(&ctr[..cut]),
            Some(&raw[..cut.min(raw.len())]),
        );
    }
}

#[test]
fn malformed_dtb_blobs_are_errors() {
    let blob = dtb("RPMU_DTB_TH1520");
    assert!(fdt::find_compatible(&blob, "riscv,pmu").unwrap().is_some());
    assert_eq!(fdt::nodes(&blob[..3]), Err(FdtError::BadHeader));
    let mut bad = blob.clone();
    bad[0] = 0;
    assert_eq!(fdt::nodes(&bad), Err(FdtError::BadHeader));
    for cut in [40usize, 100, blob.len() / 2] {
        assert!(fdt::nodes(&blob[..cut]).is_err(), "cut at {cut}");
    }
}
