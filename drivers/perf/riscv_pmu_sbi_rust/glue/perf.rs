// SPDX-License-Identifier: GPL-2.0

//! perf PMU registration and the events perf core hands to a PMU.
//!
//! C header: [`include/linux/perf_event.h`](srctree/include/linux/perf_event.h)
//!
//! A driver implements [`Driver`], and its module, made by [`module_pmu!`], registers it as a
//! [`Pmu`]. perf core calls the driver through the `struct pmu` callbacks below, each of which
//! lends the driver its state for the calling CPU and the event.
//!
//! # Who may write an event
//!
//! A [`PerfEvent`] reference is read-only. Its hardware state is written through an [`EventMut`],
//! which only the callbacks perf core serialises for the event get: `event_init` (beside an
//! [`EventInit`]), and `add`, `del`, `start`, `stop` and `read`, which run on the event's CPU with
//! interrupts disabled. Code that runs on that CPU with interrupts disabled outside them (an
//! overflow interrupt, CPU PM notifiers) gets one for an event on a counter of the CPU from the
//! CPU's [`EventTable`]. The mmap callbacks, which run on any CPU, get a [`MappedEvent`], which
//! may only set and clear driver flags atomically; the group walk of `event_init` sees read-only
//! members.
//!
//! # Per-CPU state
//!
//! A PMU keeps one [`CpuStates`]: for each CPU, the driver's state, which a callback borrows for
//! its duration, and the CPU's [`EventTable`] beside it. perf core may call back into the PMU from
//! inside code that holds the state (an overflow report reads the group's other events), so the
//! borrow is scope-bound and must end before such a call; a second borrow of the same CPU's state
//! is refused with a warning instead of creating a second `&mut`.

use super::bindings;
use super::compat;
use super::irq::InterruptContext;
use super::percpu::{self, ConstInit, CpuId, LocalInterruptDisabled, PerCpu};
use super::sysfs::AttributeGroups;
use core::{
    cell::{Cell, RefCell},
    marker::PhantomData,
    ops::Deref,
    ptr::{addr_of, addr_of_mut},
    sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering},
};
use kernel::{
    c_str,
    error::{from_result, to_result},
    ffi::{c_int, c_uint},
    prelude::*,
    sync::Arc,
    types::Opaque,
};

bitflags::bitflags! {
    /// The `flags` argument of the `add`, `del`, `start` and `stop` callbacks (`PERF_EF_*`).
    ///
    /// # Examples
    ///
    /// ```ignore
    /// if flags.contains(EventOpFlags::START) {
    ///     self.start(cpu, event, flags);
    /// }
    /// ```
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(crate) struct EventOpFlags: u32 {
        /// `add`: start the event right away.
        const START = bindings::PERF_EF_START;
    }

    /// PMU capabilities (`PERF_PMU_CAP_*`), checked by perf core before it calls the driver.
    ///
    /// # Examples
    ///
    /// ```ignore
    /// let caps = Capabilities::NO_INTERRUPT.union(Capabilities::NO_EXCLUDE);
    /// ```
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(crate) struct Capabilities: u32 {
        /// The PMU cannot interrupt on counter overflow: `perf_event_open()` refuses sampling events
        /// (an in-kernel user such as KVM is not checked).
        const NO_INTERRUPT = bindings::PERF_PMU_CAP_NO_INTERRUPT;
        /// The PMU cannot filter by privilege mode: perf core refuses events with `exclude_*` set.
        const NO_EXCLUDE = bindings::PERF_PMU_CAP_NO_EXCLUDE;
    }
}

