// SPDX-License-Identifier: GPL-2.0

//! The event maps of a `riscv,pmu` device tree node
//! (`Documentation/devicetree/bindings/perf/riscv,pmu.yaml`).
//!
//! Three optional properties, each a matrix of 32-bit cells:
//! - `riscv,event-to-mhpmevent`: rows of `<event_idx selector_hi selector_lo>`, the value to write to
//!   `mhpmeventX` for a standard event (one to one, no raw events);
//! - `riscv,event-to-mhpmcounters`: rows of `<event_idx_start event_idx_end counter_bitmap>`, the
//!   `mhpmcounterX` that can count a range of events (no raw events);
//! - `riscv,raw-event-to-mhpmcounters`: rows of `<match_hi match_lo mask_hi mask_lo counter_bitmap>`,
//!   the counters for raw events whose `event_data & mask == match`.
//!
//! The cells come as the kernel's `of_property_read_u32_array()` returns them (CPU order). Counter
//! bitmaps name hardware counters (bit `n` is `mhpmcounterN`, CSR `cycle + n`), not logical SBI
//! counter indices. [`DtPmuMaps::parse`] applies the validity rules OpenSBI applies when it reads the
//! same properties (`lib/utils/fdt/fdt_pmu.c` and `sbi_pmu_add_*_counter_map()` in
//! `lib/sbi/sbi_pmu.c`), so the driver accepts what firmware accepts; a malformed property is a typed
//! [`DtError`] naming the property and the row, never a panic. Parsing borrows the cells and
//! allocates nothing.
//!
//! What the driver does with the maps is in [`crate::counters::PmuInfo::event_cmask`] (the counters an
//! event may use, and which events are countable at all) and [`crate::counters::group_fits`] (whether
//! a group can have counters at once).

use crate::abi::{id_enums, EventIdx, EventType, HwGeneralEvent};

id_enums! {
    /// The three properties of the binding; `ALL` has them in the order the driver reads them,
    /// their index in [`DtPmuMaps`].
    pub enum DtProperty: u8, from_index(u8), 3 {
        /// `riscv,event-to-mhpmevent`.
        EventToMhpmevent = 0,
        /// `riscv,event-to-mhpmcounters`.
        EventToMhpmcounters = 1,
        /// `riscv,raw-event-to-mhpmcounters`.
        RawEventToMhpmcounters = 2,
    }
}

impl DtProperty {
    /// The property name.
    pub const fn name(self) -> &'static str {
        [
            "riscv,event-to-mhpmevent",
            "riscv,event-to-mhpmcounters",
            "riscv,raw-event-to-mhpmcounters",
        ][self as usize]
    }

    /// The number of 32-bit cells in one row: 3, and 5 for `riscv,raw-event-to-mhpmcounters`.
    pub const fn cells_per_row(self) -> usize {
        [3, 3, 5][self as usize]
    }
}

/// Why a property was refused: what is wrong, in which property and which row (counted from 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DtError {
    /// The property.
    pub property: DtProperty,
    /// The row; for [`DtErrorKind::Length`] the incomplete row at the end.
    pub row: usize,
    /// What is wrong with it.
    pub kind: DtErrorKind,
}

/// What is wrong with a row of a property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DtErrorKind {
    /// The property length is not a whole number of rows: the last row is incomplete.
    Length,
    /// More rows than OpenSBI's tables hold: 255 counter map rows in both counter properties
    /// together (`SBI_PMU_HW_EVENT_MAX` minus one), 512 selector rows; the row is the first one over.
    TooManyRows,
    /// An `event-to-mhpmcounters` row whose first event is above its last one.
    ReversedRange,
    /// An `event-to-mhpmcounters` row naming a raw event or any `event_idx` at or above 0x20000,
    /// which the binding and OpenSBI forbid.
    RawEventInRange,
    /// A counter bitmap with one of the fixed counters `cycle`, `time`, `instret` (bits 0-2) for
    /// events other than cycles and instructions; OpenSBI refuses it with SBI_ERR_DENIED.
    FixedCounters,
    /// A row whose events overlap those of an earlier row (same range, or the same raw match and
    /// mask), which OpenSBI refuses.
    Overlap,
    /// An `event-to-mhpmevent` row whose `event_idx` has reserved bits set, or is not a hardware
    /// general or cache event.
    InvalidSelectorEvent,
    /// An `event-to-mhpmevent` row for an event an earlier row already maps (the map is one to one).
    DuplicateSelector,
    /// `riscv,event-to-mhpmevent` without `riscv,event-to-mhpmcounters`, which the binding requires.
    SelectorsWithoutCounters,
    /// A counter bitmap that names none of the hardware counters the SBI implementation reports: the
    /// map does not describe this platform.
    UnknownCounters,
}

