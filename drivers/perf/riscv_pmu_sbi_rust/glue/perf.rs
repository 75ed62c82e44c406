// SPDX-License-Identifier: GPL-2.0

//! perf PMU registration and the events perf core hands to a PMU.
//!
//! C header: [`include/linux/perf_event.h`](srctree/include/linux/perf_event.h)
//!
//! A driver implements [`Driver`] and registers it with [`Registration`]. perf core then calls the
//! driver through the `struct pmu` callbacks below, each of which wraps the `struct perf_event`
//! it receives in a [`PerfEvent`], and lends the driver its state for the calling CPU.
//!
//! # Per-CPU state
//!
//! A PMU keeps one [`CpuStates`]: for each CPU, the events on its counters (kept by the `add` and
//! `del` callbacks) and the driver's state, which a callback borrows for its duration through
//! [`CpuStates::with_local`]. Code outside perf's callbacks that runs on the CPU with interrupts
//! disabled (an overflow interrupt, CPU PM notifiers, hotplug callbacks) borrows it the same way,
//! for a scope. perf core may call back into the PMU from inside such code (an overflow report
//! reads the group's other events), so the borrow must end before such a call: the borrow is
//! scope-bound, and a second borrow of the same CPU's state is refused with a warning instead of
//! creating a second `&mut`.

use super::arch::{this_cpu_ptr, PmuContainer};
use super::bindings;
use super::irq::IrqContext;
use super::percpu::{self, LocalCpu, PerCpu};
use super::sysfs::AttributeGroups;
use core::{
    cell::{Cell, RefCell},
    marker::PhantomData,
    ptr::{addr_of, addr_of_mut},
    sync::atomic::{AtomicI64, Ordering},
};
use kernel::{
    c_str,
    error::{from_result, to_result},
    ffi::{c_int, c_uint, c_void},
    init::pin_init_from_closure,
    prelude::*,
    sync::Arc,
    types::Opaque,
};

/// The `flags` argument of the `add`, `del`, `start` and `stop` callbacks (`PERF_EF_*`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventFlags(u32);

impl EventFlags {
    /// `add`: start the event right away.
    pub(crate) const START: Self = Self(bindings::PERF_EF_START);
    /// `start`: reload the counter from the saved count.
    pub(crate) const RELOAD: Self = Self(bindings::PERF_EF_RELOAD);
    /// `stop`: update the event's count.
    pub(crate) const UPDATE: Self = Self(bindings::PERF_EF_UPDATE);

    /// Returns whether all the flags in `other` are set in `self`.
    pub(crate) fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    fn from_raw(flags: c_int) -> Self {
        // CAST: the flags are a bit set; reinterpreting the bits as unsigned keeps them as they are.
        Self(flags as u32)
    }
}

/// PMU capabilities (`PERF_PMU_CAP_*`), checked by perf core before it calls the driver.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Capabilities(u32);

impl Capabilities {
    /// No capability flag.
    pub(crate) const NONE: Self = Self(0);
    /// The PMU cannot interrupt on counter overflow: `perf_event_open()` refuses sampling events
    /// (an in-kernel user such as KVM is not checked).
    pub(crate) const NO_INTERRUPT: Self = Self(bindings::PERF_PMU_CAP_NO_INTERRUPT);
    /// The PMU cannot filter by privilege mode: perf core refuses events with `exclude_*` set.
    pub(crate) const NO_EXCLUDE: Self = Self(bindings::PERF_PMU_CAP_NO_EXCLUDE);
}

impl core::ops::BitOr for Capabilities {
    type Output = Self;

    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// A perf event handed to a PMU callback.
///
/// Wraps the kernel's [`struct perf_event`].
///
/// # Invariants
///
/// The wrapped `struct perf_event` is valid while the reference exists: for the duration of a
/// PMU callback of this event, or while the event is on a counter of the CPU whose interrupts-off
/// section ([`LocalCpu`]) the reference is tied to (see [`CpuStates::event`]).
///
/// Fields are read and written through raw pointers, never through Rust references, each with a
/// single volatile access (`READ_ONCE()`/`WRITE_ONCE()`): perf core and the mmap callbacks
/// (`event_idx`, `event_mapped`, `event_unmapped`, which run on any CPU) may access `hw.idx` and
/// `hw.flags` while a callback on the event's CPU does, as in the C drivers; the other fields of
/// `hw` a PMU driver owns are only written by the PMU's callbacks on the event's CPU with
/// interrupts disabled, and by `event_init` before the event is visible to anyone else.
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
    /// that lock, so no reference may cover the whole struct: each accessor below reads one field
    /// that perf core sets before the event reaches a PMU and never writes again.
    fn attr_ptr(&self) -> *const bindings::perf_event_attr {
        // SAFETY: By the type invariant the event is valid; no reference is created.
        unsafe { addr_of!((*self.as_raw()).attr) }
    }

