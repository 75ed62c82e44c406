// SPDX-License-Identifier: GPL-2.0

//! The SBI PMU extension ABI, as the SBI specification (v3.0, chapter "Performance Monitoring Unit
//! Extension", EID #0x504D55 "PMU") defines it.
//!
//! Every type here cites the table of the specification it encodes. Encodings are `const fn`s so they
//! can be used in constant tables and are checked exhaustively by the unit tests at the end of this
//! file; the shared-memory layouts are `#[repr(C)]` and their offsets are asserted at compile time.
//!
//! Only the driver's side of each encoding is here: what it encodes into the argument registers and
//! decodes from the return values and shared memory. The firmware side belongs to the firmware model
//! of the host tests (`tests/fwmodel`), which transcribes the tables on its own, so that the two
//! check each other.

use bitflags::bitflags;
use core::mem::{offset_of, size_of};

use crate::errno;

/// The extension ID of the SBI PMU extension ("PMU" in ASCII).
pub const EXT_PMU: usize = 0x504D55;

/// The implementation ID of KVM's SBI implementation (`sbi_get_impl_id`, SBI specification,
/// Base extension, Table 5).
pub const IMPL_ID_KVM: usize = 3;

/// The maximum number of counters the driver handles (`RISCV_MAX_COUNTERS` in the C driver).
///
/// It is also the number of counter values in the snapshot page (Table 16), and, on RV64, the number
/// of counters one counter_idx_mask can name.
pub const RISCV_MAX_COUNTERS: usize = 64;

/// CSR number of the `cycle` counter; hardware counter `n` is read through CSR `CSR_CYCLE + n`.
pub const CSR_CYCLE: u16 = 0xC00;
/// CSR number of the last hardware performance counter, `hpmcounter31`.
pub const CSR_HPMCOUNTER31: u16 = 0xC1F;
/// CSR number of `scountovf` (Sscofpmf): bit `n` is the overflow (OF) bit of hardware counter `n`.
pub const CSR_SCOUNTOVF: u16 = 0xDA0;

/// An SBI specification version, as returned by `sbi_get_spec_version()` of the base extension.
///
/// The derived ordering compares the major version first, so `SbiVersion::V2_0 < SbiVersion::V3_0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SbiVersion {
    /// The major version (bits 30:24 of the raw encoding).
    pub major: u32,
    /// The minor version (bits 23:0 of the raw encoding).
    pub minor: u32,
}

impl SbiVersion {
    /// SBI v0.3, the first version with the PMU extension.
    pub const V0_3: Self = Self { major: 0, minor: 3 };
    /// SBI v2.0, which adds `counter_fw_read_hi` and the snapshot shared memory.
    pub const V2_0: Self = Self { major: 2, minor: 0 };
    /// SBI v3.0, which adds `event_get_info` and raw events v2.
    pub const V3_0: Self = Self { major: 3, minor: 0 };

    /// Decodes the value `sbi_get_spec_version()` returns: major in bits 30:24, minor in bits 23:0.
    /// Bit 31 and the bits above are reserved and ignored.
    pub const fn from_raw(raw: usize) -> Self {
        // Both fields are masked to at most 24 bits first, so the conversions cannot truncate.
        Self {
            major: ((raw >> 24) & 0x7f) as u32,
            minor: (raw & 0xff_ffff) as u32,
        }
    }
}

