// SPDX-License-Identifier: GPL-2.0

//! The interface between the driver logic and the SBI implementation.
//!
//! [`Firmware`] has one method per SBI PMU function, plus the two things the driver does without an
//! SBI call: reading a counter CSR, and looking at the memory it shares with firmware. The kernel
//! implements it with `ecall`s and `csrr`; the host tests implement it with a model of an SBI
//! implementation. Most implementations only need to provide the raw call, through [`SbiEcall`], and
//! get [`Firmware`] from the blanket implementation, which encodes the arguments exactly as the
//! specification lays them out in `a0`..`a5`.
//!
//! # Shared memory
//!
//! The specification names shared memory by physical address; this interface does not. The memory
//! belongs to the implementor (the kernel glue allocates one page per CPU for the snapshot and an
//! array for `event_get_info`, and derives the addresses and sizes it tells firmware from them;
//! the model simulates physical memory), and the driver logic only says what to do with it. The
//! snapshot page is reached one word at a time ([`Firmware::snapshot_value`], ...): the kernel turns
//! each into one volatile access, because firmware writes that page during SBI calls, like a device
//! doing DMA. The event-info entries are copied to the lent array and back around the call.
//! Because every access borrows the implementor mutably, the driver logic can never hold one across
//! an SBI call.

use crate::abi::{
    sbi_result, CfgFlags, EventIdx, Fid, SbiError, SnapshotPage, StartFlags, StopFlags,
    RISCV_MAX_COUNTERS, SBI_SHMEM_DISABLE,
};

/// The nine SBI PMU functions, the counter CSR reads and the shared memory views the driver uses.
///
/// All methods act on the calling hart (CPU): an implementation is per CPU, and the driver calls it on
/// the CPU it belongs to with interrupts disabled.
pub trait Firmware {
    /// `sbi_pmu_num_counters()` (FID #0): the number of hardware and firmware counters.
    fn num_counters(&mut self) -> Result<usize, SbiError>;

    /// `sbi_pmu_counter_get_info(counter_idx)` (FID #1): the `counter_info` word of a counter, which
    /// [`crate::abi::CounterInfo::decode`] decodes.
    fn counter_get_info(&mut self, counter_idx: usize) -> Result<usize, SbiError>;

    /// `sbi_pmu_counter_config_matching(counter_idx_base, counter_idx_mask, config_flags, event_idx,
    /// event_data)` (FID #2): finds and configures a counter, returns its index.
    fn counter_config_matching(
        &mut self,
        counter_idx_base: usize,
        counter_idx_mask: usize,
        config_flags: CfgFlags,
        event_idx: EventIdx,
        event_data: u64,
    ) -> Result<usize, SbiError>;

    /// `sbi_pmu_counter_start(counter_idx_base, counter_idx_mask, start_flags, initial_value)`
    /// (FID #3).
    fn counter_start(
        &mut self,
        counter_idx_base: usize,
        counter_idx_mask: usize,
        start_flags: StartFlags,
        initial_value: u64,
    ) -> Result<(), SbiError>;

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
    fn counter_stop(
        &mut self,
        counter_idx_base: usize,
        counter_idx_mask: usize,
        stop_flags: StopFlags,
    ) -> Result<(), SbiError>;

    /// `sbi_pmu_counter_fw_read(counter_idx)` (FID #5): the value of a firmware counter.
    fn counter_fw_read(&mut self, counter_idx: usize) -> Result<usize, SbiError>;

    /// `sbi_pmu_counter_fw_read_hi(counter_idx)` (FID #6, SBI v2.0): the upper 32 bits of a firmware
    /// counter on RV32, always zero on RV64.
    fn counter_fw_read_hi(&mut self, counter_idx: usize) -> Result<usize, SbiError>;

    /// `sbi_pmu_snapshot_set_shmem()` (FID #7, SBI v2.0) with this hart's snapshot memory (`enable`),
    /// or with all ones ([`crate::abi::SBI_SHMEM_DISABLE`]), which disables it.
    fn snapshot_set_shmem(&mut self, enable: bool) -> Result<(), SbiError>;

