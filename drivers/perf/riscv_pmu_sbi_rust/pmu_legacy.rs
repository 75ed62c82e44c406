// SPDX-License-Identifier: GPL-2.0

//! The `cpu` PMU when firmware has no SBI PMU extension (the C kernel's `riscv_pmu_legacy`): the
//! generic `cycles` and `instructions` events, counted from the `cycle` and `instret` CSRs, which
//! cannot be stopped or written. No overflow interrupt and no mode filtering, so perf core refuses
//! sampling events (EOPNOTSUPP) and `:u`/`:k` modifiers (EINVAL) before they reach the driver. The
//! counting logic is the crate's [`sbi_pmu::legacy`].

#![deny(unsafe_code)]

use crate::glue::{
    arch,
    cpuhp::{self, CpuStarting},
    percpu::LocalCpu,
    perf::{self, Capabilities, CpuStates, EventFlags, EventInit, PerfEvent, PmuWindow},
    sysfs::AttributeGroups,
};
use kernel::{c_str, prelude::*, sync::Arc};
use sbi_pmu::{
    counters::{scounteren_base, HwEvent, IDX_NONE},
    events::{UserAccess, PERF_TYPE_RAW},
    legacy,
};

/// The PMU without the SBI PMU extension.
pub(crate) struct LegacyPmu;

/// User mode's access to the `time` CSR on every CPU (`scounteren.TM`), which the vDSO's clock reads.
///
/// The SBI drivers grant it when a CPU starts; without them nothing does, and where `scounteren`
/// starts at 0 (a KVM guest) every program reading the clock would die of SIGILL. The C legacy
/// driver leaves it alone; this one grants it as the SBI drivers do. `cycle` and `instret` stay
/// unreadable from user mode: events are read with read(2).
pub(crate) struct LegacyStartingCpu;

impl CpuStarting for LegacyStartingCpu {
    const NAME: &'static CStr = c_str!("perf/riscv/pmu_legacy_rust:starting");

    fn starting(&self, _cpu: &LocalCpu<'_>) -> Result {
        arch::scounteren_write(scounteren_base(UserAccess::NoUserAccess));
        Ok(())
    }

    fn dying(&self, _cpu: &LocalCpu<'_>) {}
}

/// The legacy PMU has no sysfs attributes (no `format/`): its two events are generic ones.
static NO_ATTR_GROUPS: AttributeGroups<0> = AttributeGroups::new([]);

impl LegacyPmu {
    /// Grants user mode the `time` CSR on every CPU, now and when a CPU starts.
    pub(crate) fn user_time_access() -> Result<Pin<KBox<cpuhp::Registration<LegacyStartingCpu>>>> {
        KBox::pin_init(cpuhp::Registration::new(LegacyStartingCpu), GFP_KERNEL)
    }

    /// Registers the legacy PMU (`pmu_legacy_init()`).
    pub(crate) fn register(
        module: &'static ThisModule,
    ) -> Result<Pin<KBox<perf::Registration<LegacyPmu>>>> {
        pr_info!("no SBI PMU extension: counting cycles and instructions from the base counters\n");
        let cpus = Arc::new(CpuStates::new(|_| ())?, GFP_KERNEL)?;
        KBox::pin_init(
            perf::Registration::new(
                module,
                Arc::new(LegacyPmu, GFP_KERNEL)?,
                cpus,
                Capabilities::NO_INTERRUPT | Capabilities::NO_EXCLUDE,
                &NO_ATTR_GROUPS,
            ),
            GFP_KERNEL,
        )
        .inspect_err(|err| pr_err!("registering the cpu PMU failed: {:?}\n", err))
    }
}

/// Adds `delta` to the event's count.
fn add_count(event: &PerfEvent, delta: u64) {
    if delta != 0 {
        event.add_count(delta);
    }
}

/// The value of the event's base counter now, if it has one.
fn read_counter(event: &PerfEvent) -> Option<u64> {
    let idx = event.hw().counter()?;
    Some(arch::read_counter_csr(legacy::csr(idx)))
}

#[vtable]
impl perf::Driver for LegacyPmu {
    const NAME: &'static CStr = c_str!("cpu");
    // CAST: `PERF_TYPE_RAW` is 4.
    const TYPE: i32 = PERF_TYPE_RAW as i32;

    type CpuState = ();

    /// `riscv_pmu_event_init()` with `pmu_legacy_event_map()`: `cycles` and `instructions` only.
    fn event_init(&self, event: &PerfEvent, _init: &EventInit<'_>) -> Result {
        legacy::event_counter(event.attr_type(), event.config())
            .map(|_| ())
            .map_err(|err| Error::from_errno(-err.errno()))
    }

    /// `riscv_pmu_add()`: the event takes its base counter, which several events may share.
    fn add(
        &self,
        _cpu: &mut (),
        event: &PerfEvent,
        flags: EventFlags,
        window: PmuWindow<'_>,
    ) -> Result {
        let idx = legacy::event_counter(event.attr_type(), event.config())
            .map_err(|err| Error::from_errno(-err.errno()))?;
        legacy::add(&mut event.hw(), idx);
        if flags.contains(EventFlags::START) {
            self.start(&mut (), event, flags, window);
        }
        event.update_userpage();
        Ok(())
    }

    /// `riscv_pmu_del()`.
    fn del(&self, _cpu: &mut (), event: &PerfEvent, flags: EventFlags, window: PmuWindow<'_>) {
        self.stop(&mut (), event, flags, window);
        event.hw().set_idx(IDX_NONE);
        event.update_userpage();
    }

    /// `pmu_legacy_ctr_start()`: the event counts from the counter's present value.
    fn start(&self, _cpu: &mut (), event: &PerfEvent, _flags: EventFlags, _: PmuWindow<'_>) {
        if let Some(value) = read_counter(event) {
            legacy::start(&mut event.hw(), value);
        }
    }

    /// `riscv_pmu_stop()`: the counter runs on; the event takes what it counted (nothing when it
    /// was stopped already).
    fn stop(&self, _cpu: &mut (), event: &PerfEvent, _flags: EventFlags, _: PmuWindow<'_>) {
        if let Some(value) = read_counter(event) {
            add_count(event, legacy::stop(&mut event.hw(), value));
        }
    }

    /// `riscv_pmu_read()`.
    fn read(&self, _cpu: &mut (), event: &PerfEvent) {
        if let Some(value) = read_counter(event) {
            add_count(event, legacy::update(&mut event.hw(), value));
        }
    }
}
