// SPDX-License-Identifier: GPL-2.0

//! Per-CPU interrupts: a mapping of an interrupt controller's hardware interrupt, and a handler
//! that runs on the interrupted CPU.
//!
//! C headers: [`include/linux/interrupt.h`](srctree/include/linux/interrupt.h),
//! [`include/linux/irqdomain.h`](srctree/include/linux/irqdomain.h)
//!
//! Shaped as the kernel crate's `kernel::irq` (`Handler::handle(&self) -> IrqReturn`, the handler
//! pinned inside its registration), for an interrupt that is per CPU: the handler also gets the
//! interrupted CPU's [`LocalInterruptDisabled`] token.

use super::bindings;
use super::compat::{self, pin_init_from_closure};
use super::percpu::{self, LocalInterruptDisabled};
use core::{
    marker::PhantomPinned,
    ptr::{self, addr_of_mut},
};
use kernel::{
    c_str,
    error::to_result,
    ffi::{c_int, c_uint, c_void},
    prelude::*,
    types::Opaque,
};

/// A Linux interrupt number mapped from a hardware interrupt of an interrupt domain.
///
/// The mapping is never disposed of: it stays in the domain after unload, as the built-in C
/// driver's does, and the next load gets it back (`irq_create_mapping()` returns an existing
/// mapping). Disposing of it would leak memory at every unload: the RISC-V INTC domain makes the
/// interrupt per-CPU when it maps it (`irq_set_percpu_devid()` allocates `desc->percpu_enabled`),
/// and in 6.12 no path of `irq_dispose_mapping()` frees that mask (`irq_kobj_release()` frees the
/// descriptor's other masks only).
///
/// # Invariants
///
/// `irq` is a mapping created by `irq_create_mapping()`; nothing disposes of it.
///
/// # Examples
///
/// ```ignore
/// let mapping = IrqMapping::new(arch::intc_fwnode(), RV_IRQ_PMU)?;
/// ```
pub(crate) struct IrqMapping {
    irq: c_uint,
}

impl IrqMapping {
    /// Maps the hardware interrupt `hwirq` of the interrupt domain of `fwnode`.
    pub(crate) fn new(fwnode: *mut bindings::fwnode_handle, hwirq: u32) -> Result<Self> {
        // SAFETY: FFI call; a node without a domain gives 0.
        // CAST: A `u32` fits a `usize` on every architecture Linux runs Rust on.
        let irq = unsafe { bindings::rpmu_irq_create_mapping(fwnode, hwirq as usize) };
        // INVARIANT: A non-zero return value is a mapping, new or existing.
        (irq != 0).then_some(Self { irq }).ok_or(ENODEV)
    }
}

/// What a handler did with an interrupt (`irqreturn_t`).
///
/// # Examples
///
/// ```ignore
/// if !overflowed {
///     return IrqReturn::None;
/// }
/// IrqReturn::Handled
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum IrqReturn {
    /// The interrupt was not this handler's (`IRQ_NONE`).
    None,
    /// The handler handled it (`IRQ_HANDLED`).
    Handled,
}

/// Proof that the code runs in a hard interrupt handler, on the interrupted CPU with interrupts
/// disabled, where `get_irq_regs()` gives the interrupted registers.
///
/// # Invariants
///
/// Made only by the glue's interrupt handler callbacks, for the duration of the handler.
///
/// # Examples
///
/// ```ignore
/// fn handle(&self, ctx: &InterruptContext<'_>) -> IrqReturn {
///     let irq: &LocalInterruptDisabled = ctx;
///     self.cpus.with_local(irq, |state| state.overflows += 1);
///     IrqReturn::Handled
/// }
/// ```
pub(crate) struct InterruptContext<'a> {
    irq: &'a LocalInterruptDisabled,
}

impl core::ops::Deref for InterruptContext<'_> {
    type Target = LocalInterruptDisabled;

    fn deref(&self) -> &LocalInterruptDisabled {
        self.irq
    }
}