    /// The event's unique number (`id`).
    pub(crate) fn id(&self) -> u64 {
        // SAFETY: By the type invariant the event is valid; perf core sets `id` before the event
        // reaches a PMU and does not change it.
        unsafe { (*self.as_raw()).id }
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

    /// Whether the event must not count in user mode (`attr.exclude_user`).
    pub(crate) fn exclude_user(&self) -> bool {
        // SAFETY: As in `attr_type()`; the bit field's word is fixed and read in place.
        unsafe { bindings::perf_event_attr::exclude_user_raw(self.attr_ptr()) != 0 }
    }

    /// Whether the event must not count in kernel mode (`attr.exclude_kernel`).
    pub(crate) fn exclude_kernel(&self) -> bool {
        // SAFETY: As in `exclude_user()`.
        unsafe { bindings::perf_event_attr::exclude_kernel_raw(self.attr_ptr()) != 0 }
    }

    /// Whether the event must not count in hypervisor mode (`attr.exclude_hv`).
    pub(crate) fn exclude_hv(&self) -> bool {
        // SAFETY: As in `exclude_user()`.
        unsafe { bindings::perf_event_attr::exclude_hv_raw(self.attr_ptr()) != 0 }
    }

    /// Whether the event must not count in the host (`attr.exclude_host`).
    pub(crate) fn exclude_host(&self) -> bool {
        // SAFETY: As in `exclude_user()`.
        unsafe { bindings::perf_event_attr::exclude_host_raw(self.attr_ptr()) != 0 }
    }

    /// Whether the event must not count in guests (`attr.exclude_guest`).
    pub(crate) fn exclude_guest(&self) -> bool {
        // SAFETY: As in `exclude_user()`.
        unsafe { bindings::perf_event_attr::exclude_guest_raw(self.attr_ptr()) != 0 }
    }

    /// Whether the event samples on counter overflow (`is_sampling_event()`).
    pub(crate) fn is_sampling(&self) -> bool {
        // SAFETY: By the type invariant the event is valid.
        unsafe { bindings::rpmu_event_is_sampling(self.as_raw()) }
    }

    /// Whether the event asks for a branch stack (`has_branch_stack()`).
    pub(crate) fn has_branch_stack(&self) -> bool {
        // SAFETY: By the type invariant the event is valid.
        unsafe { bindings::rpmu_event_has_branch_stack(self.as_raw()) }
    }

    /// The hardware state of the event (`hw`), read and written in place.
    pub(crate) fn hw(&self) -> HwPerfEvent<'_> {
        HwPerfEvent { event: self }
    }

    /// The CPU the event is active on (`oncpu`), if any.
    fn oncpu(&self) -> Option<u32> {
        // perf core writes `oncpu` on the event's CPU (`WRITE_ONCE()` when it schedules the event
        // in, a plain store of -1 when it schedules it out) and reads it on other CPUs with
        // `READ_ONCE()`, as this volatile read does.
        // SAFETY: By the type invariant the event is valid; `oncpu` is an aligned `int`, so the
        // read sees the old or the new value.
        let cpu = unsafe { addr_of!((*self.as_raw()).oncpu).read_volatile() };
        u32::try_from(cpu).ok()
    }

    /// Runs `f` on the CPU the event is active on, with interrupts disabled there, while it is
    /// active there, and waits for it; nothing when the event is on no CPU. Process context only
    /// (the mmap callbacks).
    pub(crate) fn on_active_cpu<F: Fn(&PerfEvent) + Sync>(&self, f: &F) {
        /// A call of `f` on its way to the event's CPU.
        struct Call<'a, F> {
            event: *mut bindings::perf_event,
            cpu: u32,
            f: &'a F,
        }

        /// # Safety
        ///
        /// `info` must point to a `Call<'_, F>` whose event is valid until the call returns.
        unsafe extern "C" fn trampoline<F: Fn(&PerfEvent) + Sync>(info: *mut c_void) {
            // SAFETY: Guaranteed by the caller; the call is only read.
            let call = unsafe { &*info.cast_const().cast::<Call<'_, F>>() };
            // SAFETY: Guaranteed by the caller; the reference does not leave this function.
            let event = unsafe { PerfEvent::from_raw(call.event) };
            // perf core puts an event on a CPU and takes it off on that CPU with interrupts
            // disabled, as they are here: it stays active here until this returns.
            if event.oncpu() == Some(call.cpu) {
                (call.f)(event);
            }
        }

        let Some(cpu) = self.oncpu() else {
            return;
        };
        let call = Call {
            event: self.as_raw(),
            cpu,
            f,
        };
        let info: *const Call<'_, F> = &call;
        // SAFETY: `info` points to `call`, which outlives the call since it waits (`wait` = 1);
        // the event is valid for the whole mmap callback this runs in (type invariant), and
        // `F: Sync` lets the other CPU use `f`. An offline CPU (an error) runs no event.
        let _ = unsafe {
            bindings::rpmu_call_on_cpu(cpu, Some(trampoline::<F>), info.cast_mut().cast::<c_void>())
        };
    }

