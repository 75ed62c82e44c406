// SPDX-License-Identifier: GPL-2.0

//! RISC-V SBI PMU driver.
//!
//! Registers the `cpu` PMU with perf and counts hardware events through the SBI Performance
//! Monitoring Unit extension (EID 0x504D55), like the C driver
//! [`drivers/perf/riscv_pmu_sbi.c`](srctree/drivers/perf/riscv_pmu_sbi.c), but as a module that can
//! be unloaded.
//!
//! - [`pmu_sbi`]: the driver: probe and the perf callbacks, in safe Rust.
//! - [`pmu_legacy`]: the `cpu` PMU of firmware without the PMU extension (`cycles` and
//!   `instructions` from the base counters), in safe Rust.
//! - [`glue`]: the kernel interfaces the 6.12 `kernel` crate lacks (perf, per-CPU data and
//!   interrupts, CPU PM, CPU hotplug, sysctl, debugfs, sysfs, and the RISC-V instructions), the only
//!   `unsafe` code; it knows nothing of the SBI PMU extension.
//! - `sbi_pmu` (a separate crate): the SBI PMU ABI and the event mapping, without kernel
//!   dependencies.

use kernel::prelude::*;

mod glue;
mod pmu_deleg;
mod pmu_legacy;
mod pmu_sbi;

use core::sync::atomic::AtomicBool;
use glue::{arch, cpu_pm, cpuhp, debugfs, irq, perf, sysctl};
use kernel::{
    c_str,
    sync::{Arc, UniqueArc},
};
use pmu_legacy::LegacyPmu;
use pmu_sbi::{
    PerfUserAccess, PmuSbiCpuPm, PmuSbiOverflow, PmuSbiStartingCpu, SbiCallStats, SbiPmu,
    RV_IRQ_PMU,
};

perf::module_pmu! {
    type: RiscvPmuSbiModule,
    name: "riscv_pmu_sbi_rust",
    author: "riscv_pmu_sbi_rust developers",
    description: "RISC-V SBI PMU driver",
    license: "GPL",
}

/// The module: the SBI PMU, or without the SBI PMU extension the legacy PMU (which needs no
/// per-CPU setup, interrupt, sysctl or statistics).
///
/// The PMU is registered after the state of either and unregistered before it
/// ([`perf::PmuModule`]), at the module's exit, when no event is left.
enum RiscvPmuSbiModule {
    /// The SBI PMU's state besides the PMU: the hotplug state that prepares each CPU's counters
    /// (and owns the counter overflow interrupt), the CPU PM notifier, the
    /// `kernel.perf_user_access` sysctl and the debugfs statistics.
    ///
    /// Fields drop in declaration order: the sysctl and the debugfs file go first, then the CPU PM
    /// notifier, then the hotplug state, which releases the counters still mapped on every CPU and
    /// disables the overflow interrupt on each CPU before it frees it.
    Sbi {
        _user_access: Pin<KBox<sysctl::Registration<PerfUserAccess>>>,
        _stats: debugfs::Registration<SbiCallStats>,
        _cpu_pm: Pin<KBox<cpu_pm::Registration<PmuSbiCpuPm>>>,
        _starting_cpu: Pin<KBox<cpuhp::Registration<PmuSbiStartingCpu>>>,
    },
    /// The legacy PMU's state: user mode's access to `time` on every CPU.
    Legacy {
        _time_access: Pin<KBox<cpuhp::Registration<pmu_legacy::LegacyStartingCpu>>>,
    },
}

impl perf::PmuModule for RiscvPmuSbiModule {
    fn init(module: &'static ThisModule) -> Result<(Self, perf::Pmu)> {
        pmu_sbi::pmu_sbi_check_c_driver()?;
        if !pmu_sbi::has_pmu_extension() {
            return LegacyPmu::init(module);
        }

        // The SBI PMU, probed in place, on the heap: the PMU's counter table is about 1 KiB.
        let mut pmu = UniqueArc::new(SbiPmu::UNPROBED, GFP_KERNEL)?;
        pmu.probe()?;

        // Each CPU's state: one struct, borrowed for a scope by whichever code runs on that CPU
        // (perf's callbacks, the overflow interrupt, the CPU PM and hotplug callbacks).
        let cpus = Arc::new(
            perf::CpuStates::new(|_, state| pmu.init_cpu_state(state))?,
            GFP_KERNEL,
        )?;

        // With Sscofpmf, counters interrupt on overflow (`pmu_sbi_setup_irqs()`); without the
        // interrupt the PMU neither samples nor filters by mode, as in the C driver.
        let overflow_irq = if pmu.sscofpmf {
            let handler = PmuSbiOverflow {
                cpus: cpus.clone(),
                clock: arch::TimeCsr::new(),
            };
            irq::IrqMapping::new(arch::intc_fwnode(), RV_IRQ_PMU)
                .and_then(|mapping| {
                    KBox::pin_init(
                        irq::PercpuIrq::request(mapping, c_str!("riscv-pmu"), handler),
                        GFP_KERNEL,
                    )
                })
                .inspect_err(|err| {
                    pr_err!("requesting the overflow interrupt failed: {:?}\n", err);
                    pr_info!(
                        "Perf sampling/filtering is not supported as the overflow interrupt could not be set up\n"
                    );
                })
                .ok()
        } else {
            None
        };
        // What perf core may ask of the PMU: without the interrupt, no sampling and no mode
        // filtering.
        let capabilities = match overflow_irq {
            Some(_) => perf::Capabilities::empty(),
            None => perf::Capabilities::NO_INTERRUPT.union(perf::Capabilities::NO_EXCLUDE),
        };

        // Every CPU's counters are stopped before perf can use them, now and when a CPU starts,
        // and the overflow interrupt enabled.
        let starting_cpu = PmuSbiStartingCpu {
            cpus: cpus.clone(),
            irq: overflow_irq,
            no_snapshot: AtomicBool::new(false),
            logged: AtomicBool::new(false),
        };
        let starting_cpu = KBox::pin_init(cpuhp::Registration::new(starting_cpu), GFP_KERNEL)
            .inspect_err(|err| pr_err!("setting up the CPU hotplug state failed: {:?}\n", err))?;

        // Every CPU's counters are reset now, so the check may configure and release counters.
        pmu.start_std_events_check()?;
        pmu.set_snapshot(&cpus);

        // perf publishes the width of a counter user space reads directly.
        arch::set_counter_widths(|idx| pmu.info.ctr_width(idx));
        pmu.publish_events();
        let attr_groups = pmu.attr_groups();
        let pmu: Arc<SbiPmu> = pmu.into();

        let stats = debugfs::Registration::new(
            c_str!("riscv_pmu_sbi_rust"),
            SbiCallStats {
                pmu: pmu.clone(),
                cpus: cpus.clone(),
            },
        )?;

        let user_access =
            KBox::pin_init(sysctl::Registration::new(), GFP_KERNEL).inspect_err(|err| {
                pr_err!("registering kernel.perf_user_access failed: {:?}\n", err)
            })?;

        // Events stop while their CPU is in a low-power state (a no-op without CONFIG_CPU_PM).
        let cpu_pm = KBox::pin_init(
            cpu_pm::Registration::new(PmuSbiCpuPm { cpus: cpus.clone() }),
            GFP_KERNEL,
        )?;

        let pmu = perf::Pmu::new(module, pmu, cpus, capabilities, attr_groups)?;
        let state = Self::Sbi {
            _user_access: user_access,
            _stats: stats,
            _cpu_pm: cpu_pm,
            _starting_cpu: starting_cpu,
        };
        Ok((state, pmu))
    }
}
