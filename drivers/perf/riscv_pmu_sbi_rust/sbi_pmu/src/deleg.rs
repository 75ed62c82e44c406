// SPDX-License-Identifier: GPL-2.0

//! Counter delegation: the hardware counters programmed by the kernel itself, with no SBI call.
//!
//! With the Smcdeleg/Ssccfg extensions (and the indirect CSR access of Smcsrind/Sscsrind), M-mode
//! delegates hardware counters to S-mode (`menvcfg.CDE`, the counter's `mcounteren` bit) and the
//! supervisor reaches them through CSRs:
//! - `siselect` = 0x40 + `n` selects hardware counter `n` (`mcycle`, 1 reserved for `time`,
//!   `minstret`, `mhpmcounter3`..`mhpmcounter31`);
//! - `sireg` is then the counter itself and `sireg2` its event selector (`mhpmeventN` for `n` >= 3;
//!   `mcyclecfg`/`minstretcfg` for 0 and 2, which exist only with Smcntrpmf);
//! - `scountinhibit` (0x120) is `mcountinhibit` for the delegated counters: a set bit stops the
//!   counter, a clear bit lets it count;
//! - `scountovf` (Sscofpmf) shows the `OF` bits of the `mhpmevent`s.
//!
//! [`Hybrid`] is a [`Firmware`]: the driver core ([`crate::pmu`]) calls it as it calls the SBI
//! implementation, and it carries out each function on the delegated counters with those CSRs and
//! forwards the rest (firmware counters, counters M-mode did not delegate, the fixed `cycle` and
//! `instret` counters, whose selector registers need Smcntrpmf) to the SBI implementation. With no
//! delegated counter it forwards everything, and is the SBI path.
//!
//! An event's selector (the value for `mhpmeventN`) is platform specific; [`Selectors`] holds it:
//! from the device tree's `riscv,event-to-mhpmevent` map when the board has one, otherwise from a
//! table of the platform ([`PLATFORM_TABLES`]); raw events carry their selector in `event_data`.
//! A standard event without a selector is not supported on delegated counters (the SBI
//! implementation may still count it on a counter it was not asked to give up).

use crate::abi::{
    CfgFlags, EventIdx, EventType, Fid, HwGeneralEvent, SbiError, StartFlags, StopFlags,
    RISCV_MAX_COUNTERS,
};
use crate::counters::{bit, counters_in, set_slot, PmuInfo};
use crate::dt::{DtPmuMaps, FIXED_CTR_MASK};
use crate::events::RISCV_PMU_RAW_EVENT_MASK;
use crate::firmware::Firmware;
use crate::pmu::count_call;

/// `siselect`'s value for hardware counter 0 (`mcycle`); counter `n` is this plus `n` (Smcdeleg,
/// "Supervisor Counter Delegation": the range 0x40..0x5F).
pub const SISELECT_COUNTER_BASE: usize = 0x40;
/// `mhpmevent.OF` (Sscofpmf): the counter overflowed; while set, a wrap raises no interrupt.
pub const MHPMEVENT_OF: u64 = 1 << 63;
/// The event selector bits of `mhpmevent` below the Sscofpmf bits (56 bits, raw events v2).
pub const MHPMEVENT_SELECTOR: u64 = (1 << 56) - 1;

/// The `mhpmevent` inhibit bits for the `config_matching` filter hints: SBI Table 8's SET_VUINH,
/// SET_VSINH, SET_UINH, SET_SINH and SET_MINH (bits 3 to 7) are Sscofpmf's VUINH, VSINH, UINH, SINH
/// and MINH (bits 58 to 62), in the same order.
pub const fn mhpmevent_inhibit(flags: CfgFlags) -> u64 {
    ((flags.intersection(CfgFlags::INHIBIT_HINTS).bits() as u64) >> 3) << 58
}

