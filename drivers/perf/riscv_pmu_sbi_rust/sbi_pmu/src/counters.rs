// SPDX-License-Identifier: GPL-2.0

//! Counters and per-event state: what the platform offers (`PmuInfo`, the C driver's `cmask` and
//! `pmu_ctr_list`), what perf keeps per event ([`HwEvent`], `struct hw_perf_event` in place), and
//! the counting arithmetic of `drivers/perf/riscv_pmu.c`: counter deltas that wrap at the counter
//! width, and the sampling period with `left` clamped to half the counter range.

use bitflags::bitflags;

use crate::abi::{
    CfgFlags, CounterInfo, EventIdx, EventInfo, EventType, SbiError, SbiVersion, StopFlags,
    RISCV_MAX_COUNTERS,
};
use crate::dt::{DtPmuMaps, FIXED_CTR_MASK};
use crate::events::{
    event_map, raw_event, EventAttr, EventRequest, MapError, StdEvents, UserAccess,
};
use crate::firmware::Firmware;

bitflags! {
    /// `hw_perf_event::state`: the `PERF_HES_*` bits perf and the driver share.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct HesState: u32 {
        /// `PERF_HES_STOPPED`: the counter is stopped.
        const STOPPED = 0x01;
        /// `PERF_HES_UPTODATE`: the event count is up to date with the counter.
        const UPTODATE = 0x02;
    }
}

bitflags! {
    /// `hw_perf_event::flags` of a RISC-V PMU event.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct HwFlags: u32 {
        /// `PERF_EVENT_FLAG_NO_USER_ACCESS`: `perf_user_access` was 0 at event_init.
        const NO_USER_ACCESS = 1 << 0;
        /// `PERF_EVENT_FLAG_USER_ACCESS`: `perf_user_access` was 1 at event_init.
        const USER_ACCESS = 1 << 1;
        /// `PERF_EVENT_FLAG_LEGACY`: `perf_user_access` was 2 at event_init.
        const LEGACY = 1 << 2;
        /// The event samples (`is_sampling_event()`); a driver-private bit inside
        /// `PERF_EVENT_FLAG_ARCH`.
        const SAMPLING = 1 << 3;
        /// `PERF_EVENT_FLAG_USER_READ_CNT`: user space reads the counter directly (set by perf core
        /// on mmap).
        const USER_READ_CNT = 1 << 31;
    }
}

/// `hw_perf_event::idx` of an event that has no counter.
pub const IDX_NONE: i32 = -1;

