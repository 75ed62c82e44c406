// SPDX-License-Identifier: GPL-2.0

//! Per-CPU data, CPU numbers, and the proof that interrupts are disabled on the local CPU.
//!
//! C headers: [`include/linux/percpu.h`](srctree/include/linux/percpu.h),
//! [`include/linux/cpumask.h`](srctree/include/linux/cpumask.h),
//! [`include/linux/irqflags.h`](srctree/include/linux/irqflags.h)
//!
//! The shapes follow the kernel crate's newer abstractions: [`CpuId`] as `kernel::cpu::CpuId`,
//! [`LocalInterruptDisabled`] as the token of `kernel::interrupt`, and [`PerCpu::get`] with
//! [`CheckedPerCpuToken::with`] as the per-CPU series proposed for the kernel crate.

use super::bindings;
use super::compat;
use core::{
    marker::PhantomData,
    mem,
    ptr::{addr_of, NonNull},
};
use kernel::{
    ffi::{c_int, c_void},
    prelude::*,
};

/// Proof that interrupts are disabled on the local CPU for as long as a reference to it lives: no
/// other code runs on this CPU meanwhile, except what the holder calls, and the holder stays on it.
///
/// Only shared references exist, made by [`LocalInterruptDisabled::assume_disabled`] in the glue's
/// callbacks whose context guarantees it.
///
/// # Invariants
///
/// A reference exists only while interrupts are disabled on the CPU that made it.
///
/// # Examples
///
/// ```ignore
/// fn handle(&self, irq: &LocalInterruptDisabled) -> IrqReturn {
///     let cpu = CpuId::current(irq);
///     self.states.get(irq).with(|state| state.count(cpu));
///     IrqReturn::Handled
/// }
/// ```
pub(crate) struct LocalInterruptDisabled(PhantomData<*mut ()>);

impl LocalInterruptDisabled {
    /// Returns the token of a context whose interrupts are disabled; lockdep checks it in kernels
    /// that have it (`lockdep_assert_irqs_disabled()`).
    ///
    /// # Safety
    ///
    /// Interrupts must be disabled on the current CPU for the lifetime `'a`.
    #[inline(always)]
    pub(crate) unsafe fn assume_disabled<'a>() -> &'a Self {
        #[cfg(CONFIG_PROVE_LOCKING)]
        // SAFETY: FFI call without arguments; it only checks lockdep's view of this CPU.
        unsafe {
            bindings::rpmu_lockdep_assert_irqs_disabled()
        };
        // INVARIANT: Guaranteed by the caller.
        // SAFETY: `Self` is a zero-sized type, for which a dangling, aligned pointer is valid.
        unsafe { NonNull::dangling().as_ref() }
    }
}

/// The number of a possible CPU (`cpu < nr_cpu_ids`).
///
/// # Invariants
///
/// The number is below `nr_cpu_ids`.
///
/// # Examples
///
/// ```ignore
/// for_each_possible_cpu(|cpu: CpuId| pr_info!("CPU {}\n", cpu.as_u32()));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct CpuId(u32);

impl CpuId {
    /// The number as the kernel's `unsigned int`.
    pub(crate) fn as_u32(self) -> u32 {
        self.0
    }

    /// The number as the kernel's `int`.
    pub(crate) fn as_c_int(self) -> c_int {
        // CAST: By the type invariant the number is below `nr_cpu_ids`, which fits an `int`.
        self.0 as c_int
    }

    /// The CPU the caller runs on (`smp_processor_id()`); the token keeps it there.
    #[inline(always)]
    pub(crate) fn current(irq: &LocalInterruptDisabled) -> Self {
        // INVARIANT: A running CPU's number is below `nr_cpu_ids`.
        Self(super::arch::current_cpu(irq))
    }
}

/// Calls `f` with every possible CPU (`for_each_possible_cpu()`: the bits of `cpu_possible_mask`).
pub(crate) fn for_each_possible_cpu(mut f: impl FnMut(CpuId)) {
    // SAFETY: The mask is set at boot, before modules load, and read-only afterwards
    // (`__ro_after_init`); its words are copied out through a raw pointer, without a reference.
    let words = unsafe { addr_of!(bindings::__cpu_possible_mask.bits).read() };
    for (word, mut bits) in (0u32..).zip(words) {
        // Only the set bits are visited: the mask has room for `NR_CPUS`, mostly clear.
        while bits != 0 {
            let bit = bits.trailing_zeros();
            bits &= bits - 1;
            // INVARIANT: `nr_cpu_ids` is one more than the highest possible CPU
            // (`setup_nr_cpu_ids()`).
            f(CpuId(word * usize::BITS + bit));
        }
    }
}