/// Generates the accessors of bits of the event's `attr`, each read in place with bindgen's raw
/// bit-field reader (see [`PerfEvent::attr_ptr`]).
macro_rules! attr_bits {
    ($($(#[$doc:meta])* $name:ident = $raw:ident;)*) => {
        $(
            $(#[$doc])*
            pub(crate) fn $name(&self) -> bool {
                // SAFETY: `attr_ptr()` points into the valid event; the bit field's word is fixed
                // once the event reaches a PMU (see `attr_ptr()`) and read in place.
                unsafe { bindings::perf_event_attr::$raw(self.attr_ptr()) != 0 }
            }
        )*
    };
}

/// A perf event handed to a PMU, read-only.
///
/// Wraps the kernel's [`struct perf_event`].
///
/// # Invariants
///
/// The wrapped `struct perf_event` is valid while the reference exists: for the duration of a
/// PMU callback of this event, or while the event is on a counter of the CPU whose interrupts-off
/// section ([`LocalInterruptDisabled`]) the reference is tied to (see [`EventTable::get`]).
///
/// Fields are read through raw pointers, never through Rust references, each with a single
/// volatile access (`READ_ONCE()`): perf core and the mmap callbacks (which run on any CPU) may
/// access `hw.idx` and `hw.flags` while a callback on the event's CPU writes them, as in the C
/// drivers. Writes go through [`EventMut`] and [`MappedEvent`] only.
///
/// # Examples
///
/// ```ignore
/// fn event_idx(&self, event: &PerfEvent) -> u32 {
///     u32::try_from(event.hw().idx() + 1).unwrap_or(0)
/// }
/// ```
///
/// [`struct perf_event`]: srctree/include/linux/perf_event.h
#[repr(transparent)]
pub(crate) struct PerfEvent(Opaque<bindings::perf_event>);

impl PerfEvent {
    /// Creates a reference to a [`PerfEvent`] from a pointer perf core passed to a callback.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for the lifetime `'a` (see the type invariants).
    unsafe fn from_raw<'a>(ptr: *mut bindings::perf_event) -> &'a Self {
        // CAST: `Self` is `repr(transparent)` over `Opaque<perf_event>`, itself transparent over
        // `perf_event`.
        // SAFETY: The caller guarantees that `ptr` is valid for the lifetime of the reference.
        unsafe { &*ptr.cast::<Self>() }
    }

    fn as_raw(&self) -> *mut bindings::perf_event {
        self.0.get()
    }

    /// The event's attributes (`attr`), where they are: perf core writes some of its fields while
    /// the event exists (`sample_period`/`sample_freq`, by `PERF_EVENT_IOC_PERIOD` under the
    /// context's lock and by KVM's overflow handler), and the mmap callbacks read `attr` without
    /// that lock, so no reference may cover the whole struct: each accessor below reads one field,
    /// one that perf core sets before the event reaches a PMU and never writes again unless the
    /// accessor says otherwise.
    fn attr_ptr(&self) -> *const bindings::perf_event_attr {
        // SAFETY: By the type invariant the event is valid; no reference is created.
        unsafe { addr_of!((*self.as_raw()).attr) }
    }

    /// The event type (`attr.type`, a `PERF_TYPE_*` value or a dynamic PMU type).
    pub(crate) fn attr_type(&self) -> u32 {
        // SAFETY: `attr_ptr()` points into the valid event; `type` is fixed (see `attr_ptr()`).
        unsafe { addr_of!((*self.attr_ptr()).type_).read() }
    }

    /// The event selector (`attr.config`).
    pub(crate) fn config(&self) -> u64 {
        // SAFETY: As in `attr_type()`; `config` is fixed.
        unsafe { addr_of!((*self.attr_ptr()).config).read() }
    }

    /// The extra selector (`attr.config1`).
    pub(crate) fn config1(&self) -> u64 {
        // SAFETY: As in `attr_type()`; `config1` is fixed, and every member of its union is a
        // plain `u64`, so every bit pattern is valid.
        unsafe { addr_of!((*self.attr_ptr()).__bindgen_anon_3.config1).read() }
    }

    attr_bits! {
        /// Whether the event must not count in user mode (`attr.exclude_user`).
        exclude_user = exclude_user_raw;
        /// Whether the event must not count in kernel mode (`attr.exclude_kernel`).
        exclude_kernel = exclude_kernel_raw;
        /// Whether the event must not count in hypervisor mode (`attr.exclude_hv`).
        exclude_hv = exclude_hv_raw;
        /// Whether the event must not count in the host (`attr.exclude_host`).
        exclude_host = exclude_host_raw;
        /// Whether the event must not count in guests (`attr.exclude_guest`).
        exclude_guest = exclude_guest_raw;
    }

    /// Whether the event samples on counter overflow (`is_sampling_event()`: a nonzero
    /// `attr.sample_period`).
    pub(crate) fn is_sampling(&self) -> bool {
        // SAFETY: `attr_ptr()` points into the valid event. perf core and KVM may change the period
        // while the event exists (see `attr_ptr()`), so it is read once, with a volatile load, as
        // `is_sampling_event()` reads it; any `u64` is valid.
        unsafe { addr_of!((*self.attr_ptr()).__bindgen_anon_1.sample_period).read_volatile() != 0 }
    }

    /// Whether the event asks for a branch stack (`has_branch_stack()`: `PERF_SAMPLE_BRANCH_STACK`
    /// in `attr.sample_type`).
    pub(crate) fn has_branch_stack(&self) -> bool {
        // SAFETY: As in `attr_type()`; `sample_type` is fixed.
        let sample_type = unsafe { addr_of!((*self.attr_ptr()).sample_type).read() };
        sample_type & u64::from(bindings::perf_event_sample_format_PERF_SAMPLE_BRANCH_STACK) != 0
    }

    /// The hardware state of the event (`hw`), read in place.
    pub(crate) fn hw(&self) -> Hw<'_> {
        Hw(self)
    }

    /// The CPU the event is active on (`oncpu`), if any.
    fn oncpu(&self) -> Option<c_int> {
        // perf core writes `oncpu` on the event's CPU (`WRITE_ONCE()` when it schedules the event
        // in, a plain store of -1 when it schedules it out) and reads it on other CPUs with
        // `READ_ONCE()`, as this volatile read does.
        // SAFETY: By the type invariant the event is valid; `oncpu` is an aligned `int`, so the
        // read sees the old or the new value.
        let cpu = unsafe { addr_of!((*self.as_raw()).oncpu).read_volatile() };
        (cpu >= 0).then_some(cpu)
    }

    /// Runs `f` on the CPU the event is active on, with interrupts disabled there, while it is
    /// active there, and waits for it; nothing when the event is on no CPU. Process context only
    /// (the mmap callbacks).
    pub(crate) fn on_active_cpu<F: Fn(&PerfEvent) + Sync>(&self, f: &F) {
        /// The event, lent to the CPU it is active on.
        struct Lent<'a>(&'a PerfEvent);

        // SAFETY: A `PerfEvent` may be used on any CPU: its fields are read in place as the type
        // invariants say, whichever CPU reads them. `on_cpu` waits for the call, so the reference
        // does not outlive `'a` there.
        unsafe impl Send for Lent<'_> {}

        impl<'a> Lent<'a> {
            fn get(self) -> &'a PerfEvent {
                self.0
            }
        }

        let Some(cpu) = self.oncpu() else {
            return;
        };
        let event = Lent(self);
        // `F: Sync` lets the other CPU use `f`.
        percpu::on_cpu(cpu, move |_| {
            let event = event.get();
            // perf core puts an event on a CPU and takes it off on that CPU with interrupts
            // disabled, as they are here: it stays active here until this returns.
            if event.oncpu() == Some(cpu) {
                f(event);
            }
        });
    }

    /// Publishes the event's state to its user-space mapping (`perf_event_update_userpage()`).
    ///
    /// An event without a ring buffer has no mapping: that is the function's own first test, made
    /// here to spare the call on the context-switch path of events nobody mmap'd.
    #[inline(always)]
    pub(crate) fn update_userpage(&self) {
        let event = self.as_raw();
        // `event->rb` changes under `event->mmap_mutex` (`ring_buffer_attach()`), not held here: a
        // NULL read is what the function's own `rcu_dereference()` could have seen at the same
        // moment, and it then returns at once too (`perf_mmap()` publishes a buffer it attaches
        // itself).
        // SAFETY: By the type invariant the event is valid; the field is read once (`READ_ONCE()`)
        // and only compared with NULL, never dereferenced.
        let rb = unsafe { core::ptr::read_volatile(addr_of!((*event).rb)) };
        if !rb.is_null() {
            // SAFETY: By the type invariant the event is valid.
            unsafe { bindings::perf_event_update_userpage(event) };
        }
    }
}

/// An event whose hardware state the holder may write: perf core serialises the holder with every
/// other writer of it.
///
/// # Invariants
///
/// The holder runs in `event_init` of the event, or on the CPU the event is added to with
/// interrupts disabled (a PMU callback of the event, or code of that CPU that found the event on
/// a counter through an [`EventTable`]), for all of `'a`.
///
/// # Examples
///
/// ```ignore
/// fn read(&self, _cpu: &mut (), event: &mut EventMut<'_>) {
///     let now = read_counter(event.hw().idx());
///     let delta = now.wrapping_sub(event.hw().prev_count());
///     event.hw_mut().set_prev_count(now);
///     event.add_count(delta);
/// }
/// ```
pub(crate) struct EventMut<'a>(&'a PerfEvent);

impl Deref for EventMut<'_> {
    type Target = PerfEvent;

    fn deref(&self) -> &PerfEvent {
        self.0
    }
}

impl<'a> EventMut<'a> {
    /// # Safety
    ///
    /// The caller must be in a context of the type invariant for `'a`.
    unsafe fn new(event: &'a PerfEvent) -> Self {
        // INVARIANT: Guaranteed by the caller.
        Self(event)
    }

    /// The hardware state of the event (`hw`), read and written in place.
    pub(crate) fn hw_mut(&mut self) -> HwMut<'_> {
        HwMut(Hw(self.0))
    }

    /// Adds `delta` to the event's count (`local64_add()`).
    #[inline(always)]
    pub(crate) fn add_count(&mut self, delta: u64) {
        // `count` is a `local64_t`: an aligned `s64` the kernel only accesses with single-copy-atomic
        // operations (`local64_read()`, `local64_set()`, `local64_add()`, here `atomic64_add()`).
        let event = self.0.as_raw();
        // SAFETY: By the type invariant of `PerfEvent` the event is valid; an atomic view of
        // `count` for this one operation is sound, as above.
        let count = unsafe { AtomicI64::from_ptr(addr_of_mut!((*event).count.a.a.counter)) };
        // CAST: The count wraps as an `s64` does in C; the bits are kept.
        // Relaxed, as `local64_add()`: perf core reads the count on this CPU or after an IPI to it.
        count.fetch_add(delta as i64, Ordering::Relaxed);
    }

    /// Reports a counter overflow of a sampling event from its overflow interrupt
    /// (`perf_event_overflow()`), with the period the sample stands for. Returns `true` when perf
    /// core throttles the event: the driver should stop it, perf core starts it again later.
    ///
    /// perf core may call the PMU back from here (a sample that reads its group reads the other
    /// events): the caller must not hold a borrow of the CPU's state (see [`CpuStates`]).
    pub(crate) fn overflow(&mut self, _ctx: &InterruptContext<'_>, last_period: u64) -> bool {
        // SAFETY: By the type invariant the event is valid; the context proves this runs in an
        // interrupt handler, whose registers `get_irq_regs()` returns.
        unsafe { bindings::rpmu_event_overflow(self.0.as_raw(), last_period) != 0 }
    }
}

/// An event in its mmap callbacks (`event_mapped`, `event_unmapped`), which run on any CPU while
/// the event may be active elsewhere: read-only but for the driver's flags, set and cleared
/// atomically.
///
/// # Examples
///
/// ```ignore
/// fn event_mapped(&self, event: &MappedEvent<'_>) {
///     event.set_flags(USER_READ);
///     event.update_userpage();
/// }
/// ```
pub(crate) struct MappedEvent<'a>(&'a PerfEvent);