/// Declares the required accessors of [`HwEvent`] and defines the host tests' plain event, from one
/// list of the fields of `struct hw_perf_event` the core uses: each named and typed as in the kernel
/// (`unsigned long` as `u64`, `local64_t` as its value), with its default on the host.
macro_rules! hw_event {
    ($($(#[$doc:meta])* $get:ident $($set:ident)?: $ty:ty = $default:expr;)*) => {
        /// The per-event state perf keeps in `struct hw_perf_event`, read and written in place.
        ///
        /// The driver core never copies an event's state: it works on whatever implements this
        /// trait. In the kernel that is the event's own `hw_perf_event` (the perf glue implements
        /// the required accessors from the same field list as its own); on the host a plain struct
        /// of the tests. perf owns the state per event, across CPUs, and the core never keeps a
        /// reference to it.
        pub trait HwEvent {
            $(
                $(#[$doc])*
                fn $get(&self) -> $ty;
                $(#[doc = concat!("Sets [`HwEvent::", stringify!($get), "`].")]
                fn $set(&mut self, value: $ty);)?
            )*

            /// The driver's flags, typed.
            fn hw_flags(&self) -> HwFlags {
                HwFlags::from_bits_retain(self.flags())
            }

            /// Sets the driver's flags.
            fn set_hw_flags(&mut self, flags: HwFlags) {
                self.set_flags(flags.bits())
            }

            /// The `PERF_HES_*` state, typed.
            fn hes(&self) -> HesState {
                HesState::from_bits_retain(self.state())
            }

            /// Sets the `PERF_HES_*` state.
            fn set_hes(&mut self, state: HesState) {
                self.set_state(state.bits())
            }

            /// The `event_idx`, when the lower half of `event_base` holds a valid one.
            fn event_idx(&self) -> Option<EventIdx> {
                // CAST: The lower half holds the `event_idx`.
                EventIdx::from_raw(self.event_base() as u32)
            }

            /// The counter the event last left plus one (0: none), on whichever CPU, in the upper
            /// half of `event_base`. A hint only: the core checks it against the CPU's parked
            /// counters before it takes one back.
            fn last_tag(&self) -> u64 {
                self.event_base() >> 32
            }

            /// Sets the counter the event last left plus one.
            fn set_last_tag(&mut self, last_tag: u64) {
                let event_idx = self.event_base() & u64::from(u32::MAX);
                self.set_event_base(event_idx | last_tag << 32)
            }

            /// The counter the event holds, when `idx` names one of the 64 possible counters.
            fn counter(&self) -> Option<usize> {
                counter_of(self.idx())
            }

            /// Whether the event samples.
            fn is_sampling(&self) -> bool {
                self.hw_flags().contains(HwFlags::SAMPLING)
            }
        }

        /// A plain [`HwEvent`]: the state of an event that is not a kernel `perf_event`, for the
        /// host tests and the firmware model (feature `host`; not in the kernel build).
        #[cfg(any(test, feature = "host"))]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct HwPerfEvent {
            $($(#[$doc])* pub $get: $ty,)*
        }

        #[cfg(any(test, feature = "host"))]
        impl Default for HwPerfEvent {
            fn default() -> Self {
                Self { $($get: $default,)* }
            }
        }

        #[cfg(any(test, feature = "host"))]
        impl HwEvent for HwPerfEvent {
            $(
                fn $get(&self) -> $ty {
                    self.$get
                }
                $(fn $set(&mut self, value: $ty) {
                    self.$get = value;
                })?
            )*
        }
    };
}

hw_event! {
    /// `hwc->idx`: the logical counter, or [`IDX_NONE`].
    idx set_idx: i32 = IDX_NONE;
    /// `hwc->config`: the `event_data`.
    config set_config: u64 = 0;
    /// `hwc->config_base`: the `config_matching` filter flags (`CfgFlags` bits).
    config_base set_config_base: u64 = 0;
    /// `hwc->event_base`: the raw `event_idx` in the lower half, [`HwEvent::last_tag`] above.
    event_base set_event_base: u64 = 0;
    /// `hwc->flags`: [`HwFlags`] bits.
    flags set_flags: u32 = 0;
    /// `hwc->state`: `PERF_HES_*` bits.
    state set_state: u32 = 0;
    /// `hwc->sample_period`.
    sample_period set_sample_period: u64 = 0;
    /// `hwc->last_period`.
    last_period set_last_period: u64 = 0;
    /// `hwc->prev_count`: the counter value the event's count was last updated to.
    prev_count set_prev_count: u64 = 0;
    /// `hwc->period_left`.
    period_left set_period_left: i64 = 0;
    /// `event->pmu_private`: the logical counters the event may use, narrowed from
    /// [`PmuInfo::default_event_cmask`] by the device tree event maps at event_init
    /// ([`PmuInfo::event_cmask`]); 0 when nothing narrows them.
    pmu_private set_pmu_private: u64 = 0;
    /// `event->id`: who the event is, so that a counter parked by the event goes back to that
    /// event only; 0 when unknown, and then any event of the same configuration may take it.
    id: u64 = 0;
}

/// The counter `hwc->idx` names, when it names one of the 64 possible counters.
#[inline]
pub fn counter_of(idx: i32) -> Option<usize> {
    let idx = usize::try_from(idx).ok()?;
    (idx < RISCV_MAX_COUNTERS).then_some(idx)
}

/// Bit `idx` of a counter mask; 0 for an index past the 64 counters.
#[inline(always)]
pub const fn bit(idx: usize) -> u64 {
    if idx < RISCV_MAX_COUNTERS {
        1 << idx
    } else {
        0
    }
}

/// Sets `slots[idx]`; nothing for an index past the table.
#[inline(always)]
pub(crate) fn set_slot<T>(slots: &mut [T; RISCV_MAX_COUNTERS], idx: usize, value: T) {
    if let Some(slot) = slots.get_mut(idx) {
        *slot = value;
    }
}

/// The counters in `mask`, lowest first: the index of each set bit.
#[inline]
pub fn counters_in(mut mask: u64) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        // CAST: trailing_zeros of a non-zero u64 is below 64.
        let idx = (mask != 0).then(|| mask.trailing_zeros() as usize)?;
        mask &= mask - 1;
        Some(idx)
    })
}

/// The number of events between two counter values, for a counter of the given width: the difference
/// wraps at the width, so one wrap between the two reads is accounted for.
#[inline]
pub const fn counter_delta(prev: u64, new: u64, width_mask: u64) -> u64 {
    new.wrapping_sub(prev) & width_mask
}

/// The arithmetic of `riscv_pmu_event_update()` once the counter was read: adds nothing to perf's
/// count itself but returns the delta for it, moves `prev_count` to `new` and takes the delta off
/// `period_left`.
pub fn event_update_with(hw: &mut impl HwEvent, new: u64, width_mask: u64) -> u64 {
    let delta = counter_delta(hw.prev_count(), new, width_mask);
    hw.set_prev_count(new);
    // perf keeps period_left as an s64 and subtracts with wrapping local64 arithmetic; a delta above
    // i64::MAX only occurs for 64-bit counters and wraps the same way here.
    hw.set_period_left(hw.period_left().wrapping_sub(delta as i64));
    delta
}

/// `riscv_pmu_event_set_period()`: programs the next period of a sampling event.
///
/// When the period elapsed (`period_left <= 0`) it starts a new one and returns `true` (a sample is
/// due). The counter is then loaded with `-left`, so it overflows after `left` events; `left` is
/// clamped to half the counter range (`width_mask >> 1`), which leaves headroom for interrupt latency,
/// so a long period takes several overflows. The value to load is `prev_count & width_mask`.
#[inline(always)]
pub fn event_set_period(hw: &mut impl HwEvent, width_mask: u64) -> bool {
    // perf refuses periods with bit 63 set, so this only guards the conversion.
    let period = i64::try_from(hw.sample_period()).unwrap_or(i64::MAX);
    let mut left = hw.period_left();
    let overflow = left <= 0;
    if overflow {
        // Far behind (`left <= -period`), a new period starts; else the next one is shortened by
        // what the last one overran.
        left = if left <= -period {
            period
        } else {
            left.saturating_add(period)
        };
        hw.set_period_left(left);
        hw.set_last_period(hw.sample_period());
    }
    let max = (width_mask >> 1) as i64; // Half a u64 range always fits an i64.
    let left = left.min(max);
    // The counter starts at -left in two's complement, so it wraps after `left` events.
    hw.set_prev_count((left as u64).wrapping_neg());
    overflow
}

/// The lowest value a counting event's hardware counter may continue from, and the value it is loaded
/// with when it must be moved.
///
/// An overflow interrupt updates a counting event with `(new - prev_count) & width_mask`, which is
/// only right if the counter has not come back to `prev_count` since the wrap: the interrupt latency
/// must stay below `prev_count` events. Starting from at least this floor keeps a margin of half the
/// counter range (as `riscv_pmu_event_set_period()` does for sampling events), capped at 2^32 events
/// so that a 64-bit counter, which never wraps in practice, is almost never reloaded.
#[inline]
pub fn counting_floor(width_mask: u64) -> u64 {
    ((width_mask >> 1) + 1).min(1 << 32)
}

/// What the platform offers, found at probe: the C driver's `cmask`, `pmu_ctr_list` and SBI version.
/// It is the same for every CPU (the C driver does not handle heterogeneous harts either).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmuInfo {
    /// The SBI specification version.
    pub version: SbiVersion,
    /// The usable counters: those whose `counter_get_info` succeeded with a non-zero word.
    pub cmask: u64,
    /// The usable hardware counters.
    pub hw_mask: u64,
    /// The usable firmware counters.
    pub fw_mask: u64,
    ctr_info: [usize; RISCV_MAX_COUNTERS],
    /// For each hardware counter number (`mhpmcounterN`), the logical counters on it: computed once, so
    /// that translating `scountovf` or a fixed counter costs no scan of the table.
    logical_of_hw: [u64; RISCV_MAX_COUNTERS],
    /// For each logical counter, its hardware counter number, [`NO_HW_COUNTER`] for firmware and
    /// unusable counters: computed once, as the context switch and the overflow interrupt ask for it
    /// (the `scounteren` bit, the mmap page's index).
    hw_of_logical: [u8; RISCV_MAX_COUNTERS],
    /// Whether user mode can read a configured counter whatever `scounteren` says: KVM answers a
    /// user-mode counter read the guest's `scounteren` forbids (a virtual instruction trap) with the
    /// counter's value whenever the counter is configured. Then no counter stays configured for an
    /// event that left its CPU ([`crate::pmu::CpuHwEvents::del`]). Set by the caller, who knows the
    /// SBI implementation; false from [`PmuInfo::probe_into`].
    pub configured_counters_readable: bool,
}

