// SPDX-License-Identifier: GPL-2.0

//! SBI calls and counter CSR reads on the calling hart.
//!
//! C header: [`arch/riscv/include/asm/sbi.h`](srctree/arch/riscv/include/asm/sbi.h)
//!
//! [`EcallFirmware`] is the kernel's implementation of `sbi_pmu`'s raw [`SbiEcall`] trait, and so
//! of its [`Firmware`](sbi_pmu::firmware::Firmware) trait: each SBI function is one `ecall` into
//! the SBI implementation (a7 = PMU extension, a6 = function ID), and counter reads are `csrr`
//! instructions. The driver logic only sees the `Firmware` trait.

use super::bindings;
use core::arch::asm;
use kernel::init::Zeroable;
use sbi_pmu::abi::{Fid, SbiError, SbiVersion, EXT_PMU, SBI_SHMEM_DISABLE};
use sbi_pmu::firmware::{SbiEcall, SbiRet};

/// The SBI specification version the kernel found at boot.
pub(crate) fn spec_version() -> SbiVersion {
    // SAFETY: FFI call without arguments; the value is set once at boot.
    SbiVersion::from_raw(unsafe { bindings::rpmu_sbi_spec_version() })
}

/// Whether the SBI implementation has the extension `eid` (`sbi_probe_extension()`).
pub(crate) fn probe_extension(eid: usize) -> bool {
    let Ok(eid) = i32::try_from(eid) else {
        return false;
    };
    // SAFETY: FFI call; any extension ID is accepted.
    unsafe { bindings::sbi_probe_extension(eid) > 0 }
}

/// Whether the harts have the Sscofpmf extension: counter overflow interrupts and mode filtering.
pub(crate) fn has_sscofpmf() -> bool {
    // SAFETY: FFI call without arguments.
    unsafe { bindings::rpmu_has_sscofpmf() }
}

/// Runs `f` with preemption disabled, so that the SBI calls it makes all reach the same hart.
pub(crate) fn on_this_cpu<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: FFI call without arguments; it is balanced below.
    unsafe { bindings::rpmu_preempt_disable() };
    let ret = f();
    // SAFETY: FFI call without arguments, balancing the call above.
    unsafe { bindings::rpmu_preempt_enable() };
    ret
}

/// Sets the `scounteren` CSR of this hart: which counters user mode may read directly.
pub(crate) fn write_scounteren(value: usize) {
    // SAFETY: `scounteren` only controls user-mode access to the counter CSRs; the kernel does not
    // rely on its value for memory safety.
    unsafe { asm!("csrw scounteren, {0}", in(reg) value, options(nomem, nostack)) };
}

/// Lets user mode read the counter CSRs in `bits` on this hart (`csrs scounteren`).
pub(crate) fn scounteren_set(bits: usize) {
    // SAFETY: `scounteren` only controls user-mode access to the counter CSRs; the kernel does not
    // rely on its value for memory safety. `csrs` sets the bits in one instruction.
    unsafe { asm!("csrs scounteren, {0}", in(reg) bits, options(nomem, nostack)) };
}

/// Takes from user mode the right to read the counter CSRs in `bits` on this hart
/// (`csrc scounteren`).
pub(crate) fn scounteren_clear(bits: usize) {
    // SAFETY: As in `scounteren_set`; `csrc` clears the bits in one instruction.
    unsafe { asm!("csrc scounteren, {0}", in(reg) bits, options(nomem, nostack)) };
}

/// Clears this hart's pending counter overflow interrupt (the local counter overflow bit of `sip`).
pub(crate) fn clear_overflow_pending() {
    // SAFETY: FFI call; clearing this hart's pending bit only drops the interrupt request, which the
    // overflow handler has read the overflow state of.
    unsafe { bindings::rpmu_pmu_irq_clear_pending(bindings::IRQ_PMU_OVF) };
}

