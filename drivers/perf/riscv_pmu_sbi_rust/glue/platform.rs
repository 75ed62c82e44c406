// SPDX-License-Identifier: GPL-2.0

//! Platform devices of other drivers.
//!
//! C header: [`include/linux/platform_device.h`](srctree/include/linux/platform_device.h)

use super::bindings;
use kernel::prelude::*;

/// Returns whether the platform device `name` exists and a driver is bound to it.
pub(crate) fn device_bound(name: &CStr) -> bool {
    // SAFETY: `name` is a valid NUL-terminated string for the duration of the call.
    unsafe { bindings::rpmu_platform_device_bound(name.as_char_ptr()) }
}
