// SPDX-License-Identifier: GPL-2.0

//! The event maps of a `riscv,pmu` device tree node
//! (`Documentation/devicetree/bindings/perf/riscv,pmu.yaml`).
//!
//! Three optional properties, each a matrix of big-endian 32-bit cells:
//! - `riscv,event-to-mhpmevent`: rows of `<event_idx selector_hi selector_lo>`, the value to write to
//!   `mhpmeventX` for a standard event (one to one, no raw events);
//! - `riscv,event-to-mhpmcounters`: rows of `<event_idx_start event_idx_end counter_bitmap>`, the
//!   `mhpmcounterX` that can count a range of events (no raw events);
//! - `riscv,raw-event-to-mhpmcounters`: rows of `<match_hi match_lo mask_hi mask_lo counter_bitmap>`,
//!   the counters for raw events whose `event_data & mask == match`.
//!
//! Counter bitmaps name hardware counters (bit `n` is `mhpmcounterN`, CSR `cycle + n`), not logical
//! SBI counter indices. [`DtPmuMaps::parse`] applies the validity rules OpenSBI applies when it reads
//! the same properties (`lib/utils/fdt/fdt_pmu.c` and `sbi_pmu_add_*_counter_map()` in
//! `lib/sbi/sbi_pmu.c`), so the driver accepts what firmware accepts; a malformed property is a typed
//! [`DtError`], never a panic. Parsing borrows the property bytes and allocates nothing.

use crate::abi::{EventIdx, EventType, HwGeneralEvent};

/// The three properties of the binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DtProperty {
    /// `riscv,event-to-mhpmevent`.
    EventToMhpmevent,
    /// `riscv,event-to-mhpmcounters`.
    EventToMhpmcounters,
    /// `riscv,raw-event-to-mhpmcounters`.
    RawEventToMhpmcounters,
}

impl DtProperty {
    /// The property name.
    pub const fn name(self) -> &'static str {
        match self {
            DtProperty::EventToMhpmevent => "riscv,event-to-mhpmevent",
            DtProperty::EventToMhpmcounters => "riscv,event-to-mhpmcounters",
            DtProperty::RawEventToMhpmcounters => "riscv,raw-event-to-mhpmcounters",
        }
    }

    /// The number of 32-bit cells in one row.
    pub const fn cells_per_row(self) -> usize {
        match self {
            DtProperty::EventToMhpmevent | DtProperty::EventToMhpmcounters => 3,
            DtProperty::RawEventToMhpmcounters => 5,
        }
    }

    const fn row_bytes(self) -> usize {
        self.cells_per_row() * 4
    }
}

/// Why a property was refused. `row` counts from 0 within the property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DtError {
    /// The property length is not a whole number of rows.
    Length {
        /// The property.
        property: DtProperty,
        /// Its length in bytes.
        len: usize,
    },
    /// More rows than OpenSBI's tables hold: 255 counter map rows in total (`SBI_PMU_HW_EVENT_MAX`
    /// minus one), 512 selector rows.
    TooManyRows {
        /// The property whose rows overflowed the table.
        property: DtProperty,
    },
    /// An `event-to-mhpmcounters` row whose first event is above its last one.
    ReversedRange {
        /// The row.
        row: usize,
    },
    /// An `event-to-mhpmcounters` row naming a raw event or any `event_idx` at or above 0x20000,
    /// which the binding and OpenSBI forbid.
    RawEventInRange {
        /// The row.
        row: usize,
    },
    /// A counter bitmap with one of the fixed counters `cycle`, `time`, `instret` (bits 0-2) for
    /// events other than cycles and instructions; OpenSBI refuses it with SBI_ERR_DENIED.
    FixedCounters {
        /// The property.
        property: DtProperty,
        /// The row.
        row: usize,
    },
    /// A row whose events overlap those of an earlier row (same range, or the same raw match and
    /// mask), which OpenSBI refuses.
    Overlap {
        /// The property.
        property: DtProperty,
        /// The row.
        row: usize,
    },
    /// An `event-to-mhpmevent` row whose `event_idx` has reserved bits set, or is not a hardware
    /// general or cache event.
    InvalidSelectorEvent {
        /// The row.
        row: usize,
    },
    /// An `event-to-mhpmevent` row for an event an earlier row already maps (the map is one to one).
    DuplicateSelector {
        /// The row.
        row: usize,
    },
    /// `riscv,event-to-mhpmevent` without `riscv,event-to-mhpmcounters`, which the binding requires.
    SelectorsWithoutCounters,
}