/// The delegated counter CSRs of the calling hart: `siselect`, `sireg`, `sireg2` and
/// `scountinhibit`, as far as the driver writes them (it reads counters through their own CSRs).
/// The kernel implements it with `csrr`/`csrw`; the host tests with a model of the CSRs. Like
/// [`Firmware`] it acts on the calling hart and is called with interrupts disabled, so a `siselect`
/// write and the `sireg`/`sireg2` access that follows it are not separated by another user of
/// `siselect`.
pub trait CounterCsrs {
    /// Writes `siselect`.
    fn siselect_write(&mut self, value: usize);
    /// Writes `sireg`.
    fn sireg_write(&mut self, value: u64);
    /// Writes `sireg2`.
    fn sireg2_write(&mut self, value: u64);
    /// Reads `scountinhibit` (bit `n` = hardware counter `n`).
    fn scountinhibit_read(&mut self) -> u64;
    /// Writes `scountinhibit`.
    fn scountinhibit_write(&mut self, value: u64);
    /// Sets bits of `scountinhibit` (`csrs`): stops those counters.
    fn scountinhibit_set(&mut self, bits: u64);
    /// Clears bits of `scountinhibit` (`csrc`): starts those counters.
    fn scountinhibit_clear(&mut self, bits: u64);
}

/// Which hardware counters M-mode delegated, found by writing all ones to `scountinhibit` and
/// reading back (the register is WARL: bits of counters that are not delegated read as zero). The
/// register's value is restored afterwards, so counters keep running or stopped as they were.
pub fn probe_delegated<C: CounterCsrs>(csrs: &mut C) -> u64 {
    let saved = csrs.scountinhibit_read();
    csrs.scountinhibit_write(u64::MAX);
    let delegated = csrs.scountinhibit_read();
    csrs.scountinhibit_write(saved);
    delegated
}

/// An event-to-selector table of a platform: `(event_idx, selector)` rows.
pub type SelectorTable = &'static [(u32, u64)];

/// QEMU's `virt` machine (target/riscv/pmu.c): its programmable counters count these standard
/// events, each selected by its SBI `event_idx` (cycles, instructions, dTLB read and write misses,
/// iTLB read misses).
pub const QEMU_VIRT: SelectorTable = &[
    (0x00001, 0x00001),
    (0x00002, 0x00002),
    (0x10019, 0x10019),
    (0x1001B, 0x1001B),
    (0x10021, 0x10021),
];

/// The platforms with a built-in selector table, by the device tree root's `compatible`. A board
/// whose device tree has no `riscv,event-to-mhpmevent` map adds a row here with its table (from its
/// hardware manual: the `mhpmevent` value of each standard event it counts).
pub const PLATFORM_TABLES: &[(&str, SelectorTable)] = &[("riscv-virtio", QEMU_VIRT)];

/// The number of rows a [`Selectors`] holds; a standard event beyond them goes through SBI calls.
///
/// Sixteen hold QEMU's table and a board's hardware events. The probe holds a copy of the rows on
/// the stack of the module's init, whose frames the module build keeps within the kernel's 2 KiB
/// limit for C (`CONFIG_FRAME_WARN`): 32 rows pass it by too little to be safe.
pub const MAX_SELECTORS: usize = 16;

/// The event selectors of standard events (types #0 and #1) on delegated counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selectors {
    /// The rows, then `(0, 0)`s: `event_idx` 0 is no standard event, and a selector of 0 is none.
    rows: [(u32, u64); MAX_SELECTORS],
}

impl Selectors {
    /// No selector: only raw events can use delegated counters.
    pub const fn none() -> Self {
        Self {
            rows: [(0, 0); MAX_SELECTORS],
        }
    }

    /// The first [`MAX_SELECTORS`] of `rows`, `(event_idx, selector)` pairs as in a
    /// [`SelectorTable`].
    pub fn from_rows(rows: impl IntoIterator<Item = (u32, u64)>) -> Self {
        let mut this = Self::none();
        for (slot, row) in this.rows.iter_mut().zip(rows) {
            *slot = row;
        }
        this
    }

    /// The rows of the device tree's `riscv,event-to-mhpmevent` map; `None` when it has none.
    pub fn from_maps(maps: &DtPmuMaps<'_>) -> Option<Self> {
        let rows = maps
            .selectors()
            .map(|(idx, sel)| (idx.raw(), sel & MHPMEVENT_SELECTOR));
        Some(Self::from_rows(rows)).filter(|this| *this != Self::none())
    }

    /// The table [`PLATFORM_TABLES`] has for a device tree root compatible with `is_compatible`,
    /// and the compatible string it was found under.
    pub fn for_platform(is_compatible: impl Fn(&str) -> bool) -> Option<(Self, &'static str)> {
        PLATFORM_TABLES
            .iter()
            .find(|(compatible, _)| is_compatible(compatible))
            .map(|(compatible, table)| (Self::from_rows(table.iter().copied()), *compatible))
    }

