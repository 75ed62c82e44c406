// SPDX-License-Identifier: GPL-2.0

//! The SBI PMU driver: counter discovery at probe, and the perf callbacks of the `cpu` PMU.
//!
//! C version of this driver: [`drivers/perf/riscv_pmu_sbi.c`](srctree/drivers/perf/riscv_pmu_sbi.c)
//! with the core library [`drivers/perf/riscv_pmu.c`](srctree/drivers/perf/riscv_pmu.c). The
//! functions carry the names of their C counterparts.
//!
//! This version counts the cycles and instructions hardware events. Other events are refused with
//! `ENOENT`, which perf reports as `<not supported>`, and sampling events with `EOPNOTSUPP`.

use crate::glue::{
    cpuhp::CpuStarting,
    perf::{self, Capabilities, EventFlags, HwState, PerfEvent},
    platform,
    sbi::{self, EcallFirmware},
    sysfs::{AttributeGroup, AttributeGroups, Attributes, FormatAttr},
};
use kernel::{c_str, prelude::*};
use sbi_pmu::{
    abi::{
        CfgFlags, CounterInfo, CounterKind, EventIdx, HwGeneralEvent, SbiError, SbiVersion,
        StartFlags, StopFlags, EXT_PMU, RISCV_MAX_COUNTERS,
    },
    events::{self, EventAttr, EventRequest, MapError},
    firmware::Firmware,
};

/// The platform devices of the C drivers that register the `cpu` PMU.
const C_DRIVER_DEVICES: [&CStr; 2] = [c_str!("riscv-pmu-sbi"), c_str!("riscv-pmu-legacy")];

/// `scounteren` with only the `time` CSR readable from user mode: the C driver's setting for the
/// default `perf_user_access` (user access through perf's mmap page only).
const SCOUNTEREN_TIME: usize = 0x2;

static FORMAT_EVENT: FormatAttr = FormatAttr::new(c_str!("event"), c_str!("config:0-47"));
static FORMAT_FIRMWARE: FormatAttr = FormatAttr::new(c_str!("firmware"), c_str!("config:62-63"));
static FORMAT_ATTRS: Attributes<2> = Attributes::new([&FORMAT_EVENT, &FORMAT_FIRMWARE]);
static FORMAT_GROUP: AttributeGroup = AttributeGroup::new(c_str!("format"), &FORMAT_ATTRS);

/// The sysfs groups of the PMU (`riscv_pmu_attr_groups`): the same `format/` as the C driver.
pub(crate) static RISCV_PMU_ATTR_GROUPS: AttributeGroups<1> = AttributeGroups::new([&FORMAT_GROUP]);

/// Converts an SBI error to the errno the C driver returns for it (`sbi_err_map_linux_errno()`).
fn sbi_err_map_linux_errno(err: SbiError) -> Error {
    Error::from_errno(-err.to_errno())
}

/// Converts an event mapping error to the errno the C driver returns for it.
fn map_err_errno(err: MapError) -> Error {
    Error::from_errno(-err.errno())
}

/// Per-CPU state (the C driver's `struct cpu_hw_events`).
#[derive(Zeroable)]
pub(crate) struct CpuHwEvents {
    /// The SBI PMU extension of this hart.
    fw: EcallFirmware,
    /// The number of events on this CPU's counters.
    n_events: u32,
    /// The hardware counters in use, by counter index.
    used_hw_ctrs: u64,
    /// The firmware counters in use, by counter index.
    used_fw_ctrs: u64,
}

/// The SBI PMU as probe found it (the C driver's `struct riscv_pmu` and `pmu_ctr_list`).
pub(crate) struct RiscvPmu {
    /// The SBI specification version of the firmware.
    version: SbiVersion,
    /// The usable counters: those for which `counter_get_info` succeeded.
    cmask: u64,
    /// What `counter_get_info` said about each usable counter.
    ctr_list: [Option<CounterInfo>; RISCV_MAX_COUNTERS],
    /// Whether the harts have Sscofpmf, so that firmware honours the mode filters.
    sscofpmf: bool,
}