/// A type whose starting value is a constant, from which [`PerCpu::new`] builds each CPU's copy
/// in place: the constant is written straight into the copy's memory and completed there, so that
/// no `T` is built on the stack and moved. A kernel stack is 16 KiB, and without `VMAP_STACK` no
/// guard page stops a module's init that runs past it.
///
/// # Examples
///
/// ```ignore
/// impl ConstInit for CpuState {
///     const INIT: Self = CpuState { used: 0, slots: [0; 64] };
/// }
/// ```
pub(crate) trait ConstInit: Sized {
    /// The starting value.
    const INIT: Self;
}

impl ConstInit for () {
    const INIT: Self = ();
}

/// One `T` per possible CPU, each built in place by the constructor.
///
/// # Invariants
///
/// `ptr` is a per-CPU allocation from `__alloc_percpu()` that is large enough and aligned for a
/// `T`; it holds a valid `T` for every possible CPU and is freed only on drop.
///
/// # Examples
///
/// ```ignore
/// let hits = PerCpu::new(|_cpu, hits: &mut Cell<u64>| hits.set(0))?;
/// // In an interrupt handler, with its token:
/// hits.get(irq).with(|hits| hits.set(hits.get() + 1));
/// ```
pub(crate) struct PerCpu<T> {
    ptr: NonNull<T>,
}

// SAFETY: Each copy of `T` is only used by code running on its own CPU (see `get`), and `T: Send`
// allows that to be another thread than the one that allocated it.
unsafe impl<T: Send> Send for PerCpu<T> {}

// SAFETY: Shared references only give access to the copy of the CPU the caller runs on with
// interrupts disabled (see `get`), so two CPUs never reach the same copy.
unsafe impl<T: Send> Sync for PerCpu<T> {}

impl<T: ConstInit> PerCpu<T> {
    /// Allocates a `T` for every possible CPU: each copy starts as [`ConstInit::INIT`], and `init`
    /// completes it in place.
    pub(crate) fn new(init: impl Fn(CpuId, &mut T)) -> Result<Self> {
        // The per-CPU allocator refuses zero-sized allocations.
        let size = mem::size_of::<T>().max(1);
        // SAFETY: FFI call with a valid size and a power-of-two alignment.
        let ptr = unsafe { bindings::rpmu_alloc_percpu(size, mem::align_of::<T>()) };
        // CAST: Each CPU's copy is large enough and aligned for a `T`.
        let ptr = NonNull::new(ptr.cast::<T>()).ok_or(ENOMEM)?;
        for_each_possible_cpu(|cpu| {
            let slot = super::arch::per_cpu_ptr(ptr.as_ptr(), cpu.as_u32());
            // SAFETY: `ptr` is a live per-CPU allocation and `cpu` is a possible CPU, so `slot` is
            // the CPU's copy; it is not yet initialised, so writing without dropping is right.
            unsafe { slot.write(T::INIT) };
            // SAFETY: The copy was written above, and nothing else reaches it before `new`
            // returns.
            init(cpu, unsafe { &mut *slot });
        });
        // INVARIANT: Every possible CPU's copy was written above.
        Ok(Self { ptr })
    }
}

impl<T> PerCpu<T> {
    /// The copy of the CPU the caller runs on, for as long as the token lives.
    #[inline(always)]
    pub(crate) fn get<'a>(&'a self, irq: &'a LocalInterruptDisabled) -> CheckedPerCpuToken<'a, T> {
        let ptr = super::arch::this_cpu_ptr(self.ptr.as_ptr(), irq);
        // The copy lives until `self` is dropped, which needs `&mut self`. Copies are only reached
        // from their own CPU (here, which `with_cpu` calls on the target CPU), and `T: Send`
        // lets whichever thread runs on the CPU use it.
        // SAFETY: The token keeps the caller on this CPU with interrupts disabled, so no other
        // thread reaches this CPU's valid copy while `'a` lasts.
        CheckedPerCpuToken(unsafe { &*ptr })
    }
}

/// The local CPU's copy of a [`PerCpu`], lent for the life of a [`LocalInterruptDisabled`] token.
///
/// Only shared references are handed out: state that changes lives in cells (a `RefCell` for state
/// borrowed mutably, whose borrow flag refuses a second borrow, re-entrant or not).
///
/// # Examples
///
/// ```ignore
/// let count = hits.get(irq).with(|hits| hits.get());
/// ```
pub(crate) struct CheckedPerCpuToken<'a, T>(&'a T);