    /// The `mhpmevent` selector of an event: from the table for standard events, from `event_data`
    /// for raw events (48 bits for type #2, 56 for type #3); `None` for firmware events and
    /// standard events without a row.
    pub fn selector(&self, event_idx: EventIdx, event_data: u64) -> Option<u64> {
        match event_idx.ty() {
            EventType::Hardware | EventType::Cache => {
                let raw = event_idx.raw();
                let row = self.rows.iter().find(|(idx, _)| *idx == raw);
                row.map(|(_, sel)| *sel)
            }
            EventType::Raw => Some(event_data & RISCV_PMU_RAW_EVENT_MASK),
            EventType::RawV2 => Some(event_data & MHPMEVENT_SELECTOR),
            EventType::Firmware => None,
        }
        .filter(|sel| *sel != 0)
    }
}

/// One CPU's delegation state: which logical counters the kernel programs itself, their hardware
/// counter numbers, and the selector each is configured with.
///
/// # Invariants
///
/// `delegated` is within the usable hardware counters whose hardware counter is delegated and is
/// not one of the fixed counters ([`FIXED_CTR_MASK`]: a selector register needs Smcntrpmf for
/// `cycle` and `instret`, `time` is reserved); `hw[i]` is the hardware counter of each logical
/// counter `i` of `delegated` (below 32), and `identity` says whether `hw[i] == i` for all of
/// them; `event[i]` is 0 or the `mhpmevent` value (selector and inhibit bits, without `OF`) last
/// written for counter `i`, and 0 for counters outside `delegated`; `configured` has the counters
/// whose `event` is not 0; `started` (within `configured`) the counters whose `scountinhibit` bit
/// the backend cleared and has not set since (only the backend writes the bits of delegated
/// counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delegation {
    delegated: u64,
    identity: bool,
    configured: u64,
    started: u64,
    hw: [u8; RISCV_MAX_COUNTERS],
    event: [u64; RISCV_MAX_COUNTERS],
    selectors: Selectors,
    /// What [`Hybrid`] did on this CPU: the SBI calls it forwarded to the SBI implementation, by
    /// function ID. Starts, stops and configurations are counted while any counter is delegated;
    /// without, the core's own statistics count them.
    pub sbi_calls: [u64; Fid::COUNT],
}

impl Delegation {
    /// No delegated counter: every function goes to the SBI implementation.
    pub const SBI_ONLY: Self = Self {
        delegated: 0,
        identity: true,
        configured: 0,
        started: 0,
        hw: [0; RISCV_MAX_COUNTERS],
        event: [0; RISCV_MAX_COUNTERS],
        selectors: Selectors::none(),
        sbi_calls: [0; Fid::COUNT],
    };

    /// [`Delegation::reinit`]'s value, for the host tests (the kernel builds it in place).
    #[cfg(any(test, feature = "host"))]
    pub fn new(info: &PmuInfo, delegated_hw: u64, selectors: Selectors) -> Self {
        let mut this = Self::SBI_ONLY;
        this.reinit(info, delegated_hw, &selectors);
        this
    }

    /// Makes this, in place (a CPU's state is not built on the stack), the delegation of the usable
    /// hardware counters of `info` whose hardware counter is set in `delegated_hw` (bit `n` =
    /// hardware counter `n`, as [`probe_delegated`] finds), less the fixed counters, with
    /// `selectors` for standard events.
    pub fn reinit(&mut self, info: &PmuInfo, delegated_hw: u64, selectors: &Selectors) {
        *self = Self::SBI_ONLY;
        self.selectors = *selectors;
        for i in counters_in(info.hw_mask) {
            let Some(h) = info.csr_index(i) else { continue };
            let hb = 1u64 << h;
            if delegated_hw & hb != 0 && u64::from(FIXED_CTR_MASK) & hb == 0 {
                self.delegated |= 1 << i;
                self.hw[i] = h;
                self.identity &= usize::from(h) == i;
            }
        }
    }

    /// The logical counters programmed with CSRs (for the host tests).
    #[cfg(any(test, feature = "host"))]
    pub fn delegated(&self) -> u64 {
        self.delegated
    }

    /// Whether any counter is programmed with CSRs.
    pub fn active(&self) -> bool {
        self.delegated != 0
    }

