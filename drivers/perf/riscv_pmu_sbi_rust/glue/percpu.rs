// SPDX-License-Identifier: GPL-2.0

//! Per-CPU data.
//!
//! C header: [`include/linux/percpu.h`](srctree/include/linux/percpu.h)

use super::bindings;
use core::{marker::PhantomData, mem, ptr::NonNull};
use kernel::{ffi::c_void, init::Zeroable, prelude::*};

/// One `T` per possible CPU, starting out zeroed, like `alloc_percpu()` memory.
///
/// # Invariants
///
/// `ptr` is a per-CPU allocation from `__alloc_percpu()` that is large enough and aligned for a
/// `T`; it holds a valid `T` (zeroed, which `T: Zeroable` allows, or written since) for every
/// possible CPU and is freed only on drop.
pub(crate) struct PerCpu<T: Zeroable> {
    ptr: NonNull<c_void>,
    _p: PhantomData<T>,
}

// SAFETY: Each copy of `T` is only used by code running on its own CPU (see `this_cpu_mut`), and
// `T: Send` allows that to be another thread than the one that allocated it.
unsafe impl<T: Zeroable + Send> Send for PerCpu<T> {}

// SAFETY: Shared references only give access to the copy of the CPU the caller runs on, under the
// conditions of `this_cpu_mut`, so two CPUs never reach the same copy.
unsafe impl<T: Zeroable + Send> Sync for PerCpu<T> {}

impl<T: Zeroable> PerCpu<T> {
    /// Allocates a zeroed `T` for every possible CPU.
    pub(crate) fn new() -> Result<Self> {
        // The per-CPU allocator refuses zero-sized allocations.
        let size = mem::size_of::<T>().max(1);
        // SAFETY: FFI call with a valid size and a power-of-two alignment.
        let ptr = unsafe { bindings::rpmu_alloc_percpu(size, mem::align_of::<T>()) };
        // INVARIANT: `__alloc_percpu()` returns zeroed memory of the requested size and alignment.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
            _p: PhantomData,
        })
    }

    /// Returns the copy of the CPU the caller runs on.
    ///
    /// # Safety
    ///
    /// The caller must stay on this CPU (preemption or interrupts disabled) while the reference
    /// exists, and no other reference to this CPU's copy may exist meanwhile.
    #[expect(
        clippy::mut_from_ref,
        reason = "each CPU's copy is exclusive to the code running on that CPU, per the safety contract"
    )]
    pub(crate) unsafe fn this_cpu_mut(&self) -> &mut T {
        // SAFETY: By the type invariant `ptr` is a live per-CPU allocation.
        let ptr = unsafe { bindings::rpmu_this_cpu_ptr(self.ptr.as_ptr()) };
        // CAST: By the type invariant each CPU's copy is a valid, aligned `T`.
        let ptr = ptr.cast::<T>();
        // SAFETY: The caller guarantees that this is the only reference to this CPU's copy and
        // that it is not used from another CPU.
        unsafe { &mut *ptr }
    }
}

impl<T: Zeroable> Drop for PerCpu<T> {
    fn drop(&mut self) {
        // SAFETY: FFI call without arguments.
        let nr_cpu_ids = unsafe { bindings::rpmu_nr_cpu_ids() };
        for cpu in 0..nr_cpu_ids {
            // SAFETY: FFI call; any CPU number is accepted.
            if !unsafe { bindings::rpmu_cpu_possible(cpu) } {
                continue;
            }
            // SAFETY: By the type invariant `ptr` is a live per-CPU allocation and `cpu` is a
            // possible CPU.
            let ptr = unsafe { bindings::rpmu_per_cpu_ptr(self.ptr.as_ptr(), cpu) };
            // CAST: By the type invariant each CPU's copy is a valid, aligned `T`.
            let ptr = ptr.cast::<T>();
            // SAFETY: The copy is valid and, as `self` is being dropped, unused: drop it once.
            unsafe { core::ptr::drop_in_place(ptr) };
        }
        // SAFETY: By the type invariant `ptr` came from `__alloc_percpu()` and is freed only here.
        unsafe { bindings::free_percpu(self.ptr.as_ptr()) };
    }
}
