// SPDX-License-Identifier: GPL-2.0

//! Bindings for the C interfaces the 6.12 `kernel` crate does not cover.
//!
//! They are generated at build time by the module's own bindgen rule (see `Kbuild`) from
//! `glue/bindings_helper.h`, with the kernel's bindgen flags and an allowlist. Like the kernel's
//! `bindings` crate, the generated code is exempt from the kernel's lints.

// The lints after `clippy::all` are among those 7.x's `CLIPPY=1` adds (6.12's does not enable them).
#![allow(
    clippy::all,
    clippy::as_underscore,
    clippy::cast_lossless,
    clippy::ptr_as_ptr,
    clippy::ref_as_ptr,
    clippy::undocumented_unsafe_blocks,
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn
)]
#![cfg_attr(CONFIG_RUSTC_HAS_UNNECESSARY_TRANSMUTES, allow(unnecessary_transmutes))]

use kernel::ffi;

include!(concat!(env!("RPMU_OBJDIR"), "/glue/bindings_generated.rs"));