    /// The hardware counters (bit `n` = counter `n`) of the logical counters in `mask`.
    #[inline]
    fn hw_bits(&self, mask: u64) -> u64 {
        // The SBI implementations seen so far number logical counters as hardware counters.
        if self.identity {
            return mask & self.delegated;
        }
        counters_in(mask & self.delegated)
            .filter_map(|i| self.hw.get(i))
            .fold(0, |bits, h| bits | 1 << h)
    }
}

/// The counter interface over delegated counters and the SBI implementation of one hart: `hart`
/// gives both the CSRs and the SBI calls, `deleg` is this CPU's [`Delegation`]. Built for the
/// duration of one driver operation.
pub struct Hybrid<'a, H> {
    hart: &'a mut H,
    deleg: &'a mut Delegation,
}

impl<'a, H: Firmware + CounterCsrs> Hybrid<'a, H> {
    /// The interface of `hart` with the delegation state `deleg`.
    #[inline(always)]
    pub fn new(hart: &'a mut H, deleg: &'a mut Delegation) -> Self {
        Self { hart, deleg }
    }

    /// Has the SBI implementation configure and reset each delegated counter once (a
    /// `counter_config_matching` for cycles and a `counter_stop` with RESET), which leaves its
    /// `mhpmevent` at 0; a counter the implementation refuses is left as it is. For a CPU that
    /// starts with delegation.
    ///
    /// Through `sireg2` S-mode writes every bit of `mhpmevent` but MINH, which OpenSBI sets on
    /// every counter as the hart starts. QEMU 10.0 ends a counter's event only when the whole
    /// register is written as 0, and counts an event on one counter only: with MINH left set, a
    /// counter the kernel reset kept its event, which then counted on no other counter (after a
    /// reload on the SBI path, `instructions` counted 0). Firmware writes the whole register.
    pub fn reset_in_firmware(&mut self) {
        let cycles = EventIdx::hw(HwGeneralEvent::CpuCycles);
        for idx in counters_in(self.deleg.delegated) {
            if self
                .sbi(Fid::CounterConfigMatching)
                .counter_config_matching(idx, 1, CfgFlags::CLEAR_VALUE, cycles, 0)
                .is_ok()
            {
                let _ = self
                    .sbi(Fid::CounterStop)
                    .counter_stop(idx, 1, StopFlags::RESET);
            }
        }
    }

    /// The SBI implementation, for a call of `fid` forwarded to it, counted.
    #[inline(always)]
    fn sbi(&mut self, fid: Fid) -> &mut H {
        count_call(&mut self.deleg.sbi_calls, fid);
        self.hart
    }

    /// Selects logical counter `idx` (delegated) for `sireg`/`sireg2`.
    #[inline]
    fn select(&mut self, idx: usize) {
        let h = usize::from(self.deleg.hw.get(idx).copied().unwrap_or(0));
        self.hart.siselect_write(SISELECT_COUNTER_BASE + h);
    }

    /// The logical counters of a `(counter_idx_base, counter_idx_mask)` pair; `None` when a counter
    /// falls outside the 64 the driver handles (the SBI implementation then decides).
    fn logical(base: usize, mask: usize) -> Option<u64> {
        let mask = mask as u64;
        if mask == 0 {
            return Some(0);
        }
        let shifted = mask.checked_shl(u32::try_from(base).ok()?)?;
        (shifted >> base == mask).then_some(shifted)
    }

    /// The delegated and the other logical counters of a `(counter_idx_base, counter_idx_mask)`
    /// pair; `None` when none is delegated or a counter falls outside the 64 the driver handles.
    fn split(&self, base: usize, mask: usize) -> Option<(u64, u64)> {
        let logical = Self::logical(base, mask)?;
        let mine = logical & self.deleg.delegated;
        (mine != 0).then_some((mine, logical & !self.deleg.delegated))
    }

    /// The `(counter_idx_base, counter_idx_mask)` of the logical counters `logical` (not 0).
    fn base_mask(logical: u64) -> (usize, usize) {
        let base = logical.trailing_zeros();
        (base as usize, (logical >> base) as usize)
    }