    /// `sbi_pmu_event_get_info()` (FID #8, SBI v3.0) over an array of event-info entries the
    /// implementation lends, which holds `entries` (two words per entry, Table 18) on the way in
    /// and firmware's answer, copied back into `entries`, on the way out. `NotSupported` when the
    /// implementation has no such array.
    fn event_get_info(&mut self, entries: &mut [u64]) -> Result<(), SbiError>;

    /// Reads a counter CSR of this hart (`csrr`): `cycle`, `instret`, `hpmcounterN` for hardware
    /// counters, and `scountovf` ([`crate::abi::CSR_SCOUNTOVF`]) for the overflow bits.
    fn read_counter_csr(&mut self, csr: u16) -> u64;

    /// Whether the implementation has snapshot memory for this hart. The default has none, so the
    /// driver runs without snapshot.
    fn has_snapshot_mem(&mut self) -> bool {
        false
    }

    /// Word `word` of the snapshot page ([`SnapshotPage`]); 0 without a page.
    fn snapshot_page_word(&mut self, _word: usize) -> u64 {
        0
    }

    /// Sets word `word` of the snapshot page; nothing without a page.
    fn set_snapshot_page_word(&mut self, _word: usize, _value: u64) {}

    /// `counter_overflow_bitmap` of the snapshot page (0 without a page).
    fn snapshot_overflow_mask(&mut self) -> u64 {
        self.snapshot_page_word(SnapshotPage::OVERFLOW_WORD)
    }

    /// `counter_values[idx]` of the snapshot page (0 without a page or for `idx` >= 64).
    fn snapshot_value(&mut self, idx: usize) -> u64 {
        if idx < RISCV_MAX_COUNTERS {
            self.snapshot_page_word(SnapshotPage::value_word(idx))
        } else {
            0
        }
    }

    /// Sets `counter_values[idx]` of the snapshot page (nothing without a page or for `idx` >= 64).
    fn set_snapshot_value(&mut self, idx: usize, value: u64) {
        if idx < RISCV_MAX_COUNTERS {
            self.set_snapshot_page_word(SnapshotPage::value_word(idx), value);
        }
    }

    /// Zeroes `counter_overflow_bitmap` of the snapshot page (nothing without a page).
    fn clear_snapshot_overflow_mask(&mut self) {
        self.set_snapshot_page_word(SnapshotPage::OVERFLOW_WORD, 0);
    }

    /// Zeroes the words of the snapshot page the specification defines.
    fn clear_snapshot(&mut self) {
        for word in 0..SnapshotPage::USED_WORDS {
            self.set_snapshot_page_word(word, 0);
        }
    }
}

/// The `sbiret` pair an SBI call returns in `a0` and `a1`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SbiRet {
    /// `sbiret.error` (`a0`): 0 for success or an SBI error code.
    pub error: isize,
    /// `sbiret.value` (`a1`).
    pub value: usize,
}

impl From<(isize, usize)> for SbiRet {
    /// The pair `(error, value)`.
    fn from((error, value): (isize, usize)) -> Self {
        Self { error, value }
    }
}

impl SbiRet {
    /// The pair of a call that failed with `err`.
    pub fn error(err: SbiError) -> Self {
        Self {
            error: err.code(),
            value: 0,
        }
    }

    /// The pair as a `Result`.
    #[inline]
    pub fn result(self) -> Result<usize, SbiError> {
        sbi_result(self.error, self.value)
    }
}

/// The raw form of [`Firmware`]: one SBI call into the PMU extension (EID 0x504D55) with the function
/// ID in `a6` and six argument registers `a0`..`a5`, plus the accesses that are not SBI calls.
///
/// Every `SbiEcall` is a [`Firmware`] through a blanket implementation. The two functions that lend
/// memory have default encodings over the physical addresses of [`SbiEcall::snapshot_phys`] and
/// [`SbiEcall::event_info_mem`], for implementations that simulate physical memory; the kernel
/// overrides them with calls that take the lent memory by reference.
pub trait SbiEcall {
    /// Performs `ecall` with `a7` = [`crate::abi::EXT_PMU`], `a6` = `fid` and `a0`..`a5` = `args`.
    fn sbi_ecall(&mut self, fid: Fid, args: [usize; 6]) -> SbiRet;