/// Refuses to load while a C driver owns the `cpu` PMU.
///
/// perf core has a single `PERF_TYPE_RAW` PMU: registering a second one does not fail cleanly
/// (perf_pmu_register() warns and then fails to create the duplicate sysfs device), so the check
/// is made before anything is set up.
pub(crate) fn pmu_sbi_check_c_driver() -> Result {
    for name in C_DRIVER_DEVICES {
        if platform::device_bound(name) {
            pr_err!(
                "the C driver ({}) already provides the cpu PMU; boot with initcall_blacklist=pmu_sbi_devinit to use this driver\n",
                name
            );
            return Err(EBUSY);
        }
    }
    Ok(())
}

impl RiscvPmu {
    /// Finds the SBI PMU and its counters (`pmu_sbi_devinit()` and `pmu_sbi_device_probe()`).
    pub(crate) fn probe(fw: &mut impl Firmware) -> Result<Self> {
        let version = sbi::spec_version();
        if version < SbiVersion::V0_3 {
            pr_err!(
                "SBI specification {}.{} has no PMU extension (0.3 or later needed)\n",
                version.major,
                version.minor
            );
            return Err(ENODEV);
        }
        if !sbi::probe_extension(EXT_PMU) {
            pr_err!("the SBI implementation has no PMU extension\n");
            return Err(ENODEV);
        }
        pr_info!("SBI PMU extension is available\n");

        let mut num_counters = fw.num_counters().map_err(|_| {
            pr_err!("SBI PMU extension doesn't provide any counters\n");
            ENODEV
        })?;
        if num_counters > RISCV_MAX_COUNTERS {
            num_counters = RISCV_MAX_COUNTERS;
            pr_info!(
                "SBI returned more than maximum number of counters. Limiting the number of counters to {}\n",
                num_counters
            );
        }

        let mut pmu = Self {
            version,
            cmask: 0,
            ctr_list: [None; RISCV_MAX_COUNTERS],
            sscofpmf: sbi::has_sscofpmf(),
        };
        pmu.pmu_sbi_get_ctrinfo(fw, num_counters);
        if !pmu.sscofpmf {
            pr_info!(
                "Perf sampling/filtering is not supported as sscof extension is not available\n"
            );
        }
        Ok(pmu)
    }

    /// Asks firmware about each counter; the ones it has no information for are left out, as
    /// "the logical counter ids are not expected to be contiguous" (`pmu_sbi_get_ctrinfo()`).
    fn pmu_sbi_get_ctrinfo(&mut self, fw: &mut impl Firmware, num_counters: usize) {
        let (mut num_hw_ctr, mut num_fw_ctr) = (0, 0);
        for (idx, slot) in self.ctr_list.iter_mut().enumerate().take(num_counters) {
            let Ok(info) = fw.counter_get_info(idx) else {
                continue;
            };
            self.cmask |= 1 << idx;
            match info.kind {
                CounterKind::Firmware => num_fw_ctr += 1,
                CounterKind::Hardware => num_hw_ctr += 1,
            }
            *slot = Some(info);
        }
        pr_info!(
            "{} firmware and {} hardware counters\n",
            num_fw_ctr,
            num_hw_ctr
        );
    }

    /// The usable counters (`cmask`).
    pub(crate) fn cmask(&self) -> u64 {
        self.cmask
    }

    /// What perf core may ask of this PMU: without Sscofpmf, no overflow interrupt and no mode
    /// filtering, as in the C driver. Sampling is not implemented yet, so it is refused even with
    /// Sscofpmf (in `event_init`).
    pub(crate) fn capabilities(&self) -> Capabilities {
        if self.sscofpmf {
            Capabilities::NONE
        } else {
            Capabilities::NO_INTERRUPT | Capabilities::NO_EXCLUDE
        }
    }

    /// The counter information of counter `idx`, if it is usable.
    fn ctr_info(&self, idx: usize) -> Option<CounterInfo> {
        self.ctr_list.get(idx).copied().flatten()
    }