/// Defines [`SbiError`] from one table of the SBI error codes, so that its decoding
/// ([`SbiError::from_code`]) and encoding ([`SbiError::code`]) cannot disagree.
macro_rules! sbi_errors {
    ($($(#[$doc:meta])* $variant:ident = $code:literal,)*) => {
        /// An SBI error code (the "Standard SBI Errors" table of the base specification; the PMU
        /// tables 7, 9, 11, 13, 14, 15, 17 and 19 say which ones each PMU function returns).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum SbiError {
            $($(#[$doc])* $variant,)*
            /// Any other non-zero code; a newer specification may define it.
            Unknown(isize),
        }

        impl SbiError {
            /// The error for a non-zero `sbiret.error`, or `None` for SBI_SUCCESS (0).
            pub const fn from_code(code: isize) -> Option<Self> {
                Some(match code {
                    0 => return None,
                    $($code => SbiError::$variant,)*
                    other => SbiError::Unknown(other),
                })
            }

            /// The `sbiret.error` value of this error, for the host tests and the firmware model.
            #[cfg(any(test, feature = "host"))]
            pub const fn code(self) -> isize {
                match self {
                    $(SbiError::$variant => $code,)*
                    SbiError::Unknown(code) => code,
                }
            }
        }
    };
}

sbi_errors! {
    /// SBI_ERR_FAILED (-1).
    Failed = -1,
    /// SBI_ERR_NOT_SUPPORTED (-2).
    NotSupported = -2,
    /// SBI_ERR_INVALID_PARAM (-3).
    InvalidParam = -3,
    /// SBI_ERR_DENIED (-4).
    Denied = -4,
    /// SBI_ERR_INVALID_ADDRESS (-5).
    InvalidAddress = -5,
    /// SBI_ERR_ALREADY_AVAILABLE (-6).
    AlreadyAvailable = -6,
    /// SBI_ERR_ALREADY_STARTED (-7).
    AlreadyStarted = -7,
    /// SBI_ERR_ALREADY_STOPPED (-8).
    AlreadyStopped = -8,
    /// SBI_ERR_NO_SHMEM (-9).
    NoShmem = -9,
    /// SBI_ERR_INVALID_STATE (-10).
    InvalidState = -10,
    /// SBI_ERR_BAD_RANGE (-11).
    BadRange = -11,
    /// SBI_ERR_TIMEOUT (-12).
    Timeout = -12,
    /// SBI_ERR_IO (-13).
    Io = -13,
    /// SBI_ERR_DENIED_LOCKED (-14).
    DeniedLocked = -14,
}

impl SbiError {
    /// The positive Linux errno `sbi_err_map_linux_errno()` (`arch/riscv/include/asm/sbi.h`) of
    /// a kernel of major version `kernel_major` gives for this error: a kernel policy, which the
    /// driver follows on the kernel it runs on. The C driver returns it when
    /// `counter_config_matching` fails in `pmu_sbi_ctr_get_idx()`.
    ///
    /// Linux 6.12 gives DENIED, INVALID_PARAM and INVALID_ADDRESS their own errno; Linux 7.x six
    /// more errors (DENIED_LOCKED, INVALID_STATE, BAD_RANGE, NO_SHMEM, TIMEOUT, IO). Every other
    /// error is ENOTSUPP.
    pub const fn to_errno(self, kernel_major: u32) -> i32 {
        let linux7 = kernel_major >= 7;
        match self {
            SbiError::Denied => errno::EPERM,
            SbiError::InvalidParam => errno::EINVAL,
            SbiError::InvalidAddress => errno::EFAULT,
            SbiError::DeniedLocked if linux7 => errno::EPERM,
            SbiError::InvalidState if linux7 => errno::EINVAL,
            SbiError::BadRange if linux7 => errno::ERANGE,
            SbiError::NoShmem if linux7 => errno::ENOMEM,
            SbiError::Timeout if linux7 => errno::ETIMEDOUT,
            SbiError::Io if linux7 => errno::EIO,
            _ => errno::ENOTSUPP,
        }
    }
}

/// Turns an `sbiret` pair into a `Result`: `Ok(value)` when `error` is SBI_SUCCESS.
#[inline]
pub fn sbi_result(error: isize, value: usize) -> Result<usize, SbiError> {
    SbiError::from_code(error).map_or(Ok(value), Err)
}

/// The `counter_info` word returned by `sbi_pmu_counter_get_info` (function #1):
/// `counter_info[11:0]` = CSR, `[17:12]` = width (number of bits minus one), `[XLEN-2:18]` reserved,
/// `[XLEN-1]` = type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CounterInfo {
    /// The CSR number used to read the counter (12 bits). Meaningless for firmware counters.
    pub csr: u16,
    /// The SBI width field: one less than the number of bits of the counter (6 bits).
    pub width: u8,
    /// The counter type: a firmware counter (type 1), read with `sbi_pmu_counter_fw_read`, or a
    /// hardware counter (type 0), read through its CSR.
    pub firmware: bool,
}

impl CounterInfo {
    const CSR_MASK: usize = 0xfff;
    const WIDTH_SHIFT: u32 = 12;
    const WIDTH_MASK: usize = 0x3f;
    const TYPE_SHIFT: u32 = usize::BITS - 1;

    /// Decodes a `counter_info` word. Reserved bits are ignored, as the specification reserves them for
    /// future use.
    #[inline]
    pub const fn decode(raw: usize) -> Self {
        // Both fields are masked to their width (12 and 6 bits) first, so the conversions are exact.
        Self {
            csr: (raw & Self::CSR_MASK) as u16,
            width: ((raw >> Self::WIDTH_SHIFT) & Self::WIDTH_MASK) as u8,
            firmware: (raw >> Self::TYPE_SHIFT) & 1 == 1,
        }
    }

    /// Encodes the word as firmware returns it, for the unit tests. Fields wider than their bit range
    /// are truncated.
    #[cfg(test)]
    pub const fn encode(self) -> usize {
        (self.csr as usize & Self::CSR_MASK)
            | ((self.width as usize & Self::WIDTH_MASK) << Self::WIDTH_SHIFT)
            | ((self.firmware as usize) << Self::TYPE_SHIFT)
    }

    /// The mask of valid counter bits, `GENMASK_ULL(width, 0)` as `riscv_pmu_ctr_get_width_mask()`
    /// computes it. Widths above 63 are treated as 63.
    #[inline]
    pub const fn width_mask(self) -> u64 {
        let w = if self.width > 63 { 63 } else { self.width };
        u64::MAX >> (63 - w as u32)
    }

    /// For a hardware counter read through `cycle`..`hpmcounter31`, its hardware index (the CSR number
    /// minus `CSR_CYCLE`), which is its bit in `scountovf`.
    #[inline]
    pub const fn hw_index(self) -> Option<u8> {
        if self.firmware || self.csr < CSR_CYCLE || self.csr > CSR_HPMCOUNTER31 {
            return None;
        }
        // The range check above bounds the difference to 0..=31.
        Some((self.csr - CSR_CYCLE) as u8)
    }
}

bitflags! {
    /// The `config_flags` of `sbi_pmu_counter_config_matching` (Table 8, "PMU Counter Config Match
    /// Flags"). Bits 8 and above are reserved and must be zero.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct CfgFlags: usize {
        /// SBI_PMU_CFG_FLAG_SKIP_MATCH: skip the counter matching, use the first counter of the set.
        const SKIP_MATCH = 1 << 0;
        /// SBI_PMU_CFG_FLAG_CLEAR_VALUE: clear (zero) the counter value while configuring it.
        const CLEAR_VALUE = 1 << 1;
        /// SBI_PMU_CFG_FLAG_AUTO_START: start the counter after configuring it.
        const AUTO_START = 1 << 2;
        /// SBI_PMU_CFG_FLAG_SET_VUINH: event counting inhibited in VU-mode (hint).
        const SET_VUINH = 1 << 3;
        /// SBI_PMU_CFG_FLAG_SET_VSINH: event counting inhibited in VS-mode (hint).
        const SET_VSINH = 1 << 4;
        /// SBI_PMU_CFG_FLAG_SET_UINH: event counting inhibited in U-mode (hint).
        const SET_UINH = 1 << 5;
        /// SBI_PMU_CFG_FLAG_SET_SINH: event counting inhibited in S-mode (hint).
        const SET_SINH = 1 << 6;
        /// SBI_PMU_CFG_FLAG_SET_MINH: event counting inhibited in M-mode (hint).
        const SET_MINH = 1 << 7;
    }
}

impl CfgFlags {
    /// The five event filtering hints (`config_flags[3:7]`), which firmware may ignore or override.
    pub const INHIBIT_HINTS: Self = Self::SET_VUINH
        .union(Self::SET_VSINH)
        .union(Self::SET_UINH)
        .union(Self::SET_SINH)
        .union(Self::SET_MINH);
}

bitflags! {
    /// The `start_flags` of `sbi_pmu_counter_start` (Table 10, "PMU Counter Start Flags"). Bits 2 and
    /// above are reserved and must be zero.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct StartFlags: usize {
        /// SBI_PMU_START_SET_INIT_VALUE: set the counter to `initial_value` (one counter only).
        const SET_INIT_VALUE = 1 << 0;
        /// SBI_PMU_START_FLAG_INIT_SNAPSHOT: set the counters from the snapshot shared memory.
        const INIT_SNAPSHOT = 1 << 1;
    }
}