/// [`PmuInfo`]'s mark of a logical counter without a hardware counter.
const NO_HW_COUNTER: u8 = u8::MAX;

impl PmuInfo {
    /// No counter.
    pub const EMPTY: Self = Self {
        version: SbiVersion::V0_3,
        cmask: 0,
        hw_mask: 0,
        fw_mask: 0,
        ctr_info: [0; RISCV_MAX_COUNTERS],
        logical_of_hw: [0; RISCV_MAX_COUNTERS],
        hw_of_logical: [NO_HW_COUNTER; RISCV_MAX_COUNTERS],
        configured_counters_readable: false,
    };

    /// [`PmuInfo::probe_into`] into a new table, for the host tests.
    #[cfg(any(test, feature = "host"))]
    pub fn probe<F: Firmware>(fw: &mut F, version: SbiVersion) -> Result<Self, SbiError> {
        let mut info = Self::EMPTY;
        info.probe_into(fw, version)?;
        Ok(info)
    }

    /// `pmu_sbi_find_num_ctrs()` and `pmu_sbi_get_ctrinfo()`: asks firmware for its counters, and
    /// keeps them in `self`, in place (for a table kept where the stack is short). Counters whose
    /// `counter_get_info` fails are skipped ("the logical counter ids are not expected to be
    /// contiguous"); only a failing `num_counters` is an error.
    pub fn probe_into<F: Firmware>(
        &mut self,
        fw: &mut F,
        version: SbiVersion,
    ) -> Result<(), SbiError> {
        let num = fw.num_counters()?;
        *self = Self::EMPTY;
        self.version = version;
        for i in 0..num.min(RISCV_MAX_COUNTERS) {
            if let Ok(raw) = fw.counter_get_info(i) {
                self.add_counter(i, raw);
            }
        }
        Ok(())
    }

    /// Builds the table from raw `counter_info` words, `None` for counters whose query failed. Words
    /// of zero are treated as invalid, as `pmu_sbi_ctr_get_idx()` refuses them; entries past
    /// [`RISCV_MAX_COUNTERS`] are ignored. For the tests.
    #[cfg(test)]
    pub fn from_counter_infos(version: SbiVersion, infos: &[Option<usize>]) -> Self {
        let mut info = Self {
            version,
            ..Self::EMPTY
        };
        for (i, raw) in infos.iter().enumerate().take(RISCV_MAX_COUNTERS) {
            if let Some(raw) = raw {
                info.add_counter(i, *raw);
            }
        }
        info
    }

    /// Records counter `i`'s `counter_info` word; a word of zero leaves the counter unusable.
    fn add_counter(&mut self, i: usize, raw: usize) {
        if raw == 0 || i >= RISCV_MAX_COUNTERS {
            return;
        }
        self.ctr_info[i] = raw;
        self.cmask |= 1 << i;
        let decoded = CounterInfo::decode(raw);
        if decoded.firmware {
            self.fw_mask |= 1 << i;
        } else {
            self.hw_mask |= 1 << i;
        }
        // Hardware counter numbers are below 32.
        if let Some(h) = decoded.hw_index() {
            self.logical_of_hw[usize::from(h)] |= 1 << i;
            self.hw_of_logical[i] = h;
        }
    }

    /// The decoded `counter_info` of a usable counter.
    #[inline]
    pub fn counter_info(&self, idx: usize) -> Option<CounterInfo> {
        let usable = idx < RISCV_MAX_COUNTERS && self.cmask & (1 << idx) != 0;
        usable.then(|| CounterInfo::decode(self.ctr_info[idx]))
    }

    /// `GENMASK_ULL(width, 0)` of a counter; 0 for an unusable one.
    ///
    /// For a firmware counter the specification says the width field "should be ignored" (function
    /// #1), so its values are taken as 64-bit, which is what `counter_fw_read` returns on RV64. The C
    /// driver uses the field anyway; OpenSBI reports 63 there, so both agree on OpenSBI.
    #[inline]
    pub fn width_mask(&self, idx: usize) -> u64 {
        match self.counter_info(idx) {
            Some(info) if info.firmware => u64::MAX,
            Some(info) => info.width_mask(),
            None => 0,
        }
    }

    /// The width mask `riscv_pmu_ctr_get_width_mask()` uses before an event has a counter: that of
    /// counter 0. When counter 0 is not usable the C driver reads a zeroed entry (a 1-bit mask); this
    /// takes the first usable counter instead.
    pub fn init_width_mask(&self) -> u64 {
        let first = self.counter_info(self.cmask.trailing_zeros() as usize);
        first.map_or(u64::MAX, CounterInfo::width_mask)
    }

