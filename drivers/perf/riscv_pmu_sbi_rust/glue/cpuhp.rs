// SPDX-License-Identifier: GPL-2.0

//! CPU hotplug: run code on every CPU now and whenever a CPU starts, and on every CPU when the
//! registration goes and whenever a CPU stops.
//!
//! C header: [`include/linux/cpuhotplug.h`](srctree/include/linux/cpuhotplug.h)
//!
//! The state is one of the "starting" section ([`StartingState`], before `CPUHP_AP_ONLINE`): its
//! callbacks run on a starting CPU with interrupts disabled, before perf can schedule events on it,
//! and on a dying CPU with interrupts disabled, after perf moved its events away. A fixed state can
//! have one owner only.

use super::bindings;
use super::compat::{self, pin_init_from_closure};
use super::percpu::LocalInterruptDisabled;
use core::{marker::PhantomData, ptr::addr_of};
use kernel::{
    error::{from_result, to_result},
    ffi::{c_int, c_uint},
    prelude::*,
    types::Opaque,
};

/// A hotplug state of the "starting" section, whose callbacks run on the CPU concerned with
/// interrupts disabled (`cpuhotplug.h`).
///
/// # Invariants
///
/// The value is a `cpuhp_state` between `CPUHP_AP_OFFLINE` and `CPUHP_AP_ONLINE`.
///
/// # Examples
///
/// ```ignore
/// const PERF_STARTING: StartingState =
///     StartingState::new(bindings::cpuhp_state_CPUHP_AP_PERF_RISCV_STARTING);
/// ```
#[derive(Clone, Copy)]
pub(crate) struct StartingState(c_int);

impl StartingState {
    /// The state `state`; a state outside the starting section fails the build.
    pub(crate) const fn new(state: bindings::cpuhp_state) -> Self {
        if state <= bindings::cpuhp_state_CPUHP_AP_OFFLINE
            || state >= bindings::cpuhp_state_CPUHP_AP_ONLINE
        {
            panic!("not a hotplug state of the starting section");
        }
        // CAST: Hotplug states are small enum values.
        // INVARIANT: Checked above.
        Self(state as c_int)
    }
}

/// What to do on a starting and on a dying CPU.
///
/// # Examples
///
/// ```ignore
/// struct Counters;
///
/// impl CpuStarting for Counters {
///     const STATE: StartingState = arch::PERF_STARTING;
///     const NAME: &'static CStr = c_str!("perf/riscv/pmu_sbi_rust:starting");
///
///     fn starting(&self, _irq: &LocalInterruptDisabled) -> Result {
///         Ok(())
///     }
///
///     fn dying(&self, _irq: &LocalInterruptDisabled) {}
/// }
/// ```
pub(crate) trait CpuStarting: Send + Sync + 'static {
    /// The hotplug state the callbacks are registered at.
    const STATE: StartingState;

    /// The name of the hotplug state, shown in `/sys/devices/system/cpu/hotplug/states`.
    const NAME: &'static CStr;

    /// Runs on `cpu`, with interrupts disabled, when the state is set up (for every online CPU)
    /// and whenever the CPU starts later. It must not sleep.
    fn starting(&self, irq: &LocalInterruptDisabled) -> Result;

    /// Runs on `cpu`, with interrupts disabled, when the registration goes (for every online CPU)
    /// and whenever the CPU stops. It must not sleep and cannot fail.
    fn dying(&self, irq: &LocalInterruptDisabled);
}

/// A registered [`CpuStarting`]: `T::starting()` has run on every online CPU and will run on each
/// CPU that starts, until drop; `T::dying()` runs on each CPU that stops, and on every online CPU
/// at drop, before `T` is dropped: what `T` owns (such as a per-CPU interrupt the callbacks enable
/// and disable) outlives every callback.
///
/// # Invariants
///
/// `T::STATE` is set up as a multi-instance state (`cpuhp_setup_state_multi()`) and `node` is its
/// instance, both by the initialiser; drop removes the instance, then the state.
///
/// # Examples
///
/// ```ignore
/// let starting = KBox::pin_init(cpuhp::Registration::new(Counters), GFP_KERNEL)?;
/// ```
#[pin_data(PinnedDrop)]
pub(crate) struct Registration<T: CpuStarting> {
    data: T,
    #[pin]
    node: Opaque<bindings::hlist_node>,
}

// SAFETY: `T` is `Sync`, and the C side only touches `node` under the hotplug lock.
unsafe impl<T: CpuStarting> Sync for Registration<T> {}

// SAFETY: Nothing in the registration is tied to the thread that created it.
unsafe impl<T: CpuStarting> Send for Registration<T> {}

