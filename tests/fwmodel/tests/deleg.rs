// SPDX-License-Identifier: GPL-2.0

//! Counter delegation against the model of the delegated CSRs: selectors from the device tree's
//! map, where the platform table does not apply, and the hybrid of delegated and firmware counters.

use fwmodel::harness::{DtCells, System};
use fwmodel::spec::{Function, Version};
use fwmodel::{Config, Mode, SimEvent};
use sbi_pmu::deleg::Selectors;
use sbi_pmu::events::{EventAttr, PERF_TYPE_HARDWARE, PERF_TYPE_RAW};

/// A board whose hardware selects instructions with 0x8002 and says so in its device tree.
fn board() -> (Config, DtCells) {
    let mut cfg = Config::opensbi_like(Version::V2_0, 8, 48).with_cdeleg();
    cfg.cd_selectors = vec![(2, 0x8002)];
    cfg.hw_events = Some(vec![2]);
    let cells = DtCells {
        event_to_mhpmevent: Some(vec![2, 0, 0x8002]),
        event_to_mhpmcounters: Some(vec![2, 2, 0x7fff8]),
        raw_event_to_mhpmcounters: None,
    };
    (cfg, cells)
}

fn instructions_u() -> EventAttr {
    EventAttr {
        ty: PERF_TYPE_HARDWARE,
        config: 1,
        exclude_kernel: true,
        ..EventAttr::default()
    }
}

#[test]
fn selectors_from_the_device_tree_map_count_the_board_event() {
    let (cfg, cells) = board();
    let mut sys = System::new(cfg, 1);
    sys.set_dt(cells.clone()).unwrap();
    let maps = cells.maps().unwrap();
    sys.set_selectors(Selectors::from_maps(&maps).expect("the map has selectors"));
    let e = sys.open(instructions_u(), 0).unwrap();
    sys.add(e, 0, true).unwrap();
    sys.tick(0, SimEvent::Hw(2), Mode::U, 1000);
    sys.tick(0, SimEvent::Hw(2), Mode::S, 500);
    sys.read(e);
    assert_eq!(sys.events[e].count, 1000);
    assert_eq!(sys.calls_since_boot(), 0, "SBI calls for a delegated event");
    sys.check_invariants();
}

#[test]
fn the_platform_table_does_not_fit_another_board() {
    // QEMU virt's table programs instructions as selector 2, which this board takes as a raw event.
    let (cfg, cells) = board();
    let mut sys = System::new(cfg, 1);
    sys.set_dt(cells).unwrap();
    let e = sys.open(instructions_u(), 0).unwrap();
    sys.add(e, 0, true).unwrap();
    sys.tick(0, SimEvent::Hw(2), Mode::U, 1000);
    sys.read(e);
    assert_eq!(sys.events[e].count, 0);
}

#[test]
fn firmware_events_go_through_sbi_beside_delegated_counters() {
    let mut sys = System::new(Config::opensbi_like(Version::V2_0, 4, 48).with_cdeleg(), 1);
    let hw = sys.open(instructions_u(), 0).unwrap();
    let fw = sys
        .open(
            EventAttr {
                ty: PERF_TYPE_RAW,
                config: 1 << 63 | 5,
                ..EventAttr::default()
            },
            0,
        )
        .unwrap();
    sys.disable(0);
    sys.add(hw, 0, true).unwrap();
    sys.add(fw, 0, true).unwrap();
    sys.enable(0);
    sys.tick(0, SimEvent::Hw(2), Mode::U, 300);
    sys.tick(0, SimEvent::Fw(5), Mode::S, 7);
    sys.settle();
    sys.check_counts();
    assert_eq!(sys.events[hw].count, 300);
    assert_eq!(sys.events[fw].count, 7);
    assert_eq!(
        sys.calls_of(Function::CounterConfigMatching) - boot_matches(),
        1
    );
    sys.check_invariants();
}

/// The `counter_config_matching` calls a boot makes (the standard-event check).
fn boot_matches() -> u64 {
    let sys = System::new(Config::opensbi_like(Version::V2_0, 4, 48).with_cdeleg(), 1);
    sys.calls_of(Function::CounterConfigMatching)
}