impl Deref for MappedEvent<'_> {
    type Target = PerfEvent;

    fn deref(&self) -> &PerfEvent {
        self.0
    }
}

impl MappedEvent<'_> {
    fn flags(&self) -> &AtomicU32 {
        let event = self.0.as_raw();
        // SAFETY: By the type invariant of `PerfEvent` the event is valid; no reference is created.
        let flags = unsafe { addr_of_mut!((*event).hw.__bindgen_anon_1.__bindgen_anon_1.flags) };
        // CAST: `hw.flags` is a bit set; the bits are the same as unsigned.
        // SAFETY: `hw.flags` is an aligned `int` that the event's callbacks read and write with
        // single accesses, so an atomic view for one operation is sound.
        unsafe { AtomicU32::from_ptr(flags.cast::<u32>()) }
    }

    /// Sets the bits `bits` of `hw.flags`.
    pub(crate) fn set_flags(&self, bits: u32) {
        self.flags().fetch_or(bits, Ordering::Relaxed);
    }

    /// Clears the bits `bits` of `hw.flags`.
    pub(crate) fn clear_flags(&self, bits: u32) {
        self.flags().fetch_and(!bits, Ordering::Relaxed);
    }
}

/// Generates the accessors of the fields of `hw_perf_event` (and of the event) that perf core
/// leaves to hardware PMU drivers, from one list of `getter, setter: type = path in struct
/// perf_event;`: getters for [`Hw`] (which [`HwMut`] derefs to) and setters for [`HwMut`], each a
/// single volatile access through a raw pointer (see the invariants of [`PerfEvent`]).
///
/// With a path, implements a driver's trait of event state for [`HwMut`] with them instead: the
/// trait declares each accessor of the list, of the same name and type, and `fn id(&self) -> u64`.
///
/// # Examples
///
/// ```ignore
/// perf::hw_fields!(my_driver::EventState);
/// ```
macro_rules! hw_fields {
    (@impl [] $($(#[$doc:meta])* $get:ident, $set:ident: $ty:ty = $($field:ident).+;)*) => {
        impl Hw<'_> {
            $(
                $(#[$doc])*
                #[inline(always)]
                pub(crate) fn $get(&self) -> $ty {
                    // SAFETY: By the type invariant of `PerfEvent` the event is valid; the field
                    // is read with a single volatile load, without creating a reference.
                    let value = unsafe { addr_of!((*self.0.as_raw()).$($field).+).read_volatile() };
                    // CAST: The Rust type has the C type's size; bits are kept as they are.
                    value as $ty
                }
            )*
        }

        impl HwMut<'_> {
            $(
                #[doc = concat!("Sets the field [`Hw::", stringify!($get), "`] reads.")]
                #[inline(always)]
                #[allow(
                    clippy::as_underscore,
                    reason = "the C type of some fields differs between 6.12 and 7.x (`unsigned long`)"
                )]
                pub(crate) fn $set(&mut self, value: $ty) {
                    // CAST: As above.
                    // SAFETY: By the type invariant of `EventMut`, which lent `self`, perf core
                    // serialises this write with the event's other writers; a single volatile
                    // store, without creating a reference.
                    unsafe {
                        addr_of_mut!((*self.0.0.as_raw()).$($field).+).write_volatile(value as _)
                    };
                }
            )*
        }
    };
    (@impl [$tr:path] $($(#[$doc:meta])* $get:ident, $set:ident: $ty:ty = $($field:ident).+;)*) => {
        impl $tr for $crate::glue::perf::HwMut<'_> {
            $(
                #[inline(always)]
                fn $get(&self) -> $ty {
                    $crate::glue::perf::Hw::$get(self)
                }

                #[inline(always)]
                fn $set(&mut self, value: $ty) {
                    $crate::glue::perf::HwMut::$set(self, value)
                }
            )*

            #[inline(always)]
            fn id(&self) -> u64 {
                $crate::glue::perf::Hw::id(self)
            }
        }
    };
    ($($tr:path)?) => {
        $crate::glue::perf::hw_fields! { @impl [$($tr)?]
            /// The counter the event is on (`hw.idx`), or -1.
            idx, set_idx: i32 = hw.__bindgen_anon_1.__bindgen_anon_1.idx;
            /// The driver's event selector (`hw.config`).
            config, set_config: u64 = hw.__bindgen_anon_1.__bindgen_anon_1.config;
            /// The driver's configuration base (`hw.config_base`).
            config_base, set_config_base: u64 = hw.__bindgen_anon_1.__bindgen_anon_1.config_base;
            /// The driver's event base (`hw.event_base`).
            event_base, set_event_base: u64 = hw.__bindgen_anon_1.__bindgen_anon_1.event_base;
            /// The driver's flags (`hw.flags`).
            flags, set_flags: u32 = hw.__bindgen_anon_1.__bindgen_anon_1.flags;
            /// The hardware state (`hw.state`, `PERF_HES_*` bits).
            state, set_state: u32 = hw.state;
            /// The sampling period (`hw.sample_period`).
            sample_period, set_sample_period: u64 = hw.sample_period;
            /// The period of the last sample (`hw.last_period`).
            last_period, set_last_period: u64 = hw.__bindgen_anon_2.__bindgen_anon_1.last_period;
            /// The counter value the event's count was last brought up to date with
            /// (`hw.prev_count`, a `local64_t`: `local64_read()` and `local64_set()` are single
            /// volatile accesses too).
            prev_count, set_prev_count: u64 = hw.prev_count.a.a.counter;
            /// What is left of the sampling period (`hw.period_left`, a `local64_t`).
            period_left, set_period_left: i64 =
                hw.__bindgen_anon_2.__bindgen_anon_1.period_left.a.a.counter;
            /// The PMU driver's private word of the event (`pmu_private`, which perf core never
            /// reads).
            pmu_private, set_pmu_private: u64 = pmu_private;
        }
    };
}
pub(crate) use hw_fields;

/// The hardware state of an event (`struct hw_perf_event`), read in place.
///
/// # Examples
///
/// ```ignore
/// let counter = event.hw().idx();
/// ```
pub(crate) struct Hw<'a>(&'a PerfEvent);

impl Hw<'_> {
    /// The event's unique number (`id`).
    pub(crate) fn id(&self) -> u64 {
        // SAFETY: By the type invariant of `PerfEvent` the event is valid; perf core sets `id`
        // before the event reaches a PMU and does not change it.
        unsafe { (*self.0.as_raw()).id }
    }
}

/// The hardware state of an event, read and written in place; lent by an [`EventMut`].
///
/// # Examples
///
/// ```ignore
/// let mut hw = event.hw_mut();
/// hw.set_prev_count(now);
/// ```
pub(crate) struct HwMut<'a>(Hw<'a>);

impl<'a> Deref for HwMut<'a> {
    type Target = Hw<'a>;

    #[inline(always)]
    fn deref(&self) -> &Hw<'a> {
        &self.0
    }
}

hw_fields!();

/// Proof that the code runs in a PMU's `event_init` callback, for the event being initialised
/// (which the callback gets as an [`EventMut`] beside it): the group it joins may be read.
///
/// # Examples
///
/// ```ignore
/// fn event_init(&self, event: &mut EventMut<'_>, init: &EventInit<'_>) -> Result {
///     let mut members = 0;
///     init.for_each_group_member(|_| members += 1);
///     event.hw_mut().set_config(event.config());
///     Ok(())
/// }
/// ```
pub(crate) struct EventInit<'a>(&'a PerfEvent);