bitflags! {
    /// The `stop_flags` of `sbi_pmu_counter_stop` (Table 12, "PMU Counter Stop Flags"). Bits 2 and above
    /// are reserved and must be zero.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct StopFlags: usize {
        /// SBI_PMU_STOP_FLAG_RESET: reset the counter to event mapping.
        const RESET = 1 << 0;
        /// SBI_PMU_STOP_FLAG_TAKE_SNAPSHOT: save the counter values in the snapshot shared memory.
        const TAKE_SNAPSHOT = 1 << 1;
    }
}

/// Defines enums whose discriminants are the IDs of a table (of the specification, or of another
/// interface the driver decodes), each with `ALL`, its values in ID order, a `const fn` decoding an
/// ID (`None` for IDs the table does not define) and optionally one giving the ID, so that every
/// table is written once.
macro_rules! id_enums {
    ($(
        $(#[$doc:meta])*
        pub enum $name:ident: $repr:ty, $from:ident($arg:ty), $n:literal {
            $($(#[$vdoc:meta])* $variant:ident = $id:literal,)*
        }
        $(fn $get:ident() -> $ret:ty, $gdoc:literal;)?
    )*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr($repr)]
        pub enum $name {
            $($(#[$vdoc])* $variant = $id,)*
        }

        impl $name {
            /// The values of the table, in ID order.
            pub const ALL: [$name; $n] = [$($name::$variant),*];

            /// The value for an ID of the table, or `None` for an ID it does not define.
            #[inline]
            pub const fn $from(raw: $arg) -> Option<Self> {
                match raw {
                    $($id => Some($name::$variant),)*
                    _ => None,
                }
            }

            $(#[doc = $gdoc]
            #[inline]
            pub const fn $get(self) -> $ret {
                self as $ret
            })?
        }
    )*};
}
pub(crate) use id_enums;

id_enums! {
    /// The function IDs of the PMU extension (Table 20, "PMU Function List").
    pub enum Fid: usize, from_id(usize), 9 {
        /// `sbi_pmu_num_counters` (FID #0).
        NumCounters = 0,
        /// `sbi_pmu_counter_get_info` (FID #1).
        CounterGetInfo = 1,
        /// `sbi_pmu_counter_config_matching` (FID #2).
        CounterConfigMatching = 2,
        /// `sbi_pmu_counter_start` (FID #3).
        CounterStart = 3,
        /// `sbi_pmu_counter_stop` (FID #4).
        CounterStop = 4,
        /// `sbi_pmu_counter_fw_read` (FID #5).
        CounterFwRead = 5,
        /// `sbi_pmu_counter_fw_read_hi` (FID #6).
        CounterFwReadHi = 6,
        /// `sbi_pmu_snapshot_set_shmem` (FID #7).
        SnapshotSetShmem = 7,
        /// `sbi_pmu_event_get_info` (FID #8).
        EventGetInfo = 8,
    }
    fn id() -> usize, "The function ID passed in `a6`.";

    /// The event type in `event_idx[19:16]` (Table 1, "PMU Event Type").
    pub enum EventType: u8, from_raw(u32), 5 {
        /// Type #0: hardware general events (Table 2).
        Hardware = 0,
        /// Type #1: hardware cache events (Tables 3 to 5).
        Cache = 1,
        /// Type #2: hardware raw events (deprecated), `event_data` holds mhpmeventX bits 47:0.
        Raw = 2,
        /// Type #3: hardware raw events v2 (SBI v3.0), `event_data` holds mhpmeventX bits 55:0.
        RawV2 = 3,
        /// Type #15: firmware events (Table 6).
        Firmware = 15,
    }
    fn raw() -> u32, "The 4-bit value of the type field.";

    /// Hardware general events (Table 2, "PMU Hardware Events"); the discriminant is the event code.
    /// `from_code` returns `None` for SBI_PMU_HW_NO_EVENT (0) and undefined codes.
    pub enum HwGeneralEvent: u16, from_code(u16), 10 {
        /// SBI_PMU_HW_CPU_CYCLES: each CPU cycle.
        CpuCycles = 1,
        /// SBI_PMU_HW_INSTRUCTIONS: each completed instruction.
        Instructions = 2,
        /// SBI_PMU_HW_CACHE_REFERENCES: cache hit.
        CacheReferences = 3,
        /// SBI_PMU_HW_CACHE_MISSES: cache miss.
        CacheMisses = 4,
        /// SBI_PMU_HW_BRANCH_INSTRUCTIONS: a branch instruction.
        BranchInstructions = 5,
        /// SBI_PMU_HW_BRANCH_MISSES: a branch misprediction.
        BranchMisses = 6,
        /// SBI_PMU_HW_BUS_CYCLES: each bus cycle.
        BusCycles = 7,
        /// SBI_PMU_HW_STALLED_CYCLES_FRONTEND: a stalled cycle in the frontend.
        StalledCyclesFrontend = 8,
        /// SBI_PMU_HW_STALLED_CYCLES_BACKEND: a stalled cycle in the backend.
        StalledCyclesBackend = 9,
        /// SBI_PMU_HW_REF_CPU_CYCLES: each reference CPU cycle.
        RefCpuCycles = 10,
    }
    fn code() -> u16, "The event code.";

    /// Cache event IDs (Table 3, "PMU Cache Event ID"); they equal perf's `PERF_COUNT_HW_CACHE_*` ids.
    pub enum CacheId: u16, from_raw(u16), 7 {
        /// SBI_PMU_HW_CACHE_L1D: level 1 data cache.
        L1d = 0,
        /// SBI_PMU_HW_CACHE_L1I: level 1 instruction cache.
        L1i = 1,
        /// SBI_PMU_HW_CACHE_LL: last level cache.
        Ll = 2,
        /// SBI_PMU_HW_CACHE_DTLB: data TLB.
        Dtlb = 3,
        /// SBI_PMU_HW_CACHE_ITLB: instruction TLB.
        Itlb = 4,
        /// SBI_PMU_HW_CACHE_BPU: branch predictor unit.
        Bpu = 5,
        /// SBI_PMU_HW_CACHE_NODE: NUMA node cache.
        Node = 6,
    }

    /// Cache operation IDs (Table 4, "PMU Cache Operation ID").
    pub enum CacheOp: u16, from_raw(u16), 3 {
        /// SBI_PMU_HW_CACHE_OP_READ: read cache line.
        Read = 0,
        /// SBI_PMU_HW_CACHE_OP_WRITE: write cache line.
        Write = 1,
        /// SBI_PMU_HW_CACHE_OP_PREFETCH: prefetch cache line.
        Prefetch = 2,
    }

    /// Cache operation result IDs (Table 5, "PMU Cache Operation Result ID").
    pub enum CacheResult: u16, from_raw(u16), 2 {
        /// SBI_PMU_HW_CACHE_RESULT_ACCESS: cache access.
        Access = 0,
        /// SBI_PMU_HW_CACHE_RESULT_MISS: cache miss.
        Miss = 1,
    }
}

/// An `event_idx`: a 20-bit number with the type in bits 19:16 and the code in bits 15:0.
///
/// Only the five types of Table 1 can be represented, so a value of this type is always a well-formed
/// `event_idx`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventIdx {
    ty: EventType,
    code: u16,
}

impl EventIdx {
    /// The mask of the bits of `event_idx` that carry information (19:0); the others are reserved.
    pub const VALID_MASK: u32 = 0xf_ffff;
    const TYPE_SHIFT: u32 = 16;

    /// The hardware raw event (type #2, code 0).
    pub const RAW: Self = Self::new(EventType::Raw, 0);
    /// The hardware raw event v2 (type #3, code 0).
    pub const RAW_V2: Self = Self::new(EventType::RawV2, 0);
    /// The RISC-V platform specific firmware event, SBI_PMU_FW_PLATFORM (type #15, code 65535).
    pub const FW_PLATFORM: Self = Self::new(EventType::Firmware, FW_PLATFORM_CODE);

    /// Builds an `event_idx` from its type and code.
    pub const fn new(ty: EventType, code: u16) -> Self {
        Self { ty, code }
    }

    /// Decodes a raw `event_idx`, or `None` when a reserved bit (31:20) is set or the type is not one
    /// of Table 1.
    #[inline]
    pub const fn from_raw(raw: u32) -> Option<Self> {
        if raw & !Self::VALID_MASK != 0 {
            return None;
        }
        match EventType::from_raw(raw >> Self::TYPE_SHIFT) {
            // The code is the low 16 bits by definition.
            Some(ty) => Some(Self::new(ty, (raw & 0xffff) as u16)),
            None => None,
        }
    }

    /// The raw 20-bit `event_idx`.
    pub const fn raw(self) -> u32 {
        (self.ty.raw() << Self::TYPE_SHIFT) | self.code as u32
    }

    /// The event type (`event_idx[19:16]`).
    #[inline]
    pub const fn ty(self) -> EventType {
        self.ty
    }

    /// The event code (`event_idx[15:0]`), for the tests.
    #[cfg(test)]
    pub const fn code(self) -> u16 {
        self.code
    }

    /// The `event_idx` of a hardware general event (type #0).
    pub const fn hw(event: HwGeneralEvent) -> Self {
        Self::new(EventType::Hardware, event as u16)
    }

    /// The `event_idx` of a hardware cache event (type #1): `code[15:3]` = cache_id, `code[2:1]` = op_id,
    /// `code[0]` = result_id.
    pub const fn cache(cache: CacheId, op: CacheOp, result: CacheResult) -> Self {
        Self::new(
            EventType::Cache,
            ((cache as u16) << 3) | ((op as u16) << 1) | result as u16,
        )
    }

    /// The `event_idx` of a firmware event (type #15) with this code.
    pub const fn fw(code: u16) -> Self {
        Self::new(EventType::Firmware, code)
    }

    /// The hardware general event, for type #0 with a code of Table 2 other than SBI_PMU_HW_NO_EVENT.
    #[inline]
    pub const fn hw_event(self) -> Option<HwGeneralEvent> {
        match self.ty {
            EventType::Hardware => HwGeneralEvent::from_code(self.code),
            _ => None,
        }
    }

    /// The fixed counter a hardware general event may always use, as a bitmap of hardware counters
    /// (bit `n` = `mhpmcounterN`): `cycle` (bit 0) for cycles, `instret` (bit 2) for instructions,
    /// none for every other event.
    pub const fn fixed_counter(self) -> u32 {
        match self.hw_event() {
            Some(HwGeneralEvent::CpuCycles) => 0b001,
            Some(HwGeneralEvent::Instructions) => 0b100,
            _ => 0,
        }
    }

    /// The cache, operation and result of a type #1 event, when all three are defined by Tables 3 to 5.
    pub const fn cache_parts(self) -> Option<(CacheId, CacheOp, CacheResult)> {
        let cache = CacheId::from_raw(self.code >> 3);
        let op = CacheOp::from_raw((self.code >> 1) & 0x3);
        let result = CacheResult::from_raw(self.code & 1);
        match (self.ty, cache, op, result) {
            (EventType::Cache, Some(c), Some(o), Some(r)) => Some((c, o, r)),
            _ => None,
        }
    }
}

impl Fid {
    /// The number of functions (IDs 0 to 8): the size of a table indexed by [`Fid::id`].
    pub const COUNT: usize = Self::ALL.len();
}

/// The number of hardware cache events the driver knows: 7 caches × 3 operations × 2 results.
pub const NUM_CACHE_EVENTS: usize = 42;

/// The code of SBI_PMU_FW_PLATFORM, whose `event_data` carries a platform specific event encoding.
pub const FW_PLATFORM_CODE: u16 = 0xffff;

/// The snapshot shared memory (Table 16, "SBI PMU Snapshot shared memory layout"), 4096 bytes that must
/// be 4096-byte aligned in physical memory.
///
/// Indices into `ctr_values` and bits of `ctr_overflow_mask` are relative to the `counter_idx_base` of
/// the `sbi_pmu_counter_stop`/`sbi_pmu_counter_start` call that used the page.
#[derive(Clone, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct SnapshotPage {
    /// `counter_overflow_bitmap` at 0x0000: the logical counters that overflowed (only with Sscofpmf,
    /// otherwise zero).
    pub ctr_overflow_mask: u64,
    /// `counter_values` at 0x0008: one 64-bit value per logical counter.
    pub ctr_values: [u64; RISCV_MAX_COUNTERS],
    /// Reserved for future use, 0x0208 to the end of the page.
    pub reserved: [u64; 447],
}

const _: () = assert!(size_of::<SnapshotPage>() == 4096);
const _: () = assert!(offset_of!(SnapshotPage, ctr_overflow_mask) == 0x0000);
const _: () = assert!(offset_of!(SnapshotPage, ctr_values) == 0x0008);
const _: () = assert!(offset_of!(SnapshotPage, reserved) == 0x0208);

impl SnapshotPage {
    /// The word (64-bit index into the page) of `ctr_overflow_mask`.
    pub const OVERFLOW_WORD: usize = 0;
    /// The words the specification defines: the overflow bitmap and the counter values. The rest
    /// is reserved.
    pub const USED_WORDS: usize = 1 + RISCV_MAX_COUNTERS;

    /// The word of `ctr_values[idx]`.
    pub const fn value_word(idx: usize) -> usize {
        1 + idx
    }

    /// A zeroed page, for the host tests and the firmware model (the kernel glue allocates its
    /// own).
    #[cfg(any(test, feature = "host"))]
    pub const fn new() -> Self {
        Self {
            ctr_overflow_mask: 0,
            ctr_values: [0; RISCV_MAX_COUNTERS],
            reserved: [0; 447],
        }
    }
}

#[cfg(any(test, feature = "host"))]
impl Default for SnapshotPage {
    fn default() -> Self {
        Self::new()
    }
}

/// One entry of the `sbi_pmu_event_get_info` shared memory (Table 18, "Event info entry format"),
/// 16 bytes that must be 16-byte aligned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct EventInfo {
    /// Word 0, read-only for firmware: the `event_idx` in bits 19:0, bits 31:20 reserved (zero).
    pub event_idx: u32,
    /// Word 1, written by firmware: bit 0 says whether the event is supported, bits 31:1 reserved.
    pub output: u32,
    /// Words 2-3, read-only for firmware: the `event_data`, used for types 0x2, 0x3 and 0xf.
    pub event_data: u64,
}