impl DtErrorKind {
    /// What is wrong, for a log line.
    pub const fn reason(self) -> &'static str {
        match self {
            DtErrorKind::Length => "incomplete row",
            DtErrorKind::TooManyRows => "more rows than firmware holds",
            DtErrorKind::ReversedRange => "first event above the last one",
            DtErrorKind::RawEventInRange => "raw event in an event range",
            DtErrorKind::FixedCounters => {
                "fixed counter for an event other than cycles or instructions"
            }
            DtErrorKind::Overlap => "events overlap an earlier row",
            DtErrorKind::InvalidSelectorEvent => "not a hardware general or cache event",
            DtErrorKind::DuplicateSelector => "event mapped by an earlier row",
            DtErrorKind::SelectorsWithoutCounters => "present without riscv,event-to-mhpmcounters",
            DtErrorKind::UnknownCounters => "no counter of this platform in the bitmap",
        }
    }
}

/// OpenSBI's `SBI_PMU_HW_EVENT_MAX`: its table of counter maps holds one entry less than this.
const HW_EVENT_MAX: usize = 256;
/// OpenSBI v1.5 keeps selectors in a static array of `2 * SBI_PMU_HW_EVENT_MAX` entries.
const SELECTOR_MAX: usize = 2 * HW_EVENT_MAX;
/// The first raw `event_idx` (type 2); `event-to-mhpmcounters` must stay below it.
const RAW_EVENT_IDX: u32 = 0x20000;
/// Counter bitmap bits of the fixed counters `cycle`, `time` and `instret`.
pub const FIXED_CTR_MASK: u32 = 0x7;

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

/// The validated event maps of a `riscv,pmu` node, borrowing the property cells.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DtPmuMaps<'a> {
    /// The cells of each property, in the order of [`DtProperty::ALL`].
    cells: [&'a [u32]; 3],
}

fn cell(row: &[u32], i: usize) -> u32 {
    // Rows come from `chunks_exact`, so the cell is always there; a missing one reads as 0.
    row.get(i).copied().unwrap_or(0)
}

fn cells64(hi: u32, lo: u32) -> u64 {
    u64::from(hi) << 32 | u64::from(lo)
}

fn counter_range(row: &[u32]) -> CounterRange {
    CounterRange {
        start: cell(row, 0),
        end: cell(row, 1),
        counters: cell(row, 2),
    }
}

fn raw_map(row: &[u32]) -> RawCounterMap {
    RawCounterMap {
        select: cells64(cell(row, 0), cell(row, 1)),
        select_mask: cells64(cell(row, 2), cell(row, 3)),
        counters: cell(row, 4),
    }
}

fn selector(row: &[u32]) -> (u32, u64) {
    (cell(row, 0), cells64(cell(row, 1), cell(row, 2)))
}

/// OpenSBI's `pmu_event_range_overlap()`.
fn ranges_overlap(a: &CounterRange, b: &CounterRange) -> bool {
    !((a.end < b.start && a.end < b.end) || (a.start > b.start && a.start > b.end))
}

impl DtError {
    const fn new(property: DtProperty, row: usize, kind: DtErrorKind) -> Self {
        Self {
            property,
            row,
            kind,
        }
    }
}

