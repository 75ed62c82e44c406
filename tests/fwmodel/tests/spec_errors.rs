// SPDX-License-Identifier: GPL-2.0

//! Every error the PMU chapter's tables list, produced by the model (Tables 7, 9, 11, 13, 14, 15, 17,
//! 19 and the version column of Table 20). Calls are made with raw registers built from the model's
//! own constants; the answers are read as the driver reads them, as the crate's typed `SbiError`, so
//! the error codes are checked both ways.

use fwmodel::spec::{self, Function, Version};
use fwmodel::{Config, Mode, Model, SimEvent, EVENT_INFO_ENTRIES, EVENT_INFO_PHYS, SNAPSHOT_PHYS};
use sbi_pmu::abi::Fid;
use sbi_pmu::abi::{CounterInfo, SbiError};
use sbi_pmu::firmware::Firmware;

/// `sbi_pmu_snapshot_set_shmem` with raw arguments, as firmware receives them.
fn set_shmem(m: &mut Model, lo: usize, hi: usize, flags: usize) -> Result<(), SbiError> {
    m.sbi_ecall(Fid::SnapshotSetShmem, [lo, hi, flags, 0, 0, 0])
        .map(|_| ())
}

/// `sbi_pmu_event_get_info` with raw arguments, as firmware receives them.
fn get_info(m: &mut Model, lo: usize, hi: usize, n: usize, flags: usize) -> Result<(), SbiError> {
    m.sbi_ecall(Fid::EventGetInfo, [lo, hi, n, flags, 0, 0])
        .map(|_| ())
}

/// `sbi_pmu_counter_fw_read_hi`, which the driver (RV64 only) never calls.
fn fw_read_hi(m: &mut Model, idx: usize) -> Result<usize, SbiError> {
    m.sbi_ecall(Fid::CounterFwReadHi, [idx, 0, 0, 0, 0, 0])
}

const CYCLES: usize = spec::hw_general_event(spec::SBI_PMU_HW_CPU_CYCLES);
const BRANCHES: usize = spec::hw_general_event(spec::SBI_PMU_HW_BRANCH_INSTRUCTIONS);

/// OpenSBI's layout with 4 programmable counters (3 to 6) and 16 firmware counters (7 to 22).
fn model(version: Version) -> Model {
    Model::new(Config::opensbi_like(version, 4, 48))
}

fn raw(m: &mut Model, f: Function, args: [usize; 6]) -> Result<usize, SbiError> {
    m.ecall(spec::EXT_PMU, f.fid(), args).result()
}

fn cfg_match(
    m: &mut Model,
    (cbase, cmask): (usize, usize),
    flags: usize,
    event: usize,
    data: u64,
) -> Result<usize, SbiError> {
    let args = [cbase, cmask, flags, event, data as usize, 0];
    raw(m, Function::CounterConfigMatching, args)
}

fn start(
    m: &mut Model,
    cbase: usize,
    cmask: usize,
    flags: usize,
    init: u64,
) -> Result<(), SbiError> {
    let args = [cbase, cmask, flags, init as usize, 0, 0];
    raw(m, Function::CounterStart, args).map(|_| ())
}

fn stop(m: &mut Model, cbase: usize, cmask: usize, flags: usize) -> Result<(), SbiError> {
    raw(m, Function::CounterStop, [cbase, cmask, flags, 0, 0, 0]).map(|_| ())
}

fn configure(m: &mut Model, mask: usize, event: usize) -> usize {
    cfg_match(m, (0, mask), 0, event, 0).expect("config_matching")
}

