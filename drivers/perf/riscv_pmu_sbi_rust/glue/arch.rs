// SPDX-License-Identifier: GPL-2.0

//! RISC-V architecture interfaces: firmware calls, counter CSRs, the hart-local interrupt
//! controller, the PMU's CPU hotplug state, and the `struct riscv_pmu` perf's user-page code
//! expects around a `struct pmu`.
//!
//! C headers: [`arch/riscv/include/asm/sbi.h`](srctree/arch/riscv/include/asm/sbi.h),
//! [`arch/riscv/include/asm/csr.h`](srctree/arch/riscv/include/asm/csr.h),
//! [`include/linux/perf/riscv_pmu.h`](srctree/include/linux/perf/riscv_pmu.h)
//!
//! A firmware call is `unsafe` ([`sbi_ecall`]): firmware may write memory at any physical address
//! its arguments name. The safe calls are those of the SBI PMU extension that lend no memory
//! ([`sbi_pmu_call`]), and the two that do, as methods of the memory they lend
//! ([`super::fwmem::SnapshotShmem::register`], [`super::fwmem::FirmwareMem::event_get_info`]).

use super::bindings;
use super::cpuhp::StartingState;
use super::percpu::LocalInterruptDisabled;
use super::perf::PmuContainer;
use core::{
    arch::asm,
    ptr::addr_of,
    sync::atomic::{AtomicU8, Ordering},
};
use kernel::{ffi::c_int, types::Opaque};

/// Calls the firmware (`sbi_ecall()`): `ecall` with `a7` = `ext`, `a6` = `fid` and `a0`..`a5` =
/// `args`, on the calling hart. Returns `a0` and `a1` (`struct sbiret`): an error code (0 or
/// negative) and a value.
///
/// # Safety
///
/// Every physical address the call names (in its arguments, or registered earlier and used by
/// this function) must be memory lent to firmware for what the function does with it: allocated
/// for that purpose, large enough for what the specification lets firmware write there, and kept
/// allocated for as long as firmware may use it.
pub(crate) unsafe fn sbi_ecall(ext: usize, fid: usize, args: [usize; 6]) -> (isize, usize) {
    let error: isize;
    let value: usize;
    // SAFETY: The calling convention of the firmware interface preserves every register but a0 and
    // a1, which are declared as outputs. Memory is declared as clobbered (no `nomem`), as in
    // `sbi_ecall()`, since a call may write memory the caller named.
    unsafe {
        asm!(
            "ecall",
            inlateout("a0") args[0] => error,
            inlateout("a1") args[1] => value,
            in("a2") args[2],
            in("a3") args[3],
            in("a4") args[4],
            in("a5") args[5],
            in("a6") fid,
            in("a7") ext,
            options(nostack),
        )
    };
    (error, value)
}

/// The SBI PMU extension's ID (`SBI_EXT_PMU`, "PMU").
pub(crate) const SBI_EXT_PMU: usize = 0x504D55;

/// `sbi_pmu_snapshot_set_shmem` (FID #7): lends the snapshot memory.
pub(crate) const SBI_PMU_SNAPSHOT_SET_SHMEM: usize = 7;

/// `sbi_pmu_event_get_info` (FID #8): lends an array of event-info entries for the call.
pub(crate) const SBI_PMU_EVENT_GET_INFO: usize = 8;

/// `SBI_ERR_NOT_SUPPORTED`, the answer of [`sbi_pmu_call`] to a function that lends memory.
const SBI_ERR_NOT_SUPPORTED: isize = -2;

/// Calls the function `fid` of the SBI PMU extension, if it is one of those that lend firmware no
/// memory (FIDs #0 to #6: `num_counters` to `counter_fw_read_hi`); the others are answered with
/// `SBI_ERR_NOT_SUPPORTED` without a call. `counter_start` and `counter_stop` may make firmware
/// use the snapshot memory of this hart, which a [`super::fwmem::SnapshotShmem`] keeps allocated
/// while it is registered.
#[inline(always)]
pub(crate) fn sbi_pmu_call(fid: usize, args: [usize; 6]) -> (isize, usize) {
    if fid >= SBI_PMU_SNAPSHOT_SET_SHMEM {
        return (SBI_ERR_NOT_SUPPORTED, 0);
    }
    // SAFETY: The PMU extension's functions #0 to #6 name no memory in their arguments; the
    // memory they may use is the hart's registered snapshot memory, which `SnapshotShmem` never
    // frees while it is registered.
    unsafe { sbi_ecall(SBI_EXT_PMU, fid, args) }
}

