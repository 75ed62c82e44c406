// SPDX-License-Identifier: GPL-2.0

//! CPU PM notifiers: code that runs on a CPU when it enters and leaves a low-power state.
//!
//! C header: [`include/linux/cpu_pm.h`](srctree/include/linux/cpu_pm.h)

use super::bindings;
use super::compat::{self, pin_init_from_closure};
use super::percpu::LocalInterruptDisabled;
use kernel::{
    error::to_result,
    ffi::{c_int, c_ulong, c_void},
    prelude::*,
    types::Opaque,
};

/// What to do when a CPU enters and leaves a low-power state.
///
/// # Examples
///
/// ```ignore
/// struct Counters;
///
/// impl CpuPmNotify for Counters {
///     fn enter(&self, _irq: &LocalInterruptDisabled) { /* save the counters */ }
///     fn exit(&self, _irq: &LocalInterruptDisabled) { /* restore them */ }
/// }
/// ```
pub(crate) trait CpuPmNotify: Send + Sync + 'static {
    /// The CPU is about to enter a low-power state in which its state may be lost
    /// (`CPU_PM_ENTER`). Runs on that CPU with interrupts disabled.
    fn enter(&self, irq: &LocalInterruptDisabled);

    /// The CPU is back (`CPU_PM_EXIT`), or did not go (`CPU_PM_ENTER_FAILED`).
    fn exit(&self, irq: &LocalInterruptDisabled);
}

/// A registered CPU PM notifier; unregistered on drop.
///
/// # Invariants
///
/// `nb` is registered with `cpu_pm_register_notifier()` from the end of initialisation until
/// drop, with [`Registration::notifier_callback`] as its function.
///
/// # Examples
///
/// ```ignore
/// let notifier = KBox::pin_init(cpu_pm::Registration::new(Counters), GFP_KERNEL)?;
/// ```
#[pin_data(PinnedDrop)]
pub(crate) struct Registration<T: CpuPmNotify> {
    notify: T,
    #[pin]
    nb: Opaque<bindings::notifier_block>,
}

// SAFETY: Only shared references reach the registration from the notifier chain; `T` is `Sync`.
unsafe impl<T: CpuPmNotify> Sync for Registration<T> {}

// SAFETY: Nothing in the registration is tied to the thread that created it; `T` is `Send`.
unsafe impl<T: CpuPmNotify> Send for Registration<T> {}

impl<T: CpuPmNotify> Registration<T> {
    /// Registers `notify` for the CPU PM events of every CPU.
    pub(crate) fn new(notify: T) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            notify,
            nb <- Self::register(),
        }? Error)
    }

    fn register() -> impl PinInit<Opaque<bindings::notifier_block>, Error> {
        let init = move |slot: *mut Opaque<bindings::notifier_block>| {
            let nb = compat::opaque_ptr(slot);
            let value = bindings::notifier_block {
                notifier_call: Some(Self::notifier_callback),
                ..Default::default()
            };
            // SAFETY: `slot` is valid for writes and pinned: the registration does not move.
            unsafe { nb.write(value) };
            // SAFETY: `nb` is initialised and stays at this address until `drop` unregisters it.
            // `notify` is initialised before this field, so the callback finds it.
            to_result(unsafe { bindings::rpmu_cpu_pm_register_notifier(nb) })
        };
        // SAFETY: On success the closure has initialised the slot; on failure nothing was
        // registered and the slot holds nothing that needs dropping.
        unsafe { pin_init_from_closure(init) }
    }

    /// # Safety
    ///
    /// `nb` must be the notifier block of a `Registration<T>`, and the call a CPU PM notification.
    unsafe extern "C" fn notifier_callback(
        nb: *mut bindings::notifier_block,
        action: c_ulong,
        _data: *mut c_void,
    ) -> c_int {
        // CAST: `Opaque<notifier_block>` is `repr(transparent)` over `notifier_block`.
        let nb = nb.cast::<Opaque<bindings::notifier_block>>();
        // SAFETY: Guaranteed by the caller: `nb` is the `nb` field of a registration, which outlives
        // its notifications (see `PinnedDrop`).
        let registration = unsafe { &*compat::container_of_mut!(nb, Self, nb) };
        // SAFETY: `cpu_pm_enter()` and `cpu_pm_exit()` must be called with interrupts disabled
        // (cpu_pm.h), and run the notifiers on the calling CPU.
        let irq = unsafe { LocalInterruptDisabled::assume_disabled() };
        match bindings::cpu_pm_event::try_from(action) {
            Ok(bindings::cpu_pm_event_CPU_PM_ENTER) => registration.notify.enter(irq),
            Ok(bindings::cpu_pm_event_CPU_PM_EXIT | bindings::cpu_pm_event_CPU_PM_ENTER_FAILED) => {
                registration.notify.exit(irq)
            }
            _ => {}
        }
        // CAST: NOTIFY_OK is 1.
        bindings::NOTIFY_OK as c_int
    }
}

#[pinned_drop]
impl<T: CpuPmNotify> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // Unregistering waits for running notifications: those of `cpu_pm_enter()` run under the
        // chain's lock, which it takes, those of `cpu_pm_exit()` under `rcu_read_lock()`, for which
        // it calls `synchronize_rcu()`.
        // SAFETY: By the type invariant the notifier is registered; once this returns no
        // notification runs, so the fields outlive every use.
        unsafe { bindings::rpmu_cpu_pm_unregister_notifier(self.nb.get()) };
    }
}
