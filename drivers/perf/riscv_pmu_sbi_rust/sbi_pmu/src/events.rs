// SPDX-License-Identifier: GPL-2.0

//! Mapping of perf event attributes to SBI PMU requests.
//!
//! This is `pmu_sbi_event_map()` and `pmu_sbi_get_filter_flags()` of the C driver
//! (`drivers/perf/riscv_pmu_sbi.c`): the same perf ABI (`event` = `config:0-47`, or `config:0-55` with
//! SBI v3.0, and `firmware` = `config:62-63`) and the same errno for every rejected attribute, so perf
//! prints the same messages for both drivers.

use crate::abi::{
    id_enums, CacheId, CacheOp, CacheResult, CfgFlags, EventIdx, HwGeneralEvent, SbiVersion,
    NUM_CACHE_EVENTS,
};
pub use crate::errno::{EINVAL, ENOENT, EOPNOTSUPP};

/// `PERF_TYPE_HARDWARE`: generic hardware events, `config` is a `PERF_COUNT_HW_*` id.
pub const PERF_TYPE_HARDWARE: u32 = 0;
/// `PERF_TYPE_SOFTWARE`: handled by perf core, never by this PMU (for the tests).
#[cfg(test)]
pub const PERF_TYPE_SOFTWARE: u32 = 1;
/// `PERF_TYPE_TRACEPOINT`: handled by perf core, never by this PMU (for the tests).
#[cfg(test)]
pub const PERF_TYPE_TRACEPOINT: u32 = 2;
/// `PERF_TYPE_HW_CACHE`: generic cache events, `config` = cache | op << 8 | result << 16.
pub const PERF_TYPE_HW_CACHE: u32 = 3;
/// `PERF_TYPE_RAW`: raw events; the C driver registers the `cpu` PMU with this type.
pub const PERF_TYPE_RAW: u32 = 4;

/// `PERF_COUNT_HW_MAX`: the number of generic hardware event ids.
pub const PERF_COUNT_HW_MAX: u64 = 10;

/// `RISCV_PMU_CONFIG1_GUEST_EVENTS`: `config1` bit 0 asks for guest (VS/VU-mode) filtering.
pub const RISCV_PMU_CONFIG1_GUEST_EVENTS: u64 = 0x1;
/// `RISCV_PMU_RAW_EVENT_MASK`: the mhpmevent bits of a raw event before SBI v3.0 (`config:0-47`).
pub const RISCV_PMU_RAW_EVENT_MASK: u64 = (1 << 48) - 1;
/// `RISCV_PMU_RAW_EVENT_V2_MASK`: the mhpmevent bits of a raw event with SBI v3.0 (`config:0-55`).
pub const RISCV_PMU_RAW_EVENT_V2_MASK: u64 = (1 << 56) - 1;
/// `RISCV_PMU_PLAT_FW_EVENT_MASK`: the `event_data` of a platform firmware event (`config:0-61`).
pub const RISCV_PMU_PLAT_FW_EVENT_MASK: u64 = (1 << 62) - 1;
/// The shift of the raw event class in `config` (bits 63:62).
const RAW_CLASS_SHIFT: u32 = 62;
/// The bits of `config` that carry the firmware event code (`config:0-15`).
const FW_EVENT_CODE_MASK: u64 = 0xffff;

/// The perf attribute fields the mapping depends on, copied from `struct perf_event_attr` by the
/// kernel glue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EventAttr {
    /// `attr.type` (`PERF_TYPE_*`).
    pub ty: u32,
    /// `attr.config`.
    pub config: u64,
    /// `attr.config1`; bit 0 is `RISCV_PMU_CONFIG1_GUEST_EVENTS`.
    pub config1: u64,
    /// `attr.exclude_user`.
    pub exclude_user: bool,
    /// `attr.exclude_kernel`.
    pub exclude_kernel: bool,
    /// `attr.exclude_hv`.
    pub exclude_hv: bool,
    /// `attr.exclude_host`.
    pub exclude_host: bool,
    /// `attr.exclude_guest`.
    pub exclude_guest: bool,
    /// `is_sampling_event()`: `attr.sample_period != 0`.
    pub sampling: bool,
}