    /// The hardware counters (bit `n` = `mhpmcounterN`) behind the usable hardware counters: the
    /// counters the device tree bitmaps may name on this platform.
    pub fn hw_counters(&self) -> u64 {
        let hw = counters_in(self.hw_mask).filter_map(|idx| self.csr_index(idx));
        hw.fold(0, |bits, h| bits | 1 << h)
    }

    /// The logical counters of a set of hardware counters (bit `n` = `mhpmcounterN`, as in
    /// `scountovf` and the device tree bitmaps).
    #[inline]
    pub fn logical_from_hw(&self, hw_bits: u64) -> u64 {
        counters_in(hw_bits)
            .filter_map(|h| self.logical_of_hw.get(h))
            .fold(0, |mask, logical| mask | logical)
    }

    /// The logical counters among `logical` whose hardware counter's bit is set in `scountovf`.
    /// Firmware keeps the overflow bit of every counter it does not use set (it masks their
    /// interrupt so), so only the counters in question are looked at, not every bit.
    #[inline]
    pub fn overflowed(&self, logical: u64, scountovf: u64) -> u64 {
        counters_in(logical)
            .filter(|&l| self.csr_index(l).is_some_and(|h| scountovf & (1 << h) != 0))
            .fold(0, |mask, l| mask | (1 << l))
    }

    /// The logical counters an event may use when nothing more is known: firmware counters for
    /// firmware events; for hardware events the hardware counters, less the fixed-function `cycle`,
    /// `time` and `instret` counters for events other than cycles and instructions, which the
    /// privileged specification ties to those counters.
    #[inline]
    pub fn default_event_cmask(&self, event_idx: EventIdx) -> u64 {
        if matches!(event_idx.ty(), EventType::Firmware) {
            return self.fw_mask;
        }
        // The fixed counters cycle, time and instret, less the one the event may use.
        let fixed = FIXED_CTR_MASK & !event_idx.fixed_counter();
        self.hw_mask & !self.logical_from_hw(u64::from(fixed))
    }

    /// The counters an event may use once [`PmuInfo::event_cmask`] narrowed them (`hw_cmask`, 0
    /// for no narrowing): the mask `counter_config_matching` is offered.
    #[inline]
    pub fn allowed_cmask(&self, event_idx: EventIdx, hw_cmask: u64) -> u64 {
        let narrowed = if hw_cmask == 0 { u64::MAX } else { hw_cmask };
        self.default_event_cmask(event_idx) & narrowed
    }

    /// The logical counters the device tree event maps let an event use, within
    /// [`PmuInfo::default_event_cmask`]; 0 when the maps do not constrain the event (no maps,
    /// firmware events, standard events the maps do not cover). An event the maps constrain to no
    /// counter of this platform is unavailable (ENOENT): a raw event no row of
    /// `riscv,raw-event-to-mhpmcounters` matches, a standard event no row of
    /// `riscv,event-to-mhpmcounters` covers.
    pub fn event_cmask(
        &self,
        event_idx: EventIdx,
        event_data: u64,
        maps: Option<&DtPmuMaps<'_>>,
    ) -> Result<u64, MapError> {
        let Some(bits) = maps.and_then(|m| m.event_hw_counters(event_idx, event_data)) else {
            return Ok(0);
        };
        match self.logical_from_hw(u64::from(bits)) & self.default_event_cmask(event_idx) {
            0 => Err(MapError::Unavailable),
            cmask => Ok(cmask),
        }
    }

    /// The standard events the device tree event maps say this platform can count (those with a
    /// counter under [`PmuInfo::event_cmask`]), or `None` when the maps do not cover the standard
    /// events and firmware must be asked ([`PmuInfo::check_std_events`]).
    pub fn std_events_from_maps(&self, maps: &DtPmuMaps<'_>) -> Option<StdEvents> {
        if !maps.covers_std_events() {
            return None;
        }
        let mut found = StdEvents::NONE;
        for idx in (0..StdEvents::COUNT).filter_map(StdEvents::nth) {
            found.set(idx, self.event_cmask(idx, 0, Some(maps)).is_ok());
        }
        Some(found)
    }

    /// The `event=` value under which the PMU's sysfs `events/` directory lists a standard event, or
    /// `None` when it is not listed.
    ///
    /// The `cpu` PMU has perf's raw type, so `event=` (`config:0-47`, or `config:0-55` with SBI
    /// v3.0) makes a raw event: the value must be what the hardware counts the standard event with,
    /// its `riscv,event-to-mhpmevent` selector. A standard event is listed when it is available, has
    /// a selector that fits the raw event field, and that raw event has a counter under the maps (so
    /// `cpu/<name>/` opens).
    pub fn listed_event_config(
        &self,
        event_idx: EventIdx,
        std_events: &StdEvents,
        maps: &DtPmuMaps<'_>,
    ) -> Option<u64> {
        if !std_events.is_available(event_idx)
            || self.event_cmask(event_idx, 0, Some(maps)).is_err()
        {
            return None;
        }
        let selector = maps.selector(event_idx)?;
        let (raw, field) = raw_event(self.version);
        if selector & !field != 0 {
            return None;
        }
        self.event_cmask(raw, selector, Some(maps))
            .ok()
            .map(|_| selector)
    }

