// SPDX-License-Identifier: GPL-2.0

//! The base counters, for firmware without the SBI PMU extension (the C kernel's
//! `drivers/perf/riscv_pmu_legacy.c`).
//!
//! Without the extension the supervisor can neither configure, start, stop nor write a counter: it
//! can only read the two base counters the Zicntr extension defines, `cycle` and `instret`, which run
//! from reset. The PMU then offers exactly the generic `cycles` and `instructions` events; an event
//! counts the difference between the counter's value when it starts and when it is read or stops.
//! Every other event is refused with ENOENT, as the legacy driver does. There is no overflow
//! interrupt (so no sampling) and no mode filtering: the kernel glue declares both capabilities
//! missing and perf core refuses such events before they reach the driver.

use crate::abi::CSR_CYCLE;
use crate::counters::{event_update_with, HesState, HwEvent};
use crate::events::{MapError, PERF_TYPE_HARDWARE};

/// The counter of `cycle`: its CSR number minus `cycle`'s, as `hw.idx` and the mmap page use it.
pub const CYCLE_IDX: usize = 0;
/// The counter of `instret`.
pub const INSTRET_IDX: usize = 2;

/// `pmu_legacy_ctr_get_idx()`: the counter of a generic `cycles` or `instructions` event.
pub fn event_counter(ty: u32, config: u64) -> Result<usize, MapError> {
    if ty != PERF_TYPE_HARDWARE {
        return Err(MapError::UnsupportedType);
    }
    match config {
        // PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_INSTRUCTIONS.
        0 => Ok(CYCLE_IDX),
        1 => Ok(INSTRET_IDX),
        _ => Err(MapError::Unavailable),
    }
}

/// The CSR a base counter is read from: `cycle` (0xc00) or `instret` (0xc02).
pub const fn csr(idx: usize) -> u16 {
    if idx == INSTRET_IDX {
        CSR_CYCLE + INSTRET_IDX as u16
    } else {
        CSR_CYCLE
    }
}

/// `riscv_pmu_add()`: the event takes base counter `idx` ([`CYCLE_IDX`] or [`INSTRET_IDX`]; several
/// events may share one), stopped.
pub fn add(hw: &mut impl HwEvent, idx: usize) {
    // idx is 0 or 2, so it fits an i32.
    hw.set_idx(idx as i32);
    hw.set_hes(HesState::STOPPED | HesState::UPTODATE);
}

/// `pmu_legacy_ctr_start()`: the counter cannot be written, so the event starts from the value it
/// holds now.
pub fn start(hw: &mut impl HwEvent, value: u64) {
    hw.set_prev_count(value);
    hw.set_hes(HesState::empty());
}

/// `riscv_pmu_event_update()` for a base counter read as `value`: the count to add to the event.
/// Nothing once the event is up to date (stopped and already updated).
pub fn update(hw: &mut impl HwEvent, value: u64) -> u64 {
    if hw.hes().contains(HesState::UPTODATE) {
        return 0;
    }
    event_update_with(hw, value, u64::MAX)
}

/// `riscv_pmu_stop()`: the counter runs on; the event is updated from `value` and marked stopped.
pub fn stop(hw: &mut impl HwEvent, value: u64) -> u64 {
    let delta = update(hw, value);
    hw.set_hes(HesState::STOPPED | HesState::UPTODATE);
    delta
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::HwPerfEvent;

    #[test]
    fn only_cycles_and_instructions_map() {
        assert_eq!(event_counter(PERF_TYPE_HARDWARE, 0), Ok(CYCLE_IDX));
        assert_eq!(event_counter(PERF_TYPE_HARDWARE, 1), Ok(INSTRET_IDX));
        for config in 2..10 {
            assert_eq!(
                event_counter(PERF_TYPE_HARDWARE, config).map_err(MapError::errno),
                Err(crate::errno::ENOENT)
            );
        }
        // Cache and raw events are not the legacy PMU's: ENOENT as well.
        for ty in [3, 4] {
            assert_eq!(
                event_counter(ty, 0).map_err(MapError::errno),
                Err(crate::errno::ENOENT)
            );
        }
        assert_eq!(csr(CYCLE_IDX), 0xc00);
        assert_eq!(csr(INSTRET_IDX), 0xc02);
    }

    #[test]
    fn counts_the_difference_since_start_and_wraps_at_64_bits() {
        let mut hw = HwPerfEvent::default();
        add(&mut hw, INSTRET_IDX);
        assert_eq!(hw.counter(), Some(INSTRET_IDX));
        // Added but not started: stopping counts nothing.
        assert_eq!(stop(&mut hw, 77), 0);
        start(&mut hw, u64::MAX - 5);
        assert_eq!(update(&mut hw, u64::MAX - 1), 4);
        assert_eq!(update(&mut hw, 10), 12);
        assert_eq!(stop(&mut hw, 20), 10);
        assert!(hw.hes().contains(HesState::STOPPED));
        // Stopped and up to date: a later read adds nothing, though the counter ran on.
        assert_eq!(update(&mut hw, 1000), 0);
        start(&mut hw, 1000);
        assert_eq!(stop(&mut hw, 1500), 500);
    }
}