/// What an event asks of the SBI PMU: the arguments of `sbi_pmu_counter_config_matching`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventRequest {
    /// The `event_idx` (the C driver's `hwc->event_base`).
    pub event_idx: EventIdx,
    /// The `event_data` (the C driver's `hwc->config`).
    pub event_data: u64,
    /// The filter flags from the `exclude_*` bits (`pmu_sbi_get_filter_flags()`).
    pub cflags: CfgFlags,
}

/// Why an attribute cannot be mapped; [`MapError::errno`] is what the C driver returns for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapError {
    /// `PERF_TYPE_HARDWARE` with `config >= PERF_COUNT_HW_MAX` (EINVAL).
    HwConfigOutOfRange,
    /// `PERF_TYPE_HW_CACHE` whose cache id, operation or result is out of range (EINVAL).
    CacheConfigOutOfRange,
    /// `PERF_TYPE_RAW` with `config[63:62]` = 0b01, which no event class uses (ENOENT).
    RawClassReserved,
    /// A raw hardware event with bits set between its field (`config:0-47`, or `config:0-55` with SBI
    /// v3.0) and the class bits 62-63 (ENOENT, as Linux 6.18's driver returns; 6.12's drops them).
    RawBitsAboveField,
    /// An attribute type this PMU does not handle; perf then offers the event to other PMUs (ENOENT).
    UnsupportedType,
    /// A standard hardware or cache event that no counter of this platform can count, found by the
    /// availability check at probe (ENOENT, so perf prints `<not supported>`).
    Unavailable,
    /// A request the PMU cannot serve at all, such as branch stack sampling (EOPNOTSUPP).
    NotSupported,
}

impl MapError {
    /// The positive errno the C driver returns for this rejection.
    pub const fn errno(self) -> i32 {
        match self {
            MapError::HwConfigOutOfRange | MapError::CacheConfigOutOfRange => EINVAL,
            MapError::RawClassReserved
            | MapError::RawBitsAboveField
            | MapError::UnsupportedType
            | MapError::Unavailable => ENOENT,
            MapError::NotSupported => EOPNOTSUPP,
        }
    }
}

/// `pmu_hw_event_map[]`: the SBI hardware general event for a `PERF_COUNT_HW_*` id.
///
/// perf's ids 0 to 9 (cycles, instructions, cache references, cache misses, branches, branch misses,
/// bus cycles, stalled frontend, stalled backend, reference cycles) are SBI codes 1 to 10.
pub const fn pmu_hw_event_map(config: u64) -> Result<EventIdx, MapError> {
    if config >= PERF_COUNT_HW_MAX {
        return Err(MapError::HwConfigOutOfRange);
    }
    // The check above bounds config to 0..=9, the index of SBI code `config + 1`.
    Ok(EventIdx::hw(HwGeneralEvent::ALL[config as usize]))
}

/// `pmu_event_find_cache()`: decodes a `PERF_TYPE_HW_CACHE` config (cache id in bits 7:0, operation in
/// bits 15:8, result in bits 23:16; higher bits are ignored as in the C driver) with bounds checks.
pub const fn pmu_event_find_cache(config: u64) -> Result<EventIdx, MapError> {
    // Each field is masked to 8 bits first, so the conversions are exact.
    let cache = CacheId::from_raw((config & 0xff) as u16);
    let op = CacheOp::from_raw(((config >> 8) & 0xff) as u16);
    let result = CacheResult::from_raw(((config >> 16) & 0xff) as u16);
    match (cache, op, result) {
        (Some(cache), Some(op), Some(result)) => Ok(EventIdx::cache(cache, op, result)),
        _ => Err(MapError::CacheConfigOutOfRange),
    }
}

