// SPDX-License-Identifier: GPL-2.0

//! The interface between the driver logic and the SBI implementation.
//!
//! [`Firmware`] has one method per SBI PMU function but `counter_fw_read_hi` (which only RV32
//! needs), plus the two things the driver does without an SBI call: reading a counter CSR, and
//! looking at the memory it shares with firmware. The kernel
//! implements it with `ecall`s and `csrr`; the host tests implement it with a model of an SBI
//! implementation. An implementation provides the raw call ([`Firmware::sbi_ecall`]), and the
//! functions that lend no memory have default implementations over it, which encode the arguments
//! exactly as the specification lays them out in `a0`..`a5`.
//!
//! # Shared memory
//!
//! The specification names shared memory by physical address; this interface does not. The memory
//! belongs to the implementor (the kernel glue allocates one page per CPU for the snapshot and an
//! array for `event_get_info`, and derives the addresses and sizes it tells firmware from them;
//! the model simulates physical memory), and the driver logic only says what to do with it: the
//! functions that lend memory have no default encoding, only a default without memory. The
//! snapshot page is reached one word at a time ([`Firmware::snapshot_page_word`] and its setter):
//! the kernel turns each into one volatile access, because firmware writes that page during SBI
//! calls, like a device doing DMA. The event-info entries are copied to the lent array and back
//! around the call. Because every access borrows the implementor mutably, the driver logic can
//! never hold one across an SBI call.

use crate::abi::{CfgFlags, EventIdx, Fid, SbiError, StartFlags, StopFlags};

// The driver targets RV64 only, where an argument register holds a full 64-bit value: the `as usize`
// conversions of `u64` arguments below are lossless because of this assertion.
const _: () = assert!(usize::BITS == 64);

/// The SBI PMU functions, the counter CSR reads and the shared memory views the driver uses.
///
/// All methods act on the calling hart (CPU): an implementation is per CPU, and the driver calls it on
/// the CPU it belongs to with interrupts disabled.
pub trait Firmware {
    /// One SBI call into the PMU extension: `ecall` with `a7` = [`crate::abi::EXT_PMU`], `a6` =
    /// `fid` and `a0`..`a5` = `args`, whose `sbiret` pair ([`crate::abi::sbi_result`]) is
    /// `Ok(value)` or the error. The functions below that lend no memory make it by default.
    fn sbi_ecall(&mut self, fid: Fid, args: [usize; 6]) -> Result<usize, SbiError>;

    /// `sbi_pmu_num_counters()` (FID #0): the number of hardware and firmware counters.
    fn num_counters(&mut self) -> Result<usize, SbiError> {
        self.sbi_ecall(Fid::NumCounters, [0; 6])
    }

    /// `sbi_pmu_counter_get_info(counter_idx)` (FID #1): the `counter_info` word of a counter, which
    /// [`crate::abi::CounterInfo::decode`] decodes.
    fn counter_get_info(&mut self, counter_idx: usize) -> Result<usize, SbiError> {
        self.sbi_ecall(Fid::CounterGetInfo, [counter_idx, 0, 0, 0, 0, 0])
    }

    /// `sbi_pmu_counter_config_matching(counter_idx_base, counter_idx_mask, config_flags, event_idx,
    /// event_data)` (FID #2): finds and configures a counter, returns its index.
    fn counter_config_matching(
        &mut self,
        base: usize,
        mask: usize,
        flags: CfgFlags,
        event_idx: EventIdx,
        event_data: u64,
    ) -> Result<usize, SbiError> {
        // On RV64 event_data is passed whole in a4; a5 (its upper half on RV32) is zero.
        let (idx, data) = (event_idx.raw() as usize, event_data as usize);
        let args = [base, mask, flags.bits(), idx, data, 0];
        self.sbi_ecall(Fid::CounterConfigMatching, args)
    }

    /// `sbi_pmu_counter_start(counter_idx_base, counter_idx_mask, start_flags, initial_value)`
    /// (FID #3).
    #[inline(always)]
    fn counter_start(
        &mut self,
        base: usize,
        mask: usize,
        flags: StartFlags,
        initial_value: u64,
    ) -> Result<(), SbiError> {
        let args = [base, mask, flags.bits(), initial_value as usize, 0, 0];
        self.sbi_ecall(Fid::CounterStart, args).map(|_| ())
    }

    /// [`Firmware::counter_start`] of the one counter `counter_idx` from `initial_value`
    /// (SET_INIT_VALUE): every start from a new value, the overflow handler's restart among them,
    /// which a backend may carry out faster.
    #[inline(always)]
    fn counter_start_one(
        &mut self,
        counter_idx: usize,
        initial_value: u64,
    ) -> Result<(), SbiError> {
        self.counter_start(counter_idx, 1, StartFlags::SET_INIT_VALUE, initial_value)
    }

    /// `sbi_pmu_counter_stop(counter_idx_base, counter_idx_mask, stop_flags)` (FID #4).
    #[inline(always)]
    fn counter_stop(&mut self, base: usize, mask: usize, flags: StopFlags) -> Result<(), SbiError> {
        let args = [base, mask, flags.bits(), 0, 0, 0];
        self.sbi_ecall(Fid::CounterStop, args).map(|_| ())
    }

