// SPDX-License-Identifier: GPL-2.0

//! Counter delegation in the driver: detection at probe, and each CPU's counter backend
//! ([`CpuFirmware`]), which programs delegated hardware counters with CSRs and calls the SBI
//! implementation for the rest (`sbi_pmu::deleg`).
//!
//! Delegation is used when
//! - the module parameter `counter_delegation` is on (the default);
//! - every possible CPU's `riscv,isa-extensions` lists `smcdeleg`, `ssccfg` and `sscsrind` (Linux
//!   6.12 has no ISA extension bits for them; the device tree is what both kernels have);
//! - the SBI implementation is one known to enable counter delegation for S-mode (`menvcfg.CDE`,
//!   and `mcounteren` bits for the counters it delegates): OpenSBI 1.5 or later. A hart whose
//!   firmware left CDE clear would trap at the first access;
//! - standard events have selectors: the device tree's `riscv,event-to-mhpmevent` map, or a table of
//!   the platform (`sbi_pmu::deleg::PLATFORM_TABLES`, by the root's `compatible`). Without either,
//!   only raw events could be programmed, so the driver stays with SBI calls.
//!
//! Which counters are delegated is found on each CPU as it starts, by the WARL probe of
//! `scountinhibit` (`sbi_pmu::deleg::probe_delegated`).

#![deny(unsafe_code)]

use crate::glue::{
    csr::{self, DelegatedCsrs},
    fwmem::SnapshotShmem,
    of::{self, OfNode},
    percpu,
};
use kernel::{c_str, prelude::*, str::CString};
use sbi_pmu::{
    counters::PmuInfo,
    deleg::{probe_delegated, CounterCsrs, Delegation, Hybrid, Selectors},
    dt::DtPmuMaps,
    pmu::PmuStats,
};

use crate::pmu_sbi::SbiFirmware;

/// `sbi_get_impl_id()` of OpenSBI.
const IMPL_ID_OPENSBI: usize = 1;
/// The first OpenSBI release that sets `menvcfg.CDE` on harts with Smcdeleg (1.5, encoded as
/// major << 16 | minor).
const OPENSBI_CDE_VERSION: usize = 1 << 16 | 5;

/// What probe decided about delegation, for every CPU.
#[derive(Clone, Copy)]
pub(crate) struct DelegSetup {
    csrs: DelegatedCsrs,
    selectors: Selectors,
}

/// Decides at probe whether the CPUs program their hardware counters with CSRs, and says why not
/// when they could but do not.
pub(crate) fn probe(maps: Option<&DtPmuMaps<'_>>) -> Option<DelegSetup> {
    // Every possible CPU's device tree node lists the three ISA extensions.
    let isa = c_str!("riscv,isa-extensions");
    let extensions = [c_str!("smcdeleg"), c_str!("ssccfg"), c_str!("sscsrind")];
    let mut all = true;
    percpu::for_each_possible_cpu(|cpu| {
        all &= OfNode::cpu(cpu)
            .is_some_and(|node| extensions.iter().all(|ext| node.has_string(isa, ext)));
    });
    if !all {
        return None;
    }
    if !csr::counter_delegation_param() {
        pr_info!(
            "counter delegation: off (counter_delegation=0): every counter through SBI calls\n"
        );
        return None;
    }
    let (id_err, id) = crate::glue::arch::sbi_get_impl_id();
    let (ver_err, version) = csr::sbi_get_impl_version();
    if id_err != 0 || ver_err != 0 || id != IMPL_ID_OPENSBI || version < OPENSBI_CDE_VERSION {
        pr_info!(
            "counter delegation: the harts have it, but the SBI implementation ({id:#x} version {version:#x}) is not known to enable it; every counter through SBI calls\n"
        );
        return None;
    }
    let found = maps
        .and_then(Selectors::from_maps)
        .map(|s| (s, "riscv,event-to-mhpmevent"))
        .or_else(|| {
            Selectors::for_platform(|compatible| {
                CString::try_from_fmt(format_args!("{compatible}"))
                    .is_ok_and(|name| of::machine_is_compatible(&name))
            })
        });
    let Some((selectors, source)) = found else {
        pr_info!("counter delegation: no event selectors for this platform (no riscv,event-to-mhpmevent, no table); every counter through SBI calls\n");
        return None;
    };
    pr_info!(
        "counter delegation: hardware counters programmed with CSRs, event selectors from {source}\n"
    );
    Some(DelegSetup {
        csrs: DelegatedCsrs::new(true)?,
        selectors,
    })
}