    /// Adds `delta` to the event's count (`local64_add()`).
    pub(crate) fn add_count(&self, delta: u64) {
        // `count` is a `local64_t`: an aligned `s64` the kernel only accesses with single-copy-atomic
        // operations (`local64_read()`, `local64_set()`, `local64_add()`, here `atomic64_add()`).
        let event = self.as_raw();
        // SAFETY: By the type invariant the event is valid; an atomic view of `count` for this one
        // operation is sound, as above.
        let count = unsafe { AtomicI64::from_ptr(addr_of_mut!((*event).count.a.a.counter)) };
        // CAST: The count wraps as an `s64` does in C; the bits are kept.
        // Relaxed, as `local64_add()`: perf core reads the count on this CPU or after an IPI to it.
        count.fetch_add(delta as i64, Ordering::Relaxed);
    }

    /// Publishes the event's state to its user-space mapping (`perf_event_update_userpage()`).
    ///
    /// An event without a ring buffer has no mapping: that is the function's own first test, made
    /// here to spare the call on the context-switch path of events nobody mmap'd.
    #[inline(always)]
    pub(crate) fn update_userpage(&self) {
        let event = self.as_raw();
        // `event->rb` changes under `event->mmap_mutex` (`ring_buffer_attach()`), not held here: a
        // NULL read is what the function's own `rcu_dereference()` could have seen at the same moment,
        // and it then returns at once too (`perf_mmap()` publishes a buffer it attaches itself).
        // SAFETY: By the type invariant the event is valid; the field is read once (`READ_ONCE()`)
        // and only compared with NULL, never dereferenced.
        let rb = unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*event).rb)) };
        if rb.is_null() {
            return;
        }
        // SAFETY: By the type invariant the event is valid.
        unsafe { bindings::perf_event_update_userpage(event) };
    }

    /// Reports a counter overflow of a sampling event from its overflow interrupt
    /// (`perf_event_overflow()`), with the period the sample stands for. Returns `true` when perf
    /// core throttles the event: the driver should stop it, perf core starts it again later.
    ///
    /// perf core may call the PMU back from here (a sample that reads its group reads the other
    /// events): the caller must not hold a borrow of the CPU's state (see [`CpuStates`]).
    pub(crate) fn overflow(&self, _ctx: &IrqContext<'_>, last_period: u64) -> bool {
        // SAFETY: By the type invariant the event is valid; the context proves this runs in an
        // interrupt handler, whose registers `get_irq_regs()` returns.
        unsafe { bindings::rpmu_event_overflow(self.as_raw(), last_period) != 0 }
    }
}

/// Proof that the code runs in a PMU's `event_init` callback, for the event being initialised.
pub(crate) struct EventInit<'a> {
    event: &'a PerfEvent,
}