    /// Reads a counter CSR; see [`Firmware::read_counter_csr`].
    fn read_csr(&mut self, csr: u16) -> u64;

    /// The physical address of the snapshot page, if the implementation has one.
    fn snapshot_phys(&mut self) -> Option<u64> {
        None
    }

    /// Whether there is snapshot memory; see [`Firmware::has_snapshot_mem`].
    fn has_snapshot_mem(&mut self) -> bool {
        self.snapshot_phys().is_some()
    }

    /// `sbi_pmu_snapshot_set_shmem`; see [`Firmware::snapshot_set_shmem`].
    fn snapshot_set_shmem(&mut self, enable: bool) -> SbiRet {
        let (lo, hi) = match (enable, self.snapshot_phys()) {
            (false, _) => (SBI_SHMEM_DISABLE, SBI_SHMEM_DISABLE),
            // On RV64 a physical address fits shmem_phys_lo; shmem_phys_hi is zero.
            (true, Some(phys)) => (phys as usize, 0),
            (true, None) => return SbiRet::error(SbiError::NotSupported),
        };
        self.sbi_ecall(Fid::SnapshotSetShmem, [lo, hi, 0, 0, 0, 0])
    }

    /// `sbi_pmu_event_get_info`; see [`Firmware::event_get_info`].
    fn event_get_info(&mut self, entries: &mut [u64]) -> SbiRet {
        let Some((phys, mem)) = self.event_info_mem() else {
            return SbiRet::error(SbiError::NotSupported);
        };
        let words = entries.len().min(mem.len());
        mem[..words].copy_from_slice(&entries[..words]);
        let args = [phys as usize, 0, words / 2, 0, 0, 0];
        let ret = self.sbi_ecall(Fid::EventGetInfo, args);
        if let Some((_, mem)) = self.event_info_mem() {
            entries[..words].copy_from_slice(&mem[..words]);
        }
        ret
    }

    /// Word `word` of the snapshot page (see [`SnapshotPage::value_word`]); 0 without a page or for
    /// a word past [`SnapshotPage::USED_WORDS`].
    fn snapshot_word(&mut self, _word: usize) -> u64 {
        0
    }

    /// Sets word `word` of the snapshot page; nothing without a page or past
    /// [`SnapshotPage::USED_WORDS`].
    fn set_snapshot_word(&mut self, _word: usize, _value: u64) {}

    /// The physical address and the supervisor's view of an array of event-info entries, if the
    /// implementation has one.
    fn event_info_mem(&mut self) -> Option<(u64, &mut [u64])> {
        None
    }
}

// The driver targets RV64 only, where an argument register holds a full 64-bit value: the `as usize`
// conversions of `u64` arguments below are lossless because of this assertion.
const _: () = assert!(usize::BITS == 64);

impl<T: SbiEcall> Firmware for T {
    fn num_counters(&mut self) -> Result<usize, SbiError> {
        self.sbi_ecall(Fid::NumCounters, [0; 6]).result()
    }

