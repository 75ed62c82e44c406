// SPDX-License-Identifier: GPL-2.0

//! Per-CPU data.
//!
//! C header: [`include/linux/percpu.h`](srctree/include/linux/percpu.h)

use super::bindings;
use core::{marker::PhantomData, mem, ptr::NonNull};
use kernel::{ffi::c_void, prelude::*};

/// One `T` per possible CPU, each initialised by the constructor's closure.
///
/// # Invariants
///
/// `ptr` is a per-CPU allocation from `__alloc_percpu()` that is large enough and aligned for a
/// `T`; it holds a valid `T` for every possible CPU and is freed only on drop.
pub(crate) struct PerCpu<T> {
    ptr: NonNull<c_void>,
    _p: PhantomData<T>,
}

// SAFETY: Each copy of `T` is only used by code running on its own CPU (see `this_cpu_mut`), and
// `T: Send` allows that to be another thread than the one that allocated it.
unsafe impl<T: Send> Send for PerCpu<T> {}

// SAFETY: Shared references only give access to the copy of the CPU the caller runs on, under the
// conditions of `this_cpu_mut`, so two CPUs never reach the same copy.
unsafe impl<T: Send> Sync for PerCpu<T> {}

/// Calls `f` with the number of every possible CPU.
pub(crate) fn for_each_possible_cpu(mut f: impl FnMut(u32)) {
    // SAFETY: FFI call without arguments.
    let nr_cpu_ids = unsafe { bindings::rpmu_nr_cpu_ids() };
    for cpu in 0..nr_cpu_ids {
        // SAFETY: FFI call; any CPU number is accepted.
        if unsafe { bindings::rpmu_cpu_possible(cpu) } {
            f(cpu);
        }
    }
}

impl<T> PerCpu<T> {
    /// Allocates a `T` for every possible CPU, each the value `init` returns for that CPU.
    pub(crate) fn new(init: impl Fn(u32) -> T) -> Result<Self> {
        // The per-CPU allocator refuses zero-sized allocations.
        let size = mem::size_of::<T>().max(1);
        // SAFETY: FFI call with a valid size and a power-of-two alignment.
        let ptr = unsafe { bindings::rpmu_alloc_percpu(size, mem::align_of::<T>()) };
        let ptr = NonNull::new(ptr).ok_or(ENOMEM)?;
        for_each_possible_cpu(|cpu| {
            // SAFETY: `ptr` is a live per-CPU allocation and `cpu` is a possible CPU.
            let slot = unsafe { bindings::rpmu_per_cpu_ptr(ptr.as_ptr(), cpu) };
            // SAFETY: Each CPU's copy is large enough and aligned for a `T` and not yet
            // initialised, so writing without dropping is right.
            unsafe { slot.cast::<T>().write(init(cpu)) };
        });
        // INVARIANT: Every possible CPU's copy was written above.
        Ok(Self {
            ptr,
            _p: PhantomData,
        })
    }

    /// Returns the copy of the CPU the caller runs on.
    ///
    /// # Safety
    ///
    /// The caller must stay on this CPU (interrupts disabled) while the reference exists, and no
    /// other reference to this CPU's copy may exist meanwhile.
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

/// A call of [`PerCpu::with_cpu`] on its way to another CPU.
struct CpuCall<'a, T, F, R> {
    percpu: &'a PerCpu<T>,
    f: Option<F>,
    ret: Option<R>,
}

impl<T: Send> PerCpu<T> {
    /// Runs `f` on `cpu` with that CPU's copy, with interrupts disabled, and returns its result;
    /// `None` when the CPU is offline. It waits for the other CPU, so it must be called in process
    /// context.
    pub(crate) fn with_cpu<R: Send, F: FnOnce(&mut T) -> R + Send>(
        &self,
        cpu: u32,
        f: F,
    ) -> Option<R> {
        let mut call = CpuCall {
            percpu: self,
            f: Some(f),
            ret: None,
        };
        let info: *mut CpuCall<'_, T, F, R> = &mut call;
        // SAFETY: `info` points to `call`, which outlives the call since it waits (`wait` = 1)
        // for `trampoline` to finish.
        let ret = unsafe {
            bindings::rpmu_call_on_cpu(cpu, Some(Self::trampoline::<F, R>), info.cast::<c_void>())
        };
        if ret != 0 {
            return None;
        }
        call.ret
    }

    /// # Safety
    ///
    /// `info` must point to a `CpuCall<'_, T, F, R>` that nothing else uses during the call.
    unsafe extern "C" fn trampoline<F: FnOnce(&mut T) -> R, R>(info: *mut c_void) {
        // SAFETY: Guaranteed by the caller.
        let call = unsafe { &mut *info.cast::<CpuCall<'_, T, F, R>>() };
        // SAFETY: The function runs on its CPU with interrupts disabled (it is a cross-CPU call),
        // so no other user of this CPU's copy runs meanwhile.
        let data = unsafe { call.percpu.this_cpu_mut() };
        if let Some(f) = call.f.take() {
            call.ret = Some(f(data));
        }
    }
}

impl<T> Drop for PerCpu<T> {
    fn drop(&mut self) {
        for_each_possible_cpu(|cpu| {
            // SAFETY: By the type invariant `ptr` is a live per-CPU allocation and `cpu` is a
            // possible CPU.
            let ptr = unsafe { bindings::rpmu_per_cpu_ptr(self.ptr.as_ptr(), cpu) };
            // CAST: By the type invariant each CPU's copy is a valid, aligned `T`.
            let ptr = ptr.cast::<T>();
            // SAFETY: The copy is valid and, as `self` is being dropped, unused: drop it once.
            unsafe { core::ptr::drop_in_place(ptr) };
        });
        // SAFETY: By the type invariant `ptr` came from `__alloc_percpu()` and is freed only here.
        unsafe { bindings::free_percpu(self.ptr.as_ptr()) };
    }
}

/// Runs `f` on every online CPU, with interrupts disabled, and waits for all of them; process context
/// only.
pub(crate) fn on_each_cpu<F: Fn() + Sync>(f: &F) {
    let info: *const F = f;
    // SAFETY: `info` points to `f`, which outlives the call since it waits (`wait` = 1) for every
    // CPU; `F: Sync` lets the CPUs call it at the same time.
    unsafe { bindings::rpmu_on_each_cpu(Some(call_fn::<F>), info.cast_mut().cast::<c_void>()) };
}

/// Calls the closure `info` points to; the cross-CPU call target of [`on_each_cpu`] and of its
/// variants for a set of CPUs.
///
/// # Safety
///
/// `info` must point to an `F` that lives until the call returns.
pub(crate) unsafe extern "C" fn call_fn<F: Fn() + Sync>(info: *mut c_void) {
    // SAFETY: Guaranteed by the caller; the closure is only used through shared references.
    let f = unsafe { &*info.cast_const().cast::<F>() };
    f();
}