    /// `sbi_pmu_counter_fw_read(counter_idx)` (FID #5): the value of a firmware counter.
    #[inline(always)]
    fn counter_fw_read(&mut self, counter_idx: usize) -> Result<usize, SbiError> {
        self.sbi_ecall(Fid::CounterFwRead, [counter_idx, 0, 0, 0, 0, 0])
    }

    /// `sbi_pmu_snapshot_set_shmem()` (FID #7, SBI v2.0) with this hart's snapshot memory (`enable`),
    /// or with all ones in `shmem_phys_lo` and `shmem_phys_hi`, which disables it. The default has
    /// no snapshot memory: `NotSupported`, without a call.
    fn snapshot_set_shmem(&mut self, _enable: bool) -> Result<(), SbiError> {
        Err(SbiError::NotSupported)
    }

    /// `sbi_pmu_event_get_info()` (FID #8, SBI v3.0) over an array of event-info entries the
    /// implementation lends, which holds `entries` (two words per entry, Table 18) on the way in
    /// and firmware's answer, copied back into `entries`, on the way out. The default has no such
    /// array: `NotSupported`, without a call.
    fn event_get_info(&mut self, _entries: &mut [u64]) -> Result<(), SbiError> {
        Err(SbiError::NotSupported)
    }

    /// Reads a counter CSR of this hart (`csrr`): `cycle`, `instret`, `hpmcounterN` for hardware
    /// counters, and `scountovf` ([`crate::abi::CSR_SCOUNTOVF`]) for the overflow bits.
    fn read_counter_csr(&mut self, csr: u16) -> u64;

    /// Whether the implementation has snapshot memory for this hart. The default has none, so the
    /// driver runs without snapshot.
    fn has_snapshot_mem(&mut self) -> bool {
        false
    }

    /// Word `word` of the snapshot page ([`crate::abi::SnapshotPage::OVERFLOW_WORD`],
    /// [`crate::abi::SnapshotPage::value_word`]); 0 without a page.
    fn snapshot_page_word(&mut self, _word: usize) -> u64 {
        0
    }

    /// Sets word `word` of the snapshot page; nothing without a page.
    fn set_snapshot_page_word(&mut self, _word: usize, _value: u64) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the last call and answers with a fixed `sbiret`.
    struct Recorder {
        last: Option<(Fid, [usize; 6])>,
        ret: Result<usize, SbiError>,
    }

    impl Firmware for Recorder {
        fn sbi_ecall(&mut self, fid: Fid, args: [usize; 6]) -> Result<usize, SbiError> {
            self.last = Some((fid, args));
            self.ret
        }

        fn read_counter_csr(&mut self, csr: u16) -> u64 {
            u64::from(csr) * 2
        }
    }

    #[test]
    fn default_encodings_pass_arguments_in_spec_order() {
        let mut r = Recorder {
            last: None,
            ret: Ok(7),
        };
        assert_eq!(r.num_counters(), Ok(7));
        assert_eq!(r.last, Some((Fid::NumCounters, [0; 6])));

        let idx = EventIdx::fw(5);
        let flags = CfgFlags::SET_UINH | CfgFlags::CLEAR_VALUE;
        assert_eq!(
            r.counter_config_matching(0, 0xf8, flags, idx, u64::MAX),
            Ok(7)
        );
        assert_eq!(
            r.last,
            Some((
                Fid::CounterConfigMatching,
                [0, 0xf8, 0x22, 0xf0005, usize::MAX, 0]
            ))
        );

        r.counter_start(3, 1, StartFlags::SET_INIT_VALUE, 1 << 40)
            .unwrap();
        assert_eq!(r.last, Some((Fid::CounterStart, [3, 1, 1, 1 << 40, 0, 0])));
        r.counter_stop(0, 0x18, StopFlags::RESET | StopFlags::TAKE_SNAPSHOT)
            .unwrap();
        assert_eq!(r.last, Some((Fid::CounterStop, [0, 0x18, 3, 0, 0, 0])));
        r.counter_fw_read(20).unwrap();
        assert_eq!(r.last, Some((Fid::CounterFwRead, [20, 0, 0, 0, 0, 0])));
        r.counter_get_info(4).unwrap();
        assert_eq!(r.last, Some((Fid::CounterGetInfo, [4, 0, 0, 0, 0, 0])));
        assert_eq!(r.read_counter_csr(0xC03), 0x1806);
        // Without memory the calls that lend it are refused before any call is made.
        r.last = None;
        assert!(!r.has_snapshot_mem());
        assert_eq!(r.snapshot_set_shmem(true), Err(SbiError::NotSupported));
        assert_eq!(r.snapshot_set_shmem(false), Err(SbiError::NotSupported));
        assert_eq!(r.event_get_info(&mut [0; 4]), Err(SbiError::NotSupported));
        assert_eq!(r.last, None);
    }

    #[test]
    fn default_encodings_pass_errors_on() {
        let mut r = Recorder {
            last: None,
            ret: Err(SbiError::AlreadyStopped),
        };
        assert_eq!(
            r.counter_stop(0, 1, StopFlags::empty()),
            Err(SbiError::AlreadyStopped)
        );
        r.ret = Err(SbiError::NotSupported);
        assert_eq!(r.counter_fw_read(20), Err(SbiError::NotSupported));
    }
}
