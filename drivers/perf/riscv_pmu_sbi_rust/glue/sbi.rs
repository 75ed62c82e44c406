// SPDX-License-Identifier: GPL-2.0

//! SBI calls and counter CSR reads on the calling hart.
//!
//! C header: [`arch/riscv/include/asm/sbi.h`](srctree/arch/riscv/include/asm/sbi.h)
//!
//! [`EcallFirmware`] is the kernel's implementation of the [`Firmware`] trait: each method is one
//! `ecall` into the SBI implementation (a7 = PMU extension, a6 = function ID), and counter reads
//! are `csrr` instructions. The driver logic only sees the trait.

use super::bindings;
use crate::firmware_shim::Firmware;
use core::arch::asm;
use kernel::init::Zeroable;
use sbi_pmu::abi::{
    sbi_result, CfgFlags, CounterInfo, EventIdx, Fid, SbiError, SbiVersion, StartFlags, StopFlags,
    EXT_PMU, SBI_SHMEM_DISABLE,
};

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

/// Sets the `scounteren` CSR of this hart: which counters user mode may read directly.
pub(crate) fn write_scounteren(value: usize) {
    // SAFETY: `scounteren` only controls user-mode access to the counter CSRs; the kernel does not
    // rely on its value for memory safety.
    unsafe { asm!("csrw scounteren, {0}", in(reg) value, options(nomem, nostack)) };
}

/// One SBI PMU call: `ecall` with a7 = [`EXT_PMU`], a6 = `fid` and the arguments in a0 to a5.
fn pmu_ecall(fid: Fid, args: [usize; 6]) -> Result<usize, SbiError> {
    let error: isize;
    let value: usize;
    // SAFETY: The SBI calling convention preserves every register but a0 and a1. The PMU functions
    // the safe methods below expose only read or write counter state, never memory the kernel owns:
    // the two functions that take a memory address are not issued with one (see the `Firmware`
    // impl). Memory is still treated as clobbered, as in `sbi_ecall()`.
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
    sbi_result(error, value)
}

/// Reads the counter CSR `csr` (`cycle`, `time`, `instret` or `hpmcounter3`..`hpmcounter31`).
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
                        // SAFETY: Reading a counter CSR has no side effect; the firmware enables
                        // supervisor access to all counters (`mcounteren`).
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
        0xc10 0xc11 0xc12 0xc13 0xc14 0xc15 0xc16 0xc17 0xc18 0xc19 0xc1a 0xc1b 0xc1c 0xc1d 0xc1e 0xc1f)
}

/// The SBI PMU extension of the hart the code runs on, reached with `ecall`.
///
/// The calls act on the calling hart's counters; callers that keep per-hart state make sure they
/// stay on the hart (the perf callbacks run with interrupts disabled).
#[derive(Default)]
pub(crate) struct EcallFirmware;

// SAFETY: `EcallFirmware` is a zero-sized type, so the all-zero bit pattern is its only value.
unsafe impl Zeroable for EcallFirmware {}

impl Firmware for EcallFirmware {
    fn num_counters(&mut self) -> Result<usize, SbiError> {
        pmu_ecall(Fid::NumCounters, [0; 6])
    }

    fn counter_get_info(&mut self, idx: usize) -> Result<CounterInfo, SbiError> {
        pmu_ecall(Fid::CounterGetInfo, [idx, 0, 0, 0, 0, 0]).map(CounterInfo::decode)
    }

    fn counter_config_matching(
        &mut self,
        cbase: usize,
        cmask: usize,
        flags: CfgFlags,
        event_idx: EventIdx,
        event_data: u64,
    ) -> Result<usize, SbiError> {
        // CAST: On RV64 `event_data` is passed whole in one register.
        let args = [
            cbase,
            cmask,
            flags.bits(),
            event_idx.raw() as usize,
            event_data as usize,
            0,
        ];
        pmu_ecall(Fid::CounterConfigMatching, args)
    }

    fn counter_start(
        &mut self,
        cbase: usize,
        cmask: usize,
        flags: StartFlags,
        initial_value: u64,
    ) -> Result<(), SbiError> {
        // CAST: On RV64 `initial_value` is passed whole in one register.
        let args = [cbase, cmask, flags.bits(), initial_value as usize, 0, 0];
        pmu_ecall(Fid::CounterStart, args).map(|_| ())
    }

    fn counter_stop(
        &mut self,
        cbase: usize,
        cmask: usize,
        flags: StopFlags,
    ) -> Result<(), SbiError> {
        pmu_ecall(Fid::CounterStop, [cbase, cmask, flags.bits(), 0, 0, 0]).map(|_| ())
    }

    fn counter_fw_read(&mut self, idx: usize) -> Result<usize, SbiError> {
        pmu_ecall(Fid::CounterFwRead, [idx, 0, 0, 0, 0, 0])
    }

    fn counter_fw_read_hi(&mut self, idx: usize) -> Result<usize, SbiError> {
        pmu_ecall(Fid::CounterFwReadHi, [idx, 0, 0, 0, 0, 0])
    }

    /// Only disabling the shared memory is allowed here: firmware writes to the memory it is
    /// given, so setting it up belongs to the glue that owns that memory.
    fn snapshot_set_shmem(&mut self, lo: usize, hi: usize, flags: usize) -> Result<(), SbiError> {
        if lo != SBI_SHMEM_DISABLE || hi != SBI_SHMEM_DISABLE {
            return Err(SbiError::InvalidAddress);
        }
        pmu_ecall(Fid::SnapshotSetShmem, [lo, hi, flags, 0, 0, 0]).map(|_| ())
    }

    /// Not issued from here: firmware writes the results to the memory it is given, so the call
    /// belongs to the glue that owns that memory.
    fn event_get_info(
        &mut self,
        _lo: usize,
        _hi: usize,
        _n: usize,
        _flags: usize,
    ) -> Result<(), SbiError> {
        Err(SbiError::InvalidAddress)
    }

    fn read_counter_csr(&mut self, csr: u16) -> u64 {
        read_counter_csr(csr)
    }
}