#[test]
fn functions_newer_than_the_version_are_not_supported() {
    for version in [Version::V0_3, Version::V2_0, Version::V3_0] {
        for f in Function::ALL {
            let mut m = model(version);
            // Arguments each function accepts on an implementation that has it.
            let args = match f {
                Function::CounterConfigMatching => [0, 0b1000, 0, BRANCHES, 0, 0],
                Function::CounterStart | Function::CounterStop => [3, 1, 0, 0, 0, 0],
                Function::CounterFwRead | Function::CounterFwReadHi => [7, 0, 0, 0, 0, 0],
                Function::SnapshotSetShmem => [SNAPSHOT_PHYS as usize, 0, 0, 0, 0, 0],
                Function::EventGetInfo => [EVENT_INFO_PHYS as usize, 0, 0, 0, 0, 0],
                _ => [0; 6],
            };
            let r = raw(&mut m, f, args);
            if version < f.since() {
                assert_eq!(r, Err(SbiError::NotSupported), "{f:?} on {version:?}");
            } else {
                assert!(r.is_ok(), "{f:?} on {version:?}: {r:?}");
            }
        }
    }
    let mut m = model(Version::V3_0);
    assert_eq!(
        m.ecall(spec::EXT_PMU, 9, [0; 6]).result(),
        Err(SbiError::NotSupported)
    );
    assert_eq!(
        m.ecall(0x10, 0, [0; 6]).result(),
        Err(SbiError::NotSupported)
    );
}

#[test]
fn table_7_counter_get_info() {
    let mut m = model(Version::V2_0);
    assert_eq!(m.num_counters(), Ok(3 + 4 + 16));
    // The words, as the specification lays them out: CSR in bits 11:0, width (bits minus one) in
    // 17:12, type in XLEN-1 (1 for firmware, whose CSR field is to be ignored).
    assert_eq!(m.counter_get_info(0), Ok(0xC00 | 63 << 12));
    assert_eq!(m.counter_get_info(3), Ok(0xC03 | 47 << 12));
    let fw = m.counter_get_info(7).unwrap();
    assert_eq!(fw & !0xfff, 1 << 63 | 63 << 12);
    // And as the driver decodes them.
    let hpm = CounterInfo::decode(m.counter_get_info(3).unwrap());
    assert_eq!((hpm.csr, hpm.width, hpm.firmware), (0xC03, 47, false));
    assert!(CounterInfo::decode(fw).firmware);
    // counter_idx points to an invalid counter.
    assert_eq!(m.counter_get_info(1), Err(SbiError::InvalidParam));
    assert_eq!(m.counter_get_info(23), Err(SbiError::InvalidParam));
    assert_eq!(m.counter_get_info(usize::MAX), Err(SbiError::InvalidParam));
}

