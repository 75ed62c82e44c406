// SPDX-License-Identifier: GPL-2.0

//! Kernel glue: safe wrappers over the C interfaces the 6.12 `kernel` crate does not cover.
//!
//! This is the only part of the module with `unsafe` code. Each wrapper documents the contract
//! it upholds (`# Invariants`, `# Safety`), so the driver logic above it stays safe Rust. The
//! wrappers are generic (perf PMUs, per-CPU data and interrupts, CPU PM, hotplug, sysctl, debugfs,
//! sysfs, device tree properties); [`arch`] holds the few RISC-V instructions and structures that
//! need `unsafe`, and none of the glue knows the SBI PMU extension or the driver.

pub(crate) mod arch;
pub(crate) mod bindings;
pub(crate) mod compat;
pub(crate) mod cpu_pm;
pub(crate) mod cpuhp;
pub(crate) mod csr;
pub(crate) mod debugfs;
pub(crate) mod deferred;
pub(crate) mod fwmem;
pub(crate) mod irq;
pub(crate) mod of;
pub(crate) mod percpu;
pub(crate) mod perf;
pub(crate) mod platform;
pub(crate) mod sysctl;
pub(crate) mod sysfs;