/// The SBI base extension's `sbi_get_impl_id()` (EID 0x10, FID #1): which SBI implementation runs.
pub(crate) fn sbi_get_impl_id() -> (isize, usize) {
    // SAFETY: The base extension's functions name no memory.
    unsafe { sbi_ecall(0x10, 1, [0; 6]) }
}

/// The version of the firmware interface the kernel found at boot (`sbi_spec_version`).
pub(crate) fn sbi_spec_version() -> usize {
    // SAFETY: The variable is set once at boot, before modules load, and read-only afterwards.
    unsafe { addr_of!(bindings::sbi_spec_version).read() }
}

/// Whether the firmware has the extension `ext` (`sbi_probe_extension()`).
pub(crate) fn sbi_probe_extension(ext: usize) -> bool {
    // SAFETY: FFI call; any extension ID is accepted.
    c_int::try_from(ext).is_ok_and(|ext| unsafe { bindings::sbi_probe_extension(ext) > 0 })
}

/// Whether every hart has the Sscofpmf extension (`riscv_isa_extension_available()`).
pub(crate) fn has_sscofpmf() -> bool {
    // SAFETY: FFI call; a NULL bitmap asks about the extensions every hart has.
    unsafe {
        bindings::__riscv_isa_extension_available(
            core::ptr::null(),
            bindings::RISCV_ISA_EXT_SSCOFPMF,
        )
    }
}

/// The CPU hotplug state of the RISC-V PMU drivers (`CPUHP_AP_PERF_RISCV_STARTING`), which the C
/// drivers use too: only one of them can hold it.
pub(crate) const PERF_STARTING: StartingState =
    StartingState::new(bindings::cpuhp_state_CPUHP_AP_PERF_RISCV_STARTING);

/// Reads the counter CSR `cycle` + `idx` (0xc00 + `idx`: `cycle`, `time`, `instret`,
/// `hpmcounter3`..`hpmcounter31`) for `idx` below 32. The CSR number is part of the instruction, so
/// each counter needs its own `csrr`: this jumps into a table of 32 `csrr`s, each followed by a jump
/// out, in place (the kernel builds without jump tables, so a `match` over the numbers is a chain
/// of compares, and a table of functions costs a call, which makes the caller save registers).
#[inline(always)]
fn read_counter(idx: u16) -> u64 {
    let value: usize;
    let idx = usize::from(idx & 31);
    // The jump lands on the `idx`-th of the 32 entries, each 8 bytes (`norvc`: neither `csrr` nor
    // `j` is compressed), which reads one counter CSR into `value` and jumps to the end of the block.
    // The assembler writes the entries (`.rept`), the CSR number one higher in each.
    // SAFETY: `idx` is below 32 (masked above), so the jump stays inside the block; reading a counter
    // CSR has no side effect and touches no memory (the firmware gives the supervisor access).
    unsafe {
        asm!(
            ".option push",
            ".option norvc",
            "lla {t}, 3f",
            "slli {i}, {i}, 3",
            "add {t}, {t}, {i}",
            "jr {t}",
            "3:",
            ".set .Lrpmu_csr, 0xc00",
            ".rept 32",
            "csrr {v}, .Lrpmu_csr",
            "j 4f",
            ".set .Lrpmu_csr, .Lrpmu_csr + 1",
            ".endr",
            "4:",
            ".option pop",
            i = inout(reg) idx => _,
            t = out(reg) _,
            v = out(reg) value,
            options(nomem, nostack),
        )
    };
    value as u64
}

/// The `time` CSR, read to time code in nanoseconds: what `sched_clock()` reads too, without its
/// epoch and sequence count.
///
/// # Examples
///
/// ```ignore
/// let clock = TimeCsr::new();
/// let start = clock.now();
/// handle_overflow();
/// perf::sample_event_took(clock.ns_since(start));
/// ```
#[derive(Clone, Copy)]
pub(crate) struct TimeCsr {
    /// Nanoseconds per tick, with [`TimeCsr::SHIFT`] fractional bits.
    ns_per_tick: u64,
}

impl TimeCsr {
    const SHIFT: u32 = 10;