/// Implements [`CounterCsrs`] for [`SbiFirmware`] with the CPU's delegated counter CSRs. Without
/// delegation ([`Delegation::SBI_ONLY`]) `Hybrid` never touches the CSRs; should it, reads give 0
/// and writes do nothing.
macro_rules! counter_csrs {
    ($($name:ident($($arg:ident: $ty:ty)?) $(-> $ret:ty)?;)*) => {
        impl CounterCsrs for SbiFirmware {
            $(
                #[inline(always)]
                fn $name(&mut self, $($arg: $ty)?) $(-> $ret)? {
                    self.csrs.map_or(Default::default(), |c| c.$name($($arg)?))
                }
            )*
        }
    };
}

counter_csrs! {
    siselect_write(value: usize);
    sireg_write(value: u64);
    sireg2_write(value: u64);
    scountinhibit_read() -> u64;
    scountinhibit_write(value: u64);
    scountinhibit_set(bits: u64);
    scountinhibit_clear(bits: u64);
}

/// One CPU's counter backend: the SBI calls of the hart, and the delegation state
/// ([`Delegation`]) that decides which counters are programmed with CSRs instead.
pub(crate) struct CpuFirmware {
    /// The SBI calls, with the snapshot page (which delegated counters do not use: they are read
    /// from their CSRs).
    pub(crate) hart: SbiFirmware,
    deleg: Delegation,
    selectors: Option<Selectors>,
}

impl CpuFirmware {
    /// A backend without SBI implementation or delegation, until [`CpuFirmware::init`].
    pub(crate) const EMPTY: Self = Self {
        hart: SbiFirmware::NO_SNAPSHOT,
        deleg: Delegation::SBI_ONLY,
        selectors: None,
    };

    /// Makes this, still [`CpuFirmware::EMPTY`], the backend of a CPU with the snapshot page
    /// `page` and the delegation probe decided on (`setup`), in place; until
    /// [`CpuFirmware::cpu_starting`] no counter is delegated.
    pub(crate) fn init(&mut self, page: Option<SnapshotShmem>, setup: Option<&DelegSetup>) {
        self.hart.page = page;
        self.hart.csrs = setup.map(|s| s.csrs);
        self.selectors = setup.map(|s| s.selectors);
    }

    /// On the CPU, as it starts: finds which of its hardware counters M-mode delegated.
    pub(crate) fn cpu_starting(&mut self, info: &PmuInfo) {
        if let (Some(selectors), Some(_)) = (&self.selectors, self.hart.csrs) {
            let hw = probe_delegated(&mut self.hart);
            self.deleg.reinit(info, hw, selectors);
        }
        if self.deleg.active() {
            self.hybrid().reset_in_firmware();
        }
    }

    /// `st` with the SBI calls this CPU really made, when counters are delegated (the core counts
    /// the functions it asks for, which delegated counters carry out without a call).
    pub(crate) fn sbi_stats(&self, mut st: PmuStats) -> PmuStats {
        if self.deleg.active() {
            st.calls = self.deleg.sbi_calls;
        }
        st
    }

    /// The counter interface the core calls: delegated counters with CSRs, the others with SBI
    /// calls.
    #[inline(always)]
    pub(crate) fn hybrid(&mut self) -> Hybrid<'_, SbiFirmware> {
        Hybrid::new(&mut self.hart, &mut self.deleg)
    }
}