impl EventInit<'_> {
    /// Calls `f` with each event of the group the event being initialised joins that belongs to
    /// the same PMU, other than that event: the group leader and its siblings, read-only. Nothing
    /// when the event leads its group.
    ///
    /// perf core (`perf_try_init_event()`) holds the leader's context mutex while it initialises a
    /// sibling of a hardware PMU, which keeps the group as it is; the token is only made in
    /// `event_init` and for its event.
    pub(crate) fn for_each_group_member(&self, mut f: impl FnMut(&PerfEvent)) {
        let event = self.0.as_raw();
        // SAFETY: By the type invariant of `PerfEvent` the event is valid; perf core sets
        // `group_leader` and `pmu` before it calls event_init.
        let (leader, pmu) = unsafe { ((*event).group_leader, (*event).pmu) };
        if leader.is_null() || leader == event {
            return;
        }
        // SAFETY: `event` is a sibling in its event_init, so perf core holds the leader's context
        // mutex: the leader cannot leave its context (and be freed) meanwhile.
        let member = |ptr: *mut bindings::perf_event| unsafe { (*ptr).pmu } == pmu;
        if member(leader) {
            // SAFETY: `leader` is valid (see above); the reference does not outlive `f`.
            f(unsafe { PerfEvent::from_raw(leader) });
        }
        // SAFETY: `leader` is valid; its sibling list only changes under its context mutex, which
        // perf core holds.
        let head = unsafe { addr_of_mut!((*leader).sibling_list) };
        // SAFETY: `head` is a valid, initialised list head.
        let mut pos = unsafe { (*head).next };
        while !pos.is_null() && pos != head {
            // SAFETY: Every entry of the list is the `sibling_list` member of a sibling event.
            let sibling =
                unsafe { compat::container_of_mut!(pos, bindings::perf_event, sibling_list) };
            if member(sibling) {
                // SAFETY: `sibling` is a valid event of the group, kept by the mutex; the reference
                // does not outlive `f`.
                f(unsafe { PerfEvent::from_raw(sibling) });
            }
            // SAFETY: `pos` is a valid list entry.
            pos = unsafe { (*pos).next };
        }
    }
}

/// The number of counters an [`EventTable`] has room for (`hw.idx` 0 to 63).
pub(crate) const MAX_COUNTERS: usize = 64;

/// The events on one CPU's counters, by `hw.idx` (the C drivers' `cpu_hw_events.events[]`), kept
/// by the `add` and `del` callbacks; the driver reads it.
///
/// It sits beside the driver's state of the CPU, in memory the driver cannot reach mutably: what
/// the table says must stay what the callbacks of that CPU recorded.
///
/// # Invariants
///
/// A non-null entry is an event perf core has added to the PMU on this table's CPU (its `add`
/// callback succeeded) and not yet deleted: `del` clears it before the event leaves.
///
/// # Examples
///
/// ```ignore
/// // In the overflow handler:
/// self.cpus.with_local_events(irq, |state, events| {
///     if let Some(mut event) = events.get(idx, irq) {
///         event.add_count(state.update(idx));
///     }
/// });
/// ```
pub(crate) struct EventTable {
    slots: [Cell<*mut bindings::perf_event>; MAX_COUNTERS],
}

impl EventTable {
    const fn new() -> Self {
        // INVARIANT: No entry is set.
        Self {
            slots: [const { Cell::new(core::ptr::null_mut()) }; MAX_COUNTERS],
        }
    }

    /// The event on counter `idx` of this CPU, if any, writable while interrupts stay disabled.
    #[inline(always)]
    pub(crate) fn get<'t>(
        &'t self,
        idx: usize,
        _irq: &'t LocalInterruptDisabled,
    ) -> Option<EventMut<'t>> {
        let ptr = self.slots.get(idx)?.get();
        if ptr.is_null() {
            return None;
        }
        // Only the event's `del` callback takes it off, on this CPU with interrupts disabled: not
        // during the interrupts-off section the token stands for, unless the token's holder is that
        // `del`, which clears the entry before the driver runs. Tables are only reached on their
        // own CPU (`CpuStates`).
        // SAFETY: By the invariant the event is on this CPU's PMU, and stays so while the token
        // lives (above); the reference is bounded by the token's borrow (`'t`).
        let event = unsafe { PerfEvent::from_raw(ptr) };
        // SAFETY: The token proves interrupts are disabled on the CPU the event is added to.
        Some(unsafe { EventMut::new(event) })
    }

    /// The entry of counter `idx` (`hw.idx`), if the table has one.
    #[inline(always)]
    fn slot(&self, idx: i32) -> Option<&Cell<*mut bindings::perf_event>> {
        usize::try_from(idx)
            .ok()
            .and_then(|idx| self.slots.get(idx))
    }

    /// Records `event` on the counter `idx`.
    #[inline(always)]
    fn record(&self, idx: i32, event: *mut bindings::perf_event) {
        // INVARIANT: `add` succeeded for the event. An event the driver left without a counter
        // (or with an out-of-range one) is not recorded.
        if let Some(slot) = self.slot(idx) {
            slot.set(event);
        }
    }

    /// Forgets `event` wherever the table has it; `idx` is where it should be.
    #[inline(always)]
    fn forget(&self, idx: i32, event: *mut bindings::perf_event) {
        if let Some(slot) = self.slot(idx).filter(|s| s.get() == event) {
            slot.set(core::ptr::null_mut());
            return;
        }
        self.forget_anywhere(event);
    }

    /// [`EventTable::forget`] for an event not where `hw.idx` says: every entry is checked, so the
    /// invariant holds whatever the driver did with `hw.idx`.
    #[cold]
    fn forget_anywhere(&self, event: *mut bindings::perf_event) {
        for slot in &self.slots {
            if slot.get() == event {
                slot.set(core::ptr::null_mut());
            }
        }
    }
}

/// One CPU's part of a [`CpuStates`].
struct PmuCpu<D> {
    events: EventTable,
    state: RefCell<D>,
}

impl<D: ConstInit> ConstInit for PmuCpu<D> {
    const INIT: Self = Self {
        events: EventTable::new(),
        state: RefCell::new(D::INIT),
    };
}

// SAFETY: The event pointers of the table are only dereferenced on its CPU (see `EventTable::get`),
// whichever thread runs there; `D` is `Send`.
unsafe impl<D: Send> Send for PmuCpu<D> {}

/// The per-CPU state of a PMU: the driver's state `D` of each CPU, and the CPU's [`EventTable`].
///
/// # Examples
///
/// ```ignore
/// let cpus = CpuStates::new(|_cpu, state: &mut CpuState| state.used = 0)?;
/// // On a CPU with interrupts disabled:
/// cpus.with_local(irq, |state| state.used += 1);
/// ```
pub(crate) struct CpuStates<D>(PerCpu<PmuCpu<D>>);

impl<D: Send + ConstInit> CpuStates<D> {
    /// Allocates the state of every possible CPU: the driver's part starts as [`ConstInit::INIT`],
    /// and `init` completes it in place.
    pub(crate) fn new(init: impl Fn(CpuId, &mut D)) -> Result<Self> {
        Ok(Self(PerCpu::new(|cpu, pmu_cpu: &mut PmuCpu<D>| {
            init(cpu, pmu_cpu.state.get_mut())
        })?))
    }
}

impl<D: Send> CpuStates<D> {
    /// Runs `f` with this CPU's state, borrowed for the call only.
    ///
    /// A borrow while another is live on this CPU (code that re-enters the PMU while it holds the
    /// state) is refused with a warning and `None`: no path gets two `&mut` to one CPU's state.
    #[inline(always)]
    pub(crate) fn with_local<R>(
        &self,
        irq: &LocalInterruptDisabled,
        f: impl FnOnce(&mut D) -> R,
    ) -> Option<R> {
        self.with_local_events(irq, |state, _| f(state))
    }