impl<'a, T> CheckedPerCpuToken<'a, T> {
    /// Runs `f` with the copy.
    #[inline(always)]
    pub(crate) fn with<R>(self, f: impl FnOnce(&'a T) -> R) -> R {
        f(self.0)
    }
}

/// Warns once (`WARN_ONCE()`): a kernel warning with a backtrace, for a broken invariant the code
/// has recovered from.
pub(crate) fn warn_once(msg: &'static CStr) {
    // SAFETY: FFI call with a static NUL-terminated string.
    unsafe { bindings::rpmu_warn_once(msg.as_char_ptr()) };
}

/// Runs `f` with interrupts disabled on the local CPU (`local_irq_save()`), with their token.
pub(crate) fn with_local_irq_disabled<R>(f: impl FnOnce(&LocalInterruptDisabled) -> R) -> R {
    // SAFETY: FFI call without arguments; it is balanced below.
    let flags = unsafe { bindings::rpmu_local_irq_save() };
    // SAFETY: Interrupts are disabled until the restore below, after the token's last use.
    let ret = f(unsafe { LocalInterruptDisabled::assume_disabled() });
    // SAFETY: FFI call balancing the save above.
    unsafe { bindings::rpmu_local_irq_restore(flags) };
    ret
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

impl<T: Send> PerCpu<T> {
    /// Runs `f` on `cpu` with that CPU's copy, with interrupts disabled, and returns its result;
    /// `None` when the CPU is offline. It waits for the other CPU, so it must be called in process
    /// context.
    pub(crate) fn with_cpu<R: Send>(
        &self,
        cpu: CpuId,
        f: impl FnOnce(&T) -> R + Send,
    ) -> Option<R> {
        let mut ret = None;
        on_cpu(cpu.as_c_int(), |irq| ret = Some(self.get(irq).with(f)));
        ret
    }
}

/// Runs `f` on `cpu` with interrupts disabled there, with their token, and waits for it; nothing
/// when the CPU is offline. Process context only.
pub(crate) fn on_cpu<F: FnOnce(&LocalInterruptDisabled) + Send>(cpu: c_int, f: F) {
    let mut f = Some(f);
    let info: *mut Option<F> = &mut f;
    // SAFETY: `info` points to `f`, which outlives the call since it waits (`wait` = 1) for
    // `call_once` to finish, and which nothing else uses meanwhile; `F: Send` lets the other CPU
    // run it. An offline CPU (an error) runs nothing.
    let _ = unsafe {
        bindings::smp_call_function_single(
            cpu,
            Some(call_once::<F>),
            info.cast::<c_void>(),
            // Wait for the function to finish (an `int` in 6.12, a `bool` in 7.x).
            compat::on_kernel!(1, true),
        )
    };
}

/// Runs the closure `info` points to; the cross-CPU call target of [`on_cpu`].
///
/// # Safety
///
/// `info` must point to an `Option<F>` that nothing else uses during the call.
unsafe extern "C" fn call_once<F: FnOnce(&LocalInterruptDisabled)>(info: *mut c_void) {
    // SAFETY: Guaranteed by the caller.
    let f = unsafe { &mut *info.cast::<Option<F>>() };
    // SAFETY: A cross-CPU call runs on its CPU with interrupts disabled until it returns.
    let irq = unsafe { LocalInterruptDisabled::assume_disabled() };
    if let Some(f) = f.take() {
        f(irq);
    }
}

impl<T> Drop for PerCpu<T> {
    fn drop(&mut self) {
        for_each_possible_cpu(|cpu| {
            let ptr = super::arch::per_cpu_ptr(self.ptr.as_ptr(), cpu.as_u32());
            // SAFETY: By the type invariant `self.ptr` is a live per-CPU allocation and `cpu` is a
            // possible CPU, so `ptr` is the CPU's copy, valid and, as `self` is being dropped,
            // unused: drop it once.
            unsafe { core::ptr::drop_in_place(ptr) };
        });
        // SAFETY: By the type invariant `ptr` came from `__alloc_percpu()` and is freed only here.
        unsafe { bindings::free_percpu(self.ptr.as_ptr().cast()) };
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

/// Calls the closure `info` points to; the cross-CPU call target of [`on_each_cpu`].
///
/// # Safety
///
/// `info` must point to an `F` that lives until the call returns.
unsafe extern "C" fn call_fn<F: Fn() + Sync>(info: *mut c_void) {
    // SAFETY: Guaranteed by the caller; the closure is only used through shared references.
    let f = unsafe { &*info.cast_const().cast::<F>() };
    f();
}
