// SPDX-License-Identifier: GPL-2.0

//! The `cpu` PMU when firmware has no SBI PMU extension (the C kernel's `riscv_pmu_legacy`): the
//! generic `cycles` and `instructions` events, counted from the `cycle` and `instret` CSRs, which
//! cannot be stopped or written. No overflow interrupt and no mode filtering, so perf core refuses
//! sampling events (EOPNOTSUPP) and `:u`/`:k` modifiers (EINVAL) before they reach the driver. The
//! counting logic is the crate's [`sbi_pmu::legacy`].

#![deny(unsafe_code)]

use crate::glue::{
    arch::{self, RiscvPmuContainer},
    cpuhp::{self, CpuStarting, StartingState},
    percpu::LocalInterruptDisabled,
    perf::{self, Capabilities, CpuStates, EventInit, EventMut, EventOpFlags, PerfEvent},
    sysfs::AttributeGroups,
};
use crate::RiscvPmuSbiModule;
use kernel::{c_str, prelude::*, sync::Arc};
use sbi_pmu::{
    counters::{counter_of, scounteren_base, IDX_NONE},
    events::{UserAccess, PERF_TYPE_RAW},
    legacy,
};

/// The PMU without the SBI PMU extension.
pub(crate) struct LegacyPmu;

/// User mode's access to the `time` CSR on every CPU (`scounteren.TM`), which the vDSO's clock reads.
///
/// The SBI drivers grant it when a CPU starts. On 6.12 nothing else does (7.x's boot code grants
/// it on every hart), and where `scounteren` starts at 0 (a KVM guest) every program reading the
/// clock would die of SIGILL. The C legacy driver leaves it alone; this one grants it as the SBI
/// drivers do. `cycle` and `instret` stay unreadable from user mode: events are read with read(2).
pub(crate) struct LegacyStartingCpu;

impl CpuStarting for LegacyStartingCpu {
    const STATE: StartingState = arch::PERF_STARTING;
    const NAME: &'static CStr = c_str!("perf/riscv/pmu_legacy_rust:starting");

    fn starting(&self, _irq: &LocalInterruptDisabled) -> Result {
        arch::scounteren_write(scounteren_base(UserAccess::NoUserAccess));
        Ok(())
    }

    fn dying(&self, _irq: &LocalInterruptDisabled) {}
}

/// The legacy PMU has no sysfs attributes (no `format/`): its two events are generic ones.
static NO_ATTR_GROUPS: AttributeGroups<0> = AttributeGroups::new([]);

impl LegacyPmu {
    /// Grants user mode the `time` CSR on every CPU, now and when a CPU starts, and makes the
    /// module's state and the PMU to register (`pmu_legacy_init()`): no per-CPU state, and perf
    /// core may ask it for no sampling and no mode filtering.
    pub(crate) fn init(module: &'static ThisModule) -> Result<(RiscvPmuSbiModule, perf::Pmu)> {
        let _time_access = KBox::pin_init(cpuhp::Registration::new(LegacyStartingCpu), GFP_KERNEL)?;
        pr_info!("no SBI PMU extension: counting cycles and instructions from the base counters\n");
        let driver = Arc::new(LegacyPmu, GFP_KERNEL)?;
        let cpus = Arc::new(CpuStates::new(|_, ()| ())?, GFP_KERNEL)?;
        let capabilities = Capabilities::NO_INTERRUPT.union(Capabilities::NO_EXCLUDE);
        let pmu = perf::Pmu::new(module, driver, cpus, capabilities, &NO_ATTR_GROUPS)?;
        Ok((RiscvPmuSbiModule::Legacy { _time_access }, pmu))
    }
}

/// The value of the event's base counter now, if it has one.
fn read_counter(event: &PerfEvent) -> Option<u64> {
    let idx = counter_of(event.hw().idx())?;
    Some(arch::read_counter_csr(legacy::csr(idx)))
}

#[vtable]
impl perf::Driver for LegacyPmu {
    const NAME: &'static CStr = c_str!("cpu");
    // CAST: `PERF_TYPE_RAW` is 4.
    const TYPE: i32 = PERF_TYPE_RAW as i32;

    type CpuState = ();
    type Container = RiscvPmuContainer;

    /// `riscv_pmu_event_init()` with `pmu_legacy_event_map()`: `cycles` and `instructions` only.
    fn event_init(&self, event: &mut EventMut<'_>, _init: &EventInit<'_>) -> Result {
        legacy::event_counter(event.attr_type(), event.config())
            .map(|_| ())
            .map_err(|err| Error::from_errno(-err.errno()))
    }

    /// `riscv_pmu_add()`: the event takes its base counter, which several events may share.
    fn add(&self, cpu: &mut (), event: &mut EventMut<'_>, flags: EventOpFlags) -> Result {
        let idx = legacy::event_counter(event.attr_type(), event.config())
            .map_err(|err| Error::from_errno(-err.errno()))?;
        legacy::add(&mut event.hw_mut(), idx);
        if flags.contains(EventOpFlags::START) {
            self.start(cpu, event, flags);
        }
        event.update_userpage();
        Ok(())
    }

    /// `riscv_pmu_del()`.
    fn del(&self, cpu: &mut (), event: &mut EventMut<'_>, flags: EventOpFlags) {
        self.stop(cpu, event, flags);
        event.hw_mut().set_idx(IDX_NONE);
        event.update_userpage();
    }

    /// `pmu_legacy_ctr_start()`: the event counts from the counter's present value.
    fn start(&self, _cpu: &mut (), event: &mut EventMut<'_>, _flags: EventOpFlags) {
        if let Some(value) = read_counter(event) {
            legacy::start(&mut event.hw_mut(), value);
        }
    }

    /// `riscv_pmu_stop()`: the counter runs on; the event takes what it counted (nothing when it
    /// was stopped already).
    fn stop(&self, _cpu: &mut (), event: &mut EventMut<'_>, _flags: EventOpFlags) {
        if let Some(value) = read_counter(event) {
            let delta = legacy::stop(&mut event.hw_mut(), value);
            event.add_count(delta);
        }
    }

    /// `riscv_pmu_read()`.
    fn read(&self, _cpu: &mut (), event: &mut EventMut<'_>) {
        if let Some(value) = read_counter(event) {
            let delta = legacy::update(&mut event.hw_mut(), value);
            event.add_count(delta);
        }
    }
}