/// OpenSBI's `SBI_PMU_HW_EVENT_MAX`: its table of counter maps holds one entry less than this.
const HW_EVENT_MAX: usize = 256;
/// OpenSBI v1.5 keeps selectors in a static array of `2 * SBI_PMU_HW_EVENT_MAX` entries.
const SELECTOR_MAX: usize = 2 * HW_EVENT_MAX;
/// The first raw `event_idx` (type 2); `event-to-mhpmcounters` must stay below it.
const RAW_EVENT_IDX: u32 = 0x20000;
/// Counter bitmap bits of the fixed counters `cycle`, `time` and `instret`.
const FIXED_CTR_MASK: u32 = 0x7;

/// One row of `riscv,event-to-mhpmevent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventSelector {
    /// The standard event.
    pub event_idx: EventIdx,
    /// The 64-bit value for `mhpmeventX` (`selector_hi << 32 | selector_lo`).
    pub selector: u64,
}

/// One row of `riscv,event-to-mhpmcounters`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CounterRange {
    /// The first raw `event_idx` of the range.
    pub start: u32,
    /// The last raw `event_idx` of the range (inclusive).
    pub end: u32,
    /// Bit `n` set when `mhpmcounterN` can count the events.
    pub counters: u32,
}

impl CounterRange {
    /// Whether the range contains the event.
    pub const fn contains(&self, event_idx: u32) -> bool {
        self.start <= event_idx && event_idx <= self.end
    }
}

/// One row of `riscv,raw-event-to-mhpmcounters`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RawCounterMap {
    /// The invariant bits a raw event must have (`match_hi << 32 | match_lo`).
    pub select: u64,
    /// Which bits of the raw event are compared (`mask_hi << 32 | mask_lo`).
    pub select_mask: u64,
    /// Bit `n` set when `mhpmcounterN` can count the events.
    pub counters: u32,
}

impl RawCounterMap {
    /// Whether a raw event with this `event_data` matches the row, as OpenSBI compares them.
    pub const fn matches(&self, event_data: u64) -> bool {
        event_data & self.select_mask == self.select
    }
}

/// The validated event maps of a `riscv,pmu` node, borrowing the property values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DtPmuMaps<'a> {
    selectors: &'a [u8],
    counters: &'a [u8],
    raw: &'a [u8],
}

/// Reads big-endian cell `i` of a row; rows come from `chunks_exact`, so the cell is always there,
/// and a missing one would read as 0 rather than panic.
fn cell(row: &[u8], i: usize) -> u32 {
    let start = i * 4;
    match row.get(start..start + 4) {
        Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
        _ => 0,
    }
}

fn cells64(hi: u32, lo: u32) -> u64 {
    u64::from(hi) << 32 | u64::from(lo)
}

fn rows(bytes: &[u8], property: DtProperty) -> core::slice::ChunksExact<'_, u8> {
    bytes.chunks_exact(property.row_bytes())
}

fn check_length(bytes: &[u8], property: DtProperty) -> Result<usize, DtError> {
    let len = bytes.len();
    if len % property.row_bytes() != 0 {
        return Err(DtError::Length { property, len });
    }
    Ok(len / property.row_bytes())
}

fn counter_range(row: &[u8]) -> CounterRange {
    CounterRange {
        start: cell(row, 0),
        end: cell(row, 1),
        counters: cell(row, 2),
    }
}

fn raw_map(row: &[u8]) -> RawCounterMap {
    RawCounterMap {
        select: cells64(cell(row, 0), cell(row, 1)),
        select_mask: cells64(cell(row, 2), cell(row, 3)),
        counters: cell(row, 4),
    }
}

fn selector(row: &[u8]) -> (u32, u64) {
    (cell(row, 0), cells64(cell(row, 1), cell(row, 2)))
}

/// OpenSBI's `pmu_event_range_overlap()`.
fn ranges_overlap(a: &CounterRange, b: &CounterRange) -> bool {
    !((a.end < b.start && a.end < b.end) || (a.start > b.start && a.start > b.end))
}

impl<'a> DtPmuMaps<'a> {
    /// Maps with no rows: no constraint is known.
    pub const fn empty() -> Self {
        Self {
            selectors: &[],
            counters: &[],
            raw: &[],
        }
    }

