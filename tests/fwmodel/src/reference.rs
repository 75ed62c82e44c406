// SPDX-License-Identifier: GPL-2.0

//! A reference per-CPU driver that makes the C driver's SBI calls, one event at a time
//! (`drivers/perf/riscv_pmu.c` and `drivers/perf/riscv_pmu_sbi.c`), through the crate's
//! [`Firmware`] trait. The crate's batched driver is measured against it: both must count exactly,
//! and the batched driver must not make more calls for the same perf operations.
//!
//! The calls are the C driver's:
//! - add (`riscv_pmu_add()`): `counter_config_matching`, with SKIP_MATCH on `cycle` or `instret` for
//!   cycles and instructions in legacy user-access mode, then the start with PERF_EF_START;
//! - start (`pmu_sbi_ctr_start()`): the next period, loaded with `counter_start` of the one counter
//!   with SET_INIT_VALUE, for counting events too;
//! - stop (`pmu_sbi_ctr_stop()`): `counter_stop` of the one counter, with TAKE_SNAPSHOT when snapshot
//!   memory is set up, and the update, which then reads the value from the snapshot page;
//! - del (`riscv_pmu_del()`): the stop, then `counter_stop` with RESET;
//! - read: the counter CSR, or `counter_fw_read` for a firmware counter;
//! - overflow interrupt (`pmu_sbi_ovf_handler()`): one stop of the hardware counters events hold, the
//!   overflowed counters taken from the snapshot page or `scountovf`, then one start from the snapshot
//!   page, or without it one plain start and one SET_INIT_VALUE start per reloaded counter.
//!
//! Where the C driver would lose counts or restart what perf stopped, the reference does what perf
//! expects instead, so that its counts are checked as exactly as the batched driver's:
//! - `counter_config_matching` is offered the counters no event holds rather than all of them: the
//!   model may take any counter that is not started, as the specification allows, where OpenSBI
//!   skips counters configured for an event;
//! - the overflow handler updates and reloads counting events as it does sampling events, without a
//!   sample (the C driver skips them, and loses a whole counter range when such a counter wraps twice
//!   between two reads), reads the values from the snapshot page even if the stop reported that a
//!   counter was already stopped, and restarts only the counters that were running (the C driver
//!   restarts every counter an event holds, also those perf stopped);
//! - an event perf stops inside the overflow handler (throttling) stays stopped.

use sbi_pmu::abi::{
    CfgFlags, EventType, HwGeneralEvent, SbiError, SbiVersion, SnapshotPage, StartFlags, StopFlags,
    CSR_SCOUNTOVF, RISCV_MAX_COUNTERS,
};
use sbi_pmu::counters::{
    event_set_period, event_update_with, HesState, HwEvent, HwFlags, HwPerfEvent, PmuInfo, IDX_NONE,
};
use sbi_pmu::firmware::Firmware;
use sbi_pmu::pmu::{AddError, OverflowEvent};

/// `counter_values[idx]` of the snapshot page.
fn snapshot_value<F: Firmware>(fw: &mut F, idx: usize) -> u64 {
    fw.snapshot_page_word(SnapshotPage::value_word(idx))
}

/// Sets `counter_values[idx]` of the snapshot page.
fn set_snapshot_value<F: Firmware>(fw: &mut F, idx: usize, value: u64) {
    fw.set_snapshot_page_word(SnapshotPage::value_word(idx), value);
}

/// The bit of a logical counter in a counter mask.
const fn bit(idx: usize) -> u64 {
    if idx < RISCV_MAX_COUNTERS {
        1 << idx
    } else {
        0
    }
}

/// The counters of a mask, in index order.
fn counters(mask: u64) -> impl Iterator<Item = usize> {
    (0..RISCV_MAX_COUNTERS).filter(move |i| mask & bit(*i) != 0)
}

/// One CPU of the reference driver (the C driver's `struct cpu_hw_events`).
#[derive(Clone, Debug)]
pub struct PerEvent {
    info: PmuInfo,
    snapshot: bool,
    used_hw: u64,
    used_fw: u64,
    /// Counters started and not stopped since, as far as the driver knows.
    running: u64,
    /// Whether the overflow handler is between its first and last step.
    in_handler: bool,
    /// The counters the overflow handler stopped while they ran, to start again at its end.
    ovf_stopped: u64,
    /// Overflowed counters whose event the handler has not updated yet.
    ovf_pending: u64,
    /// Counters the handler restarts with the value in `init_val`.
    ovf_reload: u64,
    init_val: [u64; RISCV_MAX_COUNTERS],
}

impl PerEvent {
    /// A CPU with no event, using the counters `info` describes.
    pub fn new(info: &PmuInfo) -> Self {
        Self {
            info: *info,
            snapshot: false,
            used_hw: 0,
            used_fw: 0,
            running: 0,
            in_handler: false,
            ovf_stopped: 0,
            ovf_pending: 0,
            ovf_reload: 0,
            init_val: [0; RISCV_MAX_COUNTERS],
        }
    }

    /// The counters events hold.
    pub fn used_ctrs(&self) -> u64 {
        self.used_hw | self.used_fw
    }

