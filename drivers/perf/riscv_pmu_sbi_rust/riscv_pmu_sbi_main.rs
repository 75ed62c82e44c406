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
use pmu_sbi::{PerfUserAccess, PmuSbiStartingCpu, RiscvPmu, SbiCallStats};

module! {
    type: RiscvPmuSbiModule,
    name: "riscv_pmu_sbi_rust",
    author: "riscv_pmu_sbi_rust developers",
    description: "RISC-V SBI PMU driver",
    license: "GPL",
}

/// The module's state: the PMU, the hotplug state that prepares each CPU's counters, the
/// `kernel.perf_user_access` sysctl and the debugfs statistics.
///
/// Fields drop in declaration order: the PMU is unregistered (which waits for its callbacks)
/// before the hotplug state goes, which releases the counters still mapped on every CPU. The
/// sysctl and the debugfs file go first.
struct RiscvPmuSbiModule {
    _user_access: Pin<KBox<sysctl::Registration<PerfUserAccess>>>,
    _stats: debugfs::Registration<SbiCallStats>,
    _pmu: Pin<KBox<perf::Registration<RiscvPmu>>>,
    _starting_cpu: Pin<KBox<cpuhp::Registration<PmuSbiStartingCpu>>>,
}

impl kernel::Module for RiscvPmuSbiModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        pmu_sbi::pmu_sbi_check_c_driver()?;
        let mut pmu = RiscvPmu::probe(&mut EcallFirmware)?;

        // The per-CPU state is shared by the PMU callbacks and the hotplug callbacks, which both
        // use a CPU's copy on that CPU with interrupts disabled.
        let cpu_data = Arc::new(PerCpu::new(|_| pmu.new_cpu_hw_events())?, GFP_KERNEL)?;

        // Every CPU's counters are stopped before perf can use them, now and when a CPU starts.
        let starting_cpu = KBox::pin_init(
            cpuhp::Registration::new(PmuSbiStartingCpu, cpu_data.clone()),
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

        let capabilities = pmu.capabilities();
        let attr_groups = pmu.attr_groups();
        let pmu = KBox::pin_init(
            perf::Registration::new(module, pmu, cpu_data, capabilities, attr_groups),
            GFP_KERNEL,
        )
        .inspect_err(|err| pr_err!("registering the cpu PMU failed: {:?}\n", err))?;

        Ok(Self {
            _user_access: user_access,
            _stats: stats,
            _pmu: pmu,
            _starting_cpu: starting_cpu,
        })
    }
}
