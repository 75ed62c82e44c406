// SPDX-License-Identifier: GPL-2.0

//! Stop-gap copy of the `sbi_pmu::firmware::Firmware` trait, to be replaced by the crate's own
//! once it lands; the signatures follow the crate's published contract.

use sbi_pmu::abi::{CfgFlags, CounterInfo, EventIdx, SbiError, StartFlags, StopFlags};

/// The nine SBI PMU functions and the counter CSR reads, on the calling hart.
#[expect(dead_code, reason = "the driver does not use every SBI function yet")]
pub(crate) trait Firmware {
    /// `sbi_pmu_num_counters` (FID 0).
    fn num_counters(&mut self) -> Result<usize, SbiError>;
    /// `sbi_pmu_counter_get_info` (FID 1).
    fn counter_get_info(&mut self, idx: usize) -> Result<CounterInfo, SbiError>;
    /// `sbi_pmu_counter_config_matching` (FID 2).
    fn counter_config_matching(
        &mut self,
        cbase: usize,
        cmask: usize,
        flags: CfgFlags,
        event_idx: EventIdx,
        event_data: u64,
    ) -> Result<usize, SbiError>;
    /// `sbi_pmu_counter_start` (FID 3).
    fn counter_start(
        &mut self,
        cbase: usize,
        cmask: usize,
        flags: StartFlags,
        initial_value: u64,
    ) -> Result<(), SbiError>;
    /// `sbi_pmu_counter_stop` (FID 4).
    fn counter_stop(
        &mut self,
        cbase: usize,
        cmask: usize,
        flags: StopFlags,
    ) -> Result<(), SbiError>;
    /// `sbi_pmu_counter_fw_read` (FID 5).
    fn counter_fw_read(&mut self, idx: usize) -> Result<usize, SbiError>;
    /// `sbi_pmu_counter_fw_read_hi` (FID 6).
    fn counter_fw_read_hi(&mut self, idx: usize) -> Result<usize, SbiError>;
    /// `sbi_pmu_snapshot_set_shmem` (FID 7).
    fn snapshot_set_shmem(&mut self, lo: usize, hi: usize, flags: usize) -> Result<(), SbiError>;
    /// `sbi_pmu_event_get_info` (FID 8).
    fn event_get_info(
        &mut self,
        lo: usize,
        hi: usize,
        n: usize,
        flags: usize,
    ) -> Result<(), SbiError>;
    /// Reads a counter CSR (`cycle` to `hpmcounter31`).
    fn read_counter_csr(&mut self, csr: u16) -> u64;
}