    /// [`CpuStates::with_local`], with this CPU's table of events beside the state; the events it
    /// gives outlive the borrow (see [`EventTable::get`]).
    #[inline(always)]
    pub(crate) fn with_local_events<'t, R>(
        &'t self,
        irq: &'t LocalInterruptDisabled,
        f: impl FnOnce(&mut D, &'t EventTable) -> R,
    ) -> Option<R> {
        self.0
            .get(irq)
            .with(|cpu| Self::borrow(&cpu.state, |state| f(state, &cpu.events)))
    }

    /// Runs `f` on `cpu` with its state (a cross-CPU call, process context); `None` when the CPU is
    /// offline.
    pub(crate) fn with_cpu<R: Send>(
        &self,
        cpu: CpuId,
        f: impl FnOnce(&mut D) -> R + Send,
    ) -> Option<R> {
        self.0
            .with_cpu(cpu, |pmu_cpu| Self::borrow(&pmu_cpu.state, f))
            .flatten()
    }

    #[inline(always)]
    fn borrow<R>(cell: &RefCell<D>, f: impl FnOnce(&mut D) -> R) -> Option<R> {
        let Ok(mut state) = cell.try_borrow_mut() else {
            percpu::warn_once(c_str!("PMU state of a CPU borrowed while borrowed"));
            return None;
        };
        Some(f(&mut state))
    }
}

/// Where a PMU's `struct pmu` lives: as the first member of a structure an architecture's perf code
/// expects around it (or alone, in a transparent wrapper).
///
/// # Safety
///
/// `Self` must be `#[repr(transparent)]` or `#[repr(C)]` with a `struct pmu` at offset 0 that
/// [`PmuContainer::new`] initialises with its argument, and nothing else in it may be mutated
/// through a shared reference except by perf core.
///
/// # Examples
///
/// ```ignore
/// #[repr(transparent)]
/// struct PmuOnly(Opaque<bindings::pmu>);
///
/// // SAFETY: Transparent over the `struct pmu` it is made of.
/// unsafe impl PmuContainer for PmuOnly {
///     fn new(pmu: bindings::pmu) -> Self {
///         Self(Opaque::new(pmu))
///     }
/// }
/// ```
pub(crate) unsafe trait PmuContainer: Sized {
    /// A container of `pmu`.
    fn new(pmu: bindings::pmu) -> Self;
}

