// SPDX-License-Identifier: GPL-2.0

//! The kernel interfaces that differ between Linux 6.12 and 7.x, in one place.
//!
//! The module builds against both: `Kbuild` passes `--cfg rpmu_kernel_7` when the kernel's
//! `VERSION` is 7 or later, and every item here has one definition per side with the same
//! signature, so the rest of the glue and the driver are the same source on both kernels.
//!
//! What changed in 7.x, for this module:
//! - `module!` takes `authors: [..]` instead of `author:` ([`module`]);
//! - `pin_init_from_closure` lives in the `pin_init` crate ([`pin_init_from_closure`]);
//! - `Opaque::raw_get` is named `Opaque::cast_into` ([`opaque_ptr`]);
//! - `container_of!` takes and returns `*mut` pointers ([`container_of_mut`]);
//! - `CStr` is `core::ffi::CStr`, whose `as_char_ptr()` is not `const` ([`const_char_ptr`]);
//! - `device_attribute::show` and `attribute_group::{is_visible, attrs}` sit in anonymous
//!   unions beside their `const` variants (set with [`on_kernel`] by `sysfs`);
//! - `smp_call_function_single()` takes `bool wait` (`int` in 6.12: [`on_kernel`] in `percpu`);
//!
//! And what a kernel without the export patches lacks (`Kbuild` passes
//! `--cfg rpmu_no_sample_exports`): `perf_event_overflow()` and `perf_sample_event_took()`, without
//! which the module counts and refuses sampling ([`SAMPLE_EXPORTS`], [`perf_sample_event_took`]).

use kernel::{ffi::c_char, prelude::*, types::Opaque};

#[cfg(rpmu_kernel_7)]
pub(crate) use ::pin_init::pin_init_from_closure;
#[cfg(not(rpmu_kernel_7))]
pub(crate) use kernel::init::pin_init_from_closure;

/// The kernel's major version as far as this module tells them apart: 6 (6.12) or 7 (7.x).
/// Kernel policies that follow the kernel's own C code (such as a sysfs format) read it.
pub(crate) const KERNEL_MAJOR: u32 = if cfg!(rpmu_kernel_7) { 7 } else { 6 };

/// Whether the kernel lets this module report samples: it exports `perf_event_overflow()` and
/// `perf_sample_event_took()` to modules (the project's kernel patches), or the driver is built in.
pub(crate) const SAMPLE_EXPORTS: bool = !cfg!(rpmu_no_sample_exports);

/// `perf_sample_event_took()`: perf core lowers the sampling rate when samples take too long.
#[cfg(not(rpmu_no_sample_exports))]
pub(crate) fn perf_sample_event_took(ns: u64) {
    // SAFETY: FFI call; any duration is accepted.
    unsafe { super::bindings::perf_sample_event_took(ns) };
}

/// `perf_sample_event_took()`, which the kernel does not export: no sampling event exists (see
/// [`SAMPLE_EXPORTS`]), so there is nothing to report.
#[cfg(rpmu_no_sample_exports)]
pub(crate) fn perf_sample_event_took(_ns: u64) {}

/// `$old` on 6.12, `$new` on 7.x: one expression for the two sides of an interface that changed.
/// Only the kernel's side is compiled (the other need not name anything that exists).
macro_rules! on_kernel {
    ($old:expr, $new:expr $(,)?) => {{
        #[cfg(not(rpmu_kernel_7))]
        #[allow(clippy::let_unit_value)]
        let value = $old;
        #[cfg(rpmu_kernel_7)]
        #[allow(clippy::let_unit_value)]
        let value = $new;
        value
    }};
}
pub(crate) use on_kernel;

/// `module!` with the 6.12 key `author:`, which 7.x spells `authors: [..]`.
macro_rules! module {
    (type: $t:tt, name: $n:tt, author: $a:tt, description: $d:tt, license: $l:tt $(,)?) => {
        #[cfg(not(rpmu_kernel_7))]
        ::kernel::prelude::module! { type: $t, name: $n, author: $a, description: $d, license: $l, }
        #[cfg(rpmu_kernel_7)]
        ::kernel::prelude::module! { type: $t, name: $n, authors: [$a], description: $d, license: $l, }
    };
}
pub(crate) use module;

/// `container_of!` from a `*mut` field pointer to a `*mut` container pointer on both kernels
/// (6.12's returns `*const`). It must be used in an `unsafe` block, whose safety argument is
/// `container_of!`'s: the pointer is to the `$field` field of a `$container`.
macro_rules! container_of_mut {
    ($ptr:expr, $container:ty, $field:ident) => {
        $crate::glue::compat::on_kernel!(
            ::kernel::container_of!($ptr, $container, $field).cast_mut(),
            ::kernel::container_of!($ptr, $container, $field),
        )
    };
}
pub(crate) use container_of_mut;

/// A raw pointer to the value inside the `Opaque<T>` that `this` points to (`Opaque::raw_get`,
/// in 7.x `Opaque::cast_into`).
#[inline(always)]
pub(crate) const fn opaque_ptr<T>(this: *const Opaque<T>) -> *mut T {
    on_kernel!(Opaque::raw_get(this), Opaque::cast_into(this))
}

/// The C pointer of a C string, usable in `const` context (statics of sysfs attributes).
#[inline(always)]
pub(crate) const fn const_char_ptr(s: &CStr) -> *const c_char {
    on_kernel!(
        s.as_char_ptr(),
        kernel::str::as_char_ptr_in_const_context(s)
    )
}
