// SPDX-License-Identifier: GPL-2.0

//! The encodings of the SBI PMU extension as the model knows them, transcribed from the SBI
//! specification (v3.0): the tables of the chapter "Performance Monitoring Unit Extension"
//! (EID #0x504D55 "PMU"), the standard error codes and `sbi_get_spec_version()` of the base
//! chapters, and the counter CSR numbers of the privileged specification.
//!
//! Nothing here comes from the `sbi_pmu` crate. The model decodes every argument register and encodes
//! every return value with these definitions, so an encoding mistake in the crate makes the driver
//! and the model disagree, and a test fail, instead of being shared by both.

/// The extension ID of the PMU extension, passed in `a7` (the chapter title, EID #0x504D55 "PMU").
pub const EXT_PMU: usize = 0x504D55;

/// An SBI specification version.
///
/// The derived ordering compares the major version first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// The major version.
    pub major: u32,
    /// The minor version.
    pub minor: u32,
}

impl Version {
    /// SBI v0.3, the first version with the PMU extension.
    pub const V0_3: Self = Self { major: 0, minor: 3 };
    /// SBI v2.0, which adds `counter_fw_read_hi` and the snapshot shared memory.
    pub const V2_0: Self = Self { major: 2, minor: 0 };
    /// SBI v3.0, which adds `event_get_info` and raw events v2.
    pub const V3_0: Self = Self { major: 3, minor: 0 };

    /// The value `sbi_get_spec_version()` (base extension, FID #0) returns: the minor number in bits
    /// 23:0, the major number in bits 30:24, and bit 31 zero.
    pub const fn encode(self) -> usize {
        ((self.major as usize & 0x7f) << 24) | (self.minor as usize & 0xff_ffff)
    }
}

/// The functions of the PMU extension; the discriminant is the FID (Table 20, "PMU Function List").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(usize)]
pub enum Function {
    /// `sbi_pmu_num_counters`.
    NumCounters = 0,
    /// `sbi_pmu_counter_get_info`.
    CounterGetInfo = 1,
    /// `sbi_pmu_counter_config_matching`.
    CounterConfigMatching = 2,
    /// `sbi_pmu_counter_start`.
    CounterStart = 3,
    /// `sbi_pmu_counter_stop`.
    CounterStop = 4,
    /// `sbi_pmu_counter_fw_read`.
    CounterFwRead = 5,
    /// `sbi_pmu_counter_fw_read_hi`.
    CounterFwReadHi = 6,
    /// `sbi_pmu_snapshot_set_shmem`.
    SnapshotSetShmem = 7,
    /// `sbi_pmu_event_get_info`.
    EventGetInfo = 8,
}

impl Function {
    /// The rows of Table 20, in FID order.
    pub const ALL: [Function; 9] = [
        Function::NumCounters,
        Function::CounterGetInfo,
        Function::CounterConfigMatching,
        Function::CounterStart,
        Function::CounterStop,
        Function::CounterFwRead,
        Function::CounterFwReadHi,
        Function::SnapshotSetShmem,
        Function::EventGetInfo,
    ];

    /// The function with this FID, if Table 20 lists one.
    pub fn from_fid(fid: usize) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.fid() == fid)
    }

    /// The FID, passed in `a6`.
    pub const fn fid(self) -> usize {
        self as usize
    }

    /// The SBI version that introduced the function (the "SBI Version" column of Table 20).
    pub const fn since(self) -> Version {
        match self {
            Function::CounterFwReadHi | Function::SnapshotSetShmem => Version::V2_0,
            Function::EventGetInfo => Version::V3_0,
            _ => Version::V0_3,
        }
    }
}

/// `sbiret.error` of a successful call (SBI_SUCCESS).
pub const SBI_SUCCESS: isize = 0;