    /// The mask of valid bits of the event's counter, or of counter 0 while the event has none
    /// (`riscv_pmu_ctr_get_width_mask()`).
    fn ctr_get_width_mask(&self, event: &PerfEvent) -> u64 {
        self.ctr_info(event.hw_idx().unwrap_or(0))
            .map_or(u64::MAX, |info| info.width_mask())
    }

    /// Maps the event to an SBI request (`pmu_sbi_event_map()`), limited to what this version of
    /// the driver counts.
    fn event_map(&self, event: &PerfEvent) -> Result<EventRequest> {
        let attr = EventAttr {
            ty: event.attr_type(),
            config: event.config(),
            config1: event.config1(),
            exclude_user: event.exclude_user(),
            exclude_kernel: event.exclude_kernel(),
            exclude_hv: event.exclude_hv(),
            exclude_host: event.exclude_host(),
            exclude_guest: event.exclude_guest(),
            sampling: event.is_sampling(),
        };
        let req = events::event_map(&attr, self.version).map_err(map_err_errno)?;
        match req.event_idx.hw_event() {
            Some(HwGeneralEvent::CpuCycles | HwGeneralEvent::Instructions) => Ok(req),
            _ => Err(ENOENT),
        }
    }

    /// Finds a counter for the event with `counter_config_matching` and claims it on this CPU
    /// (`pmu_sbi_ctr_get_idx()`).
    fn pmu_sbi_ctr_get_idx(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent) -> Result<usize> {
        let event_idx = u32::try_from(event.hw_event_base())
            .ok()
            .and_then(EventIdx::from_raw)
            .ok_or(EINVAL)?;
        let cflags = CfgFlags::from_bits_retain(event.hw_config_base());
        // CAST: `cmask` has one bit per counter and counters fit in an `unsigned long` on RV64.
        let cmask = self.cmask as usize;
        let idx = cpuc
            .fw
            .counter_config_matching(0, cmask, cflags, event_idx, event.hw_config())
            .map_err(|err| {
                pr_debug!(
                    "Not able to find a counter for event {:x} config {:x}\n",
                    event_idx.raw(),
                    event.hw_config()
                );
                sbi_err_map_linux_errno(err)
            })?;

        // Firmware must pick one of the counters offered.
        let info = self.ctr_info(idx).ok_or(ENOENT)?;
        let used = match info.kind {
            CounterKind::Firmware => &mut cpuc.used_fw_ctrs,
            CounterKind::Hardware => &mut cpuc.used_hw_ctrs,
        };
        if *used & (1 << idx) != 0 {
            return Err(ENOENT);
        }
        *used |= 1 << idx;
        Ok(idx)
    }

    /// Releases the event's counter on this CPU (`pmu_sbi_ctr_clear_idx()`).
    fn pmu_sbi_ctr_clear_idx(&self, cpuc: &mut CpuHwEvents, idx: usize) {
        let Some(info) = self.ctr_info(idx) else {
            return;
        };
        let used = match info.kind {
            CounterKind::Firmware => &mut cpuc.used_fw_ctrs,
            CounterKind::Hardware => &mut cpuc.used_hw_ctrs,
        };
        *used &= !(1 << idx);
    }

    /// Reads the event's counter: the CSR of a hardware counter, or `counter_fw_read` for a
    /// firmware counter (`pmu_sbi_ctr_read()`).
    fn pmu_sbi_ctr_read(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent) -> u64 {
        let Some((idx, info)) = event
            .hw_idx()
            .and_then(|idx| Some((idx, self.ctr_info(idx)?)))
        else {
            return 0;
        };
        match info.kind {
            CounterKind::Hardware => cpuc.fw.read_counter_csr(info.csr),
            // CAST: RV64 firmware counters are read whole with one call.
            CounterKind::Firmware => cpuc.fw.counter_fw_read(idx).map_or(0, |value| value as u64),
        }
    }