impl EventInit<'_> {
    /// Calls `f` with each event of the group the event being initialised joins that belongs to
    /// the same PMU, other than that event: the group leader and its siblings. Nothing when the
    /// event leads its group.
    ///
    /// perf core (`perf_try_init_event()`) holds the leader's context mutex while it initialises a
    /// sibling of a hardware PMU, which keeps the group as it is; the token is only made in
    /// `event_init` and for its event.
    pub(crate) fn for_each_group_member(&self, mut f: impl FnMut(&PerfEvent)) {
        let event = self.event.as_raw();
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
            let sibling = unsafe { kernel::container_of!(pos, bindings::perf_event, sibling_list) }
                .cast_mut();
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

/// Generates the accessors of a field of `hw_perf_event`, each a single volatile access through a
/// raw pointer (see the invariants of [`PerfEvent`]).
macro_rules! hw_fields {
    ($($(#[$doc:meta])* $get:ident, $set:ident: $ty:ty = $($field:ident).+;)*) => {
        $(
            $(#[$doc])*
            pub(crate) fn $get(&self) -> $ty {
                // SAFETY: By the type invariant of `PerfEvent` the event is valid; the field is
                // read with a single volatile load, without creating a reference.
                let value = unsafe { addr_of!((*self.event.as_raw()).hw.$($field).+).read_volatile() };
                // CAST: The Rust type has the C type's size; bits are kept as they are.
                value as $ty
            }

            #[doc = concat!("Sets the field [`HwPerfEvent::", stringify!($get), "`] reads.")]
            pub(crate) fn $set(&self, value: $ty) {
                // SAFETY: As above, with a single volatile store.
                // CAST: As above.
                unsafe {
                    addr_of_mut!((*self.event.as_raw()).hw.$($field).+).write_volatile(value as _)
                };
            }
        )*
    };
}

/// The hardware state of an event (`struct hw_perf_event`): the fields perf core leaves to
/// hardware PMU drivers, read and written in place.
pub(crate) struct HwPerfEvent<'a> {
    event: &'a PerfEvent,
}

impl HwPerfEvent<'_> {
    hw_fields! {
        /// The counter the event is on (`hw.idx`), or -1.
        idx, set_idx: i32 = __bindgen_anon_1.__bindgen_anon_1.idx;
        /// The driver's event selector (`hw.config`).
        config, set_config: u64 = __bindgen_anon_1.__bindgen_anon_1.config;
        /// The driver's configuration base (`hw.config_base`).
        config_base, set_config_base: usize = __bindgen_anon_1.__bindgen_anon_1.config_base;
        /// The driver's event base (`hw.event_base`).
        event_base, set_event_base: usize = __bindgen_anon_1.__bindgen_anon_1.event_base;
        /// The driver's private flags (`hw.flags`).
        flags, set_flags: u32 = __bindgen_anon_1.__bindgen_anon_1.flags;
        /// The hardware state (`hw.state`, `PERF_HES_*` bits).
        state, set_state: u32 = state;
        /// The sampling period (`hw.sample_period`).
        sample_period, set_sample_period: u64 = sample_period;
        /// The configuration of the event's extra register (`hw.extra_reg.config`), a word perf
        /// core leaves to PMU drivers.
        extra_reg_config, set_extra_reg_config: u64 = __bindgen_anon_1.__bindgen_anon_1.extra_reg.config;
        /// A word of the hardware-PMU part perf core leaves to the driver (`hw.last_tag`).
        last_tag, set_last_tag: u64 = __bindgen_anon_1.__bindgen_anon_1.last_tag;
        /// The period of the last sample (`hw.last_period`).
        last_period, set_last_period: u64 = __bindgen_anon_2.__bindgen_anon_1.last_period;
        /// The counter value the event's count was last brought up to date with (`hw.prev_count`,
        /// a `local64_t`: `local64_read()` and `local64_set()` are single volatile accesses too).
        prev_count, set_prev_count: u64 = prev_count.a.a.counter;
        /// What is left of the sampling period (`hw.period_left`, a `local64_t`).
        period_left, set_period_left: i64 = __bindgen_anon_2.__bindgen_anon_1.period_left.a.a.counter;
    }

    /// The event's unique number (`id`).
    pub(crate) fn id(&self) -> u64 {
        self.event.id()
    }
}

/// The number of counters a PMU may have: the size of each CPU's table of events by counter.
pub(crate) const MAX_COUNTERS: usize = 64;

/// One CPU's part of a [`CpuStates`].
///
/// # Invariants
///
/// A non-null entry of `events` is an event perf core has added to a PMU on this CPU (its `add`
/// callback succeeded) and not yet deleted: `del` clears it before the event leaves.
struct PmuCpu<D> {
    events: EventTable,
    state: RefCell<D>,
}

/// The events on one CPU's counters, by counter (part of a [`PmuCpu`], whose invariant it keeps).
struct EventTable([Cell<*mut bindings::perf_event>; MAX_COUNTERS]);

// SAFETY: The event pointers are only dereferenced on this CPU (see `CpuStates::event`); `D` is
// `Send`.
unsafe impl<D: Send> Send for PmuCpu<D> {}

/// Whether perf core has a PMU disabled on this CPU (`perf_pmu_disable()`), read when asked: what
/// a callback of the PMU needs to know when the driver has no `pmu_disable` callback of its own.
/// It is the event of the callback, so that passing it costs nothing where it is not asked.
///
/// # Invariants
///
/// `event` is the event of an `add`, `del`, `start`, `stop` or `read` callback of a registered PMU
/// that runs on this CPU, with interrupts disabled, for as long as the value lives (the lifetime of
/// the callback's [`LocalCpu`]).
#[derive(Clone, Copy)]
pub(crate) struct PmuWindow<'a> {
    event: *mut bindings::perf_event,
    _cpu: PhantomData<&'a LocalCpu<'a>>,
}

impl<'a> PmuWindow<'a> {
    /// The window of the PMU of `event`, whose callback runs with the token `_cpu`.
    ///
    /// # Safety
    ///
    /// `event` must be the argument of a running `add`, `del`, `start`, `stop` or `read` callback
    /// of a registered PMU.
    #[inline(always)]
    unsafe fn new(event: *mut bindings::perf_event, _cpu: &'a LocalCpu<'a>) -> Self {
        // INVARIANT: Guaranteed by the caller, and the token proves interrupts are disabled on
        // this CPU for the lifetime.
        Self {
            event,
            _cpu: PhantomData,
        }
    }

    /// Whether perf core has the PMU disabled on this CPU: its `pmu_disable_count` of this CPU is
    /// above 0.
    #[inline]
    pub(crate) fn is_open(self) -> bool {
        // SAFETY: The callback of `event` runs on this CPU with interrupts disabled for as long as
        // `self` lives (type invariant).
        let cpu = unsafe { LocalCpu::new() };
        // SAFETY: The event is valid during its callback (type invariant), and perf core set
        // `event->pmu` to the PMU whose callback runs.
        let pmu = unsafe { (*self.event).pmu };
        // `perf_pmu_register()` allocated the PMU's per-CPU `pmu_disable_count`; only
        // `perf_pmu_unregister()` frees it, and perf core writes it only through `this_cpu_ptr()`.
        // SAFETY: The PMU is registered while its callback runs (type invariant; see the drop of
        // `Registration`), and perf core does not change the field of a registered PMU.
        let count = unsafe { (*pmu).pmu_disable_count };
        let ptr = this_cpu_ptr(count, &cpu);
        // SAFETY: `ptr` is this CPU's copy of the live count, written only on this CPU, where
        // interrupts stay disabled: no write runs during the read.
        unsafe { ptr.read() > 0 }
    }
}

/// The per-CPU state of a PMU: for each CPU, the events on its counters and the driver's state `D`.
pub(crate) struct CpuStates<D>(PerCpu<PmuCpu<D>>);

impl<D: Send> CpuStates<D> {
    /// Allocates the state of every possible CPU, `init` giving the driver's part.
    pub(crate) fn new(init: impl Fn(u32) -> D) -> Result<Self> {
        Ok(Self(PerCpu::new(|cpu| PmuCpu {
            // INVARIANT: No entry is set.
            events: EventTable([const { Cell::new(core::ptr::null_mut()) }; MAX_COUNTERS]),
            state: RefCell::new(init(cpu)),
        })?))
    }

    /// Runs `f` with this CPU's state, borrowed for the call only.
    ///
    /// A borrow while another is live on this CPU (code that re-enters the PMU while it holds the
    /// state) is refused with a warning and `None`: no path gets two `&mut` to one CPU's state.
    #[inline(always)]
    pub(crate) fn with_local<R>(
        &self,
        cpu: &LocalCpu<'_>,
        f: impl FnOnce(&mut D) -> R,
    ) -> Option<R> {
        self.with_local_table(cpu, |state, _| f(state))
    }

    /// [`CpuStates::with_local`], with this CPU's table of events beside the state (one per-CPU
    /// lookup for both).
    #[inline(always)]
    fn with_local_table<R>(
        &self,
        cpu: &LocalCpu<'_>,
        f: impl FnOnce(&mut D, &EventTable) -> R,
    ) -> Option<R> {
        let local = self.0.local(cpu);
        match local.state.try_borrow_mut() {
            Ok(mut state) => Some(f(&mut state, &local.events)),
            Err(_) => {
                percpu::warn_once(c_str!("PMU state of a CPU borrowed while borrowed"));
                None
            }
        }
    }

    /// The event on counter `idx` of this CPU, if any, for as long as interrupts stay disabled.
    pub(crate) fn event<'a>(&'a self, cpu: &'a LocalCpu<'_>, idx: usize) -> Option<&'a PerfEvent> {
        LocalEvents(&self.0.local(cpu).events).get(idx)
    }

    /// [`CpuStates::with_local`], with this CPU's events by counter beside the state (one per-CPU
    /// lookup for both); the events outlive the borrow, as those of [`CpuStates::event`] do.
    #[inline(always)]
    pub(crate) fn with_local_events<'a, R>(
        &'a self,
        cpu: &'a LocalCpu<'_>,
        f: impl FnOnce(&mut D, LocalEvents<'a>) -> R,
    ) -> Option<R> {
        let local = self.0.local(cpu);
        match local.state.try_borrow_mut() {
            Ok(mut state) => Some(f(&mut state, LocalEvents(&local.events))),
            Err(_) => {
                percpu::warn_once(c_str!("PMU state of a CPU borrowed while borrowed"));
                None
            }
        }
    }

    /// Runs `f` on `cpu` with its state (a cross-CPU call, process context); `None` when the CPU is
    /// offline.
    pub(crate) fn with_cpu<R: Send>(
        &self,
        cpu: u32,
        f: impl FnOnce(&mut D) -> R + Send,
    ) -> Option<R> {
        self.0
            .with_cpu(cpu, |pmu_cpu, _| {
                pmu_cpu.state.try_borrow_mut().ok().map(|mut s| f(&mut s))
            })
            .flatten()
    }

    /// Forgets `event` wherever this CPU's table has it.
    fn clear_event(&self, cpu: &LocalCpu<'_>, event: *mut bindings::perf_event) {
        self.0.local(cpu).events.clear(None, event);
    }
}