const _: () = assert!(size_of::<EventInfo>() == 16);
const _: () = assert!(offset_of!(EventInfo, event_idx) == 0);
const _: () = assert!(offset_of!(EventInfo, output) == 4);
const _: () = assert!(offset_of!(EventInfo, event_data) == 8);

impl EventInfo {
    /// Bit 0 of `output`: the event is supported (`RISCV_PMU_EVENT_INFO_OUTPUT_MASK`).
    pub const OUTPUT_SUPPORTED: u32 = 1;

    /// An entry asking about `event_idx` with `event_data`, with a cleared output word.
    pub const fn new(event_idx: EventIdx, event_data: u64) -> Self {
        Self {
            event_idx: event_idx.raw(),
            output: 0,
            event_data,
        }
    }

    /// Whether firmware marked the event as supported.
    pub const fn is_supported(&self) -> bool {
        self.output & Self::OUTPUT_SUPPORTED != 0
    }

    /// The entry as the two 64-bit words it occupies in shared memory: RISC-V is little-endian, so
    /// `event_idx` is the low half of the first word and `output` its high half.
    pub const fn to_words(self) -> [u64; 2] {
        [
            self.event_idx as u64 | (self.output as u64) << 32,
            self.event_data,
        ]
    }

    /// The entry the two shared-memory words `words` hold (see [`EventInfo::to_words`]).
    pub const fn from_words(words: [u64; 2]) -> Self {
        Self {
            // CAST: Each half of the first word is one 32-bit field.
            event_idx: words[0] as u32,
            output: (words[0] >> 32) as u32,
            event_data: words[1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(major: u32, minor: u32) -> SbiVersion {
        SbiVersion { major, minor }
    }

    #[test]
    fn function_ids_match_table_20() {
        // (function, FID) rows of Table 20, transcribed from the specification.
        let table = [
            (Fid::NumCounters, 0),
            (Fid::CounterGetInfo, 1),
            (Fid::CounterConfigMatching, 2),
            (Fid::CounterStart, 3),
            (Fid::CounterStop, 4),
            (Fid::CounterFwRead, 5),
            (Fid::CounterFwReadHi, 6),
            (Fid::SnapshotSetShmem, 7),
            (Fid::EventGetInfo, 8),
        ];
        for (fid, id) in table {
            assert_eq!(fid.id(), id, "{fid:?}");
        }
        assert_eq!(EXT_PMU, 0x504D55);
        assert_eq!(&EXT_PMU.to_be_bytes()[5..], b"PMU");
    }

    #[test]
    fn version_encoding_and_order() {
        assert_eq!(SbiVersion::from_raw(0x0100_0000), version(1, 0));
        assert_eq!(SbiVersion::from_raw(0x0000_0003), SbiVersion::V0_3);
        assert_eq!(SbiVersion::from_raw(0x0200_0000), SbiVersion::V2_0);
        assert_eq!(SbiVersion::from_raw(0x0300_0000), SbiVersion::V3_0);
        // Bit 31 is reserved and ignored; the major version is 7 bits.
        assert_eq!(SbiVersion::from_raw(0x8300_0001), version(3, 1));
        assert_eq!(SbiVersion::from_raw(0x7fff_ffff), version(0x7f, 0xff_ffff));
        assert_eq!(SbiVersion::from_raw(0x0300_0005), version(3, 5));
        assert_eq!(SbiVersion::from_raw(0), version(0, 0));
        assert!(SbiVersion::V0_3 < SbiVersion::V2_0);
        assert!(SbiVersion::V2_0 < SbiVersion::V3_0);
        assert!(version(2, 1) > SbiVersion::V2_0);
        assert!(version(1, 99) < SbiVersion::V2_0);
        assert!(version(3, 0) >= SbiVersion::V3_0);
    }

    #[test]
    fn error_codes_match_the_standard_table() {
        let table = [
            (-1, SbiError::Failed),
            (-2, SbiError::NotSupported),
            (-3, SbiError::InvalidParam),
            (-4, SbiError::Denied),
            (-5, SbiError::InvalidAddress),
            (-6, SbiError::AlreadyAvailable),
            (-7, SbiError::AlreadyStarted),
            (-8, SbiError::AlreadyStopped),
            (-9, SbiError::NoShmem),
            (-10, SbiError::InvalidState),
            (-11, SbiError::BadRange),
            (-12, SbiError::Timeout),
            (-13, SbiError::Io),
            (-14, SbiError::DeniedLocked),
        ];
        for (code, err) in table {
            assert_eq!(SbiError::from_code(code), Some(err));
            assert_eq!(err.code(), code);
            assert_eq!(sbi_result(code, 5), Err(err));
        }
        assert_eq!(SbiError::from_code(0), None);
        assert_eq!(sbi_result(0, 42), Ok(42));
        for code in [-15, -100, 1, isize::MIN, isize::MAX] {
            assert_eq!(SbiError::from_code(code), Some(SbiError::Unknown(code)));
            assert_eq!(SbiError::Unknown(code).code(), code);
        }
    }

    /// Every SBI error code and one unknown code, with the errno of 6.12's and of 7.x's
    /// `sbi_err_map_linux_errno()` (`arch/riscv/include/asm/sbi.h` of each kernel).
    const ERRNO_TABLES: [(SbiError, i32, i32); 15] = [
        (SbiError::Failed, errno::ENOTSUPP, errno::ENOTSUPP),
        (SbiError::NotSupported, errno::ENOTSUPP, errno::ENOTSUPP),
        (SbiError::InvalidParam, errno::EINVAL, errno::EINVAL),
        (SbiError::Denied, errno::EPERM, errno::EPERM),
        (SbiError::InvalidAddress, errno::EFAULT, errno::EFAULT),
        (SbiError::AlreadyAvailable, errno::ENOTSUPP, errno::ENOTSUPP),
        (SbiError::AlreadyStarted, errno::ENOTSUPP, errno::ENOTSUPP),
        (SbiError::AlreadyStopped, errno::ENOTSUPP, errno::ENOTSUPP),
        (SbiError::NoShmem, errno::ENOTSUPP, errno::ENOMEM),
        (SbiError::InvalidState, errno::ENOTSUPP, errno::EINVAL),
        (SbiError::BadRange, errno::ENOTSUPP, errno::ERANGE),
        (SbiError::Timeout, errno::ENOTSUPP, errno::ETIMEDOUT),
        (SbiError::Io, errno::ENOTSUPP, errno::EIO),
        (SbiError::DeniedLocked, errno::ENOTSUPP, errno::EPERM),
        (SbiError::Unknown(-77), errno::ENOTSUPP, errno::ENOTSUPP),
    ];

    #[test]
    fn error_to_errno_matches_linux_6_12() {
        for (err, linux_6_12, _) in ERRNO_TABLES {
            assert_eq!(err.to_errno(6), linux_6_12, "{err:?}");
        }
    }

    #[test]
    fn error_to_errno_matches_linux_7() {
        for (err, _, linux_7) in ERRNO_TABLES {
            assert_eq!(err.to_errno(7), linux_7, "{err:?}");
        }
    }

    #[test]
    fn errno_table_follows_the_kernel_major() {
        for (err, _, linux_7) in ERRNO_TABLES {
            assert_eq!(err.to_errno(8), linux_7, "{err:?}");
        }
    }

    #[test]
    fn errno_tables_differ_in_the_six_errors_7_added() {
        let differ: Vec<SbiError> = ERRNO_TABLES
            .iter()
            .filter(|(err, ..)| err.to_errno(6) != err.to_errno(7))
            .map(|&(err, ..)| err)
            .collect();
        assert_eq!(
            differ,
            [
                SbiError::NoShmem,
                SbiError::InvalidState,
                SbiError::BadRange,
                SbiError::Timeout,
                SbiError::Io,
                SbiError::DeniedLocked
            ]
        );
    }

    #[test]
    fn counter_info_fields() {
        // counter_info[11:0] = CSR, [17:12] = width, [XLEN-1] = type.
        let cycle = CounterInfo::decode(0xC00 | (63 << 12));
        assert_eq!(
            cycle,
            CounterInfo {
                csr: 0xC00,
                width: 63,
                firmware: false
            }
        );
        assert_eq!(cycle.width_mask(), u64::MAX);
        assert_eq!(cycle.hw_index(), Some(0));

        let hpm = CounterInfo::decode(0xC03 | (47 << 12));
        assert_eq!(hpm.width_mask(), (1 << 48) - 1);
        assert_eq!(hpm.hw_index(), Some(3));

        let fw = CounterInfo::decode(1 << 63 | 63 << 12);
        assert!(fw.firmware);
        assert_eq!(fw.hw_index(), None);

        // Reserved bits [62:18] are ignored.
        let noisy = CounterInfo::decode(0x7fff_ffff_fffc_0000 | 0xC1F | (31 << 12));
        assert_eq!(noisy.csr, 0xC1F);
        assert_eq!(noisy.width, 31);
        assert!(!noisy.firmware);
        assert_eq!(noisy.hw_index(), Some(31));

        // A CSR outside cycle..hpmcounter31 has no hardware index.
        assert_eq!(CounterInfo::decode(0xC20).hw_index(), None);
        assert_eq!(CounterInfo::decode(0xB00).hw_index(), None);
    }

    #[test]
    fn counter_info_round_trips_every_width_and_csr() {
        for width in 0..64u8 {
            for csr in (0..0x1000u16).step_by(0x101) {
                for firmware in [false, true] {
                    let info = CounterInfo {
                        csr,
                        width,
                        firmware,
                    };
                    assert_eq!(CounterInfo::decode(info.encode()), info);
                }
            }
            let mask = CounterInfo::decode(usize::from(width) << 12).width_mask();
            assert_eq!(mask.count_ones(), u32::from(width) + 1);
            assert_eq!(mask.trailing_ones(), u32::from(width) + 1);
        }
        let wide = CounterInfo {
            csr: 0xC00,
            width: 200,
            firmware: false,
        };
        assert_eq!(wide.width_mask(), u64::MAX);
    }

    #[test]
    fn cfg_flags_match_table_8() {
        let table = [
            (CfgFlags::SKIP_MATCH, 0),
            (CfgFlags::CLEAR_VALUE, 1),
            (CfgFlags::AUTO_START, 2),
            (CfgFlags::SET_VUINH, 3),
            (CfgFlags::SET_VSINH, 4),
            (CfgFlags::SET_UINH, 5),
            (CfgFlags::SET_SINH, 6),
            (CfgFlags::SET_MINH, 7),
        ];
        for (flag, bit) in table {
            assert_eq!(flag.bits(), 1 << bit);
        }
        assert_eq!(CfgFlags::all().bits(), 0xff);
        assert_eq!(CfgFlags::INHIBIT_HINTS.bits(), 0xf8);
    }

    #[test]
    fn start_and_stop_flags_match_tables_10_and_12() {
        assert_eq!(StartFlags::SET_INIT_VALUE.bits(), 1);
        assert_eq!(StartFlags::INIT_SNAPSHOT.bits(), 2);
        assert_eq!(StopFlags::RESET.bits(), 1);
        assert_eq!(StopFlags::TAKE_SNAPSHOT.bits(), 2);
        assert_eq!(StartFlags::all().bits(), 0x3);
        assert_eq!(StopFlags::all().bits(), 0x3);
    }

    #[test]
    fn event_types_match_table_1() {
        let table = [
            (0, EventType::Hardware),
            (1, EventType::Cache),
            (2, EventType::Raw),
            (3, EventType::RawV2),
            (15, EventType::Firmware),
        ];
        for raw in 0..16u32 {
            let expected = table.iter().find(|(v, _)| *v == raw).map(|(_, t)| *t);
            assert_eq!(EventType::from_raw(raw), expected, "type {raw}");
            if let Some(ty) = expected {
                assert_eq!(ty.raw(), raw);
            }
        }
    }

    #[test]
    fn event_idx_encoding_is_exhaustive() {
        // Every 20-bit value decodes exactly when its type is in Table 1, and round-trips.
        let mut valid = 0u32;
        for raw in 0..=EventIdx::VALID_MASK {
            match EventIdx::from_raw(raw) {
                Some(idx) => {
                    valid += 1;
                    assert_eq!(idx.raw(), raw);
                    assert_eq!(idx.ty().raw(), raw >> 16);
                    assert_eq!(u32::from(idx.code()), raw & 0xffff);
                }
                None => assert!(EventType::from_raw(raw >> 16).is_none()),
            }
        }
        assert_eq!(valid, 5 * 0x10000);
        for bit in 20..32 {
            assert_eq!(EventIdx::from_raw(1 << bit | 1), None);
        }
        assert_eq!(EventIdx::RAW.raw(), 0x20000);
        assert_eq!(EventIdx::RAW_V2.raw(), 0x30000);
        assert_eq!(EventIdx::FW_PLATFORM.raw(), 0xfffff);
    }

    #[test]
    fn hardware_general_events_match_table_2() {
        let table = [
            ("SBI_PMU_HW_CPU_CYCLES", 1),
            ("SBI_PMU_HW_INSTRUCTIONS", 2),
            ("SBI_PMU_HW_CACHE_REFERENCES", 3),
            ("SBI_PMU_HW_CACHE_MISSES", 4),
            ("SBI_PMU_HW_BRANCH_INSTRUCTIONS", 5),
            ("SBI_PMU_HW_BRANCH_MISSES", 6),
            ("SBI_PMU_HW_BUS_CYCLES", 7),
            ("SBI_PMU_HW_STALLED_CYCLES_FRONTEND", 8),
            ("SBI_PMU_HW_STALLED_CYCLES_BACKEND", 9),
            ("SBI_PMU_HW_REF_CPU_CYCLES", 10),
        ];
        for (event, (name, code)) in HwGeneralEvent::ALL.iter().zip(table) {
            assert_eq!(event.code(), code, "{name}");
            assert_eq!(HwGeneralEvent::from_code(code), Some(*event));
            assert_eq!(EventIdx::hw(*event).raw(), u32::from(code));
            assert_eq!(EventIdx::hw(*event).hw_event(), Some(*event));
        }
        // SBI_PMU_HW_NO_EVENT (code 0) is not an event.
        assert_eq!(HwGeneralEvent::from_code(0), None);
        for code in 11..=u16::MAX {
            assert_eq!(HwGeneralEvent::from_code(code), None);
        }
    }

    #[test]
    fn cache_events_match_tables_3_to_5() {
        let caches = [
            ("L1D", 0),
            ("L1I", 1),
            ("LL", 2),
            ("DTLB", 3),
            ("ITLB", 4),
            ("BPU", 5),
            ("NODE", 6),
        ];
        let ops = [("READ", 0), ("WRITE", 1), ("PREFETCH", 2)];
        let results = [("ACCESS", 0), ("MISS", 1)];
        let mut seen = 0;
        for (cache, (cname, cid)) in CacheId::ALL.iter().zip(caches) {
            assert_eq!(*cache as u16, cid, "{cname}");
            for (op, (oname, oid)) in CacheOp::ALL.iter().zip(ops) {
                assert_eq!(*op as u16, oid, "{oname}");
                for (result, (rname, rid)) in CacheResult::ALL.iter().zip(results) {
                    assert_eq!(*result as u16, rid, "{rname}");
                    let idx = EventIdx::cache(*cache, *op, *result);
                    // code[15:3] = cache_id, code[2:1] = op_id, code[0] = result_id; type 1.
                    assert_eq!(idx.raw(), 0x10000 | u32::from(cid << 3 | oid << 1 | rid));
                    assert_eq!(idx.cache_parts(), Some((*cache, *op, *result)));
                    seen += 1;
                }
            }
        }
        assert_eq!(seen, NUM_CACHE_EVENTS);
        // Every other cache code has an undefined part.
        let defined = (0..=u16::MAX)
            .filter(|code| {
                EventIdx::new(EventType::Cache, *code)
                    .cache_parts()
                    .is_some()
            })
            .count();
        assert_eq!(defined, NUM_CACHE_EVENTS);
        assert_eq!(CacheId::from_raw(7), None);
        assert_eq!(CacheOp::from_raw(3), None);
        assert_eq!(CacheResult::from_raw(2), None);
        assert_eq!(EventIdx::hw(HwGeneralEvent::CpuCycles).cache_parts(), None);
    }

    #[test]
    fn firmware_events_are_type_15() {
        // Table 6: the code is the whole event_idx.code, up to SBI_PMU_FW_PLATFORM (65535).
        for code in 0..=u16::MAX {
            assert_eq!(EventIdx::fw(code).raw(), 0xf0000 | u32::from(code));
        }
        assert_eq!(EventIdx::FW_PLATFORM, EventIdx::fw(0xffff));
    }

    #[test]
    fn shared_memory_layouts_match_tables_16_and_18() {
        // The compile-time assertions above carry the offsets; this checks the sizes the spec lists.
        assert_eq!(size_of::<SnapshotPage>(), 8 + 512 + 3576);
        assert_eq!(SnapshotPage::new(), SnapshotPage::default());
        assert_eq!(size_of::<EventInfo>(), 16);
        let entry = EventInfo::new(EventIdx::RAW_V2, 0x1234);
        assert_eq!(entry.event_idx, 0x30000);
        assert!(!entry.is_supported());
        let done = EventInfo { output: 1, ..entry };
        assert!(done.is_supported());
        assert_eq!(done.to_words(), [0x1_0003_0000, 0x1234]);
        assert_eq!(EventInfo::from_words(done.to_words()), done);
    }
}