    /// `riscv_pmu_event_init()` with `pmu_sbi_event_map()` and `pmu_sbi_event_init()`: maps the
    /// attribute, refuses standard events the platform lacks and events the device tree maps (when
    /// given) put on no counter, and fills the per-event state. A non-sampling event gets
    /// `sample_period = width_mask >> 1`, as in the C driver.
    pub fn event_init(
        &self,
        attr: &EventAttr,
        access: UserAccess,
        std_events: &StdEvents,
        maps: Option<&DtPmuMaps<'_>>,
        hw: &mut impl HwEvent,
    ) -> Result<EventRequest, MapError> {
        let req = event_map(attr, self.version)?;
        if !std_events.is_available(req.event_idx) {
            return Err(MapError::Unavailable);
        }
        hw.set_pmu_private(self.event_cmask(req.event_idx, req.event_data, maps)?);
        hw.set_idx(IDX_NONE);
        hw.set_event_base(u64::from(req.event_idx.raw()));
        hw.set_config(req.event_data);
        // CAST: `usize` is 64 bits on RV64 (see the crate's documentation).
        hw.set_config_base(req.cflags.bits() as u64);
        // NO_USER_ACCESS, USER_ACCESS and LEGACY are bits 0 to 2, for the sysctl's values 0 to 2.
        hw.set_hw_flags(HwFlags::from_bits_retain(1 << access as u32));
        if attr.sampling {
            hw.set_hw_flags(hw.hw_flags() | HwFlags::SAMPLING);
        } else {
            let period = self.init_width_mask() >> 1;
            hw.set_sample_period(period);
            hw.set_last_period(period);
            // Half a u64 range always fits an i64.
            hw.set_period_left(period as i64);
        }
        Ok(req)
    }

    /// `pmu_sbi_check_std_events()`: finds which of the 52 standard events the platform can count.
    ///
    /// With SBI v3.0 and an event-info array from the implementation, one `event_get_info` call answers
    /// for all of them. Otherwise (or if that call fails) each event is tried with
    /// `counter_config_matching` over all counters and, when a counter was configured, released again
    /// with a `counter_stop` with RESET; only SBI_ERR_NOT_SUPPORTED marks an event unavailable, as in
    /// the C driver.
    pub fn check_std_events<F: Firmware>(&self, fw: &mut F) -> StdEvents {
        if self.version >= SbiVersion::V3_0 {
            if let Some(found) = self.check_std_events_info(fw) {
                return found;
            }
        }
        let mut found = StdEvents::ALL;
        for idx in (0..StdEvents::COUNT).filter_map(StdEvents::nth) {
            // RV64 and at most 64 counters: one call covers the whole mask.
            match fw.counter_config_matching(0, self.cmask as usize, CfgFlags::empty(), idx, 0) {
                Ok(ctr) => {
                    // Releasing the counter cannot fail in a way the check could act on.
                    let _ = fw.counter_stop(ctr, 1, StopFlags::RESET);
                }
                Err(SbiError::NotSupported) => found.set(idx, false),
                Err(_) => {}
            }
        }
        found
    }

    fn check_std_events_info<F: Firmware>(&self, fw: &mut F) -> Option<StdEvents> {
        let mut words = [0u64; 2 * StdEvents::COUNT];
        for (i, entry) in words.chunks_exact_mut(2).enumerate() {
            entry.copy_from_slice(&EventInfo::new(StdEvents::nth(i)?, 0).to_words());
        }
        fw.event_get_info(&mut words).ok()?;
        let mut found = StdEvents::ALL;
        for (i, entry) in words.chunks_exact(2).enumerate().take(StdEvents::COUNT) {
            let entry = EventInfo::from_words([entry[0], entry[1]]);
            found.set(StdEvents::nth(i)?, entry.is_supported());
        }
        Some(found)
    }
}

/// `scounteren` of a CPU with no event readable from user mode, for a `perf_user_access` mode: the
/// `time` CSR (bit 1) always, and in legacy mode `cycle` (bit 0) and `instret` (bit 2) too. Counters
/// of mmap'd events are added to it while they run ([`PmuInfo::user_read_bit`]).
pub const fn scounteren_base(access: UserAccess) -> usize {
    match access {
        UserAccess::Legacy => 0x7,
        UserAccess::NoUserAccess | UserAccess::UserAccess => 0x2,
    }
}

/// `pmu_sbi_event_mapped()` and `pmu_sbi_event_unmapped()`: whether mmap'ing the event changes its
/// user-space access (`USER_READ_CNT`). Nothing changes when the event was created with
/// `perf_user_access` 0; in legacy mode only hardware cycles and instructions are readable, as they
/// are forced onto `cycle` and `instret`. (The C driver checks only `config` there, so a legacy raw
/// event 0 or 1 is marked readable at whatever counter it has; this also checks the type.)
pub fn user_read_allowed(flags: HwFlags, attr_ty: u32, attr_config: u64) -> bool {
    if flags.contains(HwFlags::NO_USER_ACCESS) {
        return false;
    }
    if flags.contains(HwFlags::LEGACY) {
        return attr_ty == crate::events::PERF_TYPE_HARDWARE && attr_config <= 1;
    }
    flags.intersects(HwFlags::USER_ACCESS)
}

impl PmuInfo {
    /// `pmu_sbi_csr_index()`: the user-visible index of counter `idx` (its CSR minus `cycle`), its bit
    /// in `scounteren`; the mmap page's `index` is this plus one. `None` for firmware counters, which
    /// user space cannot read (the C driver computes an index from their meaningless CSR field).
    #[inline]
    pub fn csr_index(&self, idx: usize) -> Option<u8> {
        let h = *self.hw_of_logical.get(idx)?;
        (h != NO_HW_COUNTER).then_some(h)
    }

    /// `pmu_sbi_ctr_get_width()`: the width field of counter `idx` (bits minus one), which the mmap
    /// page publishes as `pmc_width` (plus one). Firmware counters are 64-bit (see
    /// [`PmuInfo::width_mask`]).
    pub fn ctr_width(&self, idx: usize) -> Option<u8> {
        let mask = self.width_mask(idx);
        // CAST: a non-zero mask has 1 to 64 bits set.
        (mask != 0).then(|| (mask.count_ones() - 1) as u8)
    }

    /// `riscv_pmu_event_idx()`: the mmap page's `index` for an event perf core has running: the
    /// counter's CSR index plus one when user space may read it directly (`USER_READ_CNT`), else 0,
    /// which tells user space to use read(2).
    #[inline]
    pub fn event_idx(&self, flags: HwFlags, idx: impl FnOnce() -> i32) -> u32 {
        let csr = self.csr_index_if(flags.contains(HwFlags::USER_READ_CNT), idx);
        csr.map_or(0, |csr| u32::from(csr) + 1)
    }