    /// Loads delegated counter `idx` (configured, stopped) with `value` if there is one, and clears
    /// its `OF` as the SBI implementation's start does: the next wrap interrupts. The caller clears
    /// its `scountinhibit` bit.
    #[inline(always)]
    fn program_start(&mut self, idx: usize, value: Option<u64>) {
        let event = self.deleg.event.get(idx).copied().unwrap_or(0);
        self.select(idx);
        if let Some(value) = value {
            self.hart.sireg_write(value);
        }
        self.hart.sireg2_write(event);
    }

    /// Configures delegated counter `idx` for `selector` with the filter hints of `flags`, as
    /// `counter_config_matching` does: stopped, with `OF` set (no interrupt until it starts), started
    /// with AUTO_START.
    ///
    /// The value is cleared whatever CLEAR_VALUE says (the function leaves it unspecified without
    /// the flag): a counter keeps whatever value it last had, up to the top of its range, and the
    /// core continues a counting event from a value it finds above its floor, which would then wrap
    /// at once. A counter still configured for another event is reset first: an implementation
    /// may keep its own record of which counter counts an event until the selector is cleared
    /// (QEMU's does).
    fn configure(&mut self, idx: usize, selector: u64, flags: CfgFlags) {
        let hb = self.deleg.hw_bits(bit(idx));
        self.hart.scountinhibit_set(hb);
        let event = selector | mhpmevent_inhibit(flags);
        self.select(idx);
        if self.deleg.configured & bit(idx) != 0 {
            self.hart.sireg2_write(0);
        }
        self.hart.sireg2_write(event | MHPMEVENT_OF);
        set_slot(&mut self.deleg.event, idx, event);
        self.deleg.configured |= bit(idx);
        self.deleg.started &= !bit(idx);
        self.hart.sireg_write(0);
        if flags.contains(CfgFlags::AUTO_START) {
            self.hart.sireg2_write(event);
            self.hart.scountinhibit_clear(hb);
            self.deleg.started |= bit(idx);
        }
    }

    /// [`Firmware::counter_config_matching`] with counters delegated.
    fn counter_config_matching_delegated(
        &mut self,
        base: usize,
        mask: usize,
        flags: CfgFlags,
        event_idx: EventIdx,
        event_data: u64,
    ) -> Result<usize, SbiError> {
        let offered = Self::logical(base, mask).unwrap_or(0);
        let mine = offered & self.deleg.delegated;
        let selector = self.deleg.selectors.selector(event_idx, event_data);
        // SKIP_MATCH names the counter, the first of the set; otherwise the lowest delegated one.
        let idx = if flags.contains(CfgFlags::SKIP_MATCH) {
            offered.trailing_zeros() as usize
        } else {
            mine.trailing_zeros() as usize
        };
        if let Some(selector) = selector.filter(|_| mine & bit(idx) != 0) {
            self.configure(idx, selector, flags);
            return Ok(idx);
        }
        // Counters that are not delegated, firmware events, events without a selector here.
        let (base, mask) = match offered & !self.deleg.delegated {
            _ if mine == 0 => (base, mask),
            0 => return Err(SbiError::NotSupported),
            rest => Self::base_mask(rest),
        };
        self.sbi(Fid::CounterConfigMatching)
            .counter_config_matching(base, mask, flags, event_idx, event_data)
    }

    /// [`Firmware::counter_start`] with counters delegated.
    fn counter_start_delegated(
        &mut self,
        base: usize,
        mask: usize,
        flags: StartFlags,
        initial_value: u64,
    ) -> Result<(), SbiError> {
        let Some((mine, rest)) = self.split(base, mask) else {
            let hart = self.sbi(Fid::CounterStart);
            return hart.counter_start(base, mask, flags, initial_value);
        };
        if flags.contains(StartFlags::INIT_SNAPSHOT) {
            // Delegated counters have no snapshot memory.
            return Err(SbiError::InvalidParam);
        }
        if flags.contains(StartFlags::SET_INIT_VALUE) && !mine.is_power_of_two() {
            return Err(SbiError::InvalidParam);
        }
        let mut result = Ok(());
        if mine & self.deleg.started != 0 {
            result = Err(SbiError::AlreadyStarted);
        }
        // Counters without an event are skipped, as the SBI implementation skips them.
        let to_start = mine & self.deleg.configured & !self.deleg.started;
        let value = flags
            .contains(StartFlags::SET_INIT_VALUE)
            .then_some(initial_value);
        for idx in counters_in(to_start) {
            self.program_start(idx, value);
        }
        self.hart.scountinhibit_clear(self.deleg.hw_bits(to_start));
        self.deleg.started |= to_start;
        if rest == 0 {
            return result;
        }
        // Without snapshot memory (delegation has none) the base changes nothing. An error of the
        // SBI implementation wins over the delegated counters' one.
        let (base, mask) = Self::base_mask(rest);
        let hart = self.sbi(Fid::CounterStart);
        hart.counter_start(base, mask, flags, initial_value)
            .and(result)
    }

