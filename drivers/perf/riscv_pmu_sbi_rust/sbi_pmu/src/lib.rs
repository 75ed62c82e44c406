// SPDX-License-Identifier: GPL-2.0

//! The RISC-V SBI Performance Monitoring Unit extension (EID 0x504D55): its ABI and the driver logic
//! of `riscv_pmu_sbi_rust`, with no kernel dependency.
//!
//! The crate is `no_std`, uses no allocation and no `unsafe`, and never panics on input from firmware,
//! the device tree or perf. It is compiled into the kernel module by Kbuild and tested on the host by
//! Cargo against a model of an SBI implementation.
//!
//! - [`abi`]: extension and function IDs, `event_idx`, `counter_info`, flag words, error codes and the
//!   shared memory layouts, each citing the table of the SBI specification it encodes.
//! - [`events`]: perf attribute to SBI request mapping, with the C driver's errnos.
//! - [`errno`]: the Linux errno values the crate returns.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

pub mod abi;
pub mod errno;
pub mod events;