impl<'a> DtPmuMaps<'a> {
    /// Validates the values of the three properties, in [`DtProperty::ALL`] order (each `None` when
    /// the property is absent), and keeps them.
    pub fn parse(cells: [Option<&'a [u32]>; 3]) -> Result<Self, DtError> {
        let maps = Self::from_parsed(cells.map(|c| c.unwrap_or(&[])));
        if let [Some(_), None, _] = cells {
            let kind = DtErrorKind::SelectorsWithoutCounters;
            return Err(DtError::new(DtProperty::EventToMhpmevent, 0, kind));
        }
        for property in DtProperty::ALL {
            let rows = maps.rows(property);
            if !rows.remainder().is_empty() {
                return Err(DtError::new(property, rows.len(), DtErrorKind::Length));
            }
        }
        let [n_sel, n_ctr, n_raw] = DtProperty::ALL.map(|property| maps.rows(property).len());
        // The first row past the room OpenSBI's tables have.
        let too_many = if n_sel > SELECTOR_MAX {
            Some((DtProperty::EventToMhpmevent, SELECTOR_MAX))
        } else if n_ctr >= HW_EVENT_MAX {
            Some((DtProperty::EventToMhpmcounters, HW_EVENT_MAX - 1))
        } else if n_ctr + n_raw >= HW_EVENT_MAX {
            Some((DtProperty::RawEventToMhpmcounters, HW_EVENT_MAX - 1 - n_ctr))
        } else {
            None
        };
        if let Some((property, row)) = too_many {
            return Err(DtError::new(property, row, DtErrorKind::TooManyRows));
        }
        maps.check_selectors()?;
        maps.check_counters()?;
        maps.check_raw()?;
        Ok(maps)
    }

    /// The maps of cells [`DtPmuMaps::parse`] accepted before, without checking them again (the
    /// checks compare every row with every earlier one). Lookups never panic, whatever the cells.
    pub const fn from_parsed(cells: [&'a [u32]; 3]) -> Self {
        Self { cells }
    }

    /// The cells of a property.
    const fn cells(&self, property: DtProperty) -> &'a [u32] {
        self.cells[property as usize]
    }

    /// The rows of a property.
    fn rows(&self, property: DtProperty) -> core::slice::ChunksExact<'a, u32> {
        self.cells(property).chunks_exact(property.cells_per_row())
    }

    fn check_selectors(&self) -> Result<(), DtError> {
        let property = DtProperty::EventToMhpmevent;
        for (row, cells) in self.rows(property).enumerate() {
            let (idx, _) = selector(cells);
            let err = |kind| Err(DtError::new(property, row, kind));
            // A hardware general event other than SBI_PMU_HW_NO_EVENT, or a cache event.
            let standard = |e: EventIdx| e.hw_event().is_some() || e.cache_parts().is_some();
            if !EventIdx::from_raw(idx).is_some_and(standard) {
                return err(DtErrorKind::InvalidSelectorEvent);
            }
            let earlier = self.rows(property).take(row);
            if earlier.map(selector).any(|(other, _)| other == idx) {
                return err(DtErrorKind::DuplicateSelector);
            }
        }
        Ok(())
    }

    fn check_counters(&self) -> Result<(), DtError> {
        let property = DtProperty::EventToMhpmcounters;
        for (row, cells) in self.rows(property).enumerate() {
            let r = counter_range(cells);
            let err = |kind| Err(DtError::new(property, row, kind));
            if r.start >= RAW_EVENT_IDX || r.end >= RAW_EVENT_IDX {
                return err(DtErrorKind::RawEventInRange);
            }
            if r.start > r.end {
                return err(DtErrorKind::ReversedRange);
            }
            // OpenSBI tests only the first event of the range against SBI_PMU_HW_INSTRUCTIONS.
            if r.start > u32::from(HwGeneralEvent::Instructions.code())
                && r.counters & FIXED_CTR_MASK != 0
            {
                return err(DtErrorKind::FixedCounters);
            }
            let earlier = self.rows(property).take(row);
            if earlier.map(counter_range).any(|o| ranges_overlap(&o, &r)) {
                return err(DtErrorKind::Overlap);
            }
        }
        Ok(())
    }