/// The errors the PMU functions return, with the codes of the table "Standard SBI Errors" of the base
/// specification; which function returns which is listed by the PMU Tables 7, 9, 11, 13, 14, 15, 17
/// and 19.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Error {
    /// SBI_ERR_NOT_SUPPORTED.
    NotSupported,
    /// SBI_ERR_INVALID_PARAM.
    InvalidParam,
    /// SBI_ERR_INVALID_ADDRESS.
    InvalidAddress,
    /// SBI_ERR_ALREADY_STARTED.
    AlreadyStarted,
    /// SBI_ERR_ALREADY_STOPPED.
    AlreadyStopped,
    /// SBI_ERR_NO_SHMEM.
    NoShmem,
}

impl Error {
    /// The `sbiret.error` value.
    pub const fn code(self) -> isize {
        match self {
            Error::NotSupported => -2,
            Error::InvalidParam => -3,
            Error::InvalidAddress => -5,
            Error::AlreadyStarted => -7,
            Error::AlreadyStopped => -8,
            Error::NoShmem => -9,
        }
    }
}

/// The number of bits of an `event_idx` ("The event_idx is a 20 bits wide number"); the bits above
/// are reserved.
pub const EVENT_IDX_BITS: u32 = 20;
/// The shift of `event_idx[19:16]`, the event type.
pub const EVENT_IDX_TYPE_SHIFT: u32 = 16;
/// The mask of `event_idx[15:0]`, the event code.
pub const EVENT_IDX_CODE_MASK: usize = 0xffff;

/// Type #0, hardware general events (Table 1).
pub const TYPE_HW_GENERAL: usize = 0;
/// Type #1, hardware cache events (Table 1).
pub const TYPE_HW_CACHE: usize = 1;
/// Type #2, hardware raw events, deprecated (Table 1).
pub const TYPE_HW_RAW: usize = 2;
/// Type #3, hardware raw events v2 (Table 1).
pub const TYPE_HW_RAW_V2: usize = 3;
/// Type #15, firmware events (Table 1).
pub const TYPE_FW: usize = 15;

/// SBI_PMU_HW_CPU_CYCLES, the first code of Table 2 after SBI_PMU_HW_NO_EVENT (0).
pub const SBI_PMU_HW_CPU_CYCLES: usize = 1;
/// SBI_PMU_HW_INSTRUCTIONS (Table 2).
pub const SBI_PMU_HW_INSTRUCTIONS: usize = 2;
/// SBI_PMU_HW_CACHE_REFERENCES (Table 2).
pub const SBI_PMU_HW_CACHE_REFERENCES: usize = 3;
/// SBI_PMU_HW_BRANCH_INSTRUCTIONS (Table 2).
pub const SBI_PMU_HW_BRANCH_INSTRUCTIONS: usize = 5;
/// SBI_PMU_HW_REF_CPU_CYCLES, the last code of Table 2.
pub const SBI_PMU_HW_REF_CPU_CYCLES: usize = 10;

/// The shift of `event_idx.code[15:3]`, the cache id of a type #1 event.
pub const CACHE_ID_SHIFT: u32 = 3;
/// The shift of `event_idx.code[2:1]`, the operation id of a type #1 event; `event_idx.code[0:0]` is
/// the result id.
pub const CACHE_OP_SHIFT: u32 = 1;
/// The mask of the operation id, two bits.
pub const CACHE_OP_MASK: usize = 0x3;
/// SBI_PMU_HW_CACHE_L1D (Table 3).
pub const SBI_PMU_HW_CACHE_L1D: usize = 0;
/// SBI_PMU_HW_CACHE_DTLB (Table 3).
pub const SBI_PMU_HW_CACHE_DTLB: usize = 3;
/// SBI_PMU_HW_CACHE_ITLB (Table 3).
pub const SBI_PMU_HW_CACHE_ITLB: usize = 4;
/// SBI_PMU_HW_CACHE_NODE, the last cache id of Table 3.
pub const SBI_PMU_HW_CACHE_NODE: usize = 6;
/// SBI_PMU_HW_CACHE_OP_READ (Table 4).
pub const SBI_PMU_HW_CACHE_OP_READ: usize = 0;
/// SBI_PMU_HW_CACHE_OP_WRITE (Table 4).
pub const SBI_PMU_HW_CACHE_OP_WRITE: usize = 1;
/// SBI_PMU_HW_CACHE_OP_PREFETCH, the last operation id of Table 4.
pub const SBI_PMU_HW_CACHE_OP_PREFETCH: usize = 2;
/// SBI_PMU_HW_CACHE_RESULT_MISS (Table 5).
pub const SBI_PMU_HW_CACHE_RESULT_MISS: usize = 1;