    /// The clock at the timebase the kernel found at boot (`riscv_timebase`).
    pub(crate) fn new() -> Self {
        // SAFETY: The variable is set once at boot, before modules load, and read-only afterwards.
        let timebase = unsafe { addr_of!(bindings::riscv_timebase).read() };
        // CAST: `unsigned long` is 64 bits on RV64.
        let ns_per_tick = (1_000_000_000u64 << Self::SHIFT) / (timebase as u64).max(1);
        Self { ns_per_tick }
    }

    /// The `time` CSR now.
    #[inline(always)]
    pub(crate) fn now(self) -> u64 {
        let value: usize;
        // SAFETY: Reading `time` touches no memory; the kernel lets S-mode read it (it is the
        // clock `sched_clock()` reads).
        unsafe { asm!("rdtime {0}", out(reg) value, options(nomem, nostack)) };
        value as u64
    }

    /// The nanoseconds since `start`, a value of [`TimeCsr::now`].
    #[inline(always)]
    pub(crate) fn ns_since(self, start: u64) -> u64 {
        let ticks = u128::from(self.now().wrapping_sub(start));
        // CAST: A duration in nanoseconds of less than 584 years fits.
        ((ticks * u128::from(self.ns_per_tick)) >> Self::SHIFT) as u64
    }
}

/// The number of `scountovf`, the overflow bits of the counters (Sscofpmf).
const CSR_SCOUNTOVF: u16 = 0xda0;

/// Reads the counter CSR `csr` (`cycle`, `time`, `instret`, `hpmcounter3`..`hpmcounter31`: 0xc00
/// to 0xc1f) or `scountovf` (0xda0) of this hart; 0 for any other number.
#[inline(always)]
pub(crate) fn read_counter_csr(csr: u16) -> u64 {
    let idx = csr.wrapping_sub(0xc00);
    if idx < 32 {
        return read_counter(idx);
    }
    if csr != CSR_SCOUNTOVF {
        return 0;
    }
    let value: usize;
    // SAFETY: As in `read_counter`: `scountovf` is read-only and touches no memory.
    unsafe { asm!("csrr {0}, 0xda0", out(reg) value, options(nomem, nostack)) };
    value as u64
}

/// Sets `scounteren` of this hart: which counter CSRs user mode may read.
pub(crate) fn scounteren_write(value: usize) {
    // SAFETY: `scounteren` only controls user-mode reads of the counter CSRs; nothing in the kernel
    // depends on it for memory safety.
    unsafe { asm!("csrw scounteren, {0}", in(reg) value, options(nomem, nostack)) };
}

/// Sets the bits `bits` of `scounteren` of this hart (`csrs`, one instruction).
pub(crate) fn scounteren_set(bits: usize) {
    // SAFETY: As in `scounteren_write`.
    unsafe { asm!("csrs scounteren, {0}", in(reg) bits, options(nomem, nostack)) };
}

/// Clears the bits `bits` of `scounteren` of this hart (`csrc`, one instruction).
pub(crate) fn scounteren_clear(bits: usize) {
    // SAFETY: As in `scounteren_write`.
    unsafe { asm!("csrc scounteren, {0}", in(reg) bits, options(nomem, nostack)) };
}

/// `per_cpu_ptr()`: the address of CPU `cpu`'s copy of the per-CPU data `ptr` points to (the
/// per-CPU pointer plus the CPU's offset, `__per_cpu_offset[cpu]`). Only an address: whether a
/// copy lives there is the caller's to know.
#[inline(always)]
pub(crate) fn per_cpu_ptr<T>(ptr: *mut T, cpu: u32) -> *mut T {
    let offsets = addr_of!(bindings::__per_cpu_offset);
    let offset = match usize::try_from(cpu) {
        Ok(cpu) if cpu < array_len(offsets) => {
            // SAFETY: `__per_cpu_offset` is set for every possible CPU before secondary CPUs start
            // and never changes afterwards; `cpu` is within the array, and the one element is read
            // through a raw pointer, without a reference to the array.
            unsafe { offsets.cast::<usize>().add(cpu).read() }
        }
        _ => 0,
    };
    ptr.cast::<u8>().wrapping_add(offset).cast::<T>()
}

/// `this_cpu_ptr()`: [`per_cpu_ptr`] for the CPU the caller runs on.
#[inline(always)]
pub(crate) fn this_cpu_ptr<T>(ptr: *mut T, irq: &LocalInterruptDisabled) -> *mut T {
    per_cpu_ptr(ptr, current_cpu(irq))
}