    /// [`Firmware::counter_stop`] with counters delegated.
    fn counter_stop_delegated(
        &mut self,
        base: usize,
        mask: usize,
        flags: StopFlags,
    ) -> Result<(), SbiError> {
        let Some((mine, rest)) = self.split(base, mask) else {
            return self.sbi(Fid::CounterStop).counter_stop(base, mask, flags);
        };
        if flags.contains(StopFlags::TAKE_SNAPSHOT) {
            return Err(SbiError::NoShmem);
        }
        // Every counter of the set is inhibited, also one started before the backend knew it (the
        // first reset at CPU start).
        self.hart.scountinhibit_set(self.deleg.hw_bits(mine));
        let mut result = Ok(());
        if mine & self.deleg.configured & !self.deleg.started != 0 {
            result = Err(SbiError::AlreadyStopped);
        }
        self.deleg.started &= !mine;
        if flags.contains(StopFlags::RESET) {
            for idx in counters_in(mine) {
                self.select(idx);
                // No event, and nothing else: an implementation may take only an all-zero mhpmevent
                // as the end of the counter's event (QEMU 10.0 does), and a counter without an
                // event cannot overflow.
                self.hart.sireg2_write(0);
                set_slot(&mut self.deleg.event, idx, 0);
            }
            self.deleg.configured &= !mine;
        }
        if rest == 0 {
            return result;
        }
        // An error of the delegated counters wins over the SBI implementation's one.
        let (base, mask) = Self::base_mask(rest);
        result.and(self.sbi(Fid::CounterStop).counter_stop(base, mask, flags))
    }
}