    /// The `scounteren` bit of the event's counter while it runs, when user space reads it through
    /// the mmap page (`USER_ACCESS` and `USER_READ_CNT`, as in `pmu_sbi_ctr_start()`); set when the
    /// counter starts and cleared when it stops. `idx` gives `hwc->idx`, read only when needed.
    #[inline]
    pub fn user_read_bit(&self, flags: HwFlags, idx: impl FnOnce() -> i32) -> Option<usize> {
        let readable = flags.contains(HwFlags::USER_ACCESS | HwFlags::USER_READ_CNT);
        self.csr_index_if(readable, idx).map(|csr| 1 << csr)
    }

    /// The `scounteren` bit to clear when the event leaves its counter: that of any event that may
    /// be read from user space (`USER_ACCESS`), mmap'd or not, since the mapping can go away while
    /// the event runs (its bit stays set until the event leaves the counter).
    #[inline]
    pub fn user_access_bit(&self, flags: HwFlags, idx: impl FnOnce() -> i32) -> Option<usize> {
        let csr = self.csr_index_if(flags.contains(HwFlags::USER_ACCESS), idx);
        csr.map(|csr| 1 << csr)
    }

    /// [`PmuInfo::csr_index`] of the counter `hwc->idx` names, when `allowed` (`idx` is not
    /// called otherwise).
    #[inline]
    fn csr_index_if(&self, allowed: bool, idx: impl FnOnce() -> i32) -> Option<u8> {
        self.csr_index(counter_of(allowed.then(idx)?)?)
    }
}

/// Whether every event of a group can have a counter at once: a matching of events to distinct
/// counters within each event's allowed mask (`cmask`), found with augmenting paths (Kuhn's
/// algorithm). A group of more than 64 events never fits.
pub fn group_fits(masks: &[u64]) -> bool {
    if masks.len() > RISCV_MAX_COUNTERS {
        return false;
    }
    // owner[c] = the event holding counter c.
    let mut owner = [NO_OWNER; RISCV_MAX_COUNTERS];
    (0..masks.len()).all(|e| augment(masks, e, &mut owner))
}

const NO_OWNER: u8 = u8::MAX;