    fn check_raw(&self) -> Result<(), DtError> {
        let property = DtProperty::RawEventToMhpmcounters;
        let have_ranges = self.covers_std_events();
        for (row, cells) in self.rows(property).enumerate() {
            let r = raw_map(cells);
            // Raw rows are registered for event_idx 0x20000, above SBI_PMU_HW_INSTRUCTIONS.
            if r.counters & FIXED_CTR_MASK != 0 {
                return Err(DtError::new(property, row, DtErrorKind::FixedCounters));
            }
            // OpenSBI compares (select, mask) with every earlier entry of its table, and range entries
            // have both zero there, so an all-zero raw row clashes with any range row.
            let clashes_with_range = have_ranges && r.select == 0 && r.select_mask == 0;
            let earlier = self.rows(property).take(row);
            let duplicate = earlier
                .map(raw_map)
                .any(|o| o.select == r.select && o.select_mask == r.select_mask);
            if clashes_with_range || duplicate {
                return Err(DtError::new(property, row, DtErrorKind::Overlap));
            }
        }
        Ok(())
    }

    /// Checks the maps against the hardware counters the SBI implementation reports (bit `n` =
    /// `mhpmcounterN`): every counter bitmap must name at least one of them, or the maps describe
    /// another platform.
    pub fn check_platform(&self, hw_counters: u64) -> Result<(), DtError> {
        let known = |bits: u32| u64::from(bits) & hw_counters != 0;
        let err = |property, row| Err(DtError::new(property, row, DtErrorKind::UnknownCounters));
        if let Some(row) = self.counter_ranges().position(|r| !known(r.counters)) {
            return err(DtProperty::EventToMhpmcounters, row);
        }
        match self.raw_maps().position(|r| !known(r.counters)) {
            Some(row) => err(DtProperty::RawEventToMhpmcounters, row),
            None => Ok(()),
        }
    }