/// The events on the counters of the CPU the caller runs on, with interrupts disabled for as long
/// as `'a` (the lifetime of a [`LocalCpu`] token's borrow).
pub(crate) struct LocalEvents<'a>(&'a EventTable);

impl<'a> LocalEvents<'a> {
    /// The event on counter `idx`, if any.
    #[inline(always)]
    pub(crate) fn get(&self, idx: usize) -> Option<&'a PerfEvent> {
        let ptr = self.0 .0.get(idx)?.get();
        if ptr.is_null() {
            return None;
        }
        // Only the event's `del` callback takes it off, on this CPU with interrupts disabled: not
        // during the interrupts-off section the token stands for, unless the token's holder is that
        // `del`, which clears the entry before the driver runs.
        // SAFETY: By the invariant of `PmuCpu` the event is on this CPU's PMU, and stays so while
        // the token lives (above); the reference is bounded by the token's borrow (`'a`).
        Some(unsafe { PerfEvent::from_raw(ptr) })
    }
}

impl EventTable {
    /// Records `event` on the counter `idx`.
    #[inline(always)]
    fn set(&self, idx: Option<usize>, event: *mut bindings::perf_event) {
        // INVARIANT: `add` succeeded for the event. An event the driver left without a counter
        // (or with an out-of-range one) is not recorded.
        if let Some(slot) = idx.and_then(|idx| self.0.get(idx)) {
            slot.set(event);
        }
    }

    /// Forgets `event` wherever the table has it; `idx` is where it should be.
    #[inline(always)]
    fn clear(&self, idx: Option<usize>, event: *mut bindings::perf_event) {
        if let Some(slot) = idx
            .and_then(|idx| self.0.get(idx))
            .filter(|s| s.get() == event)
        {
            slot.set(core::ptr::null_mut());
            return;
        }
        self.clear_anywhere(event);
    }