#[test]
fn table_9_counter_config_matching() {
    let mut m = model(Version::V2_0);
    // Success returns the counter; the first eligible one of the set.
    assert_eq!(configure(&mut m, 0b111_1000, BRANCHES), 3);
    // A set with an invalid counter (time, or past the end) is INVALID_PARAM.
    assert_eq!(
        cfg_match(&mut m, (0, 0b10), 0, CYCLES, 0),
        Err(SbiError::InvalidParam)
    );
    assert_eq!(
        cfg_match(&mut m, (20, 0b1111), 0, spec::fw_event(1), 0),
        Err(SbiError::InvalidParam)
    );
    assert_eq!(
        cfg_match(&mut m, (usize::MAX, 0b11), 0, CYCLES, 0),
        Err(SbiError::InvalidParam)
    );
    // A reserved flag bit is INVALID_PARAM.
    for bit in 8..64 {
        assert_eq!(
            cfg_match(&mut m, (0, 0b1000), 1 << bit, BRANCHES, 0),
            Err(SbiError::InvalidParam),
            "bit {bit}"
        );
    }
    // None of the counters can monitor the event.
    assert_eq!(
        cfg_match(&mut m, (0, 0b1), 0, BRANCHES, 0),
        Err(SbiError::NotSupported)
    );
    assert_eq!(
        cfg_match(&mut m, (0, 0b111_1000), 0, spec::fw_event(2), 0),
        Err(SbiError::NotSupported)
    );
    // Started counters are not candidates: with 4 started, the set is exhausted.
    for _ in 0..4 {
        let c = configure(&mut m, 0b111_1000, BRANCHES);
        start(&mut m, c, 1, 0, 0).unwrap();
    }
    assert_eq!(
        cfg_match(&mut m, (0, 0b111_1000), 0, BRANCHES, 0),
        Err(SbiError::NotSupported)
    );
    // Events the specification does not define, or with reserved event_data, are not supported.
    let mut m = model(Version::V2_0);
    for (idx, data) in [
        (0x0000usize, 0u64), // SBI_PMU_HW_NO_EVENT
        (0x0000b, 0),        // past Table 2
        (0x00001, 1),        // non-zero event_data of a general event
        (0x10038, 0),        // cache id 7
        (0x10006, 0),        // op id 3
        (0x20001, 0),        // raw event with a non-zero code
        (0x20000, 1 << 48),  // raw event data above 48 bits
        (0x30000, 5),        // raw v2 before SBI v3.0
        (0x40000, 0),        // undefined type
        (0xf0016, 0),        // reserved firmware code
        (0xf0005, 1),        // event_data of a standard firmware event
        (0x1_00001, 0),      // reserved event_idx bits
    ] {
        assert_eq!(
            cfg_match(&mut m, (0, ((1 << 23) - 1) & !0b10), 0, idx, data),
            Err(SbiError::NotSupported),
            "{idx:#x} {data:#x}"
        );
    }
    // Flags: CLEAR_VALUE zeroes, AUTO_START starts, SKIP_MATCH takes the first counter of the set.
    m.set_counter_value(4, 77);
    let flags = spec::SBI_PMU_CFG_FLAG_CLEAR_VALUE | spec::SBI_PMU_CFG_FLAG_AUTO_START;
    assert_eq!(cfg_match(&mut m, (0, 0b1_0000), flags, BRANCHES, 0), Ok(4));
    assert_eq!(m.counter_value(4), Some(0));
    assert!(m.is_started(4));
    let skip = spec::SBI_PMU_CFG_FLAG_SKIP_MATCH;
    assert_eq!(
        cfg_match(&mut m, (5, 0b11), skip, spec::RAW_EVENT, 0x33),
        Ok(5)
    );
    assert_eq!(m.counter_event(5), Some((spec::RAW_EVENT, 0x33)));
}

#[test]
fn inhibit_hints_filter_modes() {
    let mut m = model(Version::V2_0);
    let all = spec::SBI_PMU_CFG_FLAG_SET_UINH
        | spec::SBI_PMU_CFG_FLAG_SET_SINH
        | spec::SBI_PMU_CFG_FLAG_SET_MINH
        | spec::SBI_PMU_CFG_FLAG_SET_VUINH;
    for (flags, counted) in [
        (
            spec::SBI_PMU_CFG_FLAG_SET_UINH,
            [false, true, true, true, true],
        ),
        (
            spec::SBI_PMU_CFG_FLAG_SET_SINH,
            [true, false, true, true, true],
        ),
        (
            spec::SBI_PMU_CFG_FLAG_SET_MINH,
            [true, true, false, true, true],
        ),
        (
            spec::SBI_PMU_CFG_FLAG_SET_VUINH,
            [true, true, true, false, true],
        ),
        (
            spec::SBI_PMU_CFG_FLAG_SET_VSINH,
            [true, true, true, true, false],
        ),
        (all, [false, false, false, false, true]),
    ] {
        let flags = flags | spec::SBI_PMU_CFG_FLAG_AUTO_START;
        let c = cfg_match(&mut m, (0, 0b111_1000), flags, BRANCHES, 0).unwrap();
        for (mode, expect) in Mode::ALL.iter().zip(counted) {
            assert_eq!(
                m.would_count(c, SimEvent::Hw(BRANCHES), *mode),
                expect,
                "{flags:#x} {mode:?}"
            );
        }
        stop(&mut m, c, 1, spec::SBI_PMU_STOP_FLAG_RESET).unwrap();
    }
    // Without Sscofpmf the hints are ignored.
    let mut cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    cfg.sscofpmf = false;
    let mut m = Model::new(cfg);
    let flags = spec::SBI_PMU_CFG_FLAG_SET_UINH | spec::SBI_PMU_CFG_FLAG_AUTO_START;
    let c = cfg_match(&mut m, (0, 0b111_1000), flags, BRANCHES, 0).unwrap();
    assert!(m.would_count(c, SimEvent::Hw(BRANCHES), Mode::U));
}

