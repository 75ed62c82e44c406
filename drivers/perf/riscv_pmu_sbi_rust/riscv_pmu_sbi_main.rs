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

use glue::{cpuhp, perf, sbi::EcallFirmware};
use pmu_sbi::{PmuSbiStartingCpu, RiscvPmu, RISCV_PMU_ATTR_GROUPS};

module! {
    type: RiscvPmuSbiModule,
    name: "riscv_pmu_sbi_rust",
    author: "riscv_pmu_sbi_rust developers",
    description: "RISC-V SBI PMU driver",
    license: "GPL",
}

/// The module's state: the PMU, and the hotplug state that prepares each CPU's counters.
///
/// Fields drop in declaration order: the PMU is unregistered (which waits for its callbacks)
/// before the hotplug state goes.
struct RiscvPmuSbiModule {
    _pmu: Pin<KBox<perf::Registration<RiscvPmu>>>,
    _starting_cpu: Pin<KBox<cpuhp::Registration<PmuSbiStartingCpu>>>,
}

impl kernel::Module for RiscvPmuSbiModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        pmu_sbi::pmu_sbi_check_c_driver()?;
        let pmu = RiscvPmu::probe(&mut EcallFirmware)?;

        // Every CPU's counters are stopped before perf can use them, now and when a CPU starts.
        let starting_cpu = KBox::pin_init(
            cpuhp::Registration::new(PmuSbiStartingCpu::new(pmu.cmask())),
            GFP_KERNEL,
        )
        .inspect_err(|err| pr_err!("setting up the CPU hotplug state failed: {:?}\n", err))?;

        let capabilities = pmu.capabilities();
        let pmu = KBox::pin_init(
            perf::Registration::new(module, pmu, capabilities, &RISCV_PMU_ATTR_GROUPS),
            GFP_KERNEL,
        )
        .inspect_err(|err| pr_err!("registering the cpu PMU failed: {:?}\n", err))?;

        Ok(Self {
            _pmu: pmu,
            _starting_cpu: starting_cpu,
        })
    }
}