    /// [`EventTable::clear`] for an event not where `hw.idx` says: every entry is checked, so the
    /// invariant holds whatever the driver did with `hw.idx`.
    #[cold]
    fn clear_anywhere(&self, event: *mut bindings::perf_event) {
        for slot in &self.0 {
            if slot.get() == event {
                slot.set(core::ptr::null_mut());
            }
        }
    }
}

/// A PMU driver.
///
/// perf core calls these methods through the `struct pmu` callbacks of a [`Registration`]. All but
/// `event_init` and the mmap callbacks run on the CPU the event counts on, with interrupts
/// disabled, and get that CPU's state, borrowed for the call.
#[vtable]
pub(crate) trait Driver: Sized + Send + Sync + 'static {
    /// The PMU name, as it appears under `/sys/bus/event_source/devices/`.
    const NAME: &'static CStr;

    /// The PMU type: a `PERF_TYPE_*` value to claim a fixed type, or `-1` for a dynamic one.
    const TYPE: i32;

    /// The driver's state of each CPU.
    type CpuState: Send;

    /// Checks an event and prepares it for counting (`pmu::event_init`).
    ///
    /// Returns `ENOENT` for an event this PMU does not handle, so perf core tries another PMU.
    fn event_init(&self, event: &PerfEvent, init: &EventInit<'_>) -> Result;

    /// Puts an event on a counter of this CPU (`pmu::add`); the counter goes in `hw.idx`.
    /// `window` tells, when asked, whether perf core has the PMU disabled on this CPU, as for the
    /// next three callbacks.
    fn add(
        &self,
        cpu: &mut Self::CpuState,
        event: &PerfEvent,
        flags: EventFlags,
        window: PmuWindow<'_>,
    ) -> Result;

    /// Takes an event off its counter (`pmu::del`).
    fn del(
        &self,
        cpu: &mut Self::CpuState,
        event: &PerfEvent,
        flags: EventFlags,
        window: PmuWindow<'_>,
    );

    /// Starts counting (`pmu::start`).
    fn start(
        &self,
        cpu: &mut Self::CpuState,
        event: &PerfEvent,
        flags: EventFlags,
        window: PmuWindow<'_>,
    );

    /// Stops counting (`pmu::stop`).
    fn stop(
        &self,
        cpu: &mut Self::CpuState,
        event: &PerfEvent,
        flags: EventFlags,
        window: PmuWindow<'_>,
    );

    /// Brings the event's count up to date (`pmu::read`).
    fn read(&self, cpu: &mut Self::CpuState, event: &PerfEvent);

    /// Closes a window perf core opened with `perf_pmu_disable()`, in which it added, removed,
    /// started and stopped events of this CPU (`pmu::pmu_enable`). The driver learns of the window
    /// from the [`PmuWindow`] of those callbacks; perf core gets an empty `pmu_disable` (it calls
    /// both or neither).
    fn pmu_enable(&self, _cpu: &mut Self::CpuState) {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Opens a transaction over a group's events (`pmu::start_txn`): between this and
    /// [`Driver::commit_txn`] or [`Driver::cancel_txn`], on this CPU with interrupts disabled,
    /// perf core adds (`PERF_PMU_TXN_ADD`) or reads (`PERF_PMU_TXN_READ`) the events of one group.
    /// A driver implements the three together; without them perf core brackets a group's adds with
    /// one more window (`pmu_disable` and [`Driver::pmu_enable`]).
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
    fn event_mapped(&self, _event: &PerfEvent) {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// A mapping of the event went away (`pmu::event_unmapped`): perf core calls it at each
    /// close of a mapping, not only the last.
    fn event_unmapped(&self, _event: &PerfEvent) {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
}

/// A registered PMU: the `struct pmu` perf core knows, the driver and its per-CPU state.
///
/// # Invariants
///
/// The `struct pmu` in `container` is registered with perf core from the end of initialisation
/// until drop, and its callbacks are those of [`Adapter<T>`].
#[pin_data(PinnedDrop)]
pub(crate) struct Registration<T: Driver> {
    driver: Arc<T>,
    cpus: Arc<CpuStates<T::CpuState>>,
    #[pin]
    container: PmuContainer,
}

// SAFETY: The registration is only reached through shared references; `T` is `Sync`, per-CPU state
// is only used on its own CPU, and the `struct pmu` is only changed by perf core under its locks.
unsafe impl<T: Driver> Sync for Registration<T> {}

// SAFETY: Nothing in the registration is tied to the thread that created it.
unsafe impl<T: Driver> Send for Registration<T> {}

impl<T: Driver> Registration<T> {
    /// Registers `driver` as a PMU with perf core, with `cpus` as its per-CPU state.
    ///
    /// Each event of the PMU holds a reference on `module`, so the module cannot be unloaded under
    /// them; the registration is therefore dropped at the module's exit only, when none is left.
    /// Events may be created as soon as the PMU is registered (the module being loaded counts as
    /// live), so registering must be the last step of the module's initialisation that can fail.
    /// `cpus` may be shared with code that borrows a CPU's state on that CPU with interrupts
    /// disabled, such as an overflow interrupt.
    pub(crate) fn new<const N: usize>(
        module: &'static ThisModule,
        driver: Arc<T>,
        cpus: Arc<CpuStates<T::CpuState>>,
        capabilities: Capabilities,
        attr_groups: &'static AttributeGroups<N>,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            driver,
            cpus,
            container <- Self::register(module, capabilities, attr_groups),
        }? Error)
    }

    fn register<const N: usize>(
        module: &'static ThisModule,
        capabilities: Capabilities,
        attr_groups: &'static AttributeGroups<N>,
    ) -> impl PinInit<PmuContainer, Error> {
        // perf core takes the three transaction callbacks together or none of them.
        if T::HAS_START_TXN != T::HAS_COMMIT_TXN || T::HAS_START_TXN != T::HAS_CANCEL_TXN {
            kernel::build_error!(
                "a PMU driver implements start_txn, commit_txn and cancel_txn together"
            );
        }
        let init = move |slot: *mut PmuContainer| {
            // CAST: Both `module` types are bindgen's image of the same `struct module`.
            let module = module.as_ptr().cast::<bindings::module>();
            // CAST: `PERF_PMU_CAP_*` bits fit in the `int` field.
            let capabilities = capabilities.0 as c_int;
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
                // `if` rather than `bool::then_some`: a callback the driver does not implement is
                // then never instantiated (its body is the vtable's build error).
                pmu_enable: if T::HAS_PMU_ENABLE {
                    Some(Adapter::<T>::pmu_enable_callback)
                } else {
                    None
                },
                pmu_disable: if T::HAS_PMU_ENABLE {
                    Some(Adapter::<T>::pmu_disable_empty)
                } else {
                    None
                },
                start_txn: if T::HAS_START_TXN {
                    Some(Adapter::<T>::start_txn_callback)
                } else {
                    None
                },
                commit_txn: if T::HAS_START_TXN {
                    Some(Adapter::<T>::commit_txn_callback)
                } else {
                    None
                },
                cancel_txn: if T::HAS_START_TXN {
                    Some(Adapter::<T>::cancel_txn_callback)
                } else {
                    None
                },
                event_idx: if T::HAS_EVENT_IDX {
                    Some(Adapter::<T>::event_idx_callback)
                } else {
                    None
                },
                event_mapped: if T::HAS_EVENT_MAPPED {
                    Some(Adapter::<T>::event_mapped_callback)
                } else {
                    None
                },
                event_unmapped: if T::HAS_EVENT_UNMAPPED {
                    Some(Adapter::<T>::event_unmapped_callback)
                } else {
                    None
                },
                ..Default::default()
            };
            // SAFETY: `slot` is valid for writes and pinned: the registration does not move.
            unsafe { slot.write(PmuContainer::new(pmu)) };
            // SAFETY: The container was just written.
            let pmu = unsafe { PmuContainer::pmu(slot) };
            // SAFETY: `pmu` is initialised and stays at this address until `drop` unregisters it;
            // the name is a static string. The other fields of the registration are initialised
            // before this one, so the callbacks find them.
            to_result(unsafe { bindings::perf_pmu_register(pmu, T::NAME.as_char_ptr(), T::TYPE) })
        };
        // SAFETY: On success the closure has initialised the slot; on failure perf core has
        // undone its part and the slot holds nothing that needs dropping.
        unsafe { pin_init_from_closure(init) }
    }
}