/// The `event_data` bits a type #2 raw event may use: mhpmeventX bits 47:0 (Table 1).
pub const RAW_DATA_BITS: u32 = 48;
/// The `event_data` bits a type #3 raw event may use: mhpmeventX bits 55:0 (Table 1).
pub const RAW_V2_DATA_BITS: u32 = 56;

/// SBI_PMU_FW_HFENCE_VVMA_ASID_RECEIVED, the last standard firmware event of Table 6.
pub const SBI_PMU_FW_LAST_STANDARD: usize = 21;
/// The last code Table 6 reserves for future use (codes 22 to 255).
pub const SBI_PMU_FW_LAST_RESERVED: usize = 255;
/// SBI_PMU_FW_PLATFORM: platform specific firmware events, whose `event_data` is the encoding
/// (Table 6).
pub const SBI_PMU_FW_PLATFORM: usize = 65535;

/// The `event_idx` of this type and code.
pub const fn event_idx(ty: usize, code: usize) -> usize {
    ty << EVENT_IDX_TYPE_SHIFT | code
}

/// The `event_idx` of a hardware general event (type #0) with a code of Table 2.
pub const fn hw_general_event(code: usize) -> usize {
    event_idx(TYPE_HW_GENERAL, code)
}

/// The `event_idx` of a hardware cache event (type #1) with ids of Tables 3, 4 and 5.
pub const fn hw_cache_event(cache: usize, op: usize, result: usize) -> usize {
    event_idx(
        TYPE_HW_CACHE,
        cache << CACHE_ID_SHIFT | op << CACHE_OP_SHIFT | result,
    )
}

/// The `event_idx` of a firmware event (type #15) with a code of Table 6.
pub const fn fw_event(code: usize) -> usize {
    event_idx(TYPE_FW, code)
}

/// The `event_idx` of the hardware raw event (type #2, code 0).
pub const RAW_EVENT: usize = event_idx(TYPE_HW_RAW, 0);
/// The `event_idx` of the hardware raw event v2 (type #3, code 0).
pub const RAW_V2_EVENT: usize = event_idx(TYPE_HW_RAW_V2, 0);

/// An `event_idx` whose type and code the specification defines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// Type #0 with a code of Table 2 other than SBI_PMU_HW_NO_EVENT.
    General(usize),
    /// Type #1 whose cache, operation and result ids are all in Tables 3 to 5.
    Cache,
    /// Type #2 (or #3 when `v2`) with code 0.
    Raw {
        /// Whether it is a raw event v2.
        v2: bool,
    },
    /// Type #15 with this code; every code is defined, see [`FwClass`].
    Firmware(usize),
}

/// Decodes an `event_idx`, or `None` when a reserved bit is set or the type or code is not one the
/// specification defines.
pub const fn decode_event_idx(raw: usize) -> Option<Event> {
    if raw >> EVENT_IDX_BITS != 0 {
        return None;
    }
    let code = raw & EVENT_IDX_CODE_MASK;
    match raw >> EVENT_IDX_TYPE_SHIFT {
        TYPE_HW_GENERAL if code >= SBI_PMU_HW_CPU_CYCLES && code <= SBI_PMU_HW_REF_CPU_CYCLES => {
            Some(Event::General(code))
        }
        TYPE_HW_CACHE
            if code >> CACHE_ID_SHIFT <= SBI_PMU_HW_CACHE_NODE
                && (code >> CACHE_OP_SHIFT) & CACHE_OP_MASK <= SBI_PMU_HW_CACHE_OP_PREFETCH =>
        {
            // The result id is one bit, and both of its values are in Table 5.
            Some(Event::Cache)
        }
        TYPE_HW_RAW if code == 0 => Some(Event::Raw { v2: false }),
        TYPE_HW_RAW_V2 if code == 0 => Some(Event::Raw { v2: true }),
        TYPE_FW => Some(Event::Firmware(code)),
        _ => None,
    }
}