    /// Validates the three property values (each `None` when the property is absent) and keeps them.
    pub fn parse(
        event_to_mhpmevent: Option<&'a [u8]>,
        event_to_mhpmcounters: Option<&'a [u8]>,
        raw_event_to_mhpmcounters: Option<&'a [u8]>,
    ) -> Result<Self, DtError> {
        let maps = Self {
            selectors: event_to_mhpmevent.unwrap_or(&[]),
            counters: event_to_mhpmcounters.unwrap_or(&[]),
            raw: raw_event_to_mhpmcounters.unwrap_or(&[]),
        };
        if event_to_mhpmevent.is_some() && event_to_mhpmcounters.is_none() {
            return Err(DtError::SelectorsWithoutCounters);
        }
        let n_sel = check_length(maps.selectors, DtProperty::EventToMhpmevent)?;
        let n_ctr = check_length(maps.counters, DtProperty::EventToMhpmcounters)?;
        let n_raw = check_length(maps.raw, DtProperty::RawEventToMhpmcounters)?;
        if n_sel > SELECTOR_MAX {
            return Err(DtError::TooManyRows {
                property: DtProperty::EventToMhpmevent,
            });
        }
        if n_ctr >= HW_EVENT_MAX {
            return Err(DtError::TooManyRows {
                property: DtProperty::EventToMhpmcounters,
            });
        }
        if n_ctr + n_raw >= HW_EVENT_MAX {
            return Err(DtError::TooManyRows {
                property: DtProperty::RawEventToMhpmcounters,
            });
        }
        maps.check_selectors()?;
        maps.check_counters()?;
        maps.check_raw()?;
        Ok(maps)
    }

    fn check_selectors(&self) -> Result<(), DtError> {
        for (row, bytes) in rows(self.selectors, DtProperty::EventToMhpmevent).enumerate() {
            let (idx, _) = selector(bytes);
            let valid = match EventIdx::from_raw(idx) {
                Some(e) => match e.ty() {
                    EventType::Hardware => e.hw_event().is_some(),
                    EventType::Cache => e.cache_parts().is_some(),
                    _ => false,
                },
                None => false,
            };
            if !valid {
                return Err(DtError::InvalidSelectorEvent { row });
            }
            let earlier = rows(self.selectors, DtProperty::EventToMhpmevent).take(row);
            if earlier.map(selector).any(|(other, _)| other == idx) {
                return Err(DtError::DuplicateSelector { row });
            }
        }
        Ok(())
    }

    fn check_counters(&self) -> Result<(), DtError> {
        let property = DtProperty::EventToMhpmcounters;
        for (row, bytes) in rows(self.counters, property).enumerate() {
            let r = counter_range(bytes);
            if r.start >= RAW_EVENT_IDX || r.end >= RAW_EVENT_IDX {
                return Err(DtError::RawEventInRange { row });
            }
            if r.start > r.end {
                return Err(DtError::ReversedRange { row });
            }
            // OpenSBI tests only the first event of the range against SBI_PMU_HW_INSTRUCTIONS.
            if r.start > u32::from(HwGeneralEvent::Instructions.code())
                && r.counters & FIXED_CTR_MASK != 0
            {
                return Err(DtError::FixedCounters { property, row });
            }
            let earlier = rows(self.counters, property).take(row);
            if earlier.map(counter_range).any(|o| ranges_overlap(&o, &r)) {
                return Err(DtError::Overlap { property, row });
            }
        }
        Ok(())
    }

    fn check_raw(&self) -> Result<(), DtError> {
        let property = DtProperty::RawEventToMhpmcounters;
        let have_ranges = !self.counters.is_empty();
        for (row, bytes) in rows(self.raw, property).enumerate() {
            let r = raw_map(bytes);
            // Raw rows are registered for event_idx 0x20000, above SBI_PMU_HW_INSTRUCTIONS.
            if r.counters & FIXED_CTR_MASK != 0 {
                return Err(DtError::FixedCounters { property, row });
            }
            // OpenSBI compares (select, mask) with every earlier entry of its table, and range entries
            // have both zero there, so an all-zero raw row clashes with any range row.
            let clashes_with_range = have_ranges && r.select == 0 && r.select_mask == 0;
            let earlier = rows(self.raw, property).take(row);
            let duplicate = earlier
                .map(raw_map)
                .any(|o| o.select == r.select && o.select_mask == r.select_mask);
            if clashes_with_range || duplicate {
                return Err(DtError::Overlap { property, row });
            }
        }
        Ok(())
    }