/// A handler of a per-CPU interrupt.
///
/// # Examples
///
/// ```ignore
/// struct Overflow;
///
/// impl Handler for Overflow {
///     fn handle(&self, _ctx: &InterruptContext<'_>) -> IrqReturn {
///         IrqReturn::Handled
///     }
/// }
/// ```
pub(crate) trait Handler: Sync {
    /// Handles the interrupt on the interrupted CPU, in hard interrupt context.
    fn handle(&self, ctx: &InterruptContext<'_>) -> IrqReturn;
}

/// A requested per-CPU interrupt and its handler, enabled on each CPU by
/// [`PercpuIrq::enable_local`].
///
/// Dropping it disables it on every online CPU (and waits for that, which also waits for running
/// handlers, as each CPU runs the disabling with interrupts disabled), then frees it, and only
/// then drops the handler. The owner disables it on each CPU that goes offline (the CPU hotplug
/// state's teardown does), so none can have it enabled at that point; one that did is a bug the
/// drop reports with a warning, and the interrupt then stays requested.
///
/// # Invariants
///
/// From the end of initialisation until drop, `irq` is the interrupt of an [`IrqMapping`],
/// requested with `cookie`, whose per-CPU copies point to `handler`.
///
/// # Examples
///
/// ```ignore
/// let irq = KBox::pin_init(
///     PercpuIrq::request(mapping, c_str!("riscv-pmu"), Overflow),
///     GFP_KERNEL,
/// )?;
/// ```
#[pin_data(PinnedDrop)]
pub(crate) struct PercpuIrq<H: Handler> {
    handler: H,
    irq: c_uint,
    cookie: Opaque<*mut c_void>,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: The cookie is only passed back to the kernel; the handler is `Sync`, and the interrupt is
// not tied to the thread that requested it.
unsafe impl<H: Handler + Send> Send for PercpuIrq<H> {}

// SAFETY: Shared references only enable and disable the interrupt on the caller's CPU; the handler
// is `Sync`.
unsafe impl<H: Handler> Sync for PercpuIrq<H> {}

impl<H: Handler> PercpuIrq<H> {
    /// Requests `mapping` as a per-CPU interrupt named `name`, handled by `handler`, disabled on
    /// every CPU.
    pub(crate) fn request(
        mapping: IrqMapping,
        name: &'static CStr,
        handler: H,
    ) -> impl PinInit<Self, Error> {
        let init = move |slot: *mut Self| {
            // SAFETY: `slot` is valid for writes; each field is written once, through raw pointers,
            // before the interrupt is requested, and does not move (pinned).
            let (data, cookie) = unsafe {
                let (data, cookie) = (addr_of_mut!((*slot).handler), addr_of_mut!((*slot).cookie));
                data.write(handler);
                addr_of_mut!((*slot).irq).write(mapping.irq);
                cookie.write(Opaque::new(ptr::null_mut()));
                (data, compat::opaque_ptr(cookie))
            };
            // SAFETY: The name is a static string. `data` points to the pinned handler, which
            // outlives the request (see `PinnedDrop`).
            let ret = to_result(unsafe {
                bindings::rpmu_request_percpu_irq(
                    mapping.irq,
                    name.as_char_ptr(),
                    Some(Self::handler_callback),
                    data.cast::<c_void>(),
                    cookie,
                )
            });
            if ret.is_err() {
                // SAFETY: The handler was written above and the interrupt not requested.
                unsafe { ptr::drop_in_place(data) };
            }
            // INVARIANT: On success the interrupt is requested with `cookie` pointing to `handler`.
            ret
        };
        // SAFETY: On success every field is initialised; on failure the handler is dropped and
        // nothing else needs dropping.
        unsafe { pin_init_from_closure(init) }
    }

    /// Enables the interrupt on this CPU.
    pub(crate) fn enable_local(&self, _irq: &LocalInterruptDisabled) {
        // SAFETY: By the type invariant the interrupt is requested; the token proves the call runs
        // on one CPU, the one it enables.
        unsafe { bindings::enable_percpu_irq(self.irq, bindings::IRQ_TYPE_NONE) };
    }

    /// Disables the interrupt on this CPU.
    pub(crate) fn disable_local(&self, _irq: &LocalInterruptDisabled) {
        // SAFETY: As in `enable_local`.
        unsafe { bindings::disable_percpu_irq(self.irq) };
    }

    /// # Safety
    ///
    /// `cookie` must be the interrupted CPU's copy of the cookie a `PercpuIrq<H>` requested the
    /// interrupt with, which holds the handler pointer, and the call the interrupt's handler on
    /// that CPU.
    unsafe extern "C" fn handler_callback(
        _irq: c_int,
        cookie: *mut c_void,
    ) -> bindings::irqreturn_t {
        // SAFETY: Guaranteed by the caller: the copy holds the handler pointer, and the handler
        // lives while the interrupt is requested.
        let handler = unsafe { &*(*cookie.cast::<*const c_void>()).cast::<H>() };
        // SAFETY: A hard interrupt handler runs with interrupts disabled until it returns.
        let irq = unsafe { LocalInterruptDisabled::assume_disabled() };
        // INVARIANT: This is the interrupt's handler.
        match handler.handle(&InterruptContext { irq }) {
            IrqReturn::None => bindings::irqreturn_IRQ_NONE,
            IrqReturn::Handled => bindings::irqreturn_IRQ_HANDLED,
        }
    }
}

#[pinned_drop]
impl<H: Handler> PinnedDrop for PercpuIrq<H> {
    fn drop(self: Pin<&mut Self>) {
        let irq = self.irq;
        // Each CPU disables the interrupt from a cross-CPU call, with interrupts disabled, so once
        // this returns no handler runs on an online CPU and none starts.
        percpu::on_each_cpu(&|| {
            // SAFETY: The interrupt is requested (type invariant); this runs on the CPU it disables.
            unsafe { bindings::disable_percpu_irq(irq) }
        });
        // SAFETY: FFI call with a requested interrupt.
        if unsafe { bindings::irq_percpu_is_enabled(irq) } {
            percpu::warn_once(c_str!(
                "per-CPU interrupt still enabled on an offline CPU at free; it stays requested"
            ));
            return;
        }
        // The interrupt is disabled on every CPU, so no handler runs while it is freed (see above),
        // and the handler is only dropped after this.
        // SAFETY: By the type invariant the interrupt is requested with `cookie`.
        unsafe { bindings::free_percpu_irq(irq, *self.cookie.get()) };
        // SAFETY: `rpmu_request_percpu_irq()` allocated the cookie with `alloc_percpu()`; with the
        // interrupt freed nothing uses it.
        unsafe { bindings::free_percpu(*self.cookie.get()) };
    }
}