/// A PMU driver.
///
/// perf core calls these methods through the `struct pmu` callbacks of its [`Pmu`]. All but
/// `event_init`, `destroy` and the mmap callbacks run on the CPU the event counts on, with
/// interrupts disabled, and get that CPU's state, borrowed for the call.
///
/// # Examples
///
/// ```ignore
/// #[repr(transparent)]
/// struct PmuOnly(Opaque<bindings::pmu>);
///
/// // SAFETY: Transparent over the `struct pmu` it is made of.
/// unsafe impl PmuContainer for PmuOnly {
///     fn new(pmu: bindings::pmu) -> Self {
///         Self(Opaque::new(pmu))
///     }
/// }
///
/// struct Cycles;
///
/// #[vtable]
/// impl Driver for Cycles {
///     const NAME: &'static CStr = c_str!("cycles");
///     const TYPE: i32 = -1;
///     type CpuState = ();
///     type Container = PmuOnly;
///
///     fn event_init(&self, _: &mut EventMut<'_>, _: &EventInit<'_>) -> Result { Ok(()) }
///     fn add(&self, _: &mut (), event: &mut EventMut<'_>, _: EventOpFlags) -> Result {
///         event.hw_mut().set_idx(0);
///         Ok(())
///     }
///     fn del(&self, _: &mut (), _: &mut EventMut<'_>, _: EventOpFlags) {}
///     fn start(&self, _: &mut (), _: &mut EventMut<'_>, _: EventOpFlags) {}
///     fn stop(&self, _: &mut (), _: &mut EventMut<'_>, _: EventOpFlags) {}
///     fn read(&self, _: &mut (), _: &mut EventMut<'_>) {}
/// }
/// ```
#[vtable]
pub(crate) trait Driver: Sized + Send + Sync + 'static {
    /// The PMU name, as it appears under `/sys/bus/event_source/devices/`.
    const NAME: &'static CStr;

    /// The PMU type: a `PERF_TYPE_*` value to claim a fixed type, or `-1` for a dynamic one.
    const TYPE: i32;

    /// The driver's state of each CPU.
    type CpuState: Send;

    /// Where the `struct pmu` lives.
    type Container: PmuContainer;

    /// Checks an event and prepares it for counting (`pmu::event_init`); `init` reads the group
    /// it joins.
    ///
    /// Returns `ENOENT` for an event this PMU does not handle, so perf core tries another PMU.
    fn event_init(&self, event: &mut EventMut<'_>, init: &EventInit<'_>) -> Result;

    /// Puts an event on a counter of this CPU (`pmu::add`); the counter goes in `hw.idx`.
    fn add(
        &self,
        cpu: &mut Self::CpuState,
        event: &mut EventMut<'_>,
        flags: EventOpFlags,
    ) -> Result;

    /// Takes an event off its counter (`pmu::del`).
    fn del(&self, cpu: &mut Self::CpuState, event: &mut EventMut<'_>, flags: EventOpFlags);

    /// Starts counting (`pmu::start`).
    fn start(&self, cpu: &mut Self::CpuState, event: &mut EventMut<'_>, flags: EventOpFlags);

    /// Stops counting (`pmu::stop`).
    fn stop(&self, cpu: &mut Self::CpuState, event: &mut EventMut<'_>, flags: EventOpFlags);

    /// Brings the event's count up to date (`pmu::read`).
    fn read(&self, cpu: &mut Self::CpuState, event: &mut EventMut<'_>);

    /// Opens a window in which perf core adds, removes, starts and stops events of this CPU
    /// (`pmu::pmu_disable`); windows nest. A driver implements it with [`Driver::pmu_enable`].
    fn pmu_disable(&self, _cpu: &mut Self::CpuState) {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Closes the window [`Driver::pmu_disable`] opened (`pmu::pmu_enable`).
    fn pmu_enable(&self, _cpu: &mut Self::CpuState) {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Opens a transaction over a group's events (`pmu::start_txn`): between this and
    /// [`Driver::commit_txn`] or [`Driver::cancel_txn`], on this CPU with interrupts disabled,
    /// perf core adds (`PERF_PMU_TXN_ADD`) or reads (`PERF_PMU_TXN_READ`) the events of one group.
    /// A driver implements the three together; without them perf core brackets a group's adds with
    /// one more window (`pmu_disable` and `pmu_enable`).
    fn start_txn(&self) {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Ends the transaction (`pmu::commit_txn`): an error says the group cannot be scheduled as a
    /// whole, and perf core then deletes the events it added.
    fn commit_txn(&self) -> Result {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Abandons the transaction after an `add` failed (`pmu::cancel_txn`); perf core has deleted
    /// the group's events that were added.
    fn cancel_txn(&self) {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The event is being freed (`event->destroy`, set for every event `event_init` accepted): it
    /// is on no CPU and will not come back. Runs once, in process context, where it may wait for
    /// other CPUs (`cpus`, the PMU's per-CPU state).
    fn destroy(&self, _cpus: &CpuStates<Self::CpuState>, _event: &PerfEvent) {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The mmap page's `index` of a running event: one more than the index of the counter user
    /// space may read directly, or 0 when it must use read(2) (`pmu::event_idx`). It may run on
    /// any CPU.
    fn event_idx(&self, _event: &PerfEvent) -> u32 {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// A mapping of the event was made (`pmu::event_mapped`): at `mmap()`, and for each copy of
    /// the mapping (fork, a split of the area). Runs in the mapping task.
    fn event_mapped(&self, _event: &MappedEvent<'_>) {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// A mapping of the event went away (`pmu::event_unmapped`): perf core calls it at each
    /// close of a mapping, not only the last.
    fn event_unmapped(&self, _event: &MappedEvent<'_>) {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
}

// Reports how long a sample took to take (`perf_sample_event_took()`): perf core lowers the
// sampling rate when samples take too long.
pub(crate) use super::compat::perf_sample_event_took as sample_event_took;

/// A PMU for perf core: the driver, its per-CPU state and the `struct pmu` that will name them,
/// built by the module's initialisation and registered by the module [`module_pmu!`] makes, as
/// its last step, which unregisters it first at the module's exit.
///
/// Nothing else registers a PMU, so no driver code can drop a registered PMU while one of its
/// events exists.
///
/// # Examples
///
/// ```ignore
/// struct CyclesModule {
///     _hotplug: Pin<KBox<cpuhp::Registration<StartingCpu>>>,
/// }
///
/// impl PmuModule for CyclesModule {
///     fn init(module: &'static ThisModule) -> Result<(Self, Pmu)> {
///         let cpus = Arc::new(CpuStates::new(|_, _| ())?, GFP_KERNEL)?;
///         let hotplug = KBox::pin_init(cpuhp::Registration::new(StartingCpu), GFP_KERNEL)?;
///         let pmu = Pmu::new(module, Arc::new(Cycles, GFP_KERNEL)?, cpus, caps, &GROUPS)?;
///         Ok((Self { _hotplug: hotplug }, pmu))
///     }
/// }
///
/// module_pmu! {
///     type: CyclesModule,
///     name: "cycles_pmu",
///     author: "A. Developer",
///     description: "A PMU that counts cycles",
///     license: "GPL",
/// }
/// ```
pub(crate) struct Pmu(Arc<dyn RegisterOnce>);

impl Pmu {
    /// The PMU of `driver`, with `cpus` as its per-CPU state; not yet known to perf core.
    ///
    /// `cpus` may be shared with code that borrows a CPU's state on that CPU with interrupts
    /// disabled, such as an overflow interrupt.
    pub(crate) fn new<T: Driver, const N: usize>(
        module: &'static ThisModule,
        driver: Arc<T>,
        cpus: Arc<CpuStates<T::CpuState>>,
        capabilities: Capabilities,
        attr_groups: &'static AttributeGroups<N>,
    ) -> Result<Self> {
        let registration = try_pin_init!(Registration::<T> {
            driver,
            cpus,
            registered: AtomicBool::new(false),
            container <- Registration::<T>::container(module, capabilities, attr_groups),
        }? Error);
        let registration: Arc<dyn RegisterOnce> = Arc::pin_init(registration, GFP_KERNEL)?;
        Ok(Self(registration))
    }
}

/// A module's state `M` and its PMU, registered ([`PmuModule`], [`module_pmu!`]).
///
/// # Invariants
///
/// The PMU is registered. At most one value exists, built by the module's initialisation
/// (`kernel::Module::init`, which succeeds once), and it is dropped at the module's exit, when no
/// event holds a reference on the module.
pub(crate) struct PmuModuleState<M> {
    // Declared first: the PMU is unregistered before the rest of the module goes.
    _pmu: Pmu,
    _state: M,
}

/// A module that provides a PMU ([`module_pmu!`]).
///
/// # Examples
///
/// See [`Pmu`].
pub(crate) trait PmuModule: Sized + Send + Sync {
    /// Sets the module up: its state, kept until its exit, and its PMU, which is registered when
    /// this returns (events may be created from then on, so nothing may fail after it).
    fn init(module: &'static ThisModule) -> Result<(Self, Pmu)>;
}

/// Whether [`PmuModuleState`]'s `kernel::Module::init` ran.
static PMU_MODULE_INIT: AtomicBool = AtomicBool::new(false);

impl<M: PmuModule> kernel::Module for PmuModuleState<M> {
    fn init(module: &'static ThisModule) -> Result<Self> {
        // The module's initialisation calls this first; any other call is refused, so the value
        // the module's `init` stores is the only one.
        if PMU_MODULE_INIT.swap(true, Ordering::Relaxed) {
            return Err(EBUSY);
        }
        let (state, pmu) = M::init(module)?;
        // SAFETY: This value is the only one (see above). The module's initialisation stores it
        // in the module's state and drops it at the module's exit only, after every event's
        // reference on the module is gone; nothing can fail after the registration.
        unsafe { pmu.0.register() }
            .inspect_err(|err| pr_err!("registering the PMU failed: {:?}\n", err))?;
        // INVARIANT: Registered, and built here only.
        Ok(Self {
            _pmu: pmu,
            _state: state,
        })
    }
}

/// Declares a kernel module whose state is `type`, a [`PmuModule`], and which registers its PMU
/// last and unregisters it first ([`PmuModuleState`]). The other keys are `module!`'s.
///
/// # Examples
///
/// See [`Pmu`].
macro_rules! module_pmu {
    (type: $t:ident, name: $n:tt, author: $a:tt, description: $d:tt, license: $l:tt $(,)?) => {
        type __PmuModule = $crate::glue::perf::PmuModuleState<$t>;
        $crate::glue::compat::module! {
            type: __PmuModule,
            name: $n,
            author: $a,
            description: $d,
            license: $l,
        }
    };
}
pub(crate) use module_pmu;

/// A PMU that can be registered once ([`Pmu`] without its driver type).
trait RegisterOnce: Send + Sync {
    /// Registers the PMU with perf core.
    ///
    /// # Safety
    ///
    /// Called at most once. Once it returned success, the PMU must not be dropped while an event
    /// of the PMU exists: each event holds a reference on the module (perf core takes it at
    /// `event_init` and drops it after `destroy`), so a PMU dropped at the module's exit is never
    /// dropped under an event.
    unsafe fn register(&self) -> Result;
}

/// A PMU: the `struct pmu` perf core knows once registered, the driver and its per-CPU state.
///
/// # Invariants
///
/// The `struct pmu` in `container` is initialised, with the callbacks of [`Adapter<T>`]; it is
/// registered with perf core from a successful [`RegisterOnce::register`] until drop, when
/// `registered` is set.
#[pin_data(PinnedDrop)]
struct Registration<T: Driver> {
    driver: Arc<T>,
    cpus: Arc<CpuStates<T::CpuState>>,
    registered: AtomicBool,
    #[pin]
    container: Opaque<T::Container>,
}

// SAFETY: The registration is only reached through shared references; `T` is `Sync`, per-CPU state
// is only used on its own CPU, and the `struct pmu` is only changed by perf core under its locks.
unsafe impl<T: Driver> Sync for Registration<T> {}

// SAFETY: Nothing in the registration is tied to the thread that created it.
unsafe impl<T: Driver> Send for Registration<T> {}

impl<T: Driver> RegisterOnce for Registration<T> {
    unsafe fn register(&self) -> Result {
        // CAST: By the contract of `PmuContainer` the `struct pmu` is at offset 0.
        let pmu = self.container.get().cast::<bindings::pmu>();
        // The registration is pinned in its `Arc`: `pmu` stays at this address until drop, which
        // unregisters it. Every other field is initialised, so the callbacks find them.
        // SAFETY: `pmu` is initialised (type invariant) and registered once (the caller's
        // guarantee); the name is a static string.
        let ret = unsafe { bindings::perf_pmu_register(pmu, T::NAME.as_char_ptr(), T::TYPE) };
        to_result(ret)?;
        // INVARIANT: Registered.
        self.registered.store(true, Ordering::Relaxed);
        Ok(())
    }
}

impl<T: Driver> Registration<T> {
    fn container<const N: usize>(
        module: &'static ThisModule,
        capabilities: Capabilities,
        attr_groups: &'static AttributeGroups<N>,
    ) -> impl PinInit<Opaque<T::Container>> {
        // perf core takes the three transaction callbacks together or none of them, and calls
        // `pmu_disable` and `pmu_enable` both or neither.
        if T::HAS_START_TXN != T::HAS_COMMIT_TXN || T::HAS_START_TXN != T::HAS_CANCEL_TXN {
            kernel::build_error!(
                "a PMU driver implements start_txn, commit_txn and cancel_txn together"
            );
        }
        if T::HAS_PMU_DISABLE != T::HAS_PMU_ENABLE {
            kernel::build_error!("a PMU driver implements pmu_disable and pmu_enable together");
        }
        // Without the exports a sample cannot be reported: perf_event_open() refuses sampling
        // events of a PMU without interrupts, and `event_init` those of in-kernel users.
        let capabilities = if compat::SAMPLE_EXPORTS
            || capabilities.contains(Capabilities::NO_INTERRUPT)
        {
            capabilities
        } else {
            pr_info!("sampling is not supported: this kernel does not export perf_event_overflow() and perf_sample_event_took() to modules\n");
            capabilities.union(Capabilities::NO_INTERRUPT)
        };
        Opaque::ffi_init(move |container: *mut T::Container| {
            // CAST: Both `module` types are bindgen's image of the same `struct module`.
            let module = module.as_ptr().cast::<bindings::module>();
            // CAST: `PERF_PMU_CAP_*` bits fit in the `int` field.
            let capabilities = capabilities.bits() as c_int;
            // `if` rather than `bool::then_some`: a callback the driver does not implement is then
            // never instantiated (its body is the vtable's build error).
            macro_rules! optional {
                ($has:expr, $callback:ident $(::<$mapped:literal>)?) => {
                    if $has {
                        Some(Adapter::<T>::$callback $(::<$mapped>)?)
                    } else {
                        None
                    }
                };
            }
            let pmu = bindings::pmu {
                module,
                attr_groups: attr_groups.as_raw(),
                capabilities,
                event_init: Some(Adapter::<T>::event_init_callback),
                add: Some(Adapter::<T>::add_callback),
                del: Some(Adapter::<T>::del_callback),
                start: Some(Adapter::<T>::start_callback),
                stop: Some(Adapter::<T>::stop_callback),
                read: Some(Adapter::<T>::read_callback),
                pmu_enable: optional!(T::HAS_PMU_ENABLE, pmu_enable_callback),
                pmu_disable: optional!(T::HAS_PMU_DISABLE, pmu_disable_callback),
                start_txn: optional!(T::HAS_START_TXN, start_txn_callback),
                commit_txn: optional!(T::HAS_START_TXN, commit_txn_callback),
                cancel_txn: optional!(T::HAS_START_TXN, cancel_txn_callback),
                event_idx: optional!(T::HAS_EVENT_IDX, event_idx_callback),
                event_mapped: optional!(T::HAS_EVENT_MAPPED, mmap_callback::<true>),
                event_unmapped: optional!(T::HAS_EVENT_UNMAPPED, mmap_callback::<false>),
                ..Default::default()
            };
            // SAFETY: `container` is valid for writes.
            unsafe { container.write(T::Container::new(pmu)) };
        })
    }
}

#[pinned_drop]
impl<T: Driver> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        if !self.registered.load(Ordering::Relaxed) {
            return;
        }
        // CAST: By the contract of `PmuContainer` the `struct pmu` is at offset 0.
        let pmu = self.container.get().cast::<bindings::pmu>();
        // No event is left (the safety requirement of `register`), so no callback of an event can
        // run. An event being created calls `event_init` under `pmus_srcu` after taking its
        // reference on the module, which fails once the module is going; perf_pmu_unregister()
        // waits for such a call to finish (`synchronize_srcu()`).
        // SAFETY: By the type invariant the PMU is registered; after this no callback can reach
        // the other fields, so they outlive every use by perf core.
        unsafe { bindings::perf_pmu_unregister(pmu) };
    }
}

/// The `struct pmu` callbacks of a [`Registration<T>`].
struct Adapter<T: Driver>(PhantomData<T>);

impl<T: Driver> Adapter<T> {
    /// Returns the registration a `struct pmu` belongs to.
    ///
    /// # Safety
    ///
    /// `pmu` must be the argument (or the event's PMU) of a running callback of a
    /// [`Registration<T>`].
    #[inline(always)]
    unsafe fn registration<'a>(pmu: *mut bindings::pmu) -> &'a Registration<T> {
        // CAST: Only the `struct pmu` at offset 0 of a `Registration<T>`'s container has these
        // callbacks (`PmuContainer`), and `Opaque` is transparent.
        let container = pmu.cast::<Opaque<T::Container>>();
        // SAFETY: `container` is the `container` field of a `Registration<T>`.
        let registration =
            unsafe { compat::container_of_mut!(container, Registration<T>, container) };
        // SAFETY: The registration outlives its callbacks (see `RegisterOnce::register`).
        unsafe { &*registration }
    }

    /// Runs `f` with the driver, this CPU's state and the event.
    ///
    /// # Safety
    ///
    /// `event` must be the argument of a running `add`, `del`, `start`, `stop` or `read` callback
    /// of a [`Registration<T>`].
    #[inline(always)]
    unsafe fn with_state<R, F>(event: *mut bindings::perf_event, f: F) -> Option<R>
    where
        F: FnOnce(&T, &mut T::CpuState, &EventTable, &mut EventMut<'_>) -> R,
    {
        // SAFETY: Guaranteed by the caller: perf core set `event->pmu` to the PMU of the callback.
        let registration = unsafe { Self::registration((*event).pmu) };
        // perf core calls these callbacks at a context switch (the scheduler holds the runqueue
        // lock), from the tick, from a cross-CPU call, under the context lock taken with interrupts
        // disabled, in `perf_event_read_local()` (`local_irq_save()`), or from an interrupt.
        // SAFETY: So they run on the event's CPU with interrupts disabled.
        let irq = unsafe { LocalInterruptDisabled::assume_disabled() };
        // SAFETY: Guaranteed by the caller; the reference does not leave this function.
        let ev = unsafe { PerfEvent::from_raw(event) };
        // SAFETY: One of those callbacks runs, on the event's CPU with interrupts disabled.
        let mut ev = unsafe { EventMut::new(ev) };
        registration.cpus.with_local_events(irq, |state, events| {
            f(&registration.driver, state, events, &mut ev)
        })
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `event_init` callback.
    unsafe extern "C" fn event_init_callback(event: *mut bindings::perf_event) -> c_int {
        from_result(|| {
            // SAFETY: perf core sets `event->pmu` to this PMU before calling its `event_init`.
            let registration = unsafe { Self::registration((*event).pmu) };
            // SAFETY: The event is being initialised by this callback.
            let ev = unsafe { PerfEvent::from_raw(event) };
            // SAFETY: The event is not visible to anyone else before `event_init` returns.
            let mut ev_mut = unsafe { EventMut::new(ev) };
            let init = EventInit(ev);
            registration.driver.event_init(&mut ev_mut, &init)?;
            if !compat::SAMPLE_EXPORTS && ev.is_sampling() {
                // perf core checks the PMU's NO_INTERRUPT in perf_event_open() only: an in-kernel
                // user's sampling event (KVM's for a guest) is refused here, once initialised.
                if T::HAS_DESTROY {
                    registration.driver.destroy(&registration.cpus, ev);
                }
                // CAST: The errno constant (95) fits in an `i32`.
                return Err(Error::from_errno(-(bindings::EOPNOTSUPP as i32)));
            }
            if T::HAS_DESTROY {
                // SAFETY: The event is being initialised by this callback and perf core does not
                // touch `destroy` until it frees the event (or fails its setup right after this
                // callback), when it calls it once.
                unsafe { (*event).destroy = Some(Self::destroy_callback) };
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to `event->destroy`, which `event_init_callback` set.
    unsafe extern "C" fn destroy_callback(event: *mut bindings::perf_event) {
        // `__free_event()` (when the event is freed, or when `perf_event_alloc()` fails after
        // `event_init`) and `perf_try_init_event()` (when perf core refuses the event after
        // `event_init`) call `destroy` in process context.
        // SAFETY: They call it before they drop the event's reference on the PMU's module, so
        // `event->pmu` is still this PMU.
        let registration = unsafe { Self::registration((*event).pmu) };
        // SAFETY: Guaranteed by the caller; the reference does not leave this function.
        let event = unsafe { PerfEvent::from_raw(event) };
        registration.driver.destroy(&registration.cpus, event);
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `add` callback.
    unsafe extern "C" fn add_callback(event: *mut bindings::perf_event, flags: c_int) -> c_int {
        // SAFETY: Guaranteed by the caller.
        let added = unsafe {
            Self::with_state(event, |driver, state, events, ev| {
                // CAST: The flags are a bit set; as unsigned the bits are kept.
                driver.add(state, ev, EventOpFlags::from_bits_retain(flags as u32))?;
                events.record(ev.hw().idx(), event);
                Ok::<(), Error>(())
            })
        };
        // Not `from_result()`: its closure would be a function of its own, called on every add.
        match added.unwrap_or(Err(EBUSY)) {
            Ok(()) => 0,
            Err(err) => err.to_errno(),
        }
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `del` callback.
    unsafe extern "C" fn del_callback(event: *mut bindings::perf_event, flags: c_int) {
        // SAFETY: Guaranteed by the caller.
        let deleted = unsafe {
            Self::with_state(event, |driver, state, events, ev| {
                events.forget(ev.hw().idx(), event);
                // CAST: The flags are a bit set; as unsigned the bits are kept.
                driver.del(state, ev, EventOpFlags::from_bits_retain(flags as u32));
            })
        };
        if deleted.is_none() {
            // The driver could not run (its state was borrowed, which was warned about); the event
            // must still leave the table.
            // SAFETY: As in `with_state`.
            let irq = unsafe { LocalInterruptDisabled::assume_disabled() };
            // SAFETY: Guaranteed by the caller.
            let registration = unsafe { Self::registration((*event).pmu) };
            registration
                .cpus
                .0
                .get(irq)
                .with(|cpu| cpu.events.forget(-1, event));
        }
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `start` callback.
    unsafe extern "C" fn start_callback(event: *mut bindings::perf_event, flags: c_int) {
        // SAFETY: Guaranteed by the caller.
        unsafe {
            Self::with_state(event, |driver, state, _, ev| {
                // CAST: The flags are a bit set; as unsigned the bits are kept.
                driver.start(state, ev, EventOpFlags::from_bits_retain(flags as u32))
            })
        };
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `stop` callback.
    unsafe extern "C" fn stop_callback(event: *mut bindings::perf_event, flags: c_int) {
        // SAFETY: Guaranteed by the caller.
        unsafe {
            Self::with_state(event, |driver, state, _, ev| {
                // CAST: The flags are a bit set; as unsigned the bits are kept.
                driver.stop(state, ev, EventOpFlags::from_bits_retain(flags as u32))
            })
        };
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `read` callback.
    unsafe extern "C" fn read_callback(event: *mut bindings::perf_event) {
        // SAFETY: Guaranteed by the caller.
        unsafe { Self::with_state(event, |driver, state, _, ev| driver.read(state, ev)) };
    }

    /// Runs `f` with the driver and this CPU's state, in `pmu_disable` or `pmu_enable`.
    ///
    /// # Safety
    ///
    /// `pmu` must be passed by perf core to the `pmu_disable` or `pmu_enable` callback.
    #[inline(always)]
    unsafe fn with_pmu_state(pmu: *mut bindings::pmu, f: impl FnOnce(&T, &mut T::CpuState)) {
        // SAFETY: Guaranteed by the caller.
        let registration = unsafe { Self::registration(pmu) };
        // perf core calls `pmu_disable` and `pmu_enable` (`perf_pmu_disable()`,
        // `perf_pmu_enable()`) with interrupts disabled: from the scheduler, under the context
        // lock, from cross-CPU calls and the tick, around the callbacks above.
        // SAFETY: So interrupts are disabled on this CPU for the call.
        let irq = unsafe { LocalInterruptDisabled::assume_disabled() };
        registration
            .cpus
            .with_local(irq, |state| f(&registration.driver, state));
    }

    /// # Safety
    ///
    /// `pmu` must be passed by perf core to the `pmu_disable` callback.
    unsafe extern "C" fn pmu_disable_callback(pmu: *mut bindings::pmu) {
        // SAFETY: Guaranteed by the caller.
        unsafe { Self::with_pmu_state(pmu, |driver, state| driver.pmu_disable(state)) };
    }

    /// # Safety
    ///
    /// `pmu` must be passed by perf core to the `pmu_enable` callback.
    unsafe extern "C" fn pmu_enable_callback(pmu: *mut bindings::pmu) {
        // SAFETY: Guaranteed by the caller.
        unsafe { Self::with_pmu_state(pmu, |driver, state| driver.pmu_enable(state)) };
    }

    /// # Safety
    ///
    /// `pmu` must be passed by perf core to the `start_txn` callback.
    unsafe extern "C" fn start_txn_callback(pmu: *mut bindings::pmu, _flags: c_uint) {
        // SAFETY: Guaranteed by the caller.
        unsafe { Self::registration(pmu) }.driver.start_txn();
    }

    /// # Safety
    ///
    /// `pmu` must be passed by perf core to the `commit_txn` callback.
    unsafe extern "C" fn commit_txn_callback(pmu: *mut bindings::pmu) -> c_int {
        // SAFETY: Guaranteed by the caller.
        let registration = unsafe { Self::registration(pmu) };
        from_result(|| registration.driver.commit_txn().map(|()| 0))
    }

    /// # Safety
    ///
    /// `pmu` must be passed by perf core to the `cancel_txn` callback.
    unsafe extern "C" fn cancel_txn_callback(pmu: *mut bindings::pmu) {
        // SAFETY: Guaranteed by the caller.
        unsafe { Self::registration(pmu) }.driver.cancel_txn();
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `event_idx` callback.
    unsafe extern "C" fn event_idx_callback(event: *mut bindings::perf_event) -> c_int {
        // SAFETY: Guaranteed by the caller.
        let registration = unsafe { Self::registration((*event).pmu) };
        // SAFETY: Guaranteed by the caller; the reference does not leave this function.
        let event = unsafe { PerfEvent::from_raw(event) };
        c_int::try_from(registration.driver.event_idx(event)).unwrap_or(0)
    }

    /// The `event_mapped` (`MAPPED`) and `event_unmapped` callbacks.
    ///
    /// # Safety
    ///
    /// `event` must be passed by perf core to the `event_mapped` callback, or to `event_unmapped`
    /// for `!MAPPED` (its address space is not needed: the counter's bit goes only to the CPU the
    /// event runs on).
    unsafe extern "C" fn mmap_callback<const MAPPED: bool>(
        event: *mut bindings::perf_event,
        _mm: *mut bindings::mm_struct,
    ) {
        // SAFETY: Guaranteed by the caller.
        let registration = unsafe { Self::registration((*event).pmu) };
        // SAFETY: Guaranteed by the caller; the reference does not leave this function.
        let event = MappedEvent(unsafe { PerfEvent::from_raw(event) });
        // `MAPPED` is a constant, so the other callback's method is compiled out: a driver may
        // implement one of the two alone (the other's default body is the vtable's build error).
        if MAPPED {
            registration.driver.event_mapped(&event);
        } else {
            registration.driver.event_unmapped(&event);
        }
    }
}