    /// Starts the event's counter from `ival` (`pmu_sbi_ctr_start()`).
    fn pmu_sbi_ctr_start(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent, ival: u64) {
        let Some(idx) = event.hw_idx() else {
            return;
        };
        match cpuc
            .fw
            .counter_start(idx, 1, StartFlags::SET_INIT_VALUE, ival)
        {
            Ok(()) | Err(SbiError::AlreadyStarted) => {}
            Err(err) => pr_err!(
                "Starting counter idx {} failed with error {}\n",
                idx,
                sbi_err_map_linux_errno(err).to_errno()
            ),
        }
    }

    /// Stops the event's counter; with [`StopFlags::RESET`] firmware also forgets its event
    /// (`pmu_sbi_ctr_stop()`).
    fn pmu_sbi_ctr_stop(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent, flag: StopFlags) {
        let Some(idx) = event.hw_idx() else {
            return;
        };
        match cpuc.fw.counter_stop(idx, 1, flag) {
            Ok(()) | Err(SbiError::AlreadyStopped) => {}
            Err(_) if flag == StopFlags::RESET => {}
            Err(err) => pr_err!(
                "Stopping counter idx {} failed with error {}\n",
                idx,
                sbi_err_map_linux_errno(err).to_errno()
            ),
        }
    }

    /// Adds what the counter counted since the last update to the event's count
    /// (`riscv_pmu_event_update()`).
    fn riscv_pmu_event_update(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent) -> u64 {
        if event.hw_state().contains(HwState::UPTODATE) {
            return 0;
        }
        let cmask = self.ctr_get_width_mask(event);
        let (prev_raw_count, new_raw_count) = loop {
            let prev = event.prev_count();
            let new = self.pmu_sbi_ctr_read(cpuc, event);
            if event.prev_count_cmpxchg(prev, new) == prev {
                break (prev, new);
            }
        };
        let delta = new_raw_count.wrapping_sub(prev_raw_count) & cmask;
        event.add_count(delta);
        event.sub_period_left(delta);
        delta
    }

    /// Chooses the counter's start value from what is left of the period
    /// (`riscv_pmu_event_set_period()`). Counting events have a period of half the counter range,
    /// so the counter never wraps between two updates.
    fn riscv_pmu_event_set_period(&self, event: &PerfEvent) {
        // CAST: Periods are at most half the counter range, below `i64::MAX`.
        let period = event.sample_period() as i64;
        let max_period = self.ctr_get_width_mask(event);
        let mut left = event.period_left();

        if left <= -period {
            left = period;
            event.set_period_left(left);
            // CAST: `period` came from the `u64` sample period.
            event.set_last_period(period as u64);
        }
        if left <= 0 {
            left += period;
            event.set_period_left(left);
            // CAST: `period` came from the `u64` sample period.
            event.set_last_period(period as u64);
        }
        // Leave room for the counter to run on before the next update without overtaking the
        // value programmed now.
        // CAST: Half of a `u64` mask fits in an `i64`.
        left = left.min((max_period >> 1) as i64);

        // CAST: The counter starts `left` below its wrap-around point.
        event.set_prev_count(left.wrapping_neg() as u64);
        event.update_userpage();
    }
}

#[vtable]
impl perf::Driver for RiscvPmu {
    const NAME: &'static CStr = c_str!("cpu");
    // CAST: `PERF_TYPE_RAW` is 4.
    const TYPE: i32 = events::PERF_TYPE_RAW as i32;

    type CpuData = CpuHwEvents;

    /// `riscv_pmu_event_init()` with `pmu_sbi_event_map()`.
    fn event_init(&self, event: &PerfEvent) -> Result {
        if event.has_branch_stack() {
            return Err(map_err_errno(MapError::NotSupported));
        }
        event.clear_hw_flags();
        let req = self.event_map(event).inspect_err(|_| {
            pr_debug!(
                "event {:x}:{:x} not supported\n",
                event.attr_type(),
                event.config()
            );
        })?;
        if event.is_sampling() {
            return Err(map_err_errno(MapError::NotSupported));
        }

        // The counter is chosen in `add`; until then the event has none.
        event.set_hw_config(req.event_data);
        event.set_hw_event_base(req.event_idx.raw() as usize);
        event.set_hw_config_base(req.cflags.bits());
        event.set_hw_idx(None);

        // Counting events are read at least every half counter range, so a wrap is never missed.
        let cmask = self.ctr_get_width_mask(event);
        event.set_sample_period(cmask >> 1);
        event.set_last_period(cmask >> 1);
        // CAST: Half of a `u64` mask fits in an `i64`.
        event.set_period_left((cmask >> 1) as i64);
        Ok(())
    }

