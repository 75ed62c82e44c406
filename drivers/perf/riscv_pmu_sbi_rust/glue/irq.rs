// SPDX-License-Identifier: GPL-2.0

//! Per-CPU interrupts: a mapping of an interrupt controller's hardware interrupt, and a handler
//! that runs on the interrupted CPU.
//!
//! C headers: [`include/linux/interrupt.h`](srctree/include/linux/interrupt.h),
//! [`include/linux/irqdomain.h`](srctree/include/linux/irqdomain.h)

use super::bindings;
use super::percpu::{self, LocalCpu};
use kernel::{
    c_str,
    error::to_result,
    ffi::{c_uint, c_void},
    prelude::*,
    sync::Arc,
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
pub(crate) struct IrqMapping {
    irq: c_uint,
}

impl IrqMapping {
    /// Maps the hardware interrupt `hwirq` of the interrupt domain of `fwnode`.
    pub(crate) fn new(fwnode: *mut bindings::fwnode_handle, hwirq: u32) -> Result<Self> {
        // SAFETY: FFI call; a node without a domain gives 0.
        // CAST: A `u32` fits a `usize` on every architecture Linux runs Rust on.
        let irq = unsafe { bindings::rpmu_irq_create_mapping(fwnode, hwirq as usize) };
        if irq == 0 {
            return Err(ENODEV);
        }
        // INVARIANT: A non-zero return value is a mapping, new or existing.
        Ok(Self { irq })
    }
}

/// Context of an interrupt handler: it runs on the interrupted CPU with interrupts disabled.
pub(crate) struct IrqContext<'a> {
    cpu: LocalCpu<'a>,
}

impl<'a> IrqContext<'a> {
    /// The CPU the handler runs on.
    pub(crate) fn cpu(&self) -> &LocalCpu<'a> {
        &self.cpu
    }
}

/// A handler of a per-CPU interrupt.
pub(crate) trait PercpuHandler: Send + Sync + 'static {
    /// Handles the interrupt on the interrupted CPU, in hard interrupt context; returns whether it
    /// was this handler's (`IRQ_HANDLED`). perf core is told how long it took.
    fn handle(&self, ctx: &IrqContext<'_>) -> bool;
}

/// A requested per-CPU interrupt, enabled on each CPU by [`PercpuIrq::enable_local`].
///
/// Dropping it disables it on every online CPU (and waits for that, which also waits for running
/// handlers, as each CPU runs the disabling with interrupts disabled), then frees it. It cannot
/// still be enabled on some CPU then (one that went offline with it enabled) while the owner
/// disables it on each CPU that goes offline, as the CPU hotplug state's teardown does. If it
/// were, freeing would fail and leave the interrupt's action installed, so the handler is leaked
/// rather than freed under it, with a warning: the action still names this module's code, which
/// must then not go away.
///
/// # Invariants
///
/// `irq` is the interrupt of `mapping`, requested with `cookie`, whose per-CPU copies point to
/// `*handler`, until drop.
pub(crate) struct PercpuIrq<H: PercpuHandler> {
    handler: Option<Arc<H>>,
    irq: c_uint,
    cookie: *mut c_void,
}

// SAFETY: The cookie is only passed back to the kernel; the handler is `Send + Sync`.
unsafe impl<H: PercpuHandler> Send for PercpuIrq<H> {}

// SAFETY: Shared references only enable and disable the interrupt on the caller's CPU.
unsafe impl<H: PercpuHandler> Sync for PercpuIrq<H> {}

impl<H: PercpuHandler> PercpuIrq<H> {
    /// Requests `mapping` as a per-CPU interrupt named `name`, handled by `handler`, disabled on
    /// every CPU.
    pub(crate) fn request(
        mapping: IrqMapping,
        name: &'static CStr,
        handler: Arc<H>,
    ) -> Result<Self> {
        let data: *const H = &*handler;
        let data = data.cast_mut().cast::<c_void>();
        let mut cookie = core::ptr::null_mut();
        // SAFETY: The name is a static string. `data` points to the handler, which the `Arc` held
        // in `Self` keeps alive until the interrupt is freed (or forever, see `Drop`).
        to_result(unsafe {
            bindings::rpmu_request_percpu_irq(
                mapping.irq,
                name.as_char_ptr(),
                Some(Self::handler_callback),
                data,
                &mut cookie,
            )
        })?;
        // INVARIANT: The interrupt was requested with `cookie` pointing to the handler.
        Ok(Self {
            handler: Some(handler),
            irq: mapping.irq,
            cookie,
        })
    }

    /// Enables the interrupt on this CPU.
    pub(crate) fn enable_local(&self, _cpu: &LocalCpu<'_>) {
        // SAFETY: By the type invariant the interrupt is requested; the token proves the call runs
        // on one CPU, the one it enables.
        unsafe { bindings::rpmu_enable_percpu_irq(self.irq) };
    }

    /// Disables the interrupt on this CPU.
    pub(crate) fn disable_local(&self, _cpu: &LocalCpu<'_>) {
        // SAFETY: As in `enable_local`.
        unsafe { bindings::disable_percpu_irq(self.irq) };
    }

    /// # Safety
    ///
    /// `data` must be the handler pointer a `PercpuIrq<H>` requested the interrupt with, and the
    /// call the interrupt's handler on the interrupted CPU.
    unsafe extern "C" fn handler_callback(data: *mut c_void) -> bool {
        // SAFETY: Guaranteed by the caller: the handler lives while the interrupt is requested.
        let handler = unsafe { &*data.cast_const().cast::<H>() };
        let ctx = IrqContext {
            // SAFETY: A hard interrupt handler runs with interrupts disabled until it returns.
            cpu: unsafe { LocalCpu::new() },
        };
        handler.handle(&ctx)
    }
}

impl<H: PercpuHandler> Drop for PercpuIrq<H> {
    fn drop(&mut self) {
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
                "per-CPU interrupt still enabled on an offline CPU; its handler is leaked"
            ));
            core::mem::forget(self.handler.take());
            return;
        }
        // SAFETY: By the type invariant the interrupt is requested with `cookie`. It is disabled on
        // every CPU, so `free_percpu_irq()` frees it (it does not wait for handlers; see above for
        // why none runs), and the handler is only dropped afterwards.
        unsafe { bindings::rpmu_free_percpu_irq(irq, self.cookie) };
    }
}