/// One SBI PMU call: `ecall` with a7 = [`EXT_PMU`], a6 = `fid` and the arguments in a0 to a5.
///
/// # Safety
///
/// The call must not make firmware write memory the kernel does not hand over to it: a shared
/// memory address passed to `snapshot_set_shmem` or `event_get_info` must be memory reserved for
/// firmware for as long as it may write it.
unsafe fn pmu_ecall(fid: Fid, args: [usize; 6]) -> SbiRet {
    let error: isize;
    let value: usize;
    // SAFETY: The SBI calling convention preserves every register but a0 and a1. Firmware writes
    // memory only as the caller allows (see the safety contract). Memory is treated as clobbered, as
    // in `sbi_ecall()`.
    unsafe {
        asm!(
            "ecall",
            inlateout("a0") args[0] => error,
            inlateout("a1") args[1] => value,
            in("a2") args[2],
            in("a3") args[3],
            in("a4") args[4],
            in("a5") args[5],
            in("a6") fid.id(),
            in("a7") EXT_PMU,
            options(nostack),
        )
    };
    SbiRet { error, value }
}

/// Reads the counter CSR `csr` (`cycle`, `time`, `instret` or `hpmcounter3`..`hpmcounter31`), or
/// Sscofpmf's overflow bits (`scountovf`).
///
/// Returns 0 for any other CSR number, like `riscv_pmu_ctr_read_csr()`.
fn read_counter_csr(csr: u16) -> u64 {
    // The CSR number is part of the instruction, so each counter needs its own `csrr`.
    macro_rules! csrr_match {
        ($csr:expr; $($num:literal)*) => {
            match $csr {
                $(
                    $num => {
                        let value: usize;
                        // SAFETY: Reading a counter CSR or `scountovf` has no side effect; the
                        // firmware enables supervisor access to all counters (`mcounteren`), and
                        // `scountovf` is only read by the overflow handler, with Sscofpmf.
                        unsafe {
                            asm!(concat!("csrr {0}, ", $num), out(reg) value,
                                 options(nomem, nostack))
                        };
                        value as u64
                    }
                )*
                _ => 0,
            }
        };
    }
    csrr_match!(csr;
        0xc00 0xc01 0xc02 0xc03 0xc04 0xc05 0xc06 0xc07 0xc08 0xc09 0xc0a 0xc0b 0xc0c 0xc0d 0xc0e 0xc0f
        0xc10 0xc11 0xc12 0xc13 0xc14 0xc15 0xc16 0xc17 0xc18 0xc19 0xc1a 0xc1b 0xc1c 0xc1d 0xc1e 0xc1f
        0xda0)
}

/// The SBI PMU extension of the hart the code runs on, reached with `ecall`.
///
/// The calls act on the calling hart's counters; callers that keep per-hart state make sure they
/// stay on the hart (the perf callbacks run with interrupts disabled).
///
/// It has no shared memory yet: `snapshot_set_shmem` can only disable the snapshot memory, and
/// `event_get_info` is refused, since firmware would write to whatever address it is given.
#[derive(Default)]
pub(crate) struct EcallFirmware;

// SAFETY: `EcallFirmware` is a zero-sized type, so the all-zero bit pattern is its only value.
unsafe impl Zeroable for EcallFirmware {}

impl SbiEcall for EcallFirmware {
    fn sbi_ecall(&mut self, fid: Fid, args: [usize; 6]) -> SbiRet {
        let gives_memory = match fid {
            Fid::SnapshotSetShmem => args[0] != SBI_SHMEM_DISABLE || args[1] != SBI_SHMEM_DISABLE,
            Fid::EventGetInfo => true,
            _ => false,
        };
        if gives_memory {
            return SbiRet {
                error: SbiError::InvalidAddress.code(),
                value: 0,
            };
        }
        // SAFETY: No address is handed to firmware: the calls that take one were refused above,
        // except disabling the snapshot memory, which names no memory.
        unsafe { pmu_ecall(fid, args) }
    }

    fn read_csr(&mut self, csr: u16) -> u64 {
        read_counter_csr(csr)
    }
}
