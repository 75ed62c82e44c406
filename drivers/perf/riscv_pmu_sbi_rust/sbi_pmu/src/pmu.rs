// SPDX-License-Identifier: GPL-2.0

//! The per-CPU driver core: one CPU's counter table and the operations perf calls on it.
//!
//! [`CpuHwEvents`] is the C driver's `struct cpu_hw_events` with the logic of `riscv_pmu.c` and the
//! counter part of `riscv_pmu_sbi.c` around it. The kernel's perf callbacks are thin wrappers: they
//! call the operation here with the event's `hw_perf_event` (through [`HwEvent`], in place) and the
//! CPU's [`Firmware`]. Nothing here allocates, locks or keeps a reference to an event; the kernel
//! calls it on the owning CPU with interrupts disabled.
//!
//! # Batching
//!
//! Operations between `pmu_disable` and the matching `pmu_enable` only record what perf wants;
//! `pmu_enable` hands the difference to the [planner](crate::plan), which stops and starts counters
//! over masks. On top of that:
//! - a deleted event keeps its counter's mapping in firmware ("parked"); when the same event (the
//!   same [`HwEvent::id`], with the same `event_idx`, `event_data` and filter flags) is added
//!   again on this CPU it takes the same counter back without `counter_config_matching`. Parked
//!   counters are reset (stop with RESET, one call for all) as soon as another event needs a counter
//!   and none is free, and when another event of the same `event_idx` needs a counter, so that no
//!   two counters are configured for one event while only one of them counts it;
//! - counting events continue from the value their counter holds: a hardware counter is read from its
//!   CSR when the event starts, so only sampling events (and firmware counters whose value is unknown
//!   after configuration) need an initial value written;
//! - the overflow interrupt stops the running hardware counters with one call and restarts them with
//!   one call when snapshot memory is available (the new values of sampling events go through the
//!   page).
//!
//! Counts are exact at every counter width: a read, a stop or an overflow interrupt updates the event
//! from the counter, and counting events are updated on overflow too (the C driver skips them).
//!
use crate::abi::{
    CfgFlags, CounterInfo, EventType, Fid, SbiError, SbiVersion, SnapshotPage, StartFlags,
    StopFlags, CSR_SCOUNTOVF, RISCV_MAX_COUNTERS,
};
use crate::counters::{
    bit, counters_in, counting_floor, event_set_period, event_update_with, set_slot, HesState,
    HwEvent, HwFlags, PmuInfo, IDX_NONE,
};
use crate::errno::ENOENT;
use crate::events::EventRequest;
use crate::firmware::Firmware;
use crate::plan::Plan;

/// Counts a call of `fid` in a table of calls by function ID (wrapping, as [`PmuStats`]).
#[inline]
pub fn count_call(calls: &mut [u64; Fid::COUNT], fid: Fid) {
    if let Some(n) = calls.get_mut(fid.id()) {
        *n = n.wrapping_add(1);
    }
}

/// Why `add` found no counter for an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddError {
    /// `counter_config_matching` failed; the errno is `sbi_err_map_linux_errno()`'s.
    Sbi(SbiError),
    /// The counter firmware returned is not usable or already taken, or the event state is invalid
    /// (ENOENT, as `pmu_sbi_ctr_get_idx()` returns).
    NoCounter,
}

impl AddError {
    /// The positive errno the C driver of a kernel of major version `kernel_major` returns from
    /// `pmu->add` in the same situation.
    pub const fn errno(self, kernel_major: u32) -> i32 {
        match self {
            AddError::Sbi(err) => err.to_errno(kernel_major),
            AddError::NoCounter => ENOENT,
        }
    }
}

/// What the overflow handler learned about one overflowed event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OverflowEvent {
    /// The count to add to the event.
    pub delta: u64,
    /// Whether a sample is due (`perf_event_overflow()` must be called).
    pub sample: bool,
    /// The period the sample stands for (`perf_sample_data_init(.., last_period)`).
    pub last_period: u64,
    /// Whether the event's mmap page must follow (`perf_event_update_userpage()`): user space reads
    /// its counter directly (`USER_READ_CNT`), and the page's offset is the count less the value the
    /// counter restarts from. A page without a counter index is not read for counts (perf's readers
    /// fall back to read(2)); it is brought up to date when the event is next scheduled, as a
    /// software event's is.
    pub publish: bool,
}