#[test]
fn table_11_counter_start() {
    let mut m = model(Version::V2_0);
    let set_init = spec::SBI_PMU_START_SET_INIT_VALUE;
    let from_snapshot = spec::SBI_PMU_START_FLAG_INIT_SNAPSHOT;
    let c = configure(&mut m, 0b111_1000, BRANCHES);
    // Invalid counter or reserved flag.
    assert_eq!(start(&mut m, 1, 1, 0, 0), Err(SbiError::InvalidParam));
    assert_eq!(start(&mut m, 0, 1 << 40, 0, 0), Err(SbiError::InvalidParam));
    assert_eq!(start(&mut m, c, 1, 4, 0), Err(SbiError::InvalidParam));
    // The two initialisation flags exclude each other, and SET_INIT_VALUE is for one counter.
    assert_eq!(
        start(&mut m, c, 1, set_init | from_snapshot, 0),
        Err(SbiError::InvalidParam)
    );
    // Not started, c is still a candidate: the next event needs a set without it.
    assert_eq!(configure(&mut m, 0b111_1000, BRANCHES), c);
    let d = configure(&mut m, 0b111_0000, BRANCHES);
    assert_eq!(
        start(&mut m, 0, 1 << c | 1 << d, set_init, 5),
        Err(SbiError::InvalidParam)
    );
    // INIT_SNAPSHOT without shared memory.
    assert_eq!(
        start(&mut m, c, 1, from_snapshot, 0),
        Err(SbiError::NoShmem)
    );
    // SET_INIT_VALUE sets the value, masked to the width.
    start(&mut m, c, 1, set_init, u64::MAX).unwrap();
    assert_eq!(m.counter_value(c), Some((1 << 48) - 1));
    // Already started: the other counters of the set still start.
    assert_eq!(
        start(&mut m, 0, 1 << c | 1 << d, 0, 0),
        Err(SbiError::AlreadyStarted)
    );
    assert!(m.is_started(d));
    assert!(m.anomalies().is_empty());
}

#[test]
fn table_13_counter_stop() {
    let mut m = model(Version::V2_0);
    let c = configure(&mut m, 0b111_1000, BRANCHES);
    assert_eq!(stop(&mut m, 1, 1, 0), Err(SbiError::InvalidParam));
    assert_eq!(stop(&mut m, c, 1, 4), Err(SbiError::InvalidParam));
    assert_eq!(
        stop(&mut m, c, 1, spec::SBI_PMU_STOP_FLAG_TAKE_SNAPSHOT),
        Err(SbiError::NoShmem)
    );
    assert_eq!(stop(&mut m, c, 1, 0), Err(SbiError::AlreadyStopped));
    start(&mut m, c, 1, 0, 0).unwrap();
    assert_eq!(stop(&mut m, c, 1, 0), Ok(()));
    // RESET of a stopped counter reports ALREADY_STOPPED and still drops the mapping.
    assert_eq!(
        stop(&mut m, c, 1, spec::SBI_PMU_STOP_FLAG_RESET),
        Err(SbiError::AlreadyStopped)
    );
    assert_eq!(m.counter_event(c), None);
}

#[test]
fn tables_14_and_15_firmware_reads() {
    let mut m = model(Version::V2_0);
    let auto = spec::SBI_PMU_CFG_FLAG_AUTO_START;
    let f = cfg_match(&mut m, (0, 0xffff << 7), auto, spec::fw_event(5), 0).unwrap();
    m.tick(SimEvent::Fw(5), Mode::S, 42);
    assert_eq!(m.counter_fw_read(f), Ok(42));
    assert_eq!(fw_read_hi(&mut m, f), Ok(0));
    for bad in [0usize, 1, 3, 23, usize::MAX] {
        assert_eq!(m.counter_fw_read(bad), Err(SbiError::InvalidParam), "{bad}");
        assert_eq!(
            fw_read_hi(&mut m, bad),
            Err(SbiError::InvalidParam),
            "{bad}"
        );
    }
    let mut old = model(Version::V0_3);
    assert_eq!(fw_read_hi(&mut old, f), Err(SbiError::NotSupported));
}