/// Where a firmware event code falls in Table 6.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FwClass {
    /// Codes 0 to 21, the standard events.
    Standard,
    /// Codes 22 to 255, reserved for future use.
    Reserved,
    /// Codes 256 to 65534, SBI implementation specific events.
    ImplementationSpecific,
    /// Code 65535, SBI_PMU_FW_PLATFORM.
    Platform,
}

/// Classifies a firmware event code by Table 6.
pub const fn fw_class(code: usize) -> FwClass {
    if code <= SBI_PMU_FW_LAST_STANDARD {
        FwClass::Standard
    } else if code <= SBI_PMU_FW_LAST_RESERVED {
        FwClass::Reserved
    } else if code == SBI_PMU_FW_PLATFORM {
        FwClass::Platform
    } else {
        FwClass::ImplementationSpecific
    }
}

/// `counter_info[11:0]`: the CSR number (function #1).
pub const COUNTER_INFO_CSR_MASK: usize = 0xfff;
/// The shift of `counter_info[17:12]`: the width, one less than the number of bits.
pub const COUNTER_INFO_WIDTH_SHIFT: u32 = 12;
/// The mask of the width field, six bits.
pub const COUNTER_INFO_WIDTH_MASK: usize = 0x3f;
/// `counter_info[XLEN-1]`: the type, 0 for hardware and 1 for firmware.
pub const COUNTER_INFO_TYPE_SHIFT: u32 = usize::BITS - 1;

/// The `counter_info` word of a counter `bits` wide (1 to 64) read through `csr`, or of a firmware
/// counter. Bits XLEN-2 to 18 are reserved and left zero.
pub const fn counter_info(csr: u16, bits: u32, firmware: bool) -> usize {
    (csr as usize & COUNTER_INFO_CSR_MASK)
        | ((bits as usize - 1) & COUNTER_INFO_WIDTH_MASK) << COUNTER_INFO_WIDTH_SHIFT
        | (firmware as usize) << COUNTER_INFO_TYPE_SHIFT
}

/// SBI_PMU_CFG_FLAG_SKIP_MATCH, `config_flags[0:0]` (Table 8).
pub const SBI_PMU_CFG_FLAG_SKIP_MATCH: usize = 1 << 0;
/// SBI_PMU_CFG_FLAG_CLEAR_VALUE, `config_flags[1:1]` (Table 8).
pub const SBI_PMU_CFG_FLAG_CLEAR_VALUE: usize = 1 << 1;
/// SBI_PMU_CFG_FLAG_AUTO_START, `config_flags[2:2]` (Table 8).
pub const SBI_PMU_CFG_FLAG_AUTO_START: usize = 1 << 2;
/// SBI_PMU_CFG_FLAG_SET_VUINH, `config_flags[3:3]`: no counting in VU-mode (Table 8).
pub const SBI_PMU_CFG_FLAG_SET_VUINH: usize = 1 << 3;
/// SBI_PMU_CFG_FLAG_SET_VSINH, `config_flags[4:4]`: no counting in VS-mode (Table 8).
pub const SBI_PMU_CFG_FLAG_SET_VSINH: usize = 1 << 4;
/// SBI_PMU_CFG_FLAG_SET_UINH, `config_flags[5:5]`: no counting in U-mode (Table 8).
pub const SBI_PMU_CFG_FLAG_SET_UINH: usize = 1 << 5;
/// SBI_PMU_CFG_FLAG_SET_SINH, `config_flags[6:6]`: no counting in S-mode (Table 8).
pub const SBI_PMU_CFG_FLAG_SET_SINH: usize = 1 << 6;
/// SBI_PMU_CFG_FLAG_SET_MINH, `config_flags[7:7]`: no counting in M-mode (Table 8).
pub const SBI_PMU_CFG_FLAG_SET_MINH: usize = 1 << 7;
/// The event filtering hints, `config_flags[3:7]`.
pub const CFG_FLAG_INHIBIT_HINTS: usize = SBI_PMU_CFG_FLAG_SET_VUINH
    | SBI_PMU_CFG_FLAG_SET_VSINH
    | SBI_PMU_CFG_FLAG_SET_UINH
    | SBI_PMU_CFG_FLAG_SET_SINH
    | SBI_PMU_CFG_FLAG_SET_MINH;