    /// `riscv_pmu_add()`.
    fn add(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent, flags: EventFlags) -> Result {
        let idx = self.pmu_sbi_ctr_get_idx(cpuc, event)?;
        event.set_hw_idx(Some(idx));
        cpuc.n_events += 1;
        event.set_hw_state(HwState::UPTODATE | HwState::STOPPED);
        if flags.contains(EventFlags::START) {
            self.start(cpuc, event, EventFlags::RELOAD);
        }
        event.update_userpage();
        Ok(())
    }

    /// `riscv_pmu_del()`.
    fn del(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent, _flags: EventFlags) {
        self.stop(cpuc, event, EventFlags::UPDATE);
        // Firmware must forget the counter's event, or the counter stays taken.
        self.pmu_sbi_ctr_stop(cpuc, event, StopFlags::RESET);
        cpuc.n_events = cpuc.n_events.saturating_sub(1);
        if let Some(idx) = event.hw_idx() {
            self.pmu_sbi_ctr_clear_idx(cpuc, idx);
        }
        event.update_userpage();
        event.set_hw_idx(None);
    }

    /// `riscv_pmu_start()`.
    fn start(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent, _flags: EventFlags) {
        event.set_hw_state(HwState::RUNNING);
        self.riscv_pmu_event_set_period(event);
        let init_val = event.prev_count() & self.ctr_get_width_mask(event);
        self.pmu_sbi_ctr_start(cpuc, event, init_val);
        event.update_userpage();
    }

    /// `riscv_pmu_stop()`.
    fn stop(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent, _flags: EventFlags) {
        if event.hw_state().contains(HwState::STOPPED) {
            return;
        }
        self.pmu_sbi_ctr_stop(cpuc, event, StopFlags::empty());
        event.set_hw_state(event.hw_state() | HwState::STOPPED);
        self.riscv_pmu_event_update(cpuc, event);
        event.set_hw_state(event.hw_state() | HwState::UPTODATE);
    }

    /// `riscv_pmu_read()`.
    fn read(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent) {
        self.riscv_pmu_event_update(cpuc, event);
    }
}

/// Stops and releases every counter of this hart (`pmu_sbi_stop_all()`). Errors are ignored: most
/// counters are not started.
fn pmu_sbi_stop_all(fw: &mut impl Firmware, cmask: u64) {
    // CAST: `cmask` has one bit per counter and counters fit in an `unsigned long` on RV64.
    let _ = fw.counter_stop(0, cmask as usize, StopFlags::RESET);
}

/// What every CPU needs before its counters serve perf (`pmu_sbi_starting_cpu()`).
pub(crate) struct PmuSbiStartingCpu {
    /// The usable counters.
    cmask: u64,
}

impl PmuSbiStartingCpu {
    /// Prepares CPUs for the counters in `cmask`.
    pub(crate) fn new(cmask: u64) -> Self {
        Self { cmask }
    }
}

impl CpuStarting for PmuSbiStartingCpu {
    const NAME: &'static CStr = c_str!("perf/riscv/pmu_sbi_rust:starting");

    fn starting(&self, _cpu: u32) -> Result {
        sbi::write_scounteren(SCOUNTEREN_TIME);
        // Firmware leaves `cycle` and `instret` running from boot, and starting a running counter
        // does not load its start value: stop everything so counters start from a known state.
        pmu_sbi_stop_all(&mut EcallFirmware, self.cmask);
        Ok(())
    }
}