#[test]
fn table_16_and_17_snapshot_shared_memory() {
    let mut m = model(Version::V2_0);
    let lo = SNAPSHOT_PHYS as usize;
    assert_eq!(set_shmem(&mut m, lo, 0, 1), Err(SbiError::InvalidParam));
    assert_eq!(set_shmem(&mut m, lo + 8, 0, 0), Err(SbiError::InvalidParam));
    assert_eq!(set_shmem(&mut m, lo, 1, 0), Err(SbiError::InvalidAddress));
    assert_eq!(
        set_shmem(&mut m, lo + 4096, 0, 0),
        Err(SbiError::InvalidAddress)
    );
    assert_eq!(set_shmem(&mut m, lo, 0, 0), Ok(()));

    // TAKE_SNAPSHOT writes the stopped counters' values relative to counter_idx_base, and the
    // overflow bitmap; other values are left alone.
    let set_init = spec::SBI_PMU_START_SET_INIT_VALUE;
    let c = configure(&mut m, 0b000_1000, BRANCHES);
    let d = configure(&mut m, 0b001_0000, BRANCHES);
    start(&mut m, c, 1, set_init, (1 << 48) - 2).unwrap();
    start(&mut m, d, 1, set_init, 100).unwrap();
    m.tick(SimEvent::Hw(BRANCHES), Mode::U, 5);
    assert!(m.irq_pending());
    m.snapshot_page_mut().ctr_values[9] = 0xdead;
    stop(&mut m, c, 0b11, spec::SBI_PMU_STOP_FLAG_TAKE_SNAPSHOT).unwrap();
    let page = m.snapshot_page();
    assert_eq!(page.ctr_values[0], 3);
    assert_eq!(page.ctr_values[1], 105);
    assert_eq!(page.ctr_overflow_mask, 0b01);
    assert_eq!(page.ctr_values[9], 0xdead);

    // INIT_SNAPSHOT loads every started counter from the page, relative to the base.
    {
        let page = m.snapshot_page_mut();
        page.ctr_values[0] = 1000;
        page.ctr_values[1] = 2000;
    }
    start(&mut m, c, 0b11, spec::SBI_PMU_START_FLAG_INIT_SNAPSHOT, 0).unwrap();
    assert_eq!(m.counter_value(c), Some(1000));
    assert_eq!(m.counter_value(d), Some(2000));

    // Disable with all ones; then the snapshot flags fail with NO_SHMEM.
    assert_eq!(
        set_shmem(&mut m, spec::SHMEM_DISABLE, spec::SHMEM_DISABLE, 0),
        Ok(())
    );
    assert_eq!(
        stop(&mut m, c, 0b11, spec::SBI_PMU_STOP_FLAG_TAKE_SNAPSHOT),
        Err(SbiError::NoShmem)
    );

    // An implementation without snapshot support.
    let mut cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    cfg.snapshot = false;
    let mut m = Model::new(cfg);
    assert_eq!(set_shmem(&mut m, lo, 0, 0), Err(SbiError::NotSupported));
}