    fn counter_get_info(&mut self, counter_idx: usize) -> Result<usize, SbiError> {
        self.sbi_ecall(Fid::CounterGetInfo, [counter_idx, 0, 0, 0, 0, 0])
            .result()
    }

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
        self.sbi_ecall(Fid::CounterConfigMatching, args).result()
    }

    #[inline(always)]
    fn counter_start(
        &mut self,
        base: usize,
        mask: usize,
        flags: StartFlags,
        initial_value: u64,
    ) -> Result<(), SbiError> {
        let args = [base, mask, flags.bits(), initial_value as usize, 0, 0];
        self.sbi_ecall(Fid::CounterStart, args).result().map(|_| ())
    }

    #[inline(always)]
    fn counter_stop(&mut self, base: usize, mask: usize, flags: StopFlags) -> Result<(), SbiError> {
        let args = [base, mask, flags.bits(), 0, 0, 0];
        self.sbi_ecall(Fid::CounterStop, args).result().map(|_| ())
    }

    fn counter_fw_read(&mut self, counter_idx: usize) -> Result<usize, SbiError> {
        self.sbi_ecall(Fid::CounterFwRead, [counter_idx, 0, 0, 0, 0, 0])
            .result()
    }

    fn counter_fw_read_hi(&mut self, counter_idx: usize) -> Result<usize, SbiError> {
        self.sbi_ecall(Fid::CounterFwReadHi, [counter_idx, 0, 0, 0, 0, 0])
            .result()
    }

    fn snapshot_set_shmem(&mut self, enable: bool) -> Result<(), SbiError> {
        SbiEcall::snapshot_set_shmem(self, enable)
            .result()
            .map(|_| ())
    }

    fn event_get_info(&mut self, entries: &mut [u64]) -> Result<(), SbiError> {
        SbiEcall::event_get_info(self, entries).result().map(|_| ())
    }

    fn read_counter_csr(&mut self, csr: u16) -> u64 {
        self.read_csr(csr)
    }

    fn has_snapshot_mem(&mut self) -> bool {
        SbiEcall::has_snapshot_mem(self)
    }

    fn snapshot_page_word(&mut self, word: usize) -> u64 {
        self.snapshot_word(word)
    }

    fn set_snapshot_page_word(&mut self, word: usize, value: u64) {
        self.set_snapshot_word(word, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the last call and answers with a fixed `sbiret`.
    struct Recorder {
        last: Option<(Fid, [usize; 6])>,
        ret: SbiRet,
    }

    impl SbiEcall for Recorder {
        fn sbi_ecall(&mut self, fid: Fid, args: [usize; 6]) -> SbiRet {
            self.last = Some((fid, args));
            self.ret
        }

        fn read_csr(&mut self, csr: u16) -> u64 {
            u64::from(csr) * 2
        }
    }

    #[test]
    fn blanket_firmware_passes_arguments_in_spec_order() {
        let mut r = Recorder {
            last: None,
            ret: SbiRet { error: 0, value: 7 },
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
        r.counter_fw_read_hi(21).unwrap();
        assert_eq!(r.last, Some((Fid::CounterFwReadHi, [21, 0, 0, 0, 0, 0])));
        r.counter_get_info(4).unwrap();
        assert_eq!(r.last, Some((Fid::CounterGetInfo, [4, 0, 0, 0, 0, 0])));
        Firmware::snapshot_set_shmem(&mut r, false).unwrap();
        assert_eq!(
            r.last,
            Some((Fid::SnapshotSetShmem, [usize::MAX, usize::MAX, 0, 0, 0, 0]))
        );
        assert_eq!(Firmware::read_counter_csr(&mut r, 0xC03), 0x1806);
        // Without memory the calls that lend it are refused before any call is made.
        r.last = None;
        assert!(!Firmware::has_snapshot_mem(&mut r));
        assert_eq!(
            Firmware::snapshot_set_shmem(&mut r, true),
            Err(SbiError::NotSupported)
        );
        assert_eq!(
            Firmware::event_get_info(&mut r, &mut [0; 4]),
            Err(SbiError::NotSupported)
        );
        assert_eq!(r.last, None);
    }

    #[test]
    fn blanket_firmware_maps_errors() {
        let mut r = Recorder {
            last: None,
            ret: SbiRet {
                error: -8,
                value: 0,
            },
        };
        assert_eq!(
            r.counter_stop(0, 1, StopFlags::empty()),
            Err(SbiError::AlreadyStopped)
        );
        r.ret.error = -2;
        assert_eq!(
            Firmware::snapshot_set_shmem(&mut r, false),
            Err(SbiError::NotSupported)
        );
    }
}
