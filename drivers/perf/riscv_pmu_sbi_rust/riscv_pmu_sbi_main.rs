// SPDX-License-Identifier: GPL-2.0

//! RISC-V SBI PMU driver.
//!
//! Registers the `cpu` PMU with perf and counts hardware events through the SBI Performance
//! Monitoring Unit extension (EID 0x504D55), like the C driver
//! [`drivers/perf/riscv_pmu_sbi.c`](srctree/drivers/perf/riscv_pmu_sbi.c), but as a module that can
//! be unloaded.
//!
//! - [`pmu_sbi`]: the driver: probe and the perf callbacks, in safe Rust.
//! - [`glue`]: the kernel interfaces the 6.12 `kernel` crate lacks (perf, per-CPU data, CPU
//!   hotplug, sysfs attributes, SBI calls), the only `unsafe` code.
//! - `sbi_pmu` (a separate crate): the SBI PMU ABI and the event mapping, without kernel
//!   dependencies.

use kernel::prelude::*;

mod glue;
mod pmu_sbi;

use glue::{cpuhp, debugfs, percpu::PerCpu, perf, sbi::EcallFirmware, sysctl};
use kernel::{c_str, sync::Arc};
use pmu_sbi::{
    PerfUserAccess, PmuSbiCpuPm, PmuSbiOverflow, PmuSbiStartingCpu, RiscvPmu, SbiCallStats,
};

module! {
    type: RiscvPmuSbiModule,
    name: "riscv_pmu_sbi_rust",
    author: "riscv_pmu_sbi_rust developers",
    description: "RISC-V SBI PMU driver",
    license: "GPL",
}

/// The module's state: the PMU, the hotplug state that prepares each CPU's counters, the counter
/// overflow interrupt, the CPU PM notifier, the `kernel.perf_user_access` sysctl and the debugfs
/// statistics.
///
/// Fields drop in declaration order: the PMU is unregistered (which waits for its callbacks, and
/// leaves no event on a counter) before the CPU PM notifier and the hotplug state go; the latter
/// releases the counters still mapped on every CPU and disables the overflow interrupt, which is
/// freed last. The sysctl and the debugfs file go first.
struct RiscvPmuSbiModule {
    _user_access: Pin<KBox<sysctl::Registration<PerfUserAccess>>>,
    _stats: debugfs::Registration<SbiCallStats>,
    _pmu: Pin<KBox<perf::Registration<RiscvPmu>>>,
    _cpu_pm: Pin<KBox<perf::CpuPmRegistration<PmuSbiCpuPm>>>,
    _starting_cpu: Pin<KBox<cpuhp::Registration<PmuSbiStartingCpu>>>,
    _overflow_irq: Option<perf::OverflowIrq<PmuSbiOverflow>>,
}

impl kernel::Module for RiscvPmuSbiModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        pmu_sbi::pmu_sbi_check_c_driver()?;
        let mut pmu = RiscvPmu::probe(&mut EcallFirmware)?;

        // The per-CPU state is shared by the PMU callbacks and the hotplug callbacks, which both
        // use a CPU's copy on that CPU with interrupts disabled.
        let cpu_data = Arc::new(PerCpu::new(|_| pmu.new_cpu_hw_events())?, GFP_KERNEL)?;
        // The events on each CPU's counters, for the overflow interrupt and the CPU PM notifier.
        let events = Arc::new(PerCpu::new(|_| perf::EventSlots::new())?, GFP_KERNEL)?;

        // With Sscofpmf, counters interrupt on overflow (`pmu_sbi_setup_irqs()`); without the
        // interrupt the PMU neither samples nor filters by mode, as in the C driver.
        let overflow_irq = if pmu.has_sscofpmf() {
            perf::OverflowIrq::request(
                c_str!("riscv-pmu"),
                pmu.overflow_handler(),
                cpu_data.clone(),
                events.clone(),
            )
            .inspect_err(|err| pr_err!("requesting the overflow interrupt failed: {:?}\n", err))
            .ok()
        } else {
            None
        };
        pmu.set_overflow_irq(overflow_irq.is_some());

        // Every CPU's counters are stopped before perf can use them, now and when a CPU starts,
        // and the overflow interrupt enabled.
        let starting_cpu = KBox::pin_init(
            cpuhp::Registration::new(
                PmuSbiStartingCpu::new(overflow_irq.as_ref().map(|irq| irq.irq())),
                cpu_data.clone(),
            ),
            GFP_KERNEL,
        )
        .inspect_err(|err| pr_err!("setting up the CPU hotplug state failed: {:?}\n", err))?;

        // Every CPU's counters are reset now, so the check may configure and release counters.
        pmu.start_std_events_check()?;

        let stats = debugfs::Registration::new(
            c_str!("riscv_pmu_sbi_rust"),
            c_str!("sbi_calls"),
            SbiCallStats::new(cpu_data.clone()),
        )?;

        let user_access =
            KBox::pin_init(sysctl::Registration::new(), GFP_KERNEL).inspect_err(|err| {
                pr_err!("registering kernel.perf_user_access failed: {:?}\n", err)
            })?;

        // Events stop while their CPU is in a low-power state (a no-op without CONFIG_CPU_PM).
        let cpu_pm = KBox::pin_init(
            perf::CpuPmRegistration::new(pmu.cpu_pm_notifier(), cpu_data.clone(), events.clone()),
            GFP_KERNEL,
        )?;

        let capabilities = pmu.capabilities();
        let attr_groups = pmu.attr_groups();
        let pmu = KBox::pin_init(
            perf::Registration::new(module, pmu, cpu_data, events, capabilities, attr_groups),
            GFP_KERNEL,
        )
        .inspect_err(|err| pr_err!("registering the cpu PMU failed: {:?}\n", err))?;

        Ok(Self {
            _user_access: user_access,
            _stats: stats,
            _pmu: pmu,
            _cpu_pm: cpu_pm,
            _starting_cpu: starting_cpu,
            _overflow_irq: overflow_irq,
        })
    }
}