    /// Whether no property had any row.
    pub fn is_empty(&self) -> bool {
        self.selectors.is_empty() && self.counters.is_empty() && self.raw.is_empty()
    }

    /// The rows of `riscv,event-to-mhpmevent`.
    pub fn selectors(&self) -> impl Iterator<Item = EventSelector> + 'a {
        rows(self.selectors, DtProperty::EventToMhpmevent).filter_map(|row| {
            let (idx, selector) = selector(row);
            EventIdx::from_raw(idx).map(|event_idx| EventSelector {
                event_idx,
                selector,
            })
        })
    }

    /// The rows of `riscv,event-to-mhpmcounters`.
    pub fn counter_ranges(&self) -> impl Iterator<Item = CounterRange> + 'a {
        rows(self.counters, DtProperty::EventToMhpmcounters).map(counter_range)
    }

    /// The rows of `riscv,raw-event-to-mhpmcounters`.
    pub fn raw_maps(&self) -> impl Iterator<Item = RawCounterMap> + 'a {
        rows(self.raw, DtProperty::RawEventToMhpmcounters).map(raw_map)
    }

    /// The `mhpmeventX` selector for a standard event (`fdt_pmu_get_select_value()`).
    pub fn selector(&self, event_idx: EventIdx) -> Option<u64> {
        self.selectors()
            .find(|s| s.event_idx == event_idx)
            .map(|s| s.selector)
    }

    /// The hardware counters (bit `n` = `mhpmcounterN`) the maps allow for an event, or `None` when
    /// no row covers it. Raw events (types 2 and 3) are matched on `event_data` against the raw rows;
    /// other events against the ranges. When several rows match, any of their counters may be used,
    /// as OpenSBI tries each matching row in turn.
    pub fn hw_counters(&self, event_idx: EventIdx, event_data: u64) -> Option<u32> {
        let mut found = None;
        if event_idx.ty().is_raw() {
            for r in self.raw_maps().filter(|r| r.matches(event_data)) {
                found = Some(found.unwrap_or(0) | r.counters);
            }
        } else {
            let idx = event_idx.raw();
            for r in self.counter_ranges().filter(|r| r.contains(idx)) {
                found = Some(found.unwrap_or(0) | r.counters);
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{CacheId, CacheOp, CacheResult};

    /// Encodes cells as a property value (big endian), into a fixed buffer.
    struct Prop {
        buf: [u8; 512],
        len: usize,
    }

    impl Prop {
        fn new(cells: &[u32]) -> Self {
            let mut p = Prop {
                buf: [0; 512],
                len: cells.len() * 4,
            };
            for (i, c) in cells.iter().enumerate() {
                p.buf[i * 4..i * 4 + 4].copy_from_slice(&c.to_be_bytes());
            }
            p
        }

        fn bytes(&self) -> &[u8] {
            &self.buf[..self.len]
        }
    }

    #[test]
    fn binding_example_parses() {
        // The first example of riscv,pmu.yaml.
        let sel = Prop::new(&[0x0000B, 0x0000, 0x0001]);
        let ctr = Prop::new(&[
            0x00001, 0x00001, 0x00000001, 0x00002, 0x00002, 0x00000004, 0x00003, 0x0000A,
            0x00000ff8, 0x10000, 0x10033, 0x000ff000,
        ]);
        let raw = Prop::new(&[
            0x0000, 0x0002, 0xffffffff, 0xffffffff, 0x00000f8, 0x0, 0x0, 0xffffffff, 0xfffffff0,
            0x00000ff0, 0xffffffff, 0x0, 0xffffffff, 0xffffff0f, 0x00000ff0,
        ]);
        // Event 0xB is not a standard event: the example's selector row is refused.
        assert_eq!(
            DtPmuMaps::parse(Some(sel.bytes()), Some(ctr.bytes()), Some(raw.bytes())),
            Err(DtError::InvalidSelectorEvent { row: 0 })
        );
        let maps = DtPmuMaps::parse(None, Some(ctr.bytes()), Some(raw.bytes())).unwrap();
        let cycles = EventIdx::hw(HwGeneralEvent::CpuCycles);
        assert_eq!(maps.hw_counters(cycles, 0), Some(0x1));
        assert_eq!(
            maps.hw_counters(EventIdx::hw(HwGeneralEvent::Instructions), 0),
            Some(0x4)
        );
        assert_eq!(
            maps.hw_counters(EventIdx::hw(HwGeneralEvent::BranchMisses), 0),
            Some(0xff8)
        );
        let l1d = EventIdx::cache(CacheId::L1d, CacheOp::Read, CacheResult::Miss);
        assert_eq!(maps.hw_counters(l1d, 0), Some(0xff000));
        assert_eq!(
            maps.hw_counters(
                EventIdx::cache(CacheId::Node, CacheOp::Prefetch, CacheResult::Miss),
                0
            ),
            None
        );
        // Raw event 2 matches the first row (exact) and the second (0-15).
        assert_eq!(maps.hw_counters(EventIdx::RAW, 2), Some(0xf8 | 0xff0));
        assert_eq!(maps.hw_counters(EventIdx::RAW_V2, 3), Some(0xff0));
        assert_eq!(maps.hw_counters(EventIdx::RAW, 0x100), None);
        assert_eq!(maps.raw_maps().count(), 3);
        assert_eq!(maps.counter_ranges().count(), 4);
        assert!(!maps.is_empty());
        assert!(DtPmuMaps::empty().is_empty());
    }

    #[test]
    fn selectors_are_one_to_one_standard_events() {
        let ctr = Prop::new(&[3, 6, 0x18]);
        let sel = Prop::new(&[3, 0, 0x1801, 0x10019, 0x1, 0x1002]);
        let maps = DtPmuMaps::parse(Some(sel.bytes()), Some(ctr.bytes()), None).unwrap();
        assert_eq!(
            maps.selector(EventIdx::hw(HwGeneralEvent::CacheReferences)),
            Some(0x1801)
        );
        let dtlb = EventIdx::cache(CacheId::Dtlb, CacheOp::Read, CacheResult::Miss);
        assert_eq!(maps.selector(dtlb), Some(0x1_0000_1002));
        assert_eq!(maps.selector(EventIdx::hw(HwGeneralEvent::CpuCycles)), None);

        let dup = Prop::new(&[3, 0, 1, 4, 0, 2, 3, 0, 3]);
        assert_eq!(
            DtPmuMaps::parse(Some(dup.bytes()), Some(ctr.bytes()), None),
            Err(DtError::DuplicateSelector { row: 2 })
        );
        for bad in [0u32, 0x20000, 0x30000, 0xf0001, 0x1_00003, 11, 0x10038] {
            let p = Prop::new(&[bad, 0, 1]);
            assert_eq!(
                DtPmuMaps::parse(Some(p.bytes()), Some(ctr.bytes()), None),
                Err(DtError::InvalidSelectorEvent { row: 0 }),
                "{bad:#x}"
            );
        }
        assert_eq!(
            DtPmuMaps::parse(Some(sel.bytes()), None, None),
            Err(DtError::SelectorsWithoutCounters)
        );
    }

    #[test]
    fn counter_ranges_follow_opensbi_rules() {
        let parse = |cells: &[u32]| {
            DtPmuMaps::parse(None, Some(Prop::new(cells).bytes()), None).map(|m| m.is_empty())
        };
        let ctr = DtProperty::EventToMhpmcounters;
        assert_eq!(parse(&[5, 4, 0x8]), Err(DtError::ReversedRange { row: 0 }));
        assert_eq!(
            parse(&[1, 1, 1, 0x20000, 0x20000, 0x8]),
            Err(DtError::RawEventInRange { row: 1 })
        );
        assert_eq!(
            parse(&[0x10000, 0x20000, 0x8]),
            Err(DtError::RawEventInRange { row: 0 })
        );
        for fixed in [1u32, 2, 4, 7] {
            assert_eq!(
                parse(&[3, 3, fixed | 0x8]),
                Err(DtError::FixedCounters {
                    property: ctr,
                    row: 0
                })
            );
        }
        // Cycles and instructions may use the fixed counters.
        assert!(parse(&[1, 1, 0x9, 2, 2, 0xc]).is_ok());
        assert_eq!(
            parse(&[3, 10, 0x8, 10, 12, 0x10]),
            Err(DtError::Overlap {
                property: ctr,
                row: 1
            })
        );
        assert_eq!(
            parse(&[3, 10, 0x8, 4, 4, 0x10]),
            Err(DtError::Overlap {
                property: ctr,
                row: 1
            })
        );
        assert!(parse(&[3, 10, 0x8, 11, 12, 0x10]).is_ok());
    }

    #[test]
    fn raw_rows_follow_opensbi_rules() {
        let raw = DtProperty::RawEventToMhpmcounters;
        let p = Prop::new(&[0, 1, !0, !0, 0x8, 0, 1, !0, !0, 0x10]);
        assert_eq!(
            DtPmuMaps::parse(None, None, Some(p.bytes())),
            Err(DtError::Overlap {
                property: raw,
                row: 1
            })
        );
        let p = Prop::new(&[0, 1, !0, !0, 0x9]);
        assert_eq!(
            DtPmuMaps::parse(None, None, Some(p.bytes())),
            Err(DtError::FixedCounters {
                property: raw,
                row: 0
            })
        );
        let wildcard = Prop::new(&[0, 0, 0, 0, 0x8]);
        assert!(DtPmuMaps::parse(None, None, Some(wildcard.bytes())).is_ok());
        let ctr = Prop::new(&[3, 3, 0x8]);
        assert_eq!(
            DtPmuMaps::parse(None, Some(ctr.bytes()), Some(wildcard.bytes())),
            Err(DtError::Overlap {
                property: raw,
                row: 0
            })
        );
    }

    #[test]
    fn malformed_lengths_and_sizes_are_errors() {
        let ctr = Prop::new(&[3, 3, 8]);
        for len in [1usize, 4, 11, 12] {
            let expected = (len != 12).then_some(DtError::Length {
                property: DtProperty::EventToMhpmcounters,
                len,
            });
            assert_eq!(
                DtPmuMaps::parse(None, Some(&ctr.bytes()[..len]), None).err(),
                expected
            );
        }
        let short = [0u8; 19];
        assert_eq!(
            DtPmuMaps::parse(None, None, Some(&short)),
            Err(DtError::Length {
                property: DtProperty::RawEventToMhpmcounters,
                len: 19
            })
        );
        let odd = [0u8; 7];
        assert_eq!(
            DtPmuMaps::parse(Some(&odd), Some(ctr.bytes()), None),
            Err(DtError::Length {
                property: DtProperty::EventToMhpmevent,
                len: 7
            })
        );
        // 256 distinct single-event rows: one more than OpenSBI's table holds.
        let mut many = [0u8; 256 * 12];
        for (i, row) in many.chunks_exact_mut(12).enumerate() {
            let idx = 0x10000 + i as u32;
            row[0..4].copy_from_slice(&idx.to_be_bytes());
            row[4..8].copy_from_slice(&idx.to_be_bytes());
            row[8..12].copy_from_slice(&8u32.to_be_bytes());
        }
        assert_eq!(
            DtPmuMaps::parse(None, Some(&many), None),
            Err(DtError::TooManyRows {
                property: DtProperty::EventToMhpmcounters
            })
        );
        assert!(DtPmuMaps::parse(None, Some(&many[..255 * 12]), None).is_ok());
        // Empty properties are valid and constrain nothing.
        let maps = DtPmuMaps::parse(Some(&[]), Some(&[]), Some(&[])).unwrap();
        assert!(maps.is_empty());
        assert_eq!(maps.hw_counters(EventIdx::RAW, 0), None);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A cheap deterministic byte generator; every prefix of every pattern must parse or fail.
        let mut state = 0x1234_5678u32;
        let mut buf = [0u8; 120];
        for _ in 0..300 {
            for b in buf.iter_mut() {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                *b = (state >> 24) as u8;
            }
            for len in [0usize, 12, 20, 24, 36, 60, 120] {
                let s = &buf[..len];
                for maps in [
                    DtPmuMaps::parse(Some(s), Some(s), Some(s)),
                    DtPmuMaps::parse(None, Some(s), None),
                    DtPmuMaps::parse(None, None, Some(s)),
                ]
                .into_iter()
                .flatten()
                {
                    let _ = maps.hw_counters(EventIdx::RAW, u64::from(state));
                    let _ = maps.selector(EventIdx::hw(HwGeneralEvent::CpuCycles));
                }
            }
        }
    }
}