    /// `pmu_sbi_starting_cpu()`: stops and resets every counter, then on SBI v2.0 and later sets up
    /// the snapshot memory the firmware offers.
    pub fn cpu_starting<F: Firmware>(&mut self, fw: &mut F) -> Result<(), SbiError> {
        *self = Self::new(&self.info);
        if self.info.cmask != 0 {
            // Counters that are not configured make this fail; it still stops the others.
            let _ = fw.counter_stop(0, self.info.cmask as usize, StopFlags::RESET);
        }
        if self.info.version < SbiVersion::V2_0 {
            return Ok(());
        }
        if !fw.has_snapshot_mem() {
            return Ok(());
        }
        for word in 0..SnapshotPage::USED_WORDS {
            fw.set_snapshot_page_word(word, 0);
        }
        fw.snapshot_set_shmem(true)?;
        self.snapshot = true;
        Ok(())
    }

    /// `riscv_pmu_add()`.
    pub fn add<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &mut HwPerfEvent,
        start: bool,
    ) -> Result<(), AddError> {
        let idx = self.ctr_get_idx(fw, hw)?;
        // The index is below 64.
        hw.idx = idx as i32;
        hw.set_hes(HesState::STOPPED | HesState::UPTODATE);
        if start {
            self.start(fw, hw);
        }
        Ok(())
    }

    /// `riscv_pmu_del()`: the stop, then the reset of the counter's mapping. Returns the count to add
    /// to the event.
    pub fn del<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) -> u64 {
        let delta = self.stop(fw, hw);
        if let Some(idx) = self.held(hw) {
            let flags = StopFlags::RESET | self.snapshot_flag();
            // The counter is stopped already: ALREADY_STOPPED, and the mapping is reset.
            let _ = fw.counter_stop(idx, 1, flags);
            let b = bit(idx);
            self.used_hw &= !b;
            self.used_fw &= !b;
            self.running &= !b;
        }
        hw.idx = IDX_NONE;
        delta
    }

    /// `riscv_pmu_start()`: loads the next period and starts the counter.
    pub fn start<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) {
        let Some(idx) = self.held(hw) else {
            return;
        };
        hw.set_hes(HesState::empty());
        let mask = self.info.width_mask(idx);
        event_set_period(hw, mask);
        let _ = fw.counter_start(idx, 1, StartFlags::SET_INIT_VALUE, hw.prev_count & mask);
        self.running |= bit(idx);
    }

    /// `riscv_pmu_stop()`: stops the counter and updates the event. Returns the count to add to it.
    pub fn stop<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) -> u64 {
        let Some(idx) = self.held(hw) else {
            return 0;
        };
        if hw.hes().contains(HesState::STOPPED) {
            return 0;
        }
        let b = bit(idx);
        let handled = self.ovf_stopped & b != 0;
        // The overflow handler updates the event of an overflowed counter itself.
        let updated = handled && self.ovf_pending & b == 0;
        if handled {
            // The overflow handler stopped the counter already; it is not restarted at its end.
            self.ovf_stopped &= !b;
            self.ovf_reload &= !b;
        } else {
            let r = fw.counter_stop(idx, 1, self.snapshot_flag());
            if r.is_ok() && self.snapshot {
                // The value was saved relative to counter_idx_base, that is at index 0; the driver
                // keeps it at the counter's own index.
                let value = snapshot_value(fw, 0);
                set_snapshot_value(fw, idx, value);
                if idx > 0 {
                    set_snapshot_value(fw, 0, 0);
                }
            }
        }
        self.running &= !b;
        hw.set_hes(hw.hes() | HesState::STOPPED);
        let delta = if updated {
            0
        } else {
            self.ovf_pending &= !b;
            self.event_update(fw, hw)
        };
        hw.set_hes(hw.hes() | HesState::UPTODATE);
        delta
    }

    /// `riscv_pmu_read()`: updates the event from its counter. Returns the count to add to it.
    pub fn read<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) -> u64 {
        self.event_update(fw, hw)
    }

    /// First step of `pmu_sbi_ovf_handler()`: stops the hardware counters events hold, and returns
    /// those that overflowed while they ran.
    pub fn overflow_begin<F: Firmware>(&mut self, fw: &mut F) -> u64 {
        if self.used_hw == 0 {
            return 0;
        }
        self.in_handler = true;
        let _ = fw.counter_stop(0, self.used_hw as usize, self.snapshot_flag());
        self.ovf_stopped = self.running & self.used_hw;
        self.running &= !self.ovf_stopped;
        // With snapshot memory the bitmap is relative to counter_idx_base 0, so in logical counters;
        // scountovf is indexed by hardware counter.
        let overflow = if self.snapshot {
            fw.snapshot_page_word(SnapshotPage::OVERFLOW_WORD)
        } else {
            fw.read_counter_csr(CSR_SCOUNTOVF)
        };
        let overflowed = counters(self.used_hw).filter(|i| {
            let h = if self.snapshot {
                Some(*i)
            } else {
                self.info
                    .counter_info(*i)
                    .and_then(|c| c.hw_index())
                    .map(usize::from)
            };
            h.is_some_and(|h| overflow & bit(h) != 0)
        });
        self.ovf_pending = overflowed.fold(0, |m, i| m | bit(i)) & self.ovf_stopped;
        self.ovf_pending
    }

    /// The handler's step for the event of an overflowed counter: updates it and, for a sampling
    /// event, sets the next period to load at the restart.
    pub fn overflow_event<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &mut HwPerfEvent,
    ) -> Option<OverflowEvent> {
        let idx = self.held(hw)?;
        let b = bit(idx);
        if self.ovf_pending & b == 0 {
            return None;
        }
        self.ovf_pending &= !b;
        let delta = self.event_update(fw, hw);
        let last_period = hw.last_period;
        // A counting event is loaded with its next period too: continuing from the wrapped value, its
        // next overflow would come a full range later, where the update could not tell it from none.
        let mask = self.info.width_mask(idx);
        let due = event_set_period(hw, mask);
        self.init_val[idx] = hw.prev_count & mask;
        self.ovf_reload |= b;
        let sample = due && hw.hw_flags().contains(HwFlags::SAMPLING);
        Some(OverflowEvent {
            delta,
            sample,
            last_period,
            publish: hw.hw_flags().contains(HwFlags::USER_READ_CNT),
        })
    }

    /// Last step of the handler: restarts the counters it stopped.
    pub fn overflow_end<F: Firmware>(&mut self, fw: &mut F) {
        if !self.in_handler {
            return;
        }
        let restart = self.ovf_stopped;
        let reload = self.ovf_reload & restart;
        if self.snapshot {
            // The other counters restart from the values the stop saved in the page.
            for i in counters(reload) {
                set_snapshot_value(fw, i, self.init_val[i]);
            }
            let _ = fw.counter_start(0, restart as usize, StartFlags::INIT_SNAPSHOT, 0);
        } else {
            let _ = fw.counter_start(0, (restart & !reload) as usize, StartFlags::empty(), 0);
            for i in counters(reload) {
                let _ = fw.counter_start(i, 1, StartFlags::SET_INIT_VALUE, self.init_val[i]);
            }
        }
        self.running |= restart;
        self.in_handler = false;
        self.ovf_stopped = 0;
        self.ovf_pending = 0;
        self.ovf_reload = 0;
    }

    /// `pmu_sbi_ctr_get_idx()`: has firmware configure a counter for the event and claims it.
    fn ctr_get_idx<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &HwPerfEvent,
    ) -> Result<usize, AddError> {
        let event_idx = hw.event_idx().ok_or(AddError::NoCounter)?;
        let mut cflags = CfgFlags::from_bits_retain(hw.config_base as usize);
        let mut cmask = self.info.cmask & !self.used_ctrs();
        if hw.hw_flags().contains(HwFlags::LEGACY) {
            // Counter 0 is cycle and counter 2 instret, as the C driver assumes.
            let fixed = match event_idx.hw_event() {
                Some(HwGeneralEvent::CpuCycles) => bit(0),
                Some(HwGeneralEvent::Instructions) => bit(2),
                _ => 0,
            };
            if fixed != 0 {
                cflags |= CfgFlags::SKIP_MATCH;
                cmask = fixed;
            }
        }
        let idx = fw
            .counter_config_matching(0, cmask as usize, cflags, event_idx, hw.config)
            .map_err(AddError::Sbi)?;
        let b = bit(idx);
        if self.info.counter_info(idx).is_none() {
            return Err(AddError::NoCounter);
        }
        let used = if event_idx.ty() == EventType::Firmware {
            &mut self.used_fw
        } else {
            &mut self.used_hw
        };
        if *used & b != 0 {
            return Err(AddError::NoCounter);
        }
        *used |= b;
        Ok(idx)
    }

    /// `riscv_pmu_event_update()`: reads the counter and moves the event to it.
    fn event_update<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) -> u64 {
        if hw.hes().contains(HesState::UPTODATE) {
            return 0;
        }
        let Some(idx) = self.held(hw) else {
            return 0;
        };
        let Some(info) = self.info.counter_info(idx) else {
            return 0;
        };
        let value = if self.snapshot && hw.hes().contains(HesState::STOPPED) {
            // The stop saved the value in the snapshot page.
            snapshot_value(fw, idx)
        } else if info.firmware {
            // As the C driver, a failed read counts as the value 0.
            fw.counter_fw_read(idx).map_or(0, |v| v as u64)
        } else {
            fw.read_counter_csr(info.csr)
        };
        event_update_with(hw, value, self.info.width_mask(idx))
    }

    /// The counter the event holds, if this CPU gave it one.
    fn held(&self, hw: &HwPerfEvent) -> Option<usize> {
        let idx = usize::try_from(hw.idx).ok()?;
        (self.used_ctrs() & bit(idx) != 0).then_some(idx)
    }

    /// TAKE_SNAPSHOT when snapshot memory is set up: the C driver takes one at every stop.
    fn snapshot_flag(&self) -> StopFlags {
        if self.snapshot {
            StopFlags::TAKE_SNAPSHOT
        } else {
            StopFlags::empty()
        }
    }
}
