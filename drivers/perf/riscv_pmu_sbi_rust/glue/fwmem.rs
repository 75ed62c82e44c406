// SPDX-License-Identifier: GPL-2.0

//! Memory the kernel lends to firmware, named by its physical address.
//!
//! C header: [`include/linux/slab.h`](srctree/include/linux/slab.h)
//!
//! Firmware reads and writes such memory during the calls the kernel hands its address to, like a
//! device doing DMA. So Rust never holds a reference to it: the words are copied in and out with
//! single volatile accesses, and the driver works on its own copy.

use super::bindings;
use core::ptr::NonNull;
use kernel::prelude::*;

/// `N` 64-bit words of physically contiguous kernel memory, zeroed, freed on drop.
///
/// `kmalloc()` aligns a power-of-two size to that size, so `FirmwareMem<512>` is one page-aligned
/// page, as the SBI snapshot memory must be (Documentation/core-api/memory-allocation.rst).
///
/// # Invariants
///
/// `ptr` points to `N` initialised `u64`s allocated by `kmalloc()` (physically contiguous, in the
/// linear map), owned by this value and freed only on drop.
pub(crate) struct FirmwareMem<const N: usize> {
    ptr: NonNull<u64>,
}

// SAFETY: The memory is owned by this value; nothing in it is tied to a thread.
unsafe impl<const N: usize> Send for FirmwareMem<N> {}

impl<const N: usize> FirmwareMem<N> {
    /// Allocates the words, zeroed.
    pub(crate) fn new() -> Result<Self> {
        let size = N.checked_mul(core::mem::size_of::<u64>()).ok_or(EINVAL)?;
        // SAFETY: FFI call; `kzalloc()` returns zeroed memory aligned for any `u64` or NULL.
        let ptr = unsafe { bindings::rpmu_kzalloc(size) };
        // INVARIANT: A non-null result is `N` zeroed words from kmalloc, owned here.
        Ok(Self {
            ptr: NonNull::new(ptr.cast::<u64>()).ok_or(ENOMEM)?,
        })
    }

    /// The physical address of the first word, to hand to firmware.
    pub(crate) fn phys_addr(&self) -> u64 {
        // SAFETY: By the type invariant the memory is kmalloc'd, so in the linear map, where
        // `virt_to_phys()` is valid.
        unsafe { bindings::rpmu_virt_to_phys(self.ptr.as_ptr().cast()) }
    }

    /// Word `i`, or `None` past the end.
    pub(crate) fn read(&self, i: usize) -> Option<u64> {
        if i >= N {
            return None;
        }
        // SAFETY: By the type invariant `ptr` points to `N` words owned by `self`, and `i < N`; the
        // load is volatile and creates no reference, so firmware may access the memory too.
        Some(unsafe { self.ptr.as_ptr().add(i).read_volatile() })
    }

    /// Sets word `i`; nothing past the end.
    pub(crate) fn write(&mut self, i: usize, value: u64) {
        if i < N {
            // SAFETY: As in `read`, and `self` is borrowed mutably, so no other Rust access races.
            unsafe { self.ptr.as_ptr().add(i).write_volatile(value) };
        }
    }

    /// Copies `words` (at most `N`) to the start of the memory.
    pub(crate) fn write_from(&mut self, words: &[u64]) {
        for (i, word) in words.iter().take(N).enumerate() {
            // SAFETY: By the type invariant `ptr` points to `N` words owned by `self`, and `i < N`;
            // the store is volatile and creates no reference, so firmware may access the memory too.
            unsafe { self.ptr.as_ptr().add(i).write_volatile(*word) };
        }
    }

    /// Copies the start of the memory into `words` (at most `N`).
    pub(crate) fn read_into(&self, words: &mut [u64]) {
        for (i, word) in words.iter_mut().take(N).enumerate() {
            // SAFETY: As in `write_from`; every bit pattern firmware may have written is a valid
            // `u64`.
            *word = unsafe { self.ptr.as_ptr().add(i).read_volatile() };
        }
    }
}

impl<const N: usize> Drop for FirmwareMem<N> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `ptr` came from `kmalloc()` and is freed only here.
        unsafe { bindings::rpmu_kfree(self.ptr.as_ptr().cast()) };
    }
}