/// The CPU the caller runs on (`raw_smp_processor_id()`): the CPU number of
/// `current_thread_info()`, which `tp` points to on RISC-V.
#[inline(always)]
pub(crate) fn current_cpu(_irq: &LocalInterruptDisabled) -> u32 {
    let tp: *const bindings::thread_info;
    // SAFETY: Reading `tp` has no side effect and touches no memory.
    unsafe { asm!("mv {0}, tp", out(reg) tp, options(nomem, nostack, preserves_flags)) };
    // SAFETY: In the kernel `tp` holds `current`, whose `task_struct` begins with its `thread_info`
    // (RISC-V selects THREAD_INFO_IN_TASK); the task outlives this call. The token proves the code
    // stays on this CPU, so the CPU number read is this CPU's as long as the token lives.
    let cpu = unsafe { (*tp).cpu };
    // CAST: The `int` holds a CPU number, which `raw_smp_processor_id()` gives as `unsigned int`.
    cpu as u32
}

/// The number of elements of the array `_array` points to.
const fn array_len<T, const N: usize>(_array: *const [T; N]) -> usize {
    N
}

/// Clears the pending bit of the local interrupt `hwirq` of this hart in `sip`.
pub(crate) fn clear_pending_interrupt(hwirq: u32) {
    let bit = 1usize.checked_shl(hwirq).unwrap_or(0);
    // SAFETY: Clearing a pending bit only withdraws an interrupt request of this hart; it touches no
    // memory.
    unsafe { asm!("csrc sip, {0}", in(reg) bit, options(nomem, nostack)) };
}

/// The firmware node of this hart's local interrupt controller, for mapping its interrupts.
pub(crate) fn intc_fwnode() -> *mut bindings::fwnode_handle {
    // SAFETY: FFI call without arguments; the node is created at boot and never freed.
    unsafe { bindings::riscv_get_intc_hwnode() }
}

/// The number of counters a RISC-V PMU may have (`RISCV_MAX_COUNTERS`).
const MAX_COUNTERS: usize = 64;

/// The counter widths `riscv_pmu::ctr_get_width` returns. Its C signature carries only a counter
/// index, no PMU, so the widths live here; perf core has a single `cpu` PMU, so one table serves.
static CTR_WIDTHS: [AtomicU8; MAX_COUNTERS] = [const { AtomicU8::new(0) }; MAX_COUNTERS];

/// Sets the widths (bits minus one) `riscv_pmu::ctr_get_width` returns for each counter; 0 where
/// `width` returns `None`.
pub(crate) fn set_counter_widths(width: impl Fn(usize) -> Option<u8>) {
    for (idx, slot) in CTR_WIDTHS.iter().enumerate() {
        slot.store(width(idx).unwrap_or(0), Ordering::Relaxed);
    }
}

/// `riscv_pmu::ctr_get_width`: the width of counter `idx` minus one, 0 for an unknown counter.
extern "C" fn ctr_get_width_callback(idx: c_int) -> c_int {
    usize::try_from(idx)
        .ok()
        .and_then(|idx| CTR_WIDTHS.get(idx))
        .map_or(0, |width| c_int::from(width.load(Ordering::Relaxed)))
}

/// The container of a RISC-V PMU's `struct pmu`: RISC-V's `arch_perf_update_userpage()` takes every
/// event's PMU for the `pmu` member of a `struct riscv_pmu` (`to_riscv_pmu()`, a `container_of()`)
/// and calls its `ctr_get_width` when user space may read the event's counter, so the `struct pmu`
/// is embedded in one, as in the C drivers; only `pmu` and `ctr_get_width` are used outside them.
///
/// # Examples
///
/// ```ignore
/// impl perf::Driver for SbiPmu {
///     type Container = RiscvPmuContainer;
///     // ...
/// }
/// ```
#[repr(transparent)]
pub(crate) struct RiscvPmuContainer(Opaque<bindings::riscv_pmu>);

// SAFETY: `pmu` is the first member of `struct riscv_pmu` (asserted below), the container is
// transparent over it, and `new` initialises it with its argument; `ctr_get_width` is only read.
unsafe impl PmuContainer for RiscvPmuContainer {
    fn new(pmu: bindings::pmu) -> Self {
        Self(Opaque::new(bindings::riscv_pmu {
            pmu,
            ctr_get_width: Some(ctr_get_width_callback),
            ..Default::default()
        }))
    }
}

const _: () = assert!(core::mem::offset_of!(bindings::riscv_pmu, pmu) == 0);
