// SPDX-License-Identifier: GPL-2.0

//! Per-CPU data.
//!
//! C header: [`include/linux/percpu.h`](srctree/include/linux/percpu.h)

use super::bindings;
use core::{marker::PhantomData, mem, ptr::NonNull};
use kernel::{c_str, ffi::c_void, prelude::*};

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

// SAFETY: Each copy of `T` is only used by code running on its own CPU (see `local`), and `T: Send`
// allows that to be another thread than the one that allocated it.
unsafe impl<T: Send> Send for PerCpu<T> {}

// SAFETY: Shared references only give access to the copy of the CPU the caller runs on with
// interrupts disabled (see `local`), so two CPUs never reach the same copy.
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
    /// Only shared references are handed out: state that changes lives in cells (a `RefCell` for
    /// state borrowed mutably, whose borrow flag refuses a second borrow, re-entrant or not).
    #[inline(always)]
    pub(crate) fn local<'a>(&'a self, cpu: &'a LocalCpu<'_>) -> &'a T {
        // This CPU's copy of the live allocation (type invariant).
        let ptr = super::arch::this_cpu_ptr(self.ptr.as_ptr(), cpu);
        // The copy lives until `self` is dropped, which needs `&mut self`. Copies are only reached
        // from their own CPU (here, and in `with_cpu`, which runs on the target CPU), and `T: Send`
        // lets whichever thread runs on the CPU use it. CAST: each copy is a valid, aligned `T`.
        // SAFETY: The copy is valid and, as the token keeps the caller on this CPU with interrupts
        // disabled, no other thread reaches it while the shared reference lives.
        unsafe { &*ptr.cast::<T>() }
    }
}

/// Proof that the code holding it runs on one CPU with interrupts disabled, for as long as the
/// token lives: no other code runs on this CPU meanwhile, except what the holder calls.
///
/// # Invariants
///
/// A token exists only while interrupts are disabled on the CPU that created it.
pub(crate) struct LocalCpu<'a> {
    // Neither `Send` nor `Sync`: the token is only valid on its CPU.
    _p: PhantomData<(&'a (), *mut ())>,
}

impl LocalCpu<'_> {
    /// Creates a token.
    ///
    /// # Safety
    ///
    /// Interrupts must be disabled on the current CPU for as long as the token lives.
    #[inline(always)]
    pub(crate) unsafe fn new() -> Self {
        if !super::arch::irqs_disabled() {
            warn_once(c_str!("CPU token created with interrupts enabled"));
        }
        // INVARIANT: Guaranteed by the caller (and checked above).
        Self { _p: PhantomData }
    }
}

/// Warns once (`WARN_ONCE()`): a kernel warning with a backtrace, for a broken invariant the code
/// has recovered from.
pub(crate) fn warn_once(msg: &'static CStr) {
    // SAFETY: FFI call with a static NUL-terminated string.
    unsafe { bindings::rpmu_warn_once(msg.as_char_ptr()) };
}

/// Runs `f` with preemption disabled, so that everything it does happens on one CPU.
pub(crate) fn with_preemption_disabled<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: FFI call without arguments; it is balanced below.
    unsafe { bindings::rpmu_preempt_disable() };
    let ret = f();
    // SAFETY: FFI call without arguments, balancing the call above.
    unsafe { bindings::rpmu_preempt_enable() };
    ret
}

/// A call of [`PerCpu::with_cpu`] on its way to another CPU.
struct CpuCall<'a, T, F, R> {
    percpu: &'a PerCpu<T>,
    f: Option<F>,
    ret: Option<R>,
}

impl<T: Send> PerCpu<T> {
    /// Runs `f` on `cpu` with that CPU's copy and a token, with interrupts disabled, and returns
    /// its result; `None` when the CPU is offline. It waits for the other CPU, so it must be called
    /// in process context.
    pub(crate) fn with_cpu<R: Send, F: FnOnce(&T, &LocalCpu<'_>) -> R + Send>(
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
    unsafe extern "C" fn trampoline<F: FnOnce(&T, &LocalCpu<'_>) -> R, R>(info: *mut c_void) {
        // SAFETY: Guaranteed by the caller.
        let call = unsafe { &mut *info.cast::<CpuCall<'_, T, F, R>>() };
        // SAFETY: A cross-CPU call runs on its CPU with interrupts disabled until it returns.
        let cpu = unsafe { LocalCpu::new() };
        if let Some(f) = call.f.take() {
            call.ret = Some(f(call.percpu.local(&cpu), &cpu));
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
