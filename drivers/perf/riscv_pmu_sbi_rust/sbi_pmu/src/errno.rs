// SPDX-License-Identifier: GPL-2.0

//! Linux errno values the driver returns to perf.
//!
//! The crate has no kernel dependency, so the few errno values it hands back are defined here, as
//! positive numbers (the kernel glue negates them). They are the values of
//! `include/uapi/asm-generic/errno-base.h`, `include/uapi/asm-generic/errno.h` and
//! `include/linux/errno.h`, which every Linux architecture including RISC-V uses.

/// Operation not permitted (`EPERM`).
pub const EPERM: i32 = 1;
/// No such file or directory (`ENOENT`); perf reports the event as `<not supported>`.
pub const ENOENT: i32 = 2;
/// I/O error (`EIO`).
pub const EIO: i32 = 5;
/// Out of memory (`ENOMEM`).
pub const ENOMEM: i32 = 12;
/// Bad address (`EFAULT`).
pub const EFAULT: i32 = 14;
/// Invalid argument (`EINVAL`).
pub const EINVAL: i32 = 22;
/// Math result not representable (`ERANGE`).
pub const ERANGE: i32 = 34;
/// Operation not supported on transport endpoint (`EOPNOTSUPP`).
pub const EOPNOTSUPP: i32 = 95;
/// Connection timed out (`ETIMEDOUT`).
pub const ETIMEDOUT: i32 = 110;
/// Kernel-internal "operation is not supported" (`ENOTSUPP`), what `sbi_err_map_linux_errno()` returns
/// for SBI_ERR_NOT_SUPPORTED and SBI_ERR_FAILED.
pub const ENOTSUPP: i32 = 524;