/// Finds a counter for event `e`, moving events already placed along an augmenting path. The search is
/// iterative over a fixed stack: every level marks a new counter as seen, so it is at most 64 deep.
fn augment(masks: &[u64], e: usize, owner: &mut [u8; RISCV_MAX_COUNTERS]) -> bool {
    let mask_of = |ev: usize| masks.get(ev).copied().unwrap_or(0);
    let mut seen = 0u64;
    // Frames of (event, candidate counters left, counter chosen at this level); events and counters
    // are below 64, so they fit a u8.
    let mut stack = [(0u8, 0u64, 0u8); RISCV_MAX_COUNTERS + 1];
    let mut depth = 0usize;
    stack[0] = (e as u8, mask_of(e), 0);
    loop {
        let Some(frame) = stack.get_mut(depth) else {
            return false;
        };
        let avail = frame.1 & !seen;
        if avail == 0 {
            if depth == 0 {
                return false;
            }
            depth -= 1;
            continue;
        }
        let c = avail.trailing_zeros() as usize; // Below 64: avail is not zero.
        seen |= 1 << c;
        frame.1 &= !(1 << c);
        frame.2 = c as u8;
        let holder = owner.get(c).copied().unwrap_or(NO_OWNER);
        if holder == NO_OWNER {
            // Every event on the path takes the counter chosen at its level.
            for &(ev, _, ch) in stack.iter().take(depth + 1) {
                if let Some(slot) = owner.get_mut(usize::from(ch)) {
                    *slot = ev;
                }
            }
            return true;
        }
        depth += 1;
        match stack.get_mut(depth) {
            Some(next) => *next = (holder, mask_of(usize::from(holder)), 0),
            None => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{CounterInfo, HwGeneralEvent, CSR_CYCLE};
    use crate::events::PERF_TYPE_HARDWARE;

    fn hw(csr: u16, bits: u8) -> Option<usize> {
        Some(
            CounterInfo {
                csr,
                width: bits - 1,
                firmware: false,
            }
            .encode(),
        )
    }

    fn fwc() -> Option<usize> {
        Some(
            CounterInfo {
                csr: 0,
                width: 63,
                firmware: true,
            }
            .encode(),
        )
    }

    /// QEMU's layout: cycle, (time fails), instret, hpmcounter3..6 with 48 bits, 2 firmware counters.
    fn qemu_like() -> PmuInfo {
        PmuInfo::from_counter_infos(
            SbiVersion::V2_0,
            &[
                hw(0xC00, 64),
                None,
                hw(0xC02, 64),
                hw(0xC03, 48),
                hw(0xC04, 48),
                hw(0xC05, 48),
                hw(0xC06, 48),
                fwc(),
                fwc(),
            ],
        )
    }

    #[test]
    fn delta_wraps_at_every_width() {
        for bits in 32..=64u32 {
            let mask = u64::MAX >> (64 - bits);
            // Plain increase.
            assert_eq!(counter_delta(5, 12, mask), 7);
            // Wrap from near the top to near zero.
            assert_eq!(counter_delta(mask - 2, 4, mask), 7, "{bits} bits");
            // A full-range step minus one.
            assert_eq!(counter_delta(1, 0, mask), mask, "{bits} bits");
            // High garbage above the width is ignored.
            assert_eq!(counter_delta(!mask | 3, 10, mask), 7, "{bits} bits");
        }
    }

    #[test]
    fn set_period_follows_riscv_pmu_event_set_period() {
        let mask = (1u64 << 48) - 1;
        let mut hw = HwPerfEvent {
            sample_period: 1000,
            period_left: 1000,
            ..HwPerfEvent::default()
        };
        assert!(!event_set_period(&mut hw, mask));
        assert_eq!(hw.prev_count & mask, (1 << 48) - 1000);
        // 1000 events later the counter wrapped: period_left is 0, a sample is due.
        assert_eq!(event_update_with(&mut hw, 0, mask), 1000);
        assert_eq!(hw.period_left, 0);
        assert!(event_set_period(&mut hw, mask));
        assert_eq!(hw.period_left, 1000);
        assert_eq!(hw.last_period, 1000);
        // Far behind (left <= -period): restart a full period.
        hw.period_left = -5000;
        assert!(event_set_period(&mut hw, mask));
        assert_eq!(hw.period_left, 1000);
        // A period above half the range is clamped when loaded, not in period_left.
        hw.sample_period = 1 << 60;
        hw.period_left = 1 << 60;
        assert!(!event_set_period(&mut hw, mask));
        assert_eq!(hw.period_left, 1 << 60);
        assert_eq!(hw.prev_count & mask, (1 << 48) - (mask >> 1));
        // A zero period cannot divide or overflow anything.
        hw.sample_period = 0;
        hw.period_left = 0;
        assert!(event_set_period(&mut hw, mask));
        assert_eq!(hw.prev_count, 0);
        hw.sample_period = u64::MAX;
        hw.period_left = i64::MIN;
        assert!(event_set_period(&mut hw, u64::MAX));
    }

    #[test]
    fn probe_table_and_masks() {
        let info = qemu_like();
        assert_eq!(info.cmask, 0b1_1111_1101);
        assert_eq!(info.hw_mask, 0b0_0111_1101);
        assert_eq!(info.fw_mask, 0b1_1000_0000);
        assert_eq!(info.hw_mask.count_ones(), 6);
        assert_eq!(info.fw_mask.count_ones(), 2);
        assert_eq!(info.width_mask(0), u64::MAX);
        assert_eq!(info.width_mask(3), (1 << 48) - 1);
        assert_eq!(info.width_mask(1), 0);
        assert_eq!(info.width_mask(200), 0);
        // The width field of a firmware counter is ignored, as the specification says.
        let narrow_fw = CounterInfo {
            csr: 0,
            width: 15,
            firmware: true,
        };
        let odd_fw = PmuInfo::from_counter_infos(SbiVersion::V2_0, &[Some(narrow_fw.encode())]);
        assert_eq!(odd_fw.width_mask(0), u64::MAX);
        assert_eq!(info.init_width_mask(), u64::MAX);
        assert_eq!(info.logical_from_hw(0b1001), 0b1001);
        // scountovf: firmware sets the bits of counters it does not use; only those asked count.
        assert_eq!(info.overflowed(0b101, u64::MAX), 0b101);
        assert_eq!(info.overflowed(0b1_1000_0101, u64::MAX), 0b101);
        assert_eq!(info.overflowed(0b101, !0b100), 0b001);
        assert_eq!(info.overflowed(0, u64::MAX), 0);
        // Logical counters on other hardware counters: 0 on hpmcounter5, 1 on hpmcounter3.
        let hw_at = |h: u16| {
            Some(
                CounterInfo {
                    csr: CSR_CYCLE + h,
                    width: 47,
                    firmware: false,
                }
                .encode(),
            )
        };
        let shuffled = PmuInfo::from_counter_infos(SbiVersion::V2_0, &[hw_at(5), hw_at(3)]);
        assert_eq!(shuffled.overflowed(0b11, 1 << 5), 0b01);
        assert_eq!(shuffled.overflowed(0b11, 1 << 3), 0b10);
        assert_eq!(shuffled.overflowed(0b10, 1 << 5), 0);
        let cycles = EventIdx::hw(HwGeneralEvent::CpuCycles);
        let instr = EventIdx::hw(HwGeneralEvent::Instructions);
        assert_eq!(info.default_event_cmask(cycles), 0b111_1001);
        assert_eq!(info.default_event_cmask(instr), 0b111_1100);
        assert_eq!(info.default_event_cmask(EventIdx::RAW), 0b111_1000);
        assert_eq!(info.default_event_cmask(EventIdx::fw(3)), 0b1_1000_0000);

        // Counter 0 absent: the init width comes from the first usable counter.
        let odd = PmuInfo::from_counter_infos(SbiVersion::V0_3, &[None, Some(0), hw(0xC03, 40)]);
        assert_eq!(odd.cmask, 0b100);
        assert_eq!(odd.init_width_mask(), (1 << 40) - 1);
        let none = PmuInfo::from_counter_infos(SbiVersion::V0_3, &[]);
        assert_eq!(none.init_width_mask(), u64::MAX);
    }

    #[test]
    fn event_init_sets_half_range_period_for_counting_events() {
        let info = qemu_like();
        let attr = EventAttr {
            ty: PERF_TYPE_HARDWARE,
            config: 4,
            exclude_kernel: true,
            ..EventAttr::default()
        };
        let mut hw = HwPerfEvent::default();
        let req = info
            .event_init(
                &attr,
                UserAccess::UserAccess,
                &StdEvents::ALL,
                None,
                &mut hw,
            )
            .unwrap();
        assert_eq!(hw.event_base, 5);
        assert_eq!(hw.config_base, req.cflags.bits() as u64);
        assert_eq!(hw.sample_period, u64::MAX >> 1);
        assert_eq!(hw.period_left, i64::MAX);
        assert_eq!(hw.hw_flags(), HwFlags::USER_ACCESS);
        assert_eq!(hw.idx, IDX_NONE);

        let sampling = EventAttr {
            sampling: true,
            ..attr
        };
        let mut hw = HwPerfEvent {
            sample_period: 4000,
            period_left: 4000,
            ..HwPerfEvent::default()
        };
        info.event_init(
            &sampling,
            UserAccess::Legacy,
            &StdEvents::ALL,
            None,
            &mut hw,
        )
        .unwrap();
        assert_eq!(hw.sample_period, 4000);
        assert!(hw.is_sampling());
        assert!(hw.hw_flags().contains(HwFlags::LEGACY));

        // Each perf_user_access mode gives its own flag.
        let modes = [
            (UserAccess::NoUserAccess, HwFlags::NO_USER_ACCESS),
            (UserAccess::UserAccess, HwFlags::USER_ACCESS),
            (UserAccess::Legacy, HwFlags::LEGACY),
        ];
        for (access, flags) in modes {
            let mut hw = HwPerfEvent::default();
            info.event_init(&attr, access, &StdEvents::ALL, None, &mut hw)
                .unwrap();
            assert_eq!(hw.hw_flags(), flags, "{access:?}");
        }

        let mut none = StdEvents::ALL;
        none.set(EventIdx::hw(HwGeneralEvent::BranchInstructions), false);
        assert_eq!(
            info.event_init(&attr, UserAccess::UserAccess, &none, None, &mut hw),
            Err(MapError::Unavailable)
        );
    }

    #[test]
    fn user_access_follows_the_sysctl_mode() {
        use crate::events::{PERF_TYPE_HW_CACHE, PERF_TYPE_RAW};
        assert_eq!(scounteren_base(UserAccess::NoUserAccess), 0x2);
        assert_eq!(scounteren_base(UserAccess::UserAccess), 0x2);
        assert_eq!(scounteren_base(UserAccess::Legacy), 0x7);

        let none = HwFlags::NO_USER_ACCESS;
        let user = HwFlags::USER_ACCESS;
        let legacy = HwFlags::LEGACY;
        for (ty, config) in [
            (PERF_TYPE_HARDWARE, 0),
            (PERF_TYPE_HW_CACHE, 0),
            (PERF_TYPE_RAW, 5),
        ] {
            assert!(!user_read_allowed(none, ty, config));
            assert!(user_read_allowed(user, ty, config));
        }
        assert!(user_read_allowed(legacy, PERF_TYPE_HARDWARE, 0));
        assert!(user_read_allowed(legacy, PERF_TYPE_HARDWARE, 1));
        assert!(!user_read_allowed(legacy, PERF_TYPE_HARDWARE, 2));
        assert!(!user_read_allowed(legacy, PERF_TYPE_RAW, 1));
        // An event without a mode (never through event_init) gets nothing.
        assert!(!user_read_allowed(HwFlags::empty(), PERF_TYPE_HARDWARE, 0));
    }

    #[test]
    fn event_idx_and_scounteren_bit_come_from_the_counter_csr() {
        let info = qemu_like();
        let mut hw = HwPerfEvent {
            idx: 3,
            flags: HwFlags::USER_ACCESS.bits(),
            ..HwPerfEvent::default()
        };
        let csr = info.counter_info(3).unwrap().csr;
        let expect = u32::from(csr - CSR_CYCLE);
        // Not mmap'd: no index, no scounteren bit to set, but the bit is cleared when the event
        // leaves the counter (an unmap may have happened while it ran).
        assert_eq!(info.event_idx(hw.hw_flags(), || hw.idx), 0);
        assert_eq!(info.user_read_bit(hw.hw_flags(), || hw.idx), None);
        assert_eq!(
            info.user_access_bit(hw.hw_flags(), || hw.idx),
            Some(1 << expect)
        );
        hw.set_hw_flags(hw.hw_flags() | HwFlags::USER_READ_CNT);
        assert_eq!(info.event_idx(hw.hw_flags(), || hw.idx), expect + 1);
        assert_eq!(
            info.user_read_bit(hw.hw_flags(), || hw.idx),
            Some(1 << expect)
        );
        assert_eq!(
            info.user_access_bit(hw.hw_flags(), || hw.idx),
            Some(1 << expect)
        );
        assert_eq!(info.ctr_width(3), Some(info.counter_info(3).unwrap().width));
        // Legacy events are readable through the always-open `cycle` and `instret`: an index but
        // no bit to set.
        hw.set_hw_flags(HwFlags::LEGACY | HwFlags::USER_READ_CNT);
        assert_eq!(info.event_idx(hw.hw_flags(), || hw.idx), expect + 1);
        assert_eq!(info.user_read_bit(hw.hw_flags(), || hw.idx), None);
        assert_eq!(info.user_access_bit(hw.hw_flags(), || hw.idx), None);
        // No counter: nothing to read.
        hw.idx = IDX_NONE;
        assert_eq!(info.event_idx(hw.hw_flags(), || hw.idx), 0);
        // Firmware counters have no CSR.
        let fw = (0..RISCV_MAX_COUNTERS)
            .find(|&i| info.counter_info(i).is_some_and(|c| c.firmware))
            .unwrap();
        hw.idx = fw as i32;
        hw.set_hw_flags(HwFlags::USER_ACCESS | HwFlags::USER_READ_CNT);
        assert_eq!(info.event_idx(hw.hw_flags(), || hw.idx), 0);
        assert_eq!(info.user_read_bit(hw.hw_flags(), || hw.idx), None);
        assert_eq!(info.ctr_width(fw), Some(63));
        assert_eq!(info.ctr_width(1), None);
    }

    #[test]
    fn group_fits_finds_a_matching() {
        assert!(group_fits(&[]));
        assert!(group_fits(&[0b1]));
        assert!(!group_fits(&[0b1, 0b1]));
        assert!(group_fits(&[0b11, 0b1]));
        assert!(group_fits(&[0b110, 0b011, 0b001]));
        assert!(!group_fits(&[0b011, 0b011, 0b011]));
        assert!(!group_fits(&[0]));
        let all: [u64; 64] = core::array::from_fn(|i| 1u64 << (63 - i) | 1);
        assert!(group_fits(&all));
        let chain: [u64; 64] = core::array::from_fn(|i| if i == 0 { 1 } else { 0b11 << (i - 1) });
        assert!(group_fits(&chain));
        let too_many = [u64::MAX; 65];
        assert!(!group_fits(&too_many));
    }
}