#[test]
fn table_18_and_19_event_get_info() {
    let mut m = model(Version::V3_0);
    let lo = EVENT_INFO_PHYS as usize;
    let l1d_read_miss = spec::hw_cache_event(
        spec::SBI_PMU_HW_CACHE_L1D,
        spec::SBI_PMU_HW_CACHE_OP_READ,
        spec::SBI_PMU_HW_CACHE_RESULT_MISS,
    );
    let entries = [
        (CYCLES, 0),
        (l1d_read_miss, 0),
        (spec::RAW_V2_EVENT, 0x1234),
        (spec::fw_event(spec::SBI_PMU_FW_LAST_STANDARD), 0),
        (spec::fw_event(spec::SBI_PMU_FW_LAST_STANDARD + 1), 0),
        (
            spec::hw_general_event(spec::SBI_PMU_HW_REF_CPU_CYCLES + 1),
            0,
        ),
        (spec::RAW_EVENT, 1 << 50),
    ];
    {
        let mem = m.event_info_mem();
        // Table 18 on a little-endian hart: event_idx and the output word share the first 64-bit
        // word; the output word starts as garbage the call must overwrite.
        for (slot, (idx, data)) in mem.chunks_exact_mut(2).zip(entries) {
            slot[0] = idx as u64 | 0xffff_ffff << 32;
            slot[1] = data;
        }
    }
    assert_eq!(get_info(&mut m, lo, 0, entries.len(), 0), Ok(()));
    let outputs: Vec<u64> = m.event_info_mem()[..2 * entries.len()]
        .chunks_exact(2)
        .map(|e| e[0] >> 32)
        .collect();
    assert_eq!(outputs, [1, 1, 1, 1, 0, 0, 0]);
    // flags not zero, or the address not 16-byte aligned.
    assert_eq!(get_info(&mut m, lo, 0, 1, 1), Err(SbiError::InvalidParam));
    assert_eq!(
        get_info(&mut m, lo + 8, 0, 1, 0),
        Err(SbiError::InvalidParam)
    );
    // Memory outside what the supervisor owns.
    assert_eq!(get_info(&mut m, lo, 1, 1, 0), Err(SbiError::InvalidAddress));
    assert_eq!(
        get_info(&mut m, lo - 16, 0, 1, 0),
        Err(SbiError::InvalidAddress)
    );
    assert_eq!(
        get_info(&mut m, lo, 0, EVENT_INFO_ENTRIES + 1, 0),
        Err(SbiError::InvalidAddress)
    );
    assert_eq!(
        get_info(&mut m, lo, 0, usize::MAX, 0),
        Err(SbiError::InvalidAddress)
    );
    // A reserved bit of the second entry's event_idx (bit 20 of its first word).
    m.event_info_mem()[2] |= 1 << 20;
    assert_eq!(get_info(&mut m, lo, 0, 2, 0), Err(SbiError::InvalidParam));
    // Not implemented.
    let mut cfg = Config::opensbi_like(Version::V3_0, 4, 48);
    cfg.event_info = false;
    let mut m = Model::new(cfg);
    assert_eq!(get_info(&mut m, lo, 0, 1, 0), Err(SbiError::NotSupported));
}

#[test]
fn overflow_sets_the_bit_and_the_interrupt_once() {
    let mut m = model(Version::V2_0);
    let set_init = spec::SBI_PMU_START_SET_INIT_VALUE;
    let c = configure(&mut m, 0b111_1000, BRANCHES);
    start(&mut m, c, 1, set_init, (1 << 48) - 10).unwrap();
    let branches = SimEvent::Hw(BRANCHES);
    assert_eq!(m.ticks_to_overflow(branches, Mode::U), Some(10));
    m.tick(branches, Mode::U, 9);
    assert!(!m.irq_pending());
    m.tick(branches, Mode::U, 1);
    assert!(m.irq_pending());
    assert_eq!(m.read_counter_csr(spec::CSR_SCOUNTOVF), 1 << 3);
    m.clear_irq();
    // The bit stays set until the counter starts again: no second interrupt.
    m.tick(branches, Mode::U, 1 << 48);
    assert!(!m.irq_pending());
    stop(&mut m, c, 1, 0).unwrap();
    start(&mut m, c, 1, 0, 0).unwrap();
    assert_eq!(m.read_counter_csr(spec::CSR_SCOUNTOVF), 0);
    // Without Sscofpmf there is neither bit nor interrupt.
    let mut cfg = Config::opensbi_like(Version::V2_0, 4, 48);
    cfg.sscofpmf = false;
    let mut m = Model::new(cfg);
    let c = configure(&mut m, 0b111_1000, BRANCHES);
    start(&mut m, c, 1, set_init, (1 << 48) - 1).unwrap();
    m.tick(branches, Mode::U, 5);
    assert!(!m.irq_pending());
    assert_eq!(m.counter_value(c), Some(4));
}
