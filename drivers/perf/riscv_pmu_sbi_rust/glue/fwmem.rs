// SPDX-License-Identifier: GPL-2.0

//! Memory the kernel lends to firmware, and the SBI calls that lend it.
//!
//! C header: [`include/linux/slab.h`](srctree/include/linux/slab.h)
//!
//! Firmware reads and writes such memory during the calls the kernel hands its address to, like a
//! device doing DMA. So Rust never holds a reference to it: the words are copied in and out with
//! single volatile accesses. The calls that lend memory take it by reference and derive the
//! address and the size they tell firmware from it, so no length check in safe code stands
//! between firmware and memory it does not own.

use super::arch::{sbi_ecall, SBI_EXT_PMU, SBI_PMU_EVENT_GET_INFO, SBI_PMU_SNAPSHOT_SET_SHMEM};
use super::bindings;
use super::percpu::{self, CpuId};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{alloc::flags::__GFP_ZERO, c_str, prelude::*, types::Opaque};

/// `N` 64-bit words of physically contiguous kernel memory, zeroed, freed on drop.
///
/// `kmalloc()` aligns a power-of-two size to that size, so `FirmwareMem<512>` is one page-aligned
/// page, as the SBI snapshot memory must be (Documentation/core-api/memory-allocation.rst).
///
/// # Invariants
///
/// `mem` holds `N` initialised `u64`s allocated by `kmalloc()` (physically contiguous, in the
/// linear map), owned by this value and freed only on drop; `Opaque`, as firmware writes them.
///
/// # Examples
///
/// ```ignore
/// let mut mem = FirmwareMem::<{ 2 * 10 }>::new()?;
/// // Ten event-info entries go in; firmware's answer comes back in the same words.
/// let (error, _) = mem.event_get_info(&mut entries);
/// ```
pub(crate) struct FirmwareMem<const N: usize> {
    mem: KBox<Opaque<[u64; N]>>,
}

impl<const N: usize> FirmwareMem<N> {
    /// Allocates the words, zeroed.
    pub(crate) fn new() -> Result<Self> {
        let mem = KBox::<Opaque<[u64; N]>>::new_uninit(GFP_KERNEL | __GFP_ZERO)?;
        // SAFETY: `__GFP_ZERO` zeroed the memory, and zero words are initialised `u64`s.
        let mem = unsafe { mem.assume_init() };
        // INVARIANT: `KBox` allocates with `kmalloc()`; the words are owned here.
        Ok(Self { mem })
    }

    /// A pointer to the first word, valid for `N` words (type invariant).
    fn ptr(&self) -> *mut u64 {
        self.mem.get().cast::<u64>()
    }

    /// The physical address of the first word, to hand to firmware.
    fn phys_addr(&self) -> usize {
        // SAFETY: By the type invariant the memory is kmalloc'd, so in the linear map, where
        // `virt_to_phys()` is valid.
        let phys = unsafe { bindings::rpmu_virt_to_phys(self.ptr().cast()) };
        // CAST: Physical addresses fit in a register of RV64, where the driver runs.
        phys as usize
    }

    /// Word `i`, or `None` past the end.
    #[inline(always)]
    pub(crate) fn read(&self, i: usize) -> Option<u64> {
        // SAFETY: By the type invariant `ptr()` points to `N` words owned by `self`, and `i < N`;
        // the load is volatile and creates no reference, so firmware may access the memory too.
        (i < N).then(|| unsafe { self.ptr().add(i).read_volatile() })
    }

    /// Sets word `i`; nothing past the end.
    #[inline(always)]
    pub(crate) fn write(&mut self, i: usize, value: u64) {
        if i < N {
            // SAFETY: As in `read`, and `self` is borrowed mutably, so no other Rust access races.
            unsafe { self.ptr().add(i).write_volatile(value) };
        }
    }

    /// `sbi_pmu_event_get_info(shmem, num_entries, 0)`: copies `entries` (at most `N` words) to the
    /// start of the memory, lends the memory to firmware as an array of `N / 2` event-info entries
    /// (two words each, SBI v3.0 Table 18), which firmware reads and writes during the call, and
    /// copies the start of the memory back into `entries`.
    pub(crate) fn event_get_info(&mut self, entries: &mut [u64]) -> (isize, usize) {
        for (i, word) in entries.iter().enumerate() {
            self.write(i, *word);
        }
        let args = [self.phys_addr(), 0, N / 2, 0, 0, 0];
        // SAFETY: The memory is owned by `self` (type invariant), borrowed mutably for the call,
        // and holds `N` words: the `N / 2` entries of two words each that the call names. Firmware
        // does not keep the address after the call.
        let ret = unsafe { sbi_ecall(SBI_EXT_PMU, SBI_PMU_EVENT_GET_INFO, args) };
        for (i, word) in entries.iter_mut().enumerate().take(N) {
            *word = self.read(i).unwrap_or(0);
        }
        ret
    }
}