/// The [`Firmware`] functions of a hart with delegated counters. Without any, each call goes to
/// the SBI implementation at once, inlined, as on a hart without delegation.
impl<H: Firmware + CounterCsrs> Firmware for Hybrid<'_, H> {
    /// The functions this does not carry out itself (those of no counter it programs:
    /// `num_counters`, `counter_get_info`, the firmware counter reads) reach the SBI implementation
    /// through here, counted. Configuration, starts and stops are overridden below and never do.
    #[inline(always)]
    fn sbi_ecall(&mut self, fid: Fid, args: [usize; 6]) -> Result<usize, SbiError> {
        self.sbi(fid).sbi_ecall(fid, args)
    }

    #[inline(always)]
    fn counter_config_matching(
        &mut self,
        base: usize,
        mask: usize,
        flags: CfgFlags,
        event_idx: EventIdx,
        event_data: u64,
    ) -> Result<usize, SbiError> {
        if !self.deleg.active() {
            return self
                .hart
                .counter_config_matching(base, mask, flags, event_idx, event_data);
        }
        self.counter_config_matching_delegated(base, mask, flags, event_idx, event_data)
    }

    #[inline(always)]
    fn counter_start(
        &mut self,
        base: usize,
        mask: usize,
        flags: StartFlags,
        initial_value: u64,
    ) -> Result<(), SbiError> {
        if !self.deleg.active() {
            return self.hart.counter_start(base, mask, flags, initial_value);
        }
        self.counter_start_delegated(base, mask, flags, initial_value)
    }

    #[inline(always)]
    fn counter_start_one(&mut self, idx: usize, initial_value: u64) -> Result<(), SbiError> {
        // A delegated counter that is configured and stopped: the overflow handler's restart, and a
        // flush's start from a new value.
        let b = bit(idx);
        if self.deleg.configured & !self.deleg.started & b == 0 {
            return self.counter_start(idx, 1, StartFlags::SET_INIT_VALUE, initial_value);
        }
        self.program_start(idx, Some(initial_value));
        self.hart.scountinhibit_clear(self.deleg.hw_bits(b));
        self.deleg.started |= b;
        Ok(())
    }

    #[inline(always)]
    fn counter_stop(&mut self, base: usize, mask: usize, flags: StopFlags) -> Result<(), SbiError> {
        if !self.deleg.active() {
            return self.hart.counter_stop(base, mask, flags);
        }
        // Running delegated counters only, without flags (the overflow handler's stop): their
        // `scountinhibit` bits.
        let stop = mask as u64;
        if base == 0 && flags.is_empty() && stop & !(self.deleg.delegated & self.deleg.started) == 0
        {
            self.hart.scountinhibit_set(self.deleg.hw_bits(stop));
            self.deleg.started &= !stop;
            return Ok(());
        }
        self.counter_stop_delegated(base, mask, flags)
    }

    fn snapshot_set_shmem(&mut self, enable: bool) -> Result<(), SbiError> {
        self.sbi(Fid::SnapshotSetShmem).snapshot_set_shmem(enable)
    }

    fn event_get_info(&mut self, entries: &mut [u64]) -> Result<(), SbiError> {
        self.sbi(Fid::EventGetInfo).event_get_info(entries)
    }

    #[inline(always)]
    fn read_counter_csr(&mut self, csr: u16) -> u64 {
        self.hart.read_counter_csr(csr)
    }

    fn has_snapshot_mem(&mut self) -> bool {
        // A stop of delegated counters saves nothing: the core reads them from their CSRs.
        !self.deleg.active() && self.hart.has_snapshot_mem()
    }

    fn snapshot_page_word(&mut self, word: usize) -> u64 {
        self.hart.snapshot_page_word(word)
    }

    fn set_snapshot_page_word(&mut self, word: usize, value: u64) {
        self.hart.set_snapshot_page_word(word, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{CounterInfo, SbiVersion};

    #[test]
    fn inhibit_bits_are_sscofpmf_bits_58_to_62() {
        assert_eq!(mhpmevent_inhibit(CfgFlags::SET_MINH), 1 << 62);
        assert_eq!(mhpmevent_inhibit(CfgFlags::SET_SINH), 1 << 61);
        assert_eq!(mhpmevent_inhibit(CfgFlags::SET_UINH), 1 << 60);
        assert_eq!(mhpmevent_inhibit(CfgFlags::SET_VSINH), 1 << 59);
        assert_eq!(mhpmevent_inhibit(CfgFlags::SET_VUINH), 1 << 58);
        assert_eq!(mhpmevent_inhibit(CfgFlags::SKIP_MATCH), 0);
    }

    #[test]
    fn selectors_of_raw_events_are_their_data_and_standard_events_need_a_row() {
        let s = Selectors::from_rows(QEMU_VIRT.iter().copied());
        assert_eq!(s.selector(EventIdx::from_raw(0x2).unwrap(), 0), Some(2));
        assert_eq!(
            s.selector(EventIdx::from_raw(0x10021).unwrap(), 0),
            Some(0x10021)
        );
        assert_eq!(s.selector(EventIdx::from_raw(0x3).unwrap(), 0), None);
        let raw = EventIdx::from_raw(0x20000).unwrap();
        assert_eq!(s.selector(raw, u64::MAX), Some((1 << 48) - 1));
        let raw2 = EventIdx::from_raw(0x30000).unwrap();
        assert_eq!(s.selector(raw2, u64::MAX), Some((1 << 56) - 1));
        assert_eq!(s.selector(EventIdx::fw(5), 5), None);
        assert!(Selectors::for_platform(|c| c == "riscv-virtio").is_some());
        assert!(Selectors::for_platform(|c| c == "sifive,hifive").is_none());
    }

    #[test]
    fn fixed_and_firmware_counters_are_never_delegated() {
        let hw = |csr| {
            Some(
                CounterInfo {
                    csr,
                    width: 63,
                    firmware: false,
                }
                .encode(),
            )
        };
        let fw = Some(
            CounterInfo {
                csr: 0,
                width: 63,
                firmware: true,
            }
            .encode(),
        );
        let info = PmuInfo::from_counter_infos(
            SbiVersion::V2_0,
            &[hw(0xC00), None, hw(0xC02), hw(0xC03), hw(0xC04), fw],
        );
        let d = Delegation::new(&info, u64::MAX, Selectors::none());
        assert_eq!(d.delegated(), 0b11000);
        let d = Delegation::new(&info, 0b1_0000, Selectors::none());
        assert_eq!(d.delegated(), 0b10000);
    }
}