/// `config_flags[8:XLEN-1]`, reserved and required to be zero (Table 8).
pub const CFG_FLAGS_RESERVED: usize = !0xff;

/// SBI_PMU_START_SET_INIT_VALUE, `start_flags[0:0]` (Table 10).
pub const SBI_PMU_START_SET_INIT_VALUE: usize = 1 << 0;
/// SBI_PMU_START_FLAG_INIT_SNAPSHOT, `start_flags[1:1]` (Table 10).
pub const SBI_PMU_START_FLAG_INIT_SNAPSHOT: usize = 1 << 1;
/// `start_flags[2:XLEN-1]`, reserved and required to be zero (Table 10).
pub const START_FLAGS_RESERVED: usize = !0x3;

/// SBI_PMU_STOP_FLAG_RESET, `stop_flags[0:0]` (Table 12).
pub const SBI_PMU_STOP_FLAG_RESET: usize = 1 << 0;
/// SBI_PMU_STOP_FLAG_TAKE_SNAPSHOT, `stop_flags[1:1]` (Table 12).
pub const SBI_PMU_STOP_FLAG_TAKE_SNAPSHOT: usize = 1 << 1;
/// `stop_flags[2:XLEN-1]`, reserved and required to be zero (Table 12).
pub const STOP_FLAGS_RESERVED: usize = !0x3;

/// The value of both `shmem_phys_lo` and `shmem_phys_hi` that disables the snapshot shared memory:
/// all ones (function #7).
pub const SHMEM_DISABLE: usize = usize::MAX;
/// The size of the snapshot shared memory, which is also the alignment of `shmem_phys_lo`
/// (function #7).
pub const SNAPSHOT_SIZE: usize = 4096;
/// The offset of `counter_overflow_bitmap`, 8 bytes (Table 16).
pub const SNAPSHOT_OVERFLOW_BITMAP_OFFSET: usize = 0x0000;
/// The offset of `counter_values`, 512 bytes (Table 16).
pub const SNAPSHOT_COUNTER_VALUES_OFFSET: usize = 0x0008;
/// The size of `counter_values`: 64 counters of 8 bytes (Table 16).
pub const SNAPSHOT_COUNTER_VALUES_SIZE: usize = 512;

/// The size of one event-info entry, which is also the alignment of `shmem_phys_lo` (function #8).
pub const EVENT_INFO_ENTRY_SIZE: usize = 16;
/// The offset of word 0, `event_idx` (Table 18).
pub const EVENT_INFO_EVENT_IDX_OFFSET: usize = 0;
/// The offset of word 1, `output` (Table 18).
pub const EVENT_INFO_OUTPUT_OFFSET: usize = 4;
/// The offset of words 2-3, `event_data` (Table 18).
pub const EVENT_INFO_EVENT_DATA_OFFSET: usize = 8;
/// Bits 31:20 of word 0, reserved and required to be zero (Table 18).
pub const EVENT_INFO_EVENT_IDX_RESERVED: u32 = !0xf_ffff;
/// Bit 0 of word 1: the event is supported (Table 18).
pub const EVENT_INFO_OUTPUT_SUPPORTED: u32 = 1;

/// The `cycle` CSR; `hpmcounterN` is `cycle` + N (the unprivileged counter CSRs of the privileged
/// specification's CSR listing).
pub const CSR_CYCLE: u16 = 0xC00;
/// The `instret` CSR, counter 2.
pub const CSR_INSTRET: u16 = 0xC02;
/// The `hpmcounter31` CSR, the last counter.
pub const CSR_HPMCOUNTER31: u16 = 0xC1F;
/// The `scountovf` CSR of the Sscofpmf extension: bit N is the overflow bit of counter N.
pub const CSR_SCOUNTOVF: u16 = 0xDA0;