    /// Whether no property had any row (for the tests).
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.cells.iter().all(|cells| cells.is_empty())
    }

    /// Whether the maps say which standard events the platform counts: `riscv,event-to-mhpmcounters`
    /// has rows. A standard event no row covers is then not countable (cycles and instructions
    /// still are, on their fixed counters), as OpenSBI refuses to configure a counter for it.
    pub fn covers_std_events(&self) -> bool {
        !self.cells(DtProperty::EventToMhpmcounters).is_empty()
    }

    /// The rows of `riscv,event-to-mhpmevent`: each standard event with the 64-bit value for
    /// `mhpmeventX` (`selector_hi << 32 | selector_lo`).
    pub fn selectors(&self) -> impl Iterator<Item = (EventIdx, u64)> + 'a {
        self.rows(DtProperty::EventToMhpmevent).filter_map(|row| {
            let (idx, selector) = selector(row);
            EventIdx::from_raw(idx).map(|event_idx| (event_idx, selector))
        })
    }

    /// The rows of `riscv,event-to-mhpmcounters`.
    pub fn counter_ranges(&self) -> impl Iterator<Item = CounterRange> + 'a {
        self.rows(DtProperty::EventToMhpmcounters)
            .map(counter_range)
    }

    /// The rows of `riscv,raw-event-to-mhpmcounters`.
    pub fn raw_maps(&self) -> impl Iterator<Item = RawCounterMap> + 'a {
        self.rows(DtProperty::RawEventToMhpmcounters).map(raw_map)
    }

    /// The `mhpmeventX` selector for a standard event (`fdt_pmu_get_select_value()`).
    pub fn selector(&self, event_idx: EventIdx) -> Option<u64> {
        let found = self.selectors().find(|(idx, _)| *idx == event_idx);
        found.map(|(_, selector)| selector)
    }

    /// The hardware counters (bit `n` = `mhpmcounterN`) the maps allow for an event, or `None` when
    /// no row covers it. Raw events (types 2 and 3) are matched on `event_data` against the raw rows;
    /// other events against the ranges. When several rows match, any of their counters may be used,
    /// as OpenSBI tries each matching row in turn.
    pub fn hw_counters(&self, event_idx: EventIdx, event_data: u64) -> Option<u32> {
        if matches!(event_idx.ty(), EventType::Raw | EventType::RawV2) {
            let rows = self.raw_maps().filter(|r| r.matches(event_data));
            rows.map(|r| r.counters).reduce(|a, b| a | b)
        } else {
            let idx = event_idx.raw();
            let rows = self.counter_ranges().filter(|r| r.contains(idx));
            rows.map(|r| r.counters).reduce(|a, b| a | b)
        }
    }

    /// The hardware counters a standard or raw event may use under the maps, with the fixed counter
    /// of cycles (`cycle`) or instructions (`instret`), which firmware always allows for them; `None`
    /// when the maps do not constrain the event (firmware events; standard events when the maps do
    /// not cover them). `Some(0)` means no counter can count it.
    pub fn event_hw_counters(&self, event_idx: EventIdx, event_data: u64) -> Option<u32> {
        let firmware = matches!(event_idx.ty(), EventType::Firmware);
        let standard = matches!(event_idx.ty(), EventType::Hardware | EventType::Cache);
        if firmware || (standard && !self.covers_std_events()) {
            return None;
        }
        // A raw event has no fixed counter.
        let fixed = event_idx.fixed_counter();
        Some(self.hw_counters(event_idx, event_data).unwrap_or(0) | fixed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{CacheId, CacheOp, CacheResult};

    const CTR: DtProperty = DtProperty::EventToMhpmcounters;
    const RAW: DtProperty = DtProperty::RawEventToMhpmcounters;
    const SEL: DtProperty = DtProperty::EventToMhpmevent;

    fn err(property: DtProperty, row: usize, kind: DtErrorKind) -> Result<(), DtError> {
        Err(DtError {
            property,
            row,
            kind,
        })
    }

    fn parse(sel: Option<&[u32]>, ctr: Option<&[u32]>, raw: Option<&[u32]>) -> Result<(), DtError> {
        DtPmuMaps::parse([sel, ctr, raw]).map(|_| ())
    }

    #[test]
    fn binding_example_parses() {
        // The first example of riscv,pmu.yaml.
        let sel = [0x0000B, 0x0000, 0x0001];
        let ctr = [
            0x00001, 0x00001, 0x00000001, 0x00002, 0x00002, 0x00000004, 0x00003, 0x0000A,
            0x00000ff8, 0x10000, 0x10033, 0x000ff000,
        ];
        let raw = [
            0x0000, 0x0002, 0xffffffff, 0xffffffff, 0x00000f8, 0x0, 0x0, 0xffffffff, 0xfffffff0,
            0x00000ff0, 0xffffffff, 0x0, 0xffffffff, 0xffffff0f, 0x00000ff0,
        ];
        // Event 0xB is not a standard event: the example's selector row is refused.
        assert_eq!(
            parse(Some(&sel), Some(&ctr), Some(&raw)),
            err(SEL, 0, DtErrorKind::InvalidSelectorEvent)
        );
        let maps = DtPmuMaps::parse([None, Some(&ctr), Some(&raw)]).unwrap();
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
        let node_pf = EventIdx::cache(CacheId::Node, CacheOp::Prefetch, CacheResult::Miss);
        assert_eq!(maps.hw_counters(node_pf, 0), None);
        // Raw event 2 matches the first row (exact) and the second (0-15).
        assert_eq!(maps.hw_counters(EventIdx::RAW, 2), Some(0xf8 | 0xff0));
        assert_eq!(maps.hw_counters(EventIdx::RAW_V2, 3), Some(0xff0));
        assert_eq!(maps.hw_counters(EventIdx::RAW, 0x100), None);
        assert_eq!(maps.raw_maps().count(), 3);
        assert_eq!(maps.counter_ranges().count(), 4);
        assert!(!maps.is_empty());
        assert!(maps.covers_std_events());
        assert!(DtPmuMaps::default().is_empty());
    }

    #[test]
    fn event_hw_counters_add_the_fixed_counters_and_leave_firmware_events() {
        let ctr = [3, 3, 0x8];
        let raw = [0, 7, !0, !0, 0x10];
        let maps = DtPmuMaps::parse([None, Some(&ctr), Some(&raw)]).unwrap();
        let hw = |e| maps.event_hw_counters(EventIdx::hw(e), 0);
        assert_eq!(hw(HwGeneralEvent::CpuCycles), Some(0b001));
        assert_eq!(hw(HwGeneralEvent::Instructions), Some(0b100));
        assert_eq!(hw(HwGeneralEvent::CacheReferences), Some(0x8));
        assert_eq!(hw(HwGeneralEvent::BusCycles), Some(0));
        assert_eq!(maps.event_hw_counters(EventIdx::RAW, 7), Some(0x10));
        assert_eq!(maps.event_hw_counters(EventIdx::RAW, 8), Some(0));
        assert_eq!(maps.event_hw_counters(EventIdx::fw(5), 0), None);
        // Without event ranges the standard events are not constrained, raw events still are.
        let raw_only = DtPmuMaps::parse([None, None, Some(&raw)]).unwrap();
        assert!(!raw_only.covers_std_events());
        assert_eq!(
            raw_only.event_hw_counters(EventIdx::hw(HwGeneralEvent::BusCycles), 0),
            None
        );
        assert_eq!(raw_only.event_hw_counters(EventIdx::RAW_V2, 8), Some(0));
    }

    #[test]
    fn selectors_are_one_to_one_standard_events() {
        let ctr = [3, 6, 0x18];
        let sel = [3, 0, 0x1801, 0x10019, 0x1, 0x1002];
        let maps = DtPmuMaps::parse([Some(&sel), Some(&ctr), None]).unwrap();
        assert_eq!(
            maps.selector(EventIdx::hw(HwGeneralEvent::CacheReferences)),
            Some(0x1801)
        );
        let dtlb = EventIdx::cache(CacheId::Dtlb, CacheOp::Read, CacheResult::Miss);
        assert_eq!(maps.selector(dtlb), Some(0x1_0000_1002));
        assert_eq!(maps.selector(EventIdx::hw(HwGeneralEvent::CpuCycles)), None);
        assert_eq!(maps.selectors().count(), 2);

        let dup = [3, 0, 1, 4, 0, 2, 3, 0, 3];
        assert_eq!(
            parse(Some(&dup), Some(&ctr), None),
            err(SEL, 2, DtErrorKind::DuplicateSelector)
        );
        for bad in [0u32, 0x20000, 0x30000, 0xf0001, 0x1_00003, 11, 0x10038] {
            assert_eq!(
                parse(Some(&[bad, 0, 1]), Some(&ctr), None),
                err(SEL, 0, DtErrorKind::InvalidSelectorEvent),
                "{bad:#x}"
            );
        }
        assert_eq!(
            parse(Some(&sel), None, None),
            err(SEL, 0, DtErrorKind::SelectorsWithoutCounters)
        );
    }

    #[test]
    fn counter_ranges_follow_opensbi_rules() {
        let ranges = |cells: &[u32]| parse(None, Some(cells), None);
        assert_eq!(
            ranges(&[5, 4, 0x8]),
            err(CTR, 0, DtErrorKind::ReversedRange)
        );
        assert_eq!(
            ranges(&[1, 1, 1, 0x20000, 0x20000, 0x8]),
            err(CTR, 1, DtErrorKind::RawEventInRange)
        );
        assert_eq!(
            ranges(&[0x10000, 0x20000, 0x8]),
            err(CTR, 0, DtErrorKind::RawEventInRange)
        );
        for fixed in [1u32, 2, 4, 7] {
            assert_eq!(
                ranges(&[3, 3, 0x8, 4, 4, fixed | 0x8]),
                err(CTR, 1, DtErrorKind::FixedCounters)
            );
        }
        // Cycles and instructions may use the fixed counters.
        assert_eq!(ranges(&[1, 1, 0x9, 2, 2, 0xc]), Ok(()));
        assert_eq!(
            ranges(&[3, 10, 0x8, 10, 12, 0x10]),
            err(CTR, 1, DtErrorKind::Overlap)
        );
        assert_eq!(
            ranges(&[3, 10, 0x8, 4, 4, 0x10]),
            err(CTR, 1, DtErrorKind::Overlap)
        );
        assert_eq!(ranges(&[3, 10, 0x8, 11, 12, 0x10]), Ok(()));
    }

    #[test]
    fn raw_rows_follow_opensbi_rules() {
        assert_eq!(
            parse(None, None, Some(&[0, 1, !0, !0, 0x8, 0, 1, !0, !0, 0x10])),
            err(RAW, 1, DtErrorKind::Overlap)
        );
        assert_eq!(
            parse(None, None, Some(&[0, 1, !0, !0, 0x9])),
            err(RAW, 0, DtErrorKind::FixedCounters)
        );
        let wildcard = [0, 0, 0, 0, 0x8];
        assert_eq!(parse(None, None, Some(&wildcard)), Ok(()));
        assert_eq!(
            parse(None, Some(&[3, 3, 0x8]), Some(&wildcard)),
            err(RAW, 0, DtErrorKind::Overlap)
        );
    }

    #[test]
    fn malformed_lengths_and_sizes_name_the_row() {
        let ctr = [3, 3, 8, 4, 4, 0x10];
        for (len, row) in [(1usize, 0usize), (2, 0), (4, 1), (5, 1)] {
            assert_eq!(
                parse(None, Some(&ctr[..len]), None),
                err(CTR, row, DtErrorKind::Length),
                "{len} cells"
            );
        }
        assert_eq!(parse(None, Some(&ctr[..3]), None), Ok(()));
        assert_eq!(
            parse(None, None, Some(&[0u32; 9])),
            err(RAW, 1, DtErrorKind::Length)
        );
        assert_eq!(
            parse(Some(&[3, 0]), Some(&ctr), None),
            err(SEL, 0, DtErrorKind::Length)
        );
        // 256 distinct single-event rows: one more than OpenSBI's table holds.
        let mut many = [0u32; 256 * 3];
        for (i, row) in many.chunks_exact_mut(3).enumerate() {
            let idx = 0x10000 + i as u32;
            row.copy_from_slice(&[idx, idx, 8]);
        }
        assert_eq!(
            parse(None, Some(&many), None),
            err(CTR, 255, DtErrorKind::TooManyRows)
        );
        assert_eq!(parse(None, Some(&many[..255 * 3]), None), Ok(()));
        // 250 range rows leave room for 5 raw rows: the sixth is refused.
        let mut raw = [0u32; 6 * 5];
        for (i, row) in raw.chunks_exact_mut(5).enumerate() {
            row.copy_from_slice(&[0, i as u32 + 1, !0, !0, 8]);
        }
        assert_eq!(
            parse(None, Some(&many[..250 * 3]), Some(&raw)),
            err(RAW, 5, DtErrorKind::TooManyRows)
        );
        assert_eq!(
            parse(None, Some(&many[..250 * 3]), Some(&raw[..25])),
            Ok(())
        );
        // Empty properties are valid and constrain nothing.
        let maps = DtPmuMaps::parse([Some(&[]), Some(&[]), Some(&[])]).unwrap();
        assert!(maps.is_empty());
        assert!(!maps.covers_std_events());
        assert_eq!(maps.hw_counters(EventIdx::RAW, 0), None);
    }

    #[test]
    fn maps_naming_no_counter_of_the_platform_are_refused() {
        let ctr = [3, 3, 0x8, 4, 4, 0x100];
        let raw = [0, 1, !0, !0, 0x10, 0, 2, !0, !0, 0x1_0000];
        let maps = DtPmuMaps::parse([None, Some(&ctr), Some(&raw)]).unwrap();
        // cycle, instret and mhpmcounter3..7.
        let hw = 0b1111_1101;
        assert_eq!(
            maps.check_platform(hw),
            err(CTR, 1, DtErrorKind::UnknownCounters)
        );
        assert_eq!(
            maps.check_platform(hw | 0x100),
            err(RAW, 1, DtErrorKind::UnknownCounters)
        );
        assert_eq!(maps.check_platform(hw | 0x1_0100), Ok(()));
    }

    #[test]
    fn every_error_has_a_reason() {
        let kinds = [
            DtErrorKind::Length,
            DtErrorKind::TooManyRows,
            DtErrorKind::ReversedRange,
            DtErrorKind::RawEventInRange,
            DtErrorKind::FixedCounters,
            DtErrorKind::Overlap,
            DtErrorKind::InvalidSelectorEvent,
            DtErrorKind::DuplicateSelector,
            DtErrorKind::SelectorsWithoutCounters,
            DtErrorKind::UnknownCounters,
        ];
        for (i, a) in kinds.iter().enumerate() {
            assert!(!a.reason().is_empty());
            for b in &kinds[i + 1..] {
                assert_ne!(a.reason(), b.reason(), "{a:?} and {b:?}");
            }
        }
        assert_eq!(
            DtProperty::ALL.map(DtProperty::name),
            [
                "riscv,event-to-mhpmevent",
                "riscv,event-to-mhpmcounters",
                "riscv,raw-event-to-mhpmcounters"
            ]
        );
    }
}