/// The words of an SBI PMU snapshot memory: one page (SBI v2.0, Table 16).
pub(crate) const SNAPSHOT_WORDS: usize = 4096 / core::mem::size_of::<u64>();

/// No CPU: the snapshot memory is registered nowhere.
const NO_CPU: u32 = u32::MAX;

/// A page of snapshot memory for the SBI PMU extension of one hart, which firmware writes during
/// `counter_stop` with TAKE_SNAPSHOT and reads during `counter_start` with INIT_SNAPSHOT for as
/// long as it is registered, between calls too.
///
/// Memory registered with firmware is never freed: dropping it while it is registered leaks it,
/// with a warning, and it can be registered on one hart at a time only.
///
/// # Invariants
///
/// `cpu` is the CPU on whose hart firmware has the page registered, or [`NO_CPU`].
///
/// # Examples
///
/// ```ignore
/// let page = SnapshotShmem::new()?;
/// // On the CPU, with interrupts disabled:
/// if page.register().error == 0 { /* this hart's counters are read from the page from now on */ }
/// page.unregister();
/// ```
pub(crate) struct SnapshotShmem {
    mem: core::mem::ManuallyDrop<FirmwareMem<SNAPSHOT_WORDS>>,
    cpu: AtomicU32,
}

impl SnapshotShmem {
    /// Allocates the page, zeroed and registered nowhere.
    pub(crate) fn new() -> Result<Self> {
        // INVARIANT: Not registered.
        Ok(Self {
            mem: core::mem::ManuallyDrop::new(FirmwareMem::new()?),
            cpu: AtomicU32::new(NO_CPU),
        })
    }

    /// Word `i` of the page (0 past the end).
    #[inline(always)]
    pub(crate) fn read(&self, i: usize) -> u64 {
        self.mem.read(i).unwrap_or(0)
    }

    /// Sets word `i` of the page (nothing past the end).
    #[inline(always)]
    pub(crate) fn write(&mut self, i: usize, value: u64) {
        self.mem.write(i, value);
    }

    /// `sbi_pmu_snapshot_set_shmem(page, 0)` on this hart. Refused (`SBI_ERR_ALREADY_STARTED`,
    /// without a call) while the page is registered.
    pub(crate) fn register(&self) -> (isize, usize) {
        percpu::with_local_irq_disabled(|irq| {
            let cpu = CpuId::current(irq).as_u32();
            if self
                .cpu
                .compare_exchange(NO_CPU, cpu, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {
                // SBI_ERR_ALREADY_STARTED.
                return (-7, 0);
            }
            let args = [self.mem.phys_addr(), 0, 0, 0, 0, 0];
            // `cpu` now names this hart (interrupts stay disabled, so the call is made on it), and
            // the page is freed only once that is undone (see `unregister` and `Drop`).
            // SAFETY: The page is owned by `self`, one page-aligned page as the function requires,
            // and stays allocated while firmware has it (above).
            let ret = unsafe { sbi_ecall(SBI_EXT_PMU, SBI_PMU_SNAPSHOT_SET_SHMEM, args) };
            if ret.0 != 0 {
                // INVARIANT: Firmware refused the page.
                self.cpu.store(NO_CPU, Ordering::Relaxed);
            }
            ret
        })
    }

    /// Disables the snapshot memory of this hart (`sbi_pmu_snapshot_set_shmem(-1, -1, 0)`), if the
    /// page is registered here; nothing otherwise.
    pub(crate) fn unregister(&self) -> (isize, usize) {
        percpu::with_local_irq_disabled(|irq| {
            if self.cpu.load(Ordering::Relaxed) != CpuId::current(irq).as_u32() {
                return (0, 0);
            }
            let args = [usize::MAX, usize::MAX, 0, 0, 0, 0];
            // SAFETY: All ones disables the snapshot memory: the call names no memory.
            let ret = unsafe { sbi_ecall(SBI_EXT_PMU, SBI_PMU_SNAPSHOT_SET_SHMEM, args) };
            if ret.0 == 0 {
                // INVARIANT: Firmware no longer has the page.
                self.cpu.store(NO_CPU, Ordering::Relaxed);
            }
            ret
        })
    }
}

impl Drop for SnapshotShmem {
    fn drop(&mut self) {
        if self.cpu.load(Ordering::Relaxed) != NO_CPU {
            percpu::warn_once(c_str!(
                "snapshot memory dropped while registered; it is leaked"
            ));
            return;
        }
        // SAFETY: Dropped once, here; firmware has not got the page (type invariant).
        unsafe { core::mem::ManuallyDrop::drop(&mut self.mem) };
    }
}
