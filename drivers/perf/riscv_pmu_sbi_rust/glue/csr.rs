// SPDX-License-Identifier: GPL-2.0

//! The supervisor's indirect CSR access (Sscsrind: `siselect`, `sireg`, `sireg2`) and counter
//! inhibit register (Ssccfg: `scountinhibit`), which counter delegation (Smcdeleg) uses.
//!
//! C header: [`arch/riscv/include/asm/csr.h`](srctree/arch/riscv/include/asm/csr.h) (6.12 names
//! none of these registers; their numbers are the privileged specification's).
//!
//! These registers trap (illegal instruction) on a hart without the extensions, or when M-mode
//! did not enable counter delegation (`menvcfg.CDE`), or for a counter M-mode did not delegate.
//! A trap in the kernel is an oops, not undefined behaviour, but nothing should risk it: the
//! registers are reached through [`DelegatedCsrs`], which only a caller that found the extensions
//! on every hart can build.

use super::arch;
use core::arch::asm;

/// Access to the delegated counter CSRs of the calling hart.
///
/// # Invariants
///
/// Every hart has Smcdeleg, Ssccfg and Sscsrind, and M-mode has set `menvcfg.CDE` on each, as far as
/// the device tree and the firmware tell (see [`DelegatedCsrs::new`]).
///
/// # Examples
///
/// ```ignore
/// let csrs = DelegatedCsrs::new(harts_have_extensions && firmware_sets_cde)?;
/// let saved = csrs.scountinhibit_read();
/// csrs.scountinhibit_write(u64::MAX);
/// let delegated = csrs.scountinhibit_read();
/// csrs.scountinhibit_write(saved);
/// ```
#[derive(Clone, Copy, Debug)]
pub(crate) struct DelegatedCsrs(());

// The CSR numbers are part of the instructions (`siselect` 0x150, `sireg` 0x151, `sireg2` 0x152,
// `scountinhibit` 0x120): each access is its own `asm!`. None touches memory.
impl DelegatedCsrs {
    /// The access, when `present` says the harts have the extensions and counter delegation is
    /// enabled; the caller learns it from the harts' `riscv,isa-extensions` and the firmware.
    pub(crate) fn new(present: bool) -> Option<Self> {
        // INVARIANT: `present` is the caller's finding.
        present.then_some(Self(()))
    }

    /// Writes `siselect`.
    #[inline(always)]
    pub(crate) fn siselect_write(self, value: usize) {
        // SAFETY: `siselect` only selects the register `sireg*` reach; the write touches no
        // memory. The type invariant says the register exists.
        unsafe { asm!("csrw 0x150, {0}", in(reg) value, options(nomem, nostack)) };
    }

    /// Writes `sireg`: sets the selected counter.
    #[inline(always)]
    pub(crate) fn sireg_write(self, value: u64) {
        // SAFETY: A counter value controls no memory access; the type invariant says the
        // register exists (a counter that is not delegated traps, which is no undefined
        // behaviour).
        unsafe { asm!("csrw 0x151, {0}", in(reg) value as usize, options(nomem, nostack)) };
    }

    /// Writes `sireg2`: sets the selected counter's event selector, mode filters and overflow bit.
    #[inline(always)]
    pub(crate) fn sireg2_write(self, value: u64) {
        // SAFETY: An event selector controls what a counter counts and whether its overflow
        // raises the counter overflow interrupt, whose handler the driver owns; no memory access.
        unsafe { asm!("csrw 0x152, {0}", in(reg) value as usize, options(nomem, nostack)) };
    }

    /// Reads `scountinhibit`.
    #[inline(always)]
    pub(crate) fn scountinhibit_read(self) -> u64 {
        let value: usize;
        // SAFETY: Reading has no side effect and touches no memory; the type invariant says the
        // register exists.
        unsafe { asm!("csrr {0}, 0x120", out(reg) value, options(nomem, nostack)) };
        value as u64
    }

    /// Writes `scountinhibit`: bits of counters that are not delegated are ignored (WARL).
    #[inline(always)]
    pub(crate) fn scountinhibit_write(self, value: u64) {
        // SAFETY: Starting and stopping counters touches no memory; as in `scountinhibit_read`.
        unsafe { asm!("csrw 0x120, {0}", in(reg) value as usize, options(nomem, nostack)) };
    }

    /// Sets bits of `scountinhibit` (`csrs`): stops those counters.
    #[inline(always)]
    pub(crate) fn scountinhibit_set(self, bits: u64) {
        // SAFETY: As in `scountinhibit_write`.
        unsafe { asm!("csrs 0x120, {0}", in(reg) bits as usize, options(nomem, nostack)) };
    }

    /// Clears bits of `scountinhibit` (`csrc`): starts those counters.
    #[inline(always)]
    pub(crate) fn scountinhibit_clear(self, bits: u64) {
        // SAFETY: As in `scountinhibit_write`.
        unsafe { asm!("csrc 0x120, {0}", in(reg) bits as usize, options(nomem, nostack)) };
    }
}

/// The SBI base extension's `sbi_get_impl_version()` (EID 0x10, FID #2): the version of the SBI
/// implementation, whose encoding is the implementation's own (OpenSBI: major << 16 | minor).
pub(crate) fn sbi_get_impl_version() -> (isize, usize) {
    // SAFETY: The base extension's functions name no memory.
    unsafe { arch::sbi_ecall(0x10, 2, [0; 6]) }
}

/// The module parameter `counter_delegation`: whether delegated counters may be programmed with
/// these CSRs (else every counter goes through SBI calls).
pub(crate) fn counter_delegation_param() -> bool {
    // SAFETY: FFI call without arguments; it reads a parameter fixed at module load.
    unsafe { super::bindings::rpmu_counter_delegation() }
}