/// `pmu_sbi_get_filter_flags()`: the inhibit hints for the `exclude_*` bits.
///
/// For guest events (`config1` bit 0) `exclude_kernel` and `exclude_user` inhibit VS and VU mode and
/// `exclude_hv` inhibits S mode (the host kernel, which is the hypervisor); for host events they
/// inhibit S and U mode and `exclude_hv` is ignored. `exclude_host` inhibits U and S, `exclude_guest`
/// VS and VU. M mode is never inhibited.
pub fn filter_flags(attr: &EventAttr) -> CfgFlags {
    let guest = attr.config1 & RISCV_PMU_CONFIG1_GUEST_EVENTS != 0;
    let (vs, vu) = (CfgFlags::SET_VSINH, CfgFlags::SET_VUINH);
    let (s, u) = (CfgFlags::SET_SINH, CfgFlags::SET_UINH);
    // The modes `exclude_kernel` and `exclude_user` inhibit.
    let (kernel, user) = if guest { (vs, vu) } else { (s, u) };
    let when = |exclude: bool, flags: CfgFlags| if exclude { flags } else { CfgFlags::empty() };
    when(attr.exclude_kernel, kernel)
        | when(attr.exclude_user, user)
        | when(guest && attr.exclude_hv, s)
        | when(attr.exclude_host, u | s)
        | when(attr.exclude_guest, vs | vu)
}

/// `pmu_sbi_event_map()`: maps a perf attribute to the SBI request, with the C driver's errno for every
/// rejection.
///
/// `PERF_TYPE_RAW` events are told apart by `config[63:62]`:
/// - 0b00, hardware raw event: before SBI v3.0 `event_idx` 0x20000 (type 2) with `event_data` =
///   `config[47:0]`; with SBI v3.0 `event_idx` 0x30000 (type 3, raw events v2) with `event_data` =
///   `config[55:0]`. Higher bits up to 61 are ignored, as `RISCV_PMU_RAW_EVENT_MASK` does in the C
///   driver.
/// - 0b10, SBI firmware event: type 15 with code `config[15:0]`; the other bits are ignored.
/// - 0b11, platform firmware event: SBI_PMU_FW_PLATFORM (`event_idx` 0xfffff) with `event_data` =
///   `config[61:0]`.
/// - 0b01: rejected with ENOENT.
///
/// The two firmware classes (`config` bit 63 set, `pmu_sbi_is_fw_event()`) are the requests of
/// type 15 ([`EventType::Firmware`](crate::abi::EventType::Firmware)), counted by firmware counters.
pub fn event_map(attr: &EventAttr, version: SbiVersion) -> Result<EventRequest, MapError> {
    let (event_idx, event_data) = match attr.ty {
        PERF_TYPE_HARDWARE => (pmu_hw_event_map(attr.config)?, 0),
        PERF_TYPE_HW_CACHE => (pmu_event_find_cache(attr.config)?, 0),
        PERF_TYPE_RAW => raw_event_map(attr.config, version)?,
        _ => return Err(MapError::UnsupportedType),
    };
    Ok(EventRequest {
        event_idx,
        event_data,
        cflags: filter_flags(attr),
    })
}

/// The hardware raw event of an SBI version and the `config` bits its `event_data` takes: raw
/// events v2 (`config:0-55`) with SBI v3.0, else `config:0-47`.
pub fn raw_event(version: SbiVersion) -> (EventIdx, u64) {
    if version >= SbiVersion::V3_0 {
        (EventIdx::RAW_V2, RISCV_PMU_RAW_EVENT_V2_MASK)
    } else {
        (EventIdx::RAW, RISCV_PMU_RAW_EVENT_MASK)
    }
}

/// The `PERF_TYPE_RAW` part of [`event_map`].
fn raw_event_map(config: u64, version: SbiVersion) -> Result<(EventIdx, u64), MapError> {
    match config >> RAW_CLASS_SHIFT {
        0b00 => {
            let (idx, mask) = raw_event(version);
            // Bits between the raw event field and the class are refused, as Linux 6.18 does: a raw
            // `rNNN` event that sets them names no event of this PMU. (6.12's C driver drops them and
            // counts the event the low bits select.)
            if config & !mask & RISCV_PMU_PLAT_FW_EVENT_MASK != 0 {
                return Err(MapError::RawBitsAboveField);
            }
            Ok((idx, config))
        }
        // The code is masked to 16 bits first, so the conversion is exact.
        0b10 => Ok((EventIdx::fw((config & FW_EVENT_CODE_MASK) as u16), 0)),
        0b11 => Ok((EventIdx::FW_PLATFORM, config & RISCV_PMU_PLAT_FW_EVENT_MASK)),
        _ => Err(MapError::RawClassReserved),
    }
}

