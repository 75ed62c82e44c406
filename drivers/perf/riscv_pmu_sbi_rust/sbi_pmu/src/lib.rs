// SPDX-License-Identifier: GPL-2.0

//! The RISC-V SBI Performance Monitoring Unit extension (EID 0x504D55): its ABI and the driver logic
//! of `riscv_pmu_sbi_rust`, with no kernel dependency.
//!
//! The crate is `no_std`, allocates nothing, has no `unsafe`, and does not panic on input from
//! firmware, the device tree or perf. Kbuild compiles it into the kernel module; Cargo tests it on
//! the host against a model of an SBI implementation (`tests/fwmodel`). Names follow the C driver
//! (`drivers/perf/riscv_pmu_sbi.c`, `drivers/perf/riscv_pmu.c`) so a reader of one finds their way in
//! the other.
//!
//! - [`abi`]: extension and function IDs, `event_idx`, `counter_info`, flag words, error codes and the
//!   shared memory layouts, each citing the table of the SBI specification it encodes.
//! - [`events`]: perf attribute to SBI request mapping, with the C driver's errnos.
//! - [`counters`]: the counter table found at probe, the per-event state perf keeps, and the delta and
//!   sampling period arithmetic.
//! - [`plan`]: the planner that turns a CPU's recorded work into the fewest stop/start calls.
//! - [`pmu`]: the per-CPU driver core the perf callbacks wrap.
//! - [`dt`]: the `riscv,pmu` device tree event maps.
//! - [`deleg`]: counter delegation (Smcdeleg/Ssccfg): hardware counters programmed with CSRs, the
//!   rest by SBI, behind the same [`firmware::Firmware`] interface.
//! - [`firmware`]: the [`firmware::Firmware`] trait, the SBI PMU functions (ecalls in the kernel,
//!   the model on the host), and how shared memory is passed to it.
//! - [`legacy`]: the base counters `cycle` and `instret`, for firmware without the PMU extension.
//! - [`errno`]: the Linux errno values the crate returns.
//!
//! The crate targets RV64 (as Rust on RISC-V Linux does): `usize` is 64 bits, and one counter mask
//! word covers the 64 counters the driver handles.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

pub mod abi;
pub mod counters;
pub mod deleg;
pub mod dt;
pub mod errno;
pub mod events;
pub mod firmware;
pub mod legacy;
pub mod plan;
pub mod pmu;