#[pinned_drop]
impl<T: Driver> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // No event is left: each holds a reference on the module (`perf_try_init_event()` takes
        // it, `__free_event()` drops it after `destroy`), and the registration is dropped at the
        // module's exit only (see `new`), so no callback of an event can run. An event being
        // created calls `event_init` under `pmus_srcu` after taking that reference, which fails
        // once the module is going; perf_pmu_unregister() waits for such a call to finish
        // (`synchronize_srcu()`).
        // SAFETY: By the type invariant the PMU is registered; after this no callback can reach
        // the other fields, so they outlive every use by perf core.
        unsafe { bindings::perf_pmu_unregister(PmuContainer::pmu(&self.container)) };
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
        // SAFETY: Only the `pmu` of a `Registration<T>`'s container has these callbacks.
        let container = unsafe { PmuContainer::from_pmu(pmu) };
        // SAFETY: `container` is the `container` field of a `Registration<T>`.
        let registration = unsafe { kernel::container_of!(container, Registration<T>, container) };
        // SAFETY: The registration outlives its callbacks (see `PinnedDrop`).
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
        F: FnOnce(&Registration<T>, &EventTable, &mut T::CpuState, &PerfEvent, PmuWindow<'_>) -> R,
    {
        // SAFETY: Guaranteed by the caller: perf core set `event->pmu` to the PMU of the callback.
        let registration = unsafe { Self::registration((*event).pmu) };
        // perf core calls these callbacks at a context switch (the scheduler holds the runqueue
        // lock), from the tick, from a cross-CPU call, under the context lock taken with interrupts
        // disabled, in `perf_event_read_local()` (`local_irq_save()`), or from an interrupt.
        // SAFETY: So they run on the event's CPU with interrupts disabled.
        let cpu = unsafe { LocalCpu::new() };
        // SAFETY: Guaranteed by the caller; the reference does not leave this function.
        let ev = unsafe { PerfEvent::from_raw(event) };
        // SAFETY: Guaranteed by the caller.
        let window = unsafe { PmuWindow::new(event, &cpu) };
        registration.cpus.with_local_table(&cpu, |state, events| {
            f(registration, events, state, ev, window)
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
            let event = unsafe { PerfEvent::from_raw(event) };
            let init = EventInit { event };
            registration.driver.event_init(event, &init)?;
            if T::HAS_DESTROY {
                // SAFETY: The event is being initialised by this callback and perf core does not
                // touch `destroy` until it frees the event (or fails its setup right after this
                // callback), when it calls it once.
                unsafe { (*event.as_raw()).destroy = Some(Self::destroy_callback) };
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
            Self::with_state(event, |reg, events, state, ev, window| {
                reg.driver
                    .add(state, ev, EventFlags::from_raw(flags), window)?;
                events.set(usize::try_from(ev.hw().idx()).ok(), event);
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
            Self::with_state(event, |reg, events, state, ev, window| {
                events.clear(usize::try_from(ev.hw().idx()).ok(), event);
                reg.driver
                    .del(state, ev, EventFlags::from_raw(flags), window);
            })
        };
        if deleted.is_none() {
            // The driver could not run; the event must still leave the table.
            // SAFETY: As in `with_state`.
            let cpu = unsafe { LocalCpu::new() };
            // SAFETY: Guaranteed by the caller.
            let registration = unsafe { Self::registration((*event).pmu) };
            registration.cpus.clear_event(&cpu, event);
        }
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `start` callback.
    unsafe extern "C" fn start_callback(event: *mut bindings::perf_event, flags: c_int) {
        // SAFETY: Guaranteed by the caller.
        unsafe {
            Self::with_state(event, |reg, _, state, ev, window| {
                reg.driver
                    .start(state, ev, EventFlags::from_raw(flags), window)
            })
        };
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `stop` callback.
    unsafe extern "C" fn stop_callback(event: *mut bindings::perf_event, flags: c_int) {
        // SAFETY: Guaranteed by the caller.
        unsafe {
            Self::with_state(event, |reg, _, state, ev, window| {
                reg.driver
                    .stop(state, ev, EventFlags::from_raw(flags), window)
            })
        };
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `read` callback.
    unsafe extern "C" fn read_callback(event: *mut bindings::perf_event) {
        // SAFETY: Guaranteed by the caller.
        unsafe { Self::with_state(event, |reg, _, state, ev, _| reg.driver.read(state, ev)) };
    }

    /// # Safety
    ///
    /// `pmu` must be passed by perf core to the `pmu_enable` callback.
    unsafe extern "C" fn pmu_enable_callback(pmu: *mut bindings::pmu) {
        // SAFETY: Guaranteed by the caller.
        let registration = unsafe { Self::registration(pmu) };
        // SAFETY: perf core calls `pmu_enable` with interrupts disabled, on the CPU whose events
        // the window bracketed.
        let cpu = unsafe { LocalCpu::new() };
        registration
            .cpus
            .with_local(&cpu, |state| registration.driver.pmu_enable(state));
    }

    /// `pmu_disable` of a driver with [`Driver::pmu_enable`]: perf core counts the window itself
    /// (`pmu_disable_count`), which the driver reads through [`PmuWindow`].
    extern "C" fn pmu_disable_empty(_pmu: *mut bindings::pmu) {}

    /// # Safety
    ///
    /// `pmu` must be passed by perf core to the `start_txn` callback.
    unsafe extern "C" fn start_txn_callback(pmu: *mut bindings::pmu, _flags: c_uint) {
        // SAFETY: Guaranteed by the caller.
        let registration = unsafe { Self::registration(pmu) };
        registration.driver.start_txn();
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
        let registration = unsafe { Self::registration(pmu) };
        registration.driver.cancel_txn();
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

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `event_mapped` callback (its address space is not
    /// needed: the counter's bit goes only to the CPU the event runs on).
    unsafe extern "C" fn event_mapped_callback(
        event: *mut bindings::perf_event,
        _mm: *mut bindings::mm_struct,
    ) {
        // SAFETY: Guaranteed by the caller.
        let registration = unsafe { Self::registration((*event).pmu) };
        // SAFETY: Guaranteed by the caller; the reference does not leave this function.
        let event = unsafe { PerfEvent::from_raw(event) };
        registration.driver.event_mapped(event);
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `event_unmapped` callback (its address space is not
    /// needed: the counter's bit goes only to the CPU the event runs on).
    unsafe extern "C" fn event_unmapped_callback(
        event: *mut bindings::perf_event,
        _mm: *mut bindings::mm_struct,
    ) {
        // SAFETY: Guaranteed by the caller.
        let registration = unsafe { Self::registration((*event).pmu) };
        // SAFETY: Guaranteed by the caller; the reference does not leave this function.
        let event = unsafe { PerfEvent::from_raw(event) };
        registration.driver.event_unmapped(event);
    }
}