id_enums! {
    /// The `kernel.perf_user_access` sysctl, sampled into each event at event_init (the C driver's
    /// `PERF_EVENT_FLAG_NO_USER_ACCESS`, `PERF_EVENT_FLAG_USER_ACCESS` and
    /// `PERF_EVENT_FLAG_LEGACY`). `from_sysctl` gives the mode of a sysctl value; others are
    /// refused by the sysctl's range.
    #[derive(Default)]
    pub enum UserAccess: i32, from_sysctl(i32), 3 {
        /// 0: user space cannot read counters.
        NoUserAccess = 0,
        /// 1 (default): user space reads a counter only through perf mmap (rdpmc-style).
        #[default]
        UserAccess = 1,
        /// 2: legacy mode; `cycle` and `instret` stay readable, and cycles/instructions events are
        /// forced onto those fixed counters.
        Legacy = 2,
    }
}

/// Which standard events (the 10 hardware general events and the 42 cache events) the platform can
/// count, as the availability check at probe found (`pmu_sbi_check_std_events()`, or
/// `sbi_pmu_event_get_info` with SBI v3.0). Events marked unavailable are rejected with ENOENT, so
/// `perf list` and `perf stat` do not show phantom events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StdEvents {
    /// Bit `i` set when [`StdEvents::nth`]`(i)` is available.
    avail: u64,
}

impl StdEvents {
    /// All standard events available: the state before the check has run, and the result when the
    /// check could not be made.
    pub const ALL: Self = Self {
        avail: (1 << Self::COUNT) - 1,
    };
    /// No standard event available.
    pub const NONE: Self = Self { avail: 0 };

    /// The standard event at position `i` of the list the check walks: the 10 hardware general events
    /// in code order, then the 42 cache events in table order. `None` past the end.
    pub const fn nth(i: usize) -> Option<EventIdx> {
        if i < HwGeneralEvent::ALL.len() {
            return Some(EventIdx::hw(HwGeneralEvent::ALL[i]));
        }
        let c = i - HwGeneralEvent::ALL.len();
        if c >= NUM_CACHE_EVENTS {
            return None;
        }
        let cache = CacheId::ALL[c / 6];
        let op = CacheOp::ALL[(c / 2) % 3];
        let result = CacheResult::ALL[c % 2];
        Some(EventIdx::cache(cache, op, result))
    }

    /// The number of standard events (52).
    pub const COUNT: usize = HwGeneralEvent::ALL.len() + NUM_CACHE_EVENTS;

    /// Records whether a standard event is available; other events are ignored.
    pub fn set(&mut self, idx: EventIdx, available: bool) {
        let b = Self::bit(idx);
        self.avail = self.avail & !b | if available { b } else { 0 };
    }

    /// Whether an event may be used: standard events must have been found available; every other
    /// event (raw, firmware) is left to `sbi_pmu_counter_config_matching` to accept or refuse.
    pub const fn is_available(&self, idx: EventIdx) -> bool {
        let b = Self::bit(idx);
        self.avail & b == b
    }