impl<T: CpuStarting> Registration<T> {
    /// Sets up the hotplug state and runs `data.starting()` on every online CPU.
    ///
    /// Fails with the first error `starting` returns; the state is then removed again.
    pub(crate) fn new(data: T) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            data,
            node <- Self::add_instance(),
        }? Error)
    }

    fn add_instance() -> impl PinInit<Opaque<bindings::hlist_node>, Error> {
        let init = move |slot: *mut Opaque<bindings::hlist_node>| {
            // SAFETY: The name is a static string and the callbacks match the C prototype.
            to_result(unsafe {
                bindings::rpmu_cpuhp_setup_state_multi(
                    T::STATE.0,
                    T::NAME.as_char_ptr(),
                    Some(Adapter::<T>::starting_callback),
                    Some(Adapter::<T>::dying_callback),
                )
            })?;
            let node = compat::opaque_ptr(slot);
            // `cpuhp_state_add_instance()`, an inline wrapper. `node` is the `node` field of a
            // `Registration<T>` whose `data` field is initialised (pin-init runs the fields in
            // order).
            // SAFETY: The node stays at this address until `drop` removes it; the callback only
            // reads the `data` field, which is initialised.
            let ret =
                to_result(unsafe { bindings::__cpuhp_state_add_instance(T::STATE.0, node, true) });
            if ret.is_err() {
                // `cpuhp_remove_multi_state()`, an inline wrapper.
                // SAFETY: The state was set up above and has no instance.
                unsafe { bindings::__cpuhp_remove_state(T::STATE.0, false) };
            }
            ret
        };
        // SAFETY: On success the state is set up and the node added; on failure the state is
        // removed again, the C side has not kept the node and the slot needs no cleanup.
        unsafe { pin_init_from_closure(init) }
    }
}

#[pinned_drop]
impl<T: CpuStarting> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // `cpuhp_state_remove_instance()`, an inline wrapper. The teardown callback cannot fail, so
        // removing the instance cannot either.
        // SAFETY: By the type invariant `node` is an instance of `T::STATE`.
        unsafe { bindings::__cpuhp_state_remove_instance(T::STATE.0, self.node.get(), true) };
        // `cpuhp_remove_multi_state()`, an inline wrapper.
        // SAFETY: By the type invariant the state is set up; its instance was removed above.
        unsafe { bindings::__cpuhp_remove_state(T::STATE.0, false) };
    }
}

/// The hotplug callbacks of a [`Registration<T>`].
struct Adapter<T: CpuStarting>(PhantomData<T>);

impl<T: CpuStarting> Adapter<T> {
    /// Returns the registration a node belongs to, as a raw pointer.
    ///
    /// # Safety
    ///
    /// `node` must be the `node` field of a [`Registration<T>`].
    unsafe fn registration(node: *mut bindings::hlist_node) -> *const Registration<T> {
        // CAST: `Opaque<hlist_node>` is `repr(transparent)` over `hlist_node`.
        let node = node.cast::<Opaque<bindings::hlist_node>>();
        // SAFETY: Guaranteed by the caller, so stepping back to the start of the structure stays
        // in the same object.
        unsafe { compat::container_of_mut!(node, Registration<T>, node) }
    }

    /// # Safety
    ///
    /// `node` must be passed by the hotplug core to the startup callback of the state.
    unsafe extern "C" fn starting_callback(_cpu: c_uint, node: *mut bindings::hlist_node) -> c_int {
        from_result(|| {
            // SAFETY: Only the `node` field of a `Registration<T>` is added to a state with these
            // callbacks.
            let registration = unsafe { Self::registration(node) };
            // SAFETY: The node belongs to a `Registration<T>` whose `data` is initialised before the
            // node is added and outlives it (see `PinnedDrop`). Only that field is referenced, as
            // the node itself may still be under initialisation.
            let data = unsafe { &*addr_of!((*registration).data) };
            // SAFETY: The callbacks of a state before CPUHP_AP_ONLINE (`T::STATE`, by the
            // invariant of `StartingState`) run on the CPU concerned with interrupts disabled
            // (cpuhotplug.h).
            let irq = unsafe { LocalInterruptDisabled::assume_disabled() };
            data.starting(irq)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `node` must be passed by the hotplug core to the teardown callback of the state.
    unsafe extern "C" fn dying_callback(_cpu: c_uint, node: *mut bindings::hlist_node) -> c_int {
        // SAFETY: As in `starting_callback`.
        let registration = unsafe { Self::registration(node) };
        // The teardown callback runs for an added instance, or while adding it fails, on the CPUs
        // whose startup ran (`cpuhp_rollback_install()`), when the node may still be under
        // initialisation.
        // SAFETY: `data` is initialised before the node is added and outlives the instance (see
        // `PinnedDrop`); only that field is referenced, as in `starting_callback`.
        let data = unsafe { &*addr_of!((*registration).data) };
        // SAFETY: As in `starting_callback`.
        let irq = unsafe { LocalInterruptDisabled::assume_disabled() };
        data.dying(irq);
        0
    }
}