/// Declares a struct with `pub` fields, each with its zero (`field: type = zero`), and a
/// `const ZERO` of it in which every field is that zero: for state that is set up in `const`
/// context and reset in place.
macro_rules! zeroed_struct {
    ($(#[$meta:meta])* pub struct $name:ident {
        $($(#[$fmeta:meta])* pub $field:ident: $ty:ty = $zero:expr,)*
    }) => {
        $(#[$meta])*
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl $name {
            /// Every field zero.
            pub const ZERO: Self = Self { $($field: $zero,)* };
        }
    };
}

zeroed_struct! {
    /// Per-CPU statistics, for debugfs and for measuring the batching. The counters wrap (in
    /// centuries): they are on every hot path, where an overflow check would cost a branch each.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct PmuStats {
        /// SBI calls made, indexed by function ID.
        pub calls: [u64; Fid::COUNT] = [0; Fid::COUNT],
        /// Flushes that made at least one call.
        pub flushes: u64 = 0,
        /// Adds that took a parked counter back without `counter_config_matching`.
        pub reused: u64 = 0,
        /// Overflow interrupts that found running hardware counters.
        pub overflows: u64 = 0,
        /// SBI calls that failed with an error other than ALREADY_STARTED/ALREADY_STOPPED.
        pub errors: u64 = 0,
        /// Stops in a disable window that stopped every running counter that cannot coast, saving
        /// their values (snapshot memory only). Counters perf still wants then start again at the
        /// flush: a window that stops few of many running events costs that one start more than
        /// stopping each alone.
        pub freezes: u64 = 0,
    }
}

zeroed_struct! {
    /// The counter bitmasks of one CPU (bit `n` = logical counter `n`), which
    /// [`CpuHwEvents::masks`] shows; the invariants of [`CpuHwEvents`] relate them.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct CtrMasks {
        /// The hardware counters events hold (`used_hw_ctrs`).
        pub used_hw_ctrs: u64 = 0,
        /// The firmware counters events hold (`used_fw_ctrs`).
        pub used_fw_ctrs: u64 = 0,
        /// Counters started in firmware, as far as the driver knows.
        pub running: u64 = 0,
        /// Counters perf wants running once the pending work is flushed.
        pub want: u64 = 0,
        /// Counters to load with their initial value when they start.
        pub reload: u64 = 0,
        /// Counters to stop with RESET at the next flush.
        pub reset: u64 = 0,
        /// Counters no event holds that keep their firmware mapping for a returning event.
        pub parked: u64 = 0,
        /// Hardware counters last started for a counting event that may coast
        /// ([`CpuHwEvents::del`]): a disable window with snapshot memory leaves them running and
        /// reads them, and `add` and `del` take their short path.
        pub coastable: u64 = 0,
        /// Firmware counters configured by `counter_config_matching` whose value the driver has
        /// not seen.
        pub fresh: u64 = 0,
        /// Stopped counters whose value a stop with TAKE_SNAPSHOT saved: reading them costs
        /// neither an SBI call nor a CSR read until they start again.
        pub known: u64 = 0,
        /// Counters whose overflow is being handled.
        pub ovf_pending: u64 = 0,
    }
}

impl CtrMasks {
    /// The counters events hold, one each: the C driver's `n_events` is the number of bits.
    #[inline]
    pub fn used(&self) -> u64 {
        self.used_hw_ctrs | self.used_fw_ctrs
    }

    /// The counters no event holds that were left running ([`CpuHwEvents::del`]).
    pub fn coasting(&self) -> u64 {
        self.parked & self.running
    }
}

/// One CPU's counters (`struct cpu_hw_events`).
///
/// # Invariants
///
/// Between calls of its public methods, the counter bitmasks ([`CtrMasks`]) keep these relations:
/// - `used_hw_ctrs` is within the usable hardware counters (`info.hw_mask`) and `used_fw_ctrs`
///   within the usable firmware counters (`info.fw_mask`), so `used_hw_ctrs & used_fw_ctrs == 0`;
/// - `parked`, `reset` and `used_hw_ctrs | used_fw_ctrs` are pairwise disjoint: a counter is held by
///   an event, parked for one, waiting for its reset, or none of these.
/// - `running` and `want` are within the usable counters (`info.cmask`). Outside a disable window
///   (`disable_depth == 0`; the overflow handler counts as one) the recorded work has been
///   flushed: `running == want`, `reload == 0` and `reset == 0`. Within a window they differ by
///   what the next flush does.
/// - `parked & running` are the coasting counters ([`CtrMasks::coasting`]).
/// - `coastable` is within `info.hw_mask`; a bit there matters only while the counter runs for the
///   event that last started it.
/// - `known & running == 0`: a value saved by a snapshot (in `held`) is known only while the
///   counter is stopped.
/// - `fresh` is acted on for firmware counters only; a bit is cleared when the counter starts.
/// - `ovf_pending` is zero outside the overflow handler; [`CpuHwEvents::overflow_begin`] sets it
///   to the held hardware counters (within `used_hw_ctrs`) it stopped and found overflowed, and
///   [`CpuHwEvents::overflow_end`] clears it.
#[derive(Clone, Debug)]
pub struct CpuHwEvents {
    info: PmuInfo,
    disable_depth: u32,
    snapshot: bool,
    masks: CtrMasks,
    /// The event each parked counter was left by ([`HwEvent::id`]).
    parked_owner: [u64; RISCV_MAX_COUNTERS],
    /// The last value the driver knows a firmware counter to hold.
    held: [u64; RISCV_MAX_COUNTERS],
    /// The value each counter in `reload` is loaded with when it starts.
    init_val: [u64; RISCV_MAX_COUNTERS],
    /// The event each counter parked or held is configured for in firmware, as far as the driver
    /// knows.
    mapped: [Option<EventRequest>; RISCV_MAX_COUNTERS],
    stats: PmuStats,
}

impl CpuHwEvents {
    /// A CPU with no event and no counter.
    pub const EMPTY: Self = Self::new(&PmuInfo::EMPTY);

    /// A CPU with no event, using the counters `info` describes.
    pub const fn new(info: &PmuInfo) -> Self {
        Self {
            info: *info,
            disable_depth: 0,
            snapshot: false,
            masks: CtrMasks::ZERO,
            parked_owner: [0; RISCV_MAX_COUNTERS],
            held: [0; RISCV_MAX_COUNTERS],
            init_val: [0; RISCV_MAX_COUNTERS],
            mapped: [None; RISCV_MAX_COUNTERS],
            stats: PmuStats::ZERO,
        }
    }

    /// Makes this the CPU [`CpuHwEvents::new`] gives, in place: the state of a CPU is too large to
    /// be built on a kernel stack and moved.
    pub fn reinit(&mut self, info: &PmuInfo) {
        self.clear();
        self.info = *info;
        self.stats = PmuStats::ZERO;
    }

    /// Forgets every event and every counter's state, in place; the counter table and the
    /// statistics stay.
    fn clear(&mut self) {
        // Every field is named, so that a new one fails to build here until it is cleared too.
        let Self {
            info: _,
            stats: _,
            disable_depth,
            snapshot,
            masks,
            parked_owner,
            held,
            init_val,
            mapped,
        } = self;
        (*disable_depth, *snapshot, *masks) = (0, false, CtrMasks::ZERO);
        for slots in [parked_owner, held, init_val] {
            *slots = [0; RISCV_MAX_COUNTERS];
        }
        *mapped = [None; RISCV_MAX_COUNTERS];
    }

    /// The counter table this CPU uses.
    pub fn info(&self) -> &PmuInfo {
        &self.info
    }

    /// The statistics.
    pub fn stats(&self) -> &PmuStats {
        &self.stats
    }

    /// Whether snapshot memory is set up on this CPU.
    pub fn snapshot_enabled(&self) -> bool {
        self.snapshot
    }

    /// The counter bitmasks: which counters events hold, which run, which are parked.
    pub fn masks(&self) -> &CtrMasks {
        &self.masks
    }

    /// `pmu_sbi_starting_cpu()`: stops and resets every counter (so no mapping survives from an
    /// earlier kernel or a crashed CPU), forgets all state, and with `use_snapshot` on SBI v2.0 or
    /// later registers the implementation's snapshot page. An error from `snapshot_set_shmem` is
    /// returned (the CPU then runs without snapshot); SBI_ERR_NOT_SUPPORTED means the firmware has no
    /// snapshot support.
    pub fn cpu_starting<F: Firmware>(
        &mut self,
        fw: &mut F,
        use_snapshot: bool,
    ) -> Result<(), SbiError> {
        self.clear();
        // Counters that are not configured or already stopped make the stop fail; it is still done.
        self.reset_now(fw, self.info.cmask);
        if !use_snapshot || self.info.version < SbiVersion::V2_0 || !fw.has_snapshot_mem() {
            return Ok(());
        }
        for word in 0..SnapshotPage::USED_WORDS {
            fw.set_snapshot_page_word(word, 0);
        }
        count_call(&mut self.stats.calls, Fid::SnapshotSetShmem);
        fw.snapshot_set_shmem(true)?;
        self.snapshot = true;
        Ok(())
    }

    /// `pmu_sbi_dying_cpu()`: resets the mapping of every parked counter (one stop with RESET), so
    /// firmware holds no mapping for an event that left this CPU, and disables the snapshot memory
    /// of this CPU.
    pub fn cpu_dying<F: Firmware>(&mut self, fw: &mut F) -> Result<(), SbiError> {
        self.reset_now(fw, self.masks.parked);
        if !core::mem::take(&mut self.snapshot) {
            return Ok(());
        }
        count_call(&mut self.stats.calls, Fid::SnapshotSetShmem);
        fw.snapshot_set_shmem(false)
    }

    /// `pmu->pmu_disable`: from now until the matching [`CpuHwEvents::pmu_enable`], operations are
    /// recorded and flushed together. Calls nest.
    #[inline]
    pub fn pmu_disable(&mut self) {
        self.disable_depth = self.disable_depth.saturating_add(1);
    }

    /// `pmu->pmu_enable`: the outermost call flushes the recorded work.
    #[inline]
    pub fn pmu_enable<F: Firmware>(&mut self, fw: &mut F) {
        self.disable_depth = self.disable_depth.saturating_sub(1);
        self.maybe_flush(fw);
    }

    /// `riscv_pmu_add()`: gives the event a counter (`pmu_sbi_ctr_get_idx()`), and starts it when
    /// `start` (`PERF_EF_START`) is set.
    #[inline(always)]
    pub fn add<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &mut impl HwEvent,
        start: bool,
    ) -> Result<(), AddError> {
        if start && self.add_returning(fw, hw).is_some() {
            return Ok(());
        }
        self.add_general(fw, hw, start)
    }

    /// The short path of [`CpuHwEvents::add`], taken at nearly every context switch of a task that
    /// counts hardware events: the event comes back to the counter it left running
    /// ([`CpuHwEvents::del_coasting`]), which still holds its configuration. It claims the counter
    /// and takes its value as the event's start, as the general path would through
    /// [`CpuHwEvents::start`], without an SBI call or anything to flush. Returns `None`, having
    /// changed nothing, in every other case.
    #[inline(always)]
    fn add_returning<F: Firmware>(&mut self, fw: &mut F, hw: &mut impl HwEvent) -> Option<()> {
        // A counter parked by this event, still running for it as a counting event (wanted,
        // coastable) and held by no other event: the returning owner takes it back as it is.
        // The masks first: they need no load from the event. The owner is that event's id (never
        // reused; 0, unknown, never matches a parked counter's owner on this path).
        let idx = usize::try_from(hw.last_tag().wrapping_sub(1)).ok()?;
        let b = bit(idx);
        let m = &self.masks;
        if m.parked & m.running & m.want & m.coastable & b == 0 || m.used() & b != 0 {
            return None;
        }
        let owner = hw.id();
        if owner == 0 || self.parked_owner.get(idx) != Some(&owner) {
            return None;
        }
        let info = self.info.counter_info(idx)?;
        let mask = info.width_mask();
        let value = fw.read_counter_csr(info.csr) & mask;
        if value < counting_floor(mask) {
            // Too near the wrap: the general path reloads the counter.
            return None;
        }
        // What the hint path of `ctr_get_idx` does, with the kind known: coastable counters are
        // hardware counters.
        self.masks.parked &= !b;
        self.masks.used_hw_ctrs |= b;
        self.stats.reused = self.stats.reused.wrapping_add(1);
        // idx is below 64, so it fits an i32.
        hw.set_idx(idx as i32);
        hw.set_prev_count(value);
        hw.set_hes(HesState::empty());
        Some(())
    }

    /// [`CpuHwEvents::add`] for every event [`CpuHwEvents::add_returning`] does not take (out of
    /// line, so that the short path keeps its registers).
    #[inline(never)]
    fn add_general<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &mut impl HwEvent,
        start: bool,
    ) -> Result<(), AddError> {
        let idx = self.ctr_get_idx(fw, hw)?;
        // idx is below 64, so it fits an i32.
        hw.set_idx(idx as i32);
        hw.set_hes(HesState::STOPPED | HesState::UPTODATE);
        if start {
            // As `riscv_pmu_add()` starts it (with PERF_EF_RELOAD).
            self.start(fw, hw);
        } else {
            // A counter that coasted stops: an added event counts only once started.
            self.masks.want &= !bit(idx);
            self.maybe_flush(fw);
        }
        Ok(())
    }

    /// `riscv_pmu_del()`: stops and updates the event, then releases its counter. Returns the count
    /// to add to the event.
    ///
    /// The C driver resets the counter's mapping at once (stop with RESET). This driver parks it
    /// instead, so the same event can come back to it without reconfiguration; the mapping is reset
    /// as soon as another event needs the counter, and at the latest when the CPU stops.
    ///
    /// A counting event on a hardware counter leaves its counter running ("coasting"): what it
    /// counts while no event holds it is never added to anything, since a returning event takes the
    /// counter's value as its new start (see [`CpuHwEvents::start`]), and user space cannot read it
    /// (the glue clears its `scounteren` bit before this). A context switch of a task with only
    /// such events then makes no SBI call at all. A coasting counter stops as soon as another event
    /// needs it (stopped with RESET like any parked counter), at an overflow interrupt, and when the
    /// CPU stops.
    ///
    /// Where user mode can read any configured counter ([`PmuInfo::configured_counters_readable`]:
    /// KVM), nothing is parked or coasts: the counter is stopped with RESET at the flush, as the C
    /// driver does at once, so no other task can read what it counted.
    #[inline(always)]
    pub fn del<F: Firmware>(&mut self, fw: &mut F, hw: &mut impl HwEvent) -> u64 {
        self.del_coasting(fw, hw)
            .unwrap_or_else(|| self.del_general(fw, hw))
    }

    /// The short path of [`CpuHwEvents::del`]: a counting event whose hardware counter may coast
    /// ([`CpuHwEvents::may_coast`]) reads its counter and parks it
    /// running, as the general path does through [`CpuHwEvents::stop_counter`], without its
    /// checks for work to record or flush (there is none: the counter keeps running and stays
    /// wanted). `None`, having changed nothing, in every other case.
    #[inline(always)]
    fn del_coasting<F: Firmware>(&mut self, fw: &mut F, hw: &mut impl HwEvent) -> Option<u64> {
        let idx = hw.counter()?;
        let b = bit(idx);
        if self.masks.used_hw_ctrs & b == 0 || !self.may_coast(idx) || !hw.hes().is_empty() {
            return None;
        }
        let info = self.info.counter_info(idx)?;
        let delta = event_update_with(hw, fw.read_counter_csr(info.csr), info.width_mask());
        self.park(hw, idx);
        hw.set_hes(HesState::STOPPED | HesState::UPTODATE);
        hw.set_idx(IDX_NONE);
        Some(delta)
    }

    /// [`CpuHwEvents::del`] for every event [`CpuHwEvents::del_coasting`] does not take (out of
    /// line, as [`CpuHwEvents::add_general`]).
    #[inline(never)]
    fn del_general<F: Firmware>(&mut self, fw: &mut F, hw: &mut impl HwEvent) -> u64 {
        let Some(idx) = self.used_counter(hw) else {
            hw.set_idx(IDX_NONE);
            return 0;
        };
        let delta = self.stop_counter(fw, hw, idx, self.may_coast(idx));
        if self.info.configured_counters_readable {
            self.masks.reset |= self.release(idx);
        } else {
            self.park(hw, idx);
        }
        self.maybe_flush(fw);
        hw.set_idx(IDX_NONE);
        delta
    }

    /// `riscv_pmu_start()`: starts the event's counter.
    ///
    /// A sampling event is loaded with its next period (`riscv_pmu_event_set_period()`) whether
    /// perf passes PERF_EF_RELOAD or not, as the C driver does. A counting event continues from the
    /// value its counter holds.
    #[inline(always)]
    pub fn start<F: Firmware>(&mut self, fw: &mut F, hw: &mut impl HwEvent) {
        let Some((idx, info)) = self.used_info(hw) else {
            return;
        };
        let b = bit(idx);
        let mask = self.info.width_mask(idx);
        hw.set_hes(HesState::empty());
        let reload_value = if hw.is_sampling() {
            event_set_period(hw, mask);
            true
        } else if info.firmware {
            // A firmware counter keeps its value while stopped; after configuration, or when the
            // event last ran on another counter, it is set to prev_count.
            self.masks.fresh & b != 0 || self.held.get(idx) != Some(&hw.prev_count())
        } else {
            // Counting continues from the counter value, which costs no SBI call to read, unless
            // the value leaves too little margin before the wrap: then from the floor.
            let value = self
                .stopped_value(idx)
                .unwrap_or_else(|| fw.read_counter_csr(info.csr))
                & mask;
            hw.set_prev_count(value.max(counting_floor(mask)));
            value < counting_floor(mask)
        };
        if reload_value {
            let value = hw.prev_count() & mask;
            set_slot(&mut self.init_val, idx, value);
            set_slot(&mut self.held, idx, value);
            self.masks.reload |= b;
        }
        self.masks.fresh &= !b;
        self.masks.coastable &= !b;
        // What `may_coast` asks of the event and its counter: a counting, not legacy-mode, event on
        // a hardware counter.
        let legacy = hw.hw_flags().contains(HwFlags::LEGACY);
        if !hw.is_sampling() && !legacy && self.info.hw_mask & b != 0 {
            self.masks.coastable |= b;
        }
        self.masks.want |= b;
        self.maybe_flush(fw);
    }

    /// `riscv_pmu_stop()`: stops the event's counter and updates the event (always, as the C driver
    /// does whether perf passes PERF_EF_UPDATE or not). Returns the count to add to the event.
    pub fn stop<F: Firmware>(&mut self, fw: &mut F, hw: &mut impl HwEvent) -> u64 {
        let idx = self.used_counter(hw);
        idx.map_or(0, |idx| self.stop_counter(fw, hw, idx, false))
    }

    /// Stops the event on its counter `idx` and updates it; with `keep_running` (a coasting
    /// counter, see [`CpuHwEvents::may_coast`]) perf's view of the event stops but the counter runs on.
    #[inline(always)]
    fn stop_counter<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &mut impl HwEvent,
        idx: usize,
        keep_running: bool,
    ) -> u64 {
        if hw.hes().contains(HesState::STOPPED) {
            return 0;
        }
        let b = bit(idx);
        // A start recorded in this window and not flushed yet never ran: nothing to count.
        let never_ran = self.masks.reload & b != 0;
        // If the value was never loaded, the driver no longer knows what the counter holds.
        self.masks.fresh |= self.masks.reload & b & self.info.fw_mask;
        if self.snapshot
            && self.disable_depth > 0
            && !never_ran
            && self.masks.running & !self.masks.coastable & b != 0
        {
            // Inside a window with snapshot memory, the first stop of a counter that cannot coast
            // stops every running counter that cannot in one call that saves their values, as a
            // PMU-wide disable does: this and every later read of them in the window come from
            // those values, and the flush restarts what perf still wants in one call. Counters that
            // can coast are read (a CSR read costs less than their share of a stop and a start).
            self.freeze(fw);
        }
        if !keep_running {
            self.masks.want &= !b;
        }
        self.masks.reload &= !b;
        hw.set_hes(hw.hes() | HesState::STOPPED);
        // Outside a disable window the counter stops before it is read, as in the C driver. Inside
        // one without snapshot memory it is read now and stopped at the flush: perf reads the count
        // right after stop.
        self.maybe_flush(fw);
        let delta = if never_ran { 0 } else { self.read(fw, hw) };
        hw.set_hes(hw.hes() | HesState::UPTODATE);
        delta
    }

    /// `riscv_pmu_read()` with `riscv_pmu_event_update()`: reads the counter and moves the event to
    /// it. Returns the count to add to the event.
    #[inline(always)]
    pub fn read<F: Firmware>(&mut self, fw: &mut F, hw: &mut impl HwEvent) -> u64 {
        let Some((idx, info)) = self.used_info(hw) else {
            return 0;
        };
        // Up to date, or the counter still waits for the value prev_count stands for (no event
        // counted yet): nothing to add.
        if hw.hes().contains(HesState::UPTODATE) || self.masks.reload & bit(idx) != 0 {
            return 0;
        }
        let value = if let Some(value) = self.stopped_value(idx) {
            value
        } else if info.firmware {
            count_call(&mut self.stats.calls, Fid::CounterFwRead);
            let Ok(v) = fw.counter_fw_read(idx) else {
                // The C driver would take 0 as the value and add garbage; keep the count instead.
                self.stats.errors = self.stats.errors.wrapping_add(1);
                return 0;
            };
            // RV64: the value register holds the whole 64-bit counter.
            v as u64
        } else {
            fw.read_counter_csr(info.csr)
        };
        // PmuInfo::width_mask, from the info at hand. Only a firmware counter's value is kept: start
        // compares it with prev_count to know whether the counter must be rewritten.
        let width_mask = if info.firmware {
            set_slot(&mut self.held, idx, value);
            u64::MAX
        } else {
            info.width_mask()
        };
        event_update_with(hw, value, width_mask)
    }

    /// First step of `pmu_sbi_ovf_handler()`: stops every running hardware counter in one call (taking
    /// a snapshot when there is snapshot memory), then reads which overflowed, from the snapshot page or
    /// from `scountovf`. Returns the logical counters that overflowed and hold an event; 0 means the
    /// interrupt was not for this driver (IRQ_NONE).
    ///
    /// Every call must be followed by [`CpuHwEvents::overflow_end`], also when it returns 0. The
    /// caller clears the pending overflow interrupt after this call, calls
    /// [`CpuHwEvents::overflow_event`] for the event of each returned counter, and finally
    /// [`CpuHwEvents::overflow_end`], which restarts the counters. Between the two, a throttled event
    /// may be stopped with [`CpuHwEvents::stop`]; it then stays stopped.
    #[inline]
    pub fn overflow_begin<F: Firmware>(&mut self, fw: &mut F) -> u64 {
        // The restart happens in overflow_end; until then work is recorded as inside a window.
        self.pmu_disable();
        let hw_running = self.masks.running & self.info.hw_mask;
        if hw_running == 0 {
            return 0;
        }
        self.stats.overflows = self.stats.overflows.wrapping_add(1);
        // Coasting counters stop with the others and stay stopped (a counter that wrapped while
        // coasting would otherwise interrupt again); a returning event starts its counter anew.
        self.masks.want &= !self.masks.parked;
        // With snapshot memory the stop saves the counters' values and the overflow bitmap, relative
        // to counter_idx_base 0, so in logical counters; scountovf is indexed by hardware counter.
        let overflow = if self.snapshot && self.stop_taking_snapshot(fw, hw_running) {
            fw.snapshot_page_word(SnapshotPage::OVERFLOW_WORD)
        } else {
            self.sbi_stop(fw, hw_running, StopFlags::empty());
            self.info
                .overflowed(hw_running, fw.read_counter_csr(CSR_SCOUNTOVF))
        };
        self.masks.running &= !hw_running;
        self.masks.ovf_pending = overflow & hw_running & self.masks.used_hw_ctrs;
        self.masks.ovf_pending
    }

    /// The per-event step of the overflow handler, for the event holding an overflowed counter: updates
    /// the event (the returned delta), and for a sampling event programs the next period and says
    /// whether a sample is due. `None` when the event's counter is not among those
    /// [`CpuHwEvents::overflow_begin`] returned (or was handled already), or when perf core stopped
    /// the event since (a throttled group).
    #[inline(always)]
    pub fn overflow_event<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &mut impl HwEvent,
    ) -> Option<OverflowEvent> {
        let idx = hw
            .counter()
            .filter(|&idx| self.masks.ovf_pending & bit(idx) != 0)?;
        let b = bit(idx);
        self.masks.ovf_pending &= !b;
        // perf core 7.x stops a throttled event's whole group from inside the handler: a member
        // stopped there was brought up to date by that stop and stays stopped until perf core
        // starts it.
        if hw.hes().contains(HesState::STOPPED) {
            return None;
        }
        let mask = self.info.width_mask(idx);
        hw.set_hes(hw.hes() | HesState::STOPPED);
        let delta = self.read(fw, hw);
        hw.set_hes(hw.hes() | HesState::UPTODATE);
        let last_period = hw.last_period();
        // The counter just wrapped and holds a small value: both kinds of event are moved away from
        // the wrap again, sampling events to their next period, counting events to the floor.
        let sample = if hw.is_sampling() {
            event_set_period(hw, mask)
        } else {
            hw.set_prev_count(counting_floor(mask));
            false
        };
        set_slot(&mut self.init_val, idx, hw.prev_count() & mask);
        self.masks.reload |= b;
        hw.set_hes(HesState::empty());
        Some(OverflowEvent {
            delta,
            sample,
            last_period,
            publish: hw.hw_flags().contains(HwFlags::USER_READ_CNT),
        })
    }

    /// Last step of the overflow handler: restarts the counters stopped by
    /// [`CpuHwEvents::overflow_begin`], loading sampling events with their new period.
    #[inline]
    pub fn overflow_end<F: Firmware>(&mut self, fw: &mut F) {
        self.masks.ovf_pending = 0;
        // With one sampling event the flush is one start with its next period, made here without
        // a plan; the context switch's flush (`pmu_enable`) stays without this test.
        if self.disable_depth == 1 && self.flush_one_reload(fw) {
            self.disable_depth = 0;
        } else {
            self.pmu_enable(fw);
        }
    }

    /// Whether the counter `idx` of an event may keep running when the event leaves it
    /// ([`CpuHwEvents::del`]): a counting (not sampling) event on a hardware counter that runs in
    /// firmware with the value the event was last brought up to date from (no reload pending).
    /// Legacy-mode events are excluded: their fixed counter is reconfigured at every add. Snapshot
    /// memory does not change the choice: a hypervisor (KVM) offers it, and there a counter CSR read
    /// traps to the hypervisor, but every SBI call does too, and under KVM an SBI call that stops or
    /// starts a counter costs as much as several counter CSR reads.
    ///
    /// `coastable` holds the first part for the counter's event: perf wants the counter (`want`)
    /// only after that event's [`CpuHwEvents::start`], which set or cleared the bit. Nothing coasts
    /// where user mode can read any configured counter ([`PmuInfo::configured_counters_readable`]).
    #[inline]
    fn may_coast(&self, idx: usize) -> bool {
        let m = &self.masks;
        m.coastable & m.running & m.want & !m.reload & bit(idx) != 0
            && !self.info.configured_counters_readable
    }

    /// The counter the event holds, if it is one this CPU handed out.
    #[inline]
    fn used_counter(&self, hw: &impl HwEvent) -> Option<usize> {
        let idx = hw.counter()?;
        (self.masks.used() & bit(idx) != 0).then_some(idx)
    }

    /// [`CpuHwEvents::used_counter`] with its `counter_info`.
    #[inline(always)]
    fn used_info(&self, hw: &impl HwEvent) -> Option<(usize, CounterInfo)> {
        let idx = self.used_counter(hw)?;
        Some((idx, self.info.counter_info(idx)?))
    }

    /// `pmu_sbi_ctr_get_idx()`: finds a counter for the event and claims it.
    #[inline]
    fn ctr_get_idx<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &impl HwEvent,
    ) -> Result<usize, AddError> {
        // The common case first: an event coming back to the counter it left (a context switch of
        // the task it counts for), found through the hint it keeps. The counter is still configured
        // for it: nothing a perf event's configuration depends on (its attributes and counter mask)
        // changes after event_init, and a known owner id (not 0) is never reused. Legacy events
        // reconfigure their fixed counter below; every other case is the parked pass below.
        let legacy = hw.hw_flags().contains(HwFlags::LEGACY);
        if let Some(hint) = self.parked_for(hw).filter(|_| !legacy) {
            let b = bit(hint);
            // The counter keeps the configuration it was parked with: claimed as it is (what
            // `claim` would do for the same configuration, without copying and comparing it).
            if self.mapped.get(hint).is_some_and(Option::is_some) && self.masks.used() & b == 0 {
                self.masks.parked &= !b;
                self.stats.reused = self.stats.reused.wrapping_add(1);
                self.mark_used(b);
                return Ok(hint);
            }
        }
        self.ctr_get_idx_slow(fw, hw)
    }

    /// [`CpuHwEvents::ctr_get_idx`] for an event that does not find its parked counter: a legacy
    /// event's fixed counter, another parked counter, or a new configuration.
    #[inline(never)]
    fn ctr_get_idx_slow<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &impl HwEvent,
    ) -> Result<usize, AddError> {
        let event_idx = hw.event_idx().ok_or(AddError::NoCounter)?;
        let mut cfg = EventRequest {
            event_idx,
            event_data: hw.config(),
            // Only the filter hints come from the event; the other flags are the driver's choice.
            // CAST: `usize` is 64 bits on RV64.
            cflags: CfgFlags::from_bits_retain(hw.config_base() as usize) & CfgFlags::INHIBIT_HINTS,
        };
        // Firmware counters for firmware events, hardware counters for the others.
        let allowed = self.info.allowed_cmask(event_idx, hw.pmu_private());

        if hw.hw_flags().contains(HwFlags::LEGACY) && event_idx.ty() != EventType::Firmware {
            let fixed = u64::from(event_idx.fixed_counter());
            let fixed = self.info.logical_from_hw(fixed);
            if fixed != 0 {
                cfg.cflags |= CfgFlags::SKIP_MATCH;
                // SKIP_MATCH reconfigures the counter, so any parked mapping on it is gone; firmware
                // configures only a stopped counter.
                self.reset_now(fw, fixed & (self.masks.coasting() | self.masks.reset));
                self.forget(fixed & self.masks.parked);
                let idx = self.sbi_cfg_match(fw, fixed, cfg).map_err(AddError::Sbi)?;
                return self.claim(idx, fixed, cfg);
            }
        }

        // One pass over the parked counters (and those waiting for their reset). A counter parked by
        // this very event with the same configuration takes it back without an SBI call. A counter
        // still configured for the same SBI event otherwise would leave two counters configured for
        // one event; some implementations count an event on one counter only, the first configured
        // (QEMU's event-to-counter map does), so that counter would take the counts of the new one: it
        // is reset first.
        let mut same_event = 0;
        for i in counters_in(self.masks.parked | self.masks.reset) {
            let Some(m) = self.mapped.get(i).copied().flatten() else {
                continue;
            };
            if m == cfg && allowed & bit(i) != 0 && self.parked_by(i, hw.id()) {
                self.masks.parked &= !bit(i);
                self.stats.reused = self.stats.reused.wrapping_add(1);
                return self.claim(i, bit(i), cfg);
            }
            if m.event_idx == cfg.event_idx {
                same_event |= bit(i);
            }
        }
        self.reset_now(fw, same_event);

        // Counters an event left in this window wait for their reset: done now if the event needs
        // one of them.
        if self.free_counters(allowed) == 0 {
            self.reset_now(fw, allowed & self.masks.reset);
        }
        let mut free = self.free_counters(allowed);
        let stale = allowed & self.masks.parked;
        // Firmware gives cycles and instructions a programmable counter before their fixed one, which
        // cannot filter by mode without Smcntrpmf: a counter parked by another event is taken back
        // rather than leaving the event only its fixed counter. With no free counter at all, any
        // parked one is.
        let fixed = self.info.logical_from_hw(0b101);
        if free & !fixed == 0 {
            self.reset_now(fw, if free == 0 { stale } else { stale & !fixed });
            free = self.free_counters(allowed);
        }
        if free == 0 {
            // Every counter the event may use is taken: what firmware would answer.
            return Err(AddError::Sbi(SbiError::NotSupported));
        }
        let idx = match self.sbi_cfg_match(fw, free, cfg) {
            Err(SbiError::NotSupported) if allowed & self.masks.parked != 0 => {
                // The driver's constraints were incomplete; the parked counters may be the only
                // ones that fit.
                self.reset_now(fw, allowed & self.masks.parked);
                free = self.free_counters(allowed);
                self.sbi_cfg_match(fw, free, cfg)
            }
            other => other,
        }
        .map_err(AddError::Sbi)?;
        self.claim(idx, free, cfg)
    }

    /// Counters of `allowed` no event holds, not parked, not running and not waiting for their
    /// reset at the flush (firmware would configure one, and the reset would then undo it).
    #[inline]
    fn free_counters(&self, allowed: u64) -> u64 {
        let m = &self.masks;
        allowed & self.info.cmask & !m.used() & !m.parked & !m.running & !m.reset
    }

    /// The claim rules of `pmu_sbi_ctr_get_idx()`: the counter firmware configured must be one the
    /// driver offered, usable, and not held by another event; else ENOENT.
    #[inline]
    fn claim(&mut self, idx: usize, offered: u64, cfg: EventRequest) -> Result<usize, AddError> {
        let b = bit(idx);
        if offered & self.info.cmask & !self.masks.used() & b == 0 {
            return Err(AddError::NoCounter);
        }
        self.mark_used(b);
        if let Some(slot) = self.mapped.get_mut(idx) {
            if *slot != Some(cfg) {
                self.masks.fresh |= b;
                self.masks.known &= !b;
            }
            *slot = Some(cfg);
        }
        Ok(idx)
    }

    /// Gives back to firmware (one `counter_stop` with RESET) the counters parked by the event
    /// `owner` ([`HwEvent::id`]), running or not: perf freed it, so it will not come back for
    /// them. Counters another event took since are left alone.
    pub fn release_parked_of<F: Firmware>(&mut self, fw: &mut F, owner: u64) {
        if owner == 0 {
            return;
        }
        let mask = counters_in(self.masks.parked)
            .filter(|&i| self.parked_by(i, owner))
            .fold(0, |m, i| m | bit(i));
        self.reset_now(fw, mask);
    }

    /// Whether counter `idx` is parked, left by the event `owner` ([`HwEvent::id`]).
    #[inline]
    fn parked_by(&self, idx: usize, owner: u64) -> bool {
        self.masks.parked & bit(idx) != 0 && self.parked_owner.get(idx) == Some(&owner)
    }

    /// The counter the event last left ([`HwEvent::last_tag`]), when it is parked for this very
    /// event: its owner id is known (not 0) and never reused.
    #[inline(always)]
    fn parked_for(&self, hw: &impl HwEvent) -> Option<usize> {
        let owner = hw.id();
        let idx = usize::try_from(hw.last_tag().wrapping_sub(1)).ok()?;
        (owner != 0 && self.parked_by(idx, owner)).then_some(idx)
    }

    /// Takes counter `idx` from the event holding it; returns its bit.
    #[inline]
    fn release(&mut self, idx: usize) -> u64 {
        let b = bit(idx);
        self.masks.used_hw_ctrs &= !b;
        self.masks.used_fw_ctrs &= !b;
        b
    }

    /// Takes counter `idx` from the event `hw` and parks it for that event.
    #[inline(always)]
    fn park(&mut self, hw: &mut impl HwEvent, idx: usize) {
        self.masks.parked |= self.release(idx);
        set_slot(&mut self.parked_owner, idx, hw.id());
        // idx is below 64.
        hw.set_last_tag(idx as u64 + 1);
    }

    /// Records the counter `b` (a bit) as held by an event, in the mask of its kind.
    #[inline]
    fn mark_used(&mut self, b: u64) {
        self.masks.used_fw_ctrs |= b & self.info.fw_mask;
        self.masks.used_hw_ctrs |= b & !self.info.fw_mask;
    }

    /// Stops with RESET, now, counters no event holds, and forgets their mapping; no call for none.
    fn reset_now<F: Firmware>(&mut self, fw: &mut F, mask: u64) {
        if mask == 0 {
            return;
        }
        // Already stopped counters answer ALREADY_STOPPED; the reset still applies.
        self.sbi_stop(fw, mask, StopFlags::RESET);
        self.masks.running &= !mask;
        self.masks.want &= !mask;
        self.forget(mask);
    }

    /// Drops the driver's record of the mapping of these counters.
    #[inline]
    fn forget(&mut self, mask: u64) {
        self.masks.parked &= !mask;
        self.masks.reset &= !mask;
        self.masks.known &= !mask;
        // Only the counters in the mask are visited: every flush calls this, mostly with none.
        for i in counters_in(mask) {
            set_slot(&mut self.mapped, i, None);
        }
    }

    /// Outside a disable window, carries out the planner's calls for the recorded work.
    #[inline]
    fn maybe_flush<F: Firmware>(&mut self, fw: &mut F) {
        // Most windows change nothing in firmware (a context switch of counters that coast): no
        // counter to stop, start, reload or reset, and then nothing to plan or to forget.
        let m = &self.masks;
        if self.disable_depth == 0 && (m.want ^ m.running) | m.reload | m.reset != 0 {
            self.flush_work(fw);
        }
    }

    /// The flush of the overflow interrupt of one sampling event ([`CpuHwEvents::overflow_end`]):
    /// nothing to stop or reset, the one stopped counter perf wants is to start from a new value.
    /// Makes the plan's only call, a start with that value, and leaves the state as
    /// [`CpuHwEvents::flush_work`] would, without building the plan. Returns `false`, having
    /// changed nothing, in every other case.
    #[inline(always)]
    fn flush_one_reload<F: Firmware>(&mut self, fw: &mut F) -> bool {
        let reload = self.masks.reload;
        // Plan::new: no reset, no stop (nothing runs that perf does not want, no reload of a
        // running counter), the counters to start are the reload, one counter, and without
        // snapshot memory it starts with its value in a call of its own.
        if self.snapshot
            || self.masks.reset != 0
            || !reload.is_power_of_two()
            || self.masks.want & !self.masks.running != reload
            || self.masks.running & !self.masks.want != 0
        {
            return false;
        }
        let idx = reload.trailing_zeros() as usize;
        let value = self.init_val.get(idx).copied().unwrap_or(0);
        self.stats.flushes = self.stats.flushes.wrapping_add(1);
        self.sbi_start_one(fw, idx, value);
        // What the plan leaves running (`want`, less the reset counters): the running counters
        // and the reload.
        self.masks.running |= reload;
        self.masks.known &= !self.masks.running;
        self.masks.reload = 0;
        true
    }

    /// [`CpuHwEvents::maybe_flush`] with work recorded.
    #[inline(never)]
    fn flush_work<F: Firmware>(&mut self, fw: &mut F) {
        let plan = Plan::new(&self.masks, self.info.fw_mask, self.snapshot);
        if !plan.is_empty() {
            self.stats.flushes = self.stats.flushes.wrapping_add(1);
            self.carry_out(fw, &plan);
        }
        let m = &mut self.masks;
        m.running = Plan::running_after(m);
        m.want &= m.running;
        m.known &= !m.running;
        m.reload = 0;
        self.forget(self.masks.reset);
    }

    /// Makes a plan's calls in their order (stops before resets, both before any start, so a
    /// counter is never started twice and reloads see a stopped counter), straight from its masks:
    /// this runs at every context switch.
    #[inline]
    fn carry_out<F: Firmware>(&mut self, fw: &mut F, plan: &Plan) {
        // A plain stop saves the values when there is snapshot memory: perf reads the events right
        // after.
        if plan.stop != 0 && !(self.snapshot && self.stop_taking_snapshot(fw, plan.stop)) {
            self.sbi_stop(fw, plan.stop, StopFlags::empty());
        }
        if plan.reset != 0 {
            self.sbi_stop(fw, plan.reset, StopFlags::RESET);
        }
        if plan.start != 0 {
            self.sbi_start(fw, plan.start, StartFlags::empty());
        }
        if plan.start_snapshot != 0 {
            self.start_from_snapshot(fw, plan.start_snapshot);
        }
        for idx in counters_in(plan.start_with_value) {
            let value = self.init_val.get(idx).copied().unwrap_or(0);
            self.sbi_start_one(fw, idx, value);
        }
    }

    /// Stops every running counter that cannot coast in one call that saves their values in the
    /// snapshot page (perf's disable window with snapshot memory); the flush starts those perf still
    /// wants.
    fn freeze<F: Firmware>(&mut self, fw: &mut F) {
        let running = self.masks.running & !self.masks.coastable;
        if self.stop_taking_snapshot(fw, running) {
            self.masks.running &= !running;
            self.stats.freezes = self.stats.freezes.wrapping_add(1);
        }
    }

    /// `counter_stop(mask, TAKE_SNAPSHOT)`, keeping the saved values as known. False (and nothing
    /// kept) when the call failed.
    fn stop_taking_snapshot<F: Firmware>(&mut self, fw: &mut F, mask: u64) -> bool {
        if !self.sbi_stop(fw, mask, StopFlags::TAKE_SNAPSHOT) {
            return false;
        }
        for i in counters_in(mask) {
            let value = fw.snapshot_page_word(SnapshotPage::value_word(i));
            set_slot(&mut self.held, i, value);
        }
        self.masks.known |= mask;
        true
    }

    /// The value a stopped counter holds, when a snapshot saved it.
    #[inline]
    fn stopped_value(&self, idx: usize) -> Option<u64> {
        let known = self.masks.known & bit(idx) != 0;
        self.held.get(idx).copied().filter(|_| known)
    }

    /// Starts counters from the snapshot page: the new value for reloads, the value a snapshot saved
    /// or else the current CSR value for counters that continue.
    fn start_from_snapshot<F: Firmware>(&mut self, fw: &mut F, cmask: u64) {
        for i in counters_in(cmask) {
            let value = if self.masks.reload & bit(i) != 0 {
                self.init_val.get(i).copied().unwrap_or(0)
            } else if let Some(value) = self.stopped_value(i) {
                value
            } else {
                let info = self.info.counter_info(i);
                info.map_or(0, |c| fw.read_counter_csr(c.csr) & c.width_mask())
            };
            fw.set_snapshot_page_word(SnapshotPage::value_word(i), value);
        }
        // Firmware may keep its own copy of the page between calls (KVM does) and set overflow bits
        // in it without ever clearing them; INIT_SNAPSHOT loads the page, so a cleared bitmap here
        // keeps a past overflow from being reported again at the next stop.
        fw.set_snapshot_page_word(SnapshotPage::OVERFLOW_WORD, 0);
        self.sbi_start(fw, cmask, StartFlags::INIT_SNAPSHOT);
    }

    /// Counts a call of `fid`, and its error unless it is `benign`; whether the call did what it
    /// was asked (succeeded, or found the counters already as asked).
    #[inline]
    fn note_call(&mut self, fid: Fid, result: Result<(), SbiError>, benign: SbiError) -> bool {
        count_call(&mut self.stats.calls, fid);
        match result {
            Err(err) if err != benign => {
                self.stats.errors = self.stats.errors.wrapping_add(1);
                false
            }
            _ => true,
        }
    }

    /// `counter_stop(cmask, flags)`, counted; whether it stopped them ([`CpuHwEvents::note_call`]).
    #[inline]
    fn sbi_stop<F: Firmware>(&mut self, fw: &mut F, cmask: u64, flags: StopFlags) -> bool {
        // RV64 and at most 64 counters: counter_idx_base 0 and one mask word cover them all.
        let r = fw.counter_stop(0, cmask as usize, flags);
        self.note_call(Fid::CounterStop, r, SbiError::AlreadyStopped)
    }

    /// `counter_start(cmask, flags)`, counted.
    #[inline]
    fn sbi_start<F: Firmware>(&mut self, fw: &mut F, cmask: u64, flags: StartFlags) {
        let r = fw.counter_start(0, cmask as usize, flags, 0);
        self.note_call(Fid::CounterStart, r, SbiError::AlreadyStarted);
    }

    /// Starts counter `idx` from `value` ([`Firmware::counter_start_one`]), counted.
    #[inline(always)]
    fn sbi_start_one<F: Firmware>(&mut self, fw: &mut F, idx: usize, value: u64) {
        let r = fw.counter_start_one(idx, value);
        self.note_call(Fid::CounterStart, r, SbiError::AlreadyStarted);
    }

    fn sbi_cfg_match<F: Firmware>(
        &mut self,
        fw: &mut F,
        cmask: u64,
        cfg: EventRequest,
    ) -> Result<usize, SbiError> {
        count_call(&mut self.stats.calls, Fid::CounterConfigMatching);
        fw.counter_config_matching(0, cmask as usize, cfg.cflags, cfg.event_idx, cfg.event_data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::CounterInfo;

    /// Firmware that records every call and answers success.
    #[derive(Default)]
    struct Calls(Vec<(Fid, [usize; 6])>);

    impl Firmware for Calls {
        fn sbi_ecall(&mut self, fid: Fid, args: [usize; 6]) -> Result<usize, SbiError> {
            self.0.push((fid, args));
            Ok(0)
        }

        fn read_counter_csr(&mut self, _csr: u16) -> u64 {
            0
        }
    }

    /// Three hardware counters and a firmware counter.
    fn info() -> PmuInfo {
        let counter = |csr, firmware| {
            Some(
                CounterInfo {
                    csr,
                    width: 63,
                    firmware,
                }
                .encode(),
            )
        };
        PmuInfo::from_counter_infos(
            SbiVersion::V2_0,
            &[
                counter(0xC00, false),
                counter(0xC02, false),
                counter(0xC03, false),
                counter(0, true),
            ],
        )
    }

    /// Wherever the short flush of one reload applies, it makes the calls the general flush makes
    /// and leaves the same state; elsewhere it does nothing. Every combination of the four
    /// counters' masks, with snapshot memory and without.
    #[test]
    fn short_flush_of_one_reload_is_the_general_flush() {
        let info = info();
        let mut taken = 0;
        for bits in 0..(1u32 << 21) {
            let m = |shift: u32| u64::from((bits >> shift) & 0xf);
            let mut cpu = CpuHwEvents::new(&info);
            cpu.masks.running = m(0);
            cpu.masks.want = m(4);
            cpu.masks.reload = m(8);
            cpu.masks.reset = m(12);
            cpu.masks.known = m(16);
            cpu.snapshot = bits >> 20 != 0;
            for (i, v) in cpu.init_val.iter_mut().enumerate() {
                *v = 100 + i as u64;
            }
            let mut general = cpu.clone();
            let (mut short_calls, mut general_calls) = (Calls::default(), Calls::default());
            if !cpu.flush_one_reload(&mut short_calls) {
                assert!(short_calls.0.is_empty(), "{bits:#x}");
                assert_eq!(
                    (
                        cpu.masks.running,
                        cpu.masks.want,
                        cpu.masks.reload,
                        cpu.masks.known,
                        cpu.stats.flushes
                    ),
                    (m(0), m(4), m(8), m(16), 0),
                    "{bits:#x}"
                );
                continue;
            }
            taken += 1;
            general.flush_work(&mut general_calls);
            assert_eq!(short_calls.0, general_calls.0, "{bits:#x}");
            assert_eq!(format!("{cpu:?}"), format!("{general:?}"), "{bits:#x}");
        }
        assert!(taken > 0);
    }
}