    /// The bit of a standard event: that of its position in the list [`StdEvents::nth`] walks; 0
    /// for other events. Computed from the event's fields, not searched: `event_init` asks for it.
    const fn bit(idx: EventIdx) -> u64 {
        let position = match (idx.hw_event(), idx.cache_parts()) {
            // Codes 1 to 10 are at positions 0 to 9.
            (Some(event), _) => event.code() as usize - 1,
            // The cache events follow, in the 7 × 3 × 2 table (cache-major, as
            // `pmu_cache_event_map`).
            (None, Some((c, o, r))) => {
                HwGeneralEvent::ALL.len() + (c as usize * 3 + o as usize) * 2 + r as usize
            }
            (None, None) => return 0,
        };
        1 << position
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{EventType, FW_PLATFORM_CODE};

    fn attr(ty: u32, config: u64) -> EventAttr {
        EventAttr {
            ty,
            config,
            ..EventAttr::default()
        }
    }

    const V2: SbiVersion = SbiVersion::V2_0;
    const V3: SbiVersion = SbiVersion::V3_0;

    #[test]
    fn hardware_events_follow_pmu_hw_event_map() {
        // perf id -> SBI code, as pmu_hw_event_map[] in the C driver.
        let table = [
            (0, 1),  // PERF_COUNT_HW_CPU_CYCLES -> SBI_PMU_HW_CPU_CYCLES
            (1, 2),  // INSTRUCTIONS
            (2, 3),  // CACHE_REFERENCES
            (3, 4),  // CACHE_MISSES
            (4, 5),  // BRANCH_INSTRUCTIONS
            (5, 6),  // BRANCH_MISSES
            (6, 7),  // BUS_CYCLES
            (7, 8),  // STALLED_CYCLES_FRONTEND
            (8, 9),  // STALLED_CYCLES_BACKEND
            (9, 10), // REF_CPU_CYCLES
        ];
        for (config, code) in table {
            let req = event_map(&attr(PERF_TYPE_HARDWARE, config), V2).unwrap();
            assert_eq!(req.event_idx.raw(), code);
            assert_eq!(req.event_data, 0);
            assert_ne!(req.event_idx.ty(), EventType::Firmware);
            assert_eq!(req.cflags, CfgFlags::empty());
        }
        for config in [10, 11, 0xff, 1 << 32, u64::MAX] {
            let err = event_map(&attr(PERF_TYPE_HARDWARE, config), V2).unwrap_err();
            assert_eq!(err, MapError::HwConfigOutOfRange);
            assert_eq!(err.errno(), EINVAL);
        }
    }

    #[test]
    fn cache_events_follow_pmu_cache_event_map_with_bounds_checks() {
        for cache in 0..=255u64 {
            for op in 0..=255u64 {
                for result in [0u64, 1, 2, 255] {
                    let config = cache | op << 8 | result << 16;
                    let got = event_map(&attr(PERF_TYPE_HW_CACHE, config), V2);
                    if cache < 7 && op < 3 && result < 2 {
                        let req = got.unwrap();
                        let code = (cache << 3 | op << 1 | result) as u32;
                        assert_eq!(req.event_idx.raw(), 0x10000 | code);
                        assert_eq!(req.event_data, 0);
                    } else {
                        assert_eq!(got, Err(MapError::CacheConfigOutOfRange));
                        assert_eq!(MapError::CacheConfigOutOfRange.errno(), EINVAL);
                    }
                }
            }
        }
        // Bits above 23 are ignored, as in the C driver.
        let req = event_map(&attr(PERF_TYPE_HW_CACHE, 0xdead_0000_0001_0101), V2).unwrap();
        assert_eq!(
            req.event_idx,
            EventIdx::cache(CacheId::L1i, CacheOp::Write, CacheResult::Miss)
        );
    }

    #[test]
    fn raw_hardware_events_before_sbi_3() {
        for config in [0u64, 1, 0x1234, RISCV_PMU_RAW_EVENT_MASK] {
            let req = event_map(&attr(PERF_TYPE_RAW, config), V2).unwrap();
            assert_eq!(req.event_idx.raw(), 0x20000);
            assert_eq!(req.event_idx.ty(), EventType::Raw);
            assert_eq!(req.event_data, config);
            assert_ne!(req.event_idx.ty(), EventType::Firmware);
        }
        for bit in 48..62 {
            assert_eq!(
                event_map(&attr(PERF_TYPE_RAW, 1 << bit | 5), V2),
                Err(MapError::RawBitsAboveField),
                "bit {bit}"
            );
        }
        assert_eq!(MapError::RawBitsAboveField.errno(), ENOENT);
        // SBI v0.3 behaves like v2.0.
        let req = event_map(&attr(PERF_TYPE_RAW, 7), SbiVersion::V0_3).unwrap();
        assert_eq!(req.event_idx, EventIdx::RAW);
    }

    #[test]
    fn raw_hardware_events_with_sbi_3_use_raw_v2() {
        for config in [0u64, 1 << 48, RISCV_PMU_RAW_EVENT_V2_MASK] {
            let req = event_map(&attr(PERF_TYPE_RAW, config), V3).unwrap();
            assert_eq!(req.event_idx.raw(), 0x30000);
            assert_eq!(req.event_data, config);
        }
        for bit in 56..62 {
            assert_eq!(
                event_map(&attr(PERF_TYPE_RAW, 1 << bit | 9), V3),
                Err(MapError::RawBitsAboveField),
                "bit {bit}"
            );
        }
        let later = SbiVersion { major: 3, minor: 1 };
        assert_eq!(
            event_map(&attr(PERF_TYPE_RAW, 1), later).unwrap().event_idx,
            EventIdx::RAW_V2
        );
    }

    #[test]
    fn firmware_and_platform_firmware_events() {
        for code in [0u64, 5, 21, 22, 255, 256, 0xfffe, 0xffff] {
            let config = 0b10 << 62 | code;
            for version in [V2, V3] {
                let req = event_map(&attr(PERF_TYPE_RAW, config), version).unwrap();
                assert_eq!(req.event_idx.raw(), 0xf0000 | code as u32);
                assert_eq!(req.event_data, 0);
                assert_eq!(req.event_idx.ty(), EventType::Firmware);
            }
        }
        // Bits 61:16 of a firmware event are ignored, as in the C driver.
        let req = event_map(&attr(PERF_TYPE_RAW, 0b10 << 62 | 0x3fff_0000_0005), V2).unwrap();
        assert_eq!(req.event_idx, EventIdx::fw(5));

        let config = 0b11 << 62 | 0x2bad_cafe_f00d_0001;
        let req = event_map(&attr(PERF_TYPE_RAW, config), V2).unwrap();
        assert_eq!(req.event_idx.raw(), 0xfffff);
        assert_eq!(req.event_idx.code(), FW_PLATFORM_CODE);
        assert_eq!(req.event_data, 0x2bad_cafe_f00d_0001);
        assert_eq!(req.event_idx.ty(), EventType::Firmware);

        let err = event_map(&attr(PERF_TYPE_RAW, 0b01 << 62 | 3), V2).unwrap_err();
        assert_eq!(err, MapError::RawClassReserved);
        assert_eq!(err.errno(), ENOENT);
    }

    #[test]
    fn other_types_are_left_to_other_pmus() {
        for ty in [PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT, 5, 8, 42, u32::MAX] {
            let err = event_map(&attr(ty, 0), V2).unwrap_err();
            assert_eq!(err, MapError::UnsupportedType);
            assert_eq!(err.errno(), ENOENT);
        }
        assert_eq!(MapError::Unavailable.errno(), ENOENT);
        assert_eq!(MapError::NotSupported.errno(), EOPNOTSUPP);
    }

    #[test]
    fn filter_flags_match_pmu_sbi_get_filter_flags() {
        // Every combination of the five exclude bits, for host and guest events, against the C logic
        // written out independently.
        for bits in 0..32u32 {
            for guest in [false, true] {
                let a = EventAttr {
                    ty: PERF_TYPE_HARDWARE,
                    config1: u64::from(guest),
                    exclude_user: bits & 1 != 0,
                    exclude_kernel: bits & 2 != 0,
                    exclude_hv: bits & 4 != 0,
                    exclude_host: bits & 8 != 0,
                    exclude_guest: bits & 16 != 0,
                    ..EventAttr::default()
                };
                let mut expect = CfgFlags::empty();
                if a.exclude_kernel {
                    expect |= if guest {
                        CfgFlags::SET_VSINH
                    } else {
                        CfgFlags::SET_SINH
                    };
                }
                if a.exclude_user {
                    expect |= if guest {
                        CfgFlags::SET_VUINH
                    } else {
                        CfgFlags::SET_UINH
                    };
                }
                if guest && a.exclude_hv {
                    expect |= CfgFlags::SET_SINH;
                }
                if a.exclude_host {
                    expect |= CfgFlags::SET_UINH | CfgFlags::SET_SINH;
                }
                if a.exclude_guest {
                    expect |= CfgFlags::SET_VSINH | CfgFlags::SET_VUINH;
                }
                assert_eq!(filter_flags(&a), expect, "bits {bits:#x} guest {guest}");
                assert!(!filter_flags(&a).contains(CfgFlags::SET_MINH));
                assert_eq!(event_map(&a, V2).unwrap().cflags, expect);
            }
        }
        // Common perf modifiers: cycles:u sets exclude_kernel and exclude_hv.
        let u = EventAttr {
            exclude_kernel: true,
            exclude_hv: true,
            ..attr(PERF_TYPE_HARDWARE, 0)
        };
        assert_eq!(filter_flags(&u), CfgFlags::SET_SINH);
        let k = EventAttr {
            exclude_user: true,
            exclude_hv: true,
            ..attr(PERF_TYPE_HARDWARE, 0)
        };
        assert_eq!(filter_flags(&k), CfgFlags::SET_UINH);
    }

    #[test]
    fn user_access_modes_follow_the_sysctl() {
        assert_eq!(UserAccess::from_sysctl(0), Some(UserAccess::NoUserAccess));
        assert_eq!(UserAccess::from_sysctl(1), Some(UserAccess::UserAccess));
        assert_eq!(UserAccess::from_sysctl(2), Some(UserAccess::Legacy));
        assert_eq!(UserAccess::from_sysctl(3), None);
        assert_eq!(UserAccess::from_sysctl(-1), None);
    }

    #[test]
    fn std_events_cover_the_52_standard_events() {
        let mut seen = [false; 0x20000];
        let mut n = 0;
        while let Some(idx) = StdEvents::nth(n) {
            assert!(!seen[idx.raw() as usize], "{idx:?} twice");
            seen[idx.raw() as usize] = true;
            n += 1;
        }
        assert_eq!(n, StdEvents::COUNT);
        assert_eq!(n, 52);

        let mut avail = StdEvents::ALL;
        for i in 0..StdEvents::COUNT {
            assert!(avail.is_available(StdEvents::nth(i).unwrap()));
        }
        // Each event has the bit of its position in the list (as `avail`'s doc says): one event
        // made available makes only that one available.
        for i in 0..StdEvents::COUNT {
            assert_eq!(StdEvents::bit(StdEvents::nth(i).unwrap()), 1 << i, "{i}");
            let mut one = StdEvents::NONE;
            one.set(StdEvents::nth(i).unwrap(), true);
            for j in 0..StdEvents::COUNT {
                assert_eq!(
                    one.is_available(StdEvents::nth(j).unwrap()),
                    i == j,
                    "{i} {j}"
                );
            }
        }
        let misses = EventIdx::cache(CacheId::Dtlb, CacheOp::Read, CacheResult::Miss);
        avail.set(misses, false);
        avail.set(EventIdx::hw(HwGeneralEvent::BusCycles), false);
        for i in 0..StdEvents::COUNT {
            let idx = StdEvents::nth(i).unwrap();
            let expect = idx != misses && idx != EventIdx::hw(HwGeneralEvent::BusCycles);
            assert_eq!(avail.is_available(idx), expect, "{idx:?}");
        }
        // Raw and firmware events are never filtered here.
        let mut none = StdEvents::NONE;
        assert!(none.is_available(EventIdx::RAW));
        assert!(none.is_available(EventIdx::fw(3)));
        none.set(EventIdx::fw(3), false);
        assert!(none.is_available(EventIdx::fw(3)));
        let req = event_map(&attr(PERF_TYPE_HARDWARE, 6), V2).unwrap();
        assert!(!avail.is_available(req.event_idx));
        assert!(StdEvents::ALL.is_available(req.event_idx));
    }
}
