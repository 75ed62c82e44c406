// SPDX-License-Identifier: GPL-2.0

//! perf PMU registration and the events perf core hands to a PMU.
//!
//! C header: [`include/linux/perf_event.h`](srctree/include/linux/perf_event.h)
//!
//! A driver implements [`Driver`] and registers it with [`Registration`]. perf core then calls the
//! driver through the `struct pmu` callbacks below, each of which wraps the `struct perf_event`
//! it receives in a [`PerfEvent`].
//!
//! The `struct pmu` is embedded in a `struct riscv_pmu`, as in the C drivers: the built-in RISC-V
//! perf code (`arch_perf_update_userpage()` in `drivers/perf/riscv_pmu.c`) takes every event's PMU
//! for one and calls its `ctr_get_width` to publish the counter width of an event user space reads
//! directly.

use super::bindings;
use super::percpu::{self, PerCpu};
use super::sysfs::AttributeGroups;
use core::{
    marker::PhantomData,
    ptr::{addr_of, addr_of_mut},
    sync::atomic::{AtomicU8, Ordering},
};
use kernel::{
    error::{from_result, to_result},
    ffi::{c_int, c_ulong, c_void},
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
    /// The PMU cannot interrupt on counter overflow: perf core refuses sampling events.
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
/// The wrapped `struct perf_event` is valid while the reference exists, and the reference exists
/// only for the duration of a PMU callback of this event, or of a callback that runs on the CPU the
/// event holds a counter of with interrupts disabled (the overflow interrupt, CPU PM notifiers; see
/// [`ActiveEvents`]). perf core serialises the callbacks of an event that run on its CPU, with
/// interrupts disabled, so such a callback is the only user of the driver-owned fields (`hw`,
/// `count`) meanwhile, except for `hw.flags` and `hw.idx`: the mmap callbacks (`event_mapped`,
/// `event_unmapped`, `event_idx`) may read and update them from another CPU at the same time, as in
/// the C driver, so those two fields are only accessed with single volatile loads and stores
/// (`READ_ONCE()`/`WRITE_ONCE()`).
///
/// [`struct perf_event`]: srctree/include/linux/perf_event.h
#[repr(transparent)]
pub(crate) struct PerfEvent(Opaque<bindings::perf_event>);

impl PerfEvent {
    /// Creates a reference to a [`PerfEvent`] from a pointer perf core passed to a callback.
    ///
    /// # Safety
    ///
    /// `ptr` must be the event argument of a `struct pmu` callback that is running, and the
    /// returned reference must not outlive that callback.
    unsafe fn from_raw<'a>(ptr: *mut bindings::perf_event) -> &'a Self {
        // CAST: `Self` is `repr(transparent)` over `Opaque<perf_event>`, itself transparent over
        // `perf_event`.
        let ptr = ptr.cast::<Self>();
        // SAFETY: The caller guarantees that `ptr` is valid for the lifetime of the reference.
        // INVARIANT: The caller guarantees that the reference does not outlive the callback.
        unsafe { &*ptr }
    }

    fn as_raw(&self) -> *mut bindings::perf_event {
        self.0.get()
    }

    fn attr(&self) -> &bindings::perf_event_attr {
        // SAFETY: By the type invariant the event is valid; perf core does not change `attr`
        // while the event exists.
        unsafe { &*addr_of!((*self.as_raw()).attr) }
    }

    fn hw(&self) -> *mut bindings::hw_perf_event__bindgen_ty_1__bindgen_ty_1 {
        // SAFETY: By the type invariant the event is valid. The hardware-counter member of the
        // `hw` union is the one perf core leaves to hardware PMU drivers.
        unsafe { addr_of_mut!((*self.as_raw()).hw.__bindgen_anon_1.__bindgen_anon_1) }
    }

    /// The event's unique number (`id`).
    pub(crate) fn id(&self) -> u64 {
        // SAFETY: By the type invariant the event is valid; perf core sets `id` before the event
        // reaches a PMU and does not change it.
        unsafe { (*self.as_raw()).id }
    }

    /// The event type (`attr.type`, a `PERF_TYPE_*` value or a dynamic PMU type).
    pub(crate) fn attr_type(&self) -> u32 {
        self.attr().type_
    }

    /// The event selector (`attr.config`).
    pub(crate) fn config(&self) -> u64 {
        self.attr().config
    }

    /// The extra selector (`attr.config1`).
    pub(crate) fn config1(&self) -> u64 {
        // SAFETY: All members of this union are plain `u64`s, so every bit pattern is valid.
        unsafe { self.attr().__bindgen_anon_3.config1 }
    }

    /// Whether the event must not count in user mode (`attr.exclude_user`).
    pub(crate) fn exclude_user(&self) -> bool {
        self.attr().exclude_user() != 0
    }

    /// Whether the event must not count in kernel mode (`attr.exclude_kernel`).
    pub(crate) fn exclude_kernel(&self) -> bool {
        self.attr().exclude_kernel() != 0
    }

    /// Whether the event must not count in hypervisor mode (`attr.exclude_hv`).
    pub(crate) fn exclude_hv(&self) -> bool {
        self.attr().exclude_hv() != 0
    }

    /// Whether the event must not count in the host (`attr.exclude_host`).
    pub(crate) fn exclude_host(&self) -> bool {
        self.attr().exclude_host() != 0
    }

    /// Whether the event must not count in guests (`attr.exclude_guest`).
    pub(crate) fn exclude_guest(&self) -> bool {
        self.attr().exclude_guest() != 0
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

    /// The counter the event is on (`hw.idx`), or `None` when it has none.
    pub(crate) fn hw_idx(&self) -> Option<usize> {
        // SAFETY: By the type invariant the event is valid; `hw.idx` is only accessed with single
        // volatile loads and stores.
        let idx = unsafe { addr_of!((*self.hw()).idx).read_volatile() };
        usize::try_from(idx).ok()
    }

    /// Sets the counter the event is on (`hw.idx`, `-1` for none).
    pub(crate) fn set_hw_idx(&self, idx: Option<usize>) {
        let idx = idx.and_then(|idx| c_int::try_from(idx).ok()).unwrap_or(-1);
        // SAFETY: By the type invariant the event is valid; `hw.idx` is only accessed with single
        // volatile loads and stores.
        unsafe { addr_of_mut!((*self.hw()).idx).write_volatile(idx) };
    }

    /// The driver's event selector (`hw.config`).
    pub(crate) fn hw_config(&self) -> u64 {
        // SAFETY: By the type invariant the event is valid and the callback owns `hw`.
        unsafe { (*self.hw()).config }
    }

    /// Sets the driver's event selector (`hw.config`).
    pub(crate) fn set_hw_config(&self, config: u64) {
        // SAFETY: By the type invariant the event is valid and the callback owns `hw`.
        unsafe { (*self.hw()).config = config };
    }

    /// The driver's event base (`hw.event_base`).
    pub(crate) fn hw_event_base(&self) -> usize {
        // SAFETY: By the type invariant the event is valid and the callback owns `hw`.
        unsafe { (*self.hw()).event_base }
    }

    /// Sets the driver's event base (`hw.event_base`).
    pub(crate) fn set_hw_event_base(&self, event_base: usize) {
        // SAFETY: By the type invariant the event is valid and the callback owns `hw`.
        unsafe { (*self.hw()).event_base = event_base as c_ulong };
    }

    /// The driver's configuration base (`hw.config_base`).
    pub(crate) fn hw_config_base(&self) -> usize {
        // SAFETY: By the type invariant the event is valid and the callback owns `hw`.
        unsafe { (*self.hw()).config_base }
    }

    /// Sets the driver's configuration base (`hw.config_base`).
    pub(crate) fn set_hw_config_base(&self, config_base: usize) {
        // SAFETY: By the type invariant the event is valid and the callback owns `hw`.
        unsafe { (*self.hw()).config_base = config_base as c_ulong };
    }

    /// The driver's private flags (`hw.flags`, `PERF_EVENT_FLAG_*`).
    pub(crate) fn hw_flags(&self) -> u32 {
        // SAFETY: By the type invariant the event is valid; `hw.flags` is only accessed with single
        // volatile loads and stores.
        let flags = unsafe { addr_of!((*self.hw()).flags).read_volatile() };
        // CAST: The flags are a bit set; reinterpreting the bits as unsigned keeps them.
        flags as u32
    }

    /// Sets the driver's private flags (`hw.flags`).
    pub(crate) fn set_hw_flags(&self, flags: u32) {
        // CAST: The flags are a bit set; reinterpreting the bits as signed keeps them.
        let flags = flags as c_int;
        // SAFETY: By the type invariant the event is valid; `hw.flags` is only accessed with single
        // volatile loads and stores.
        unsafe { addr_of_mut!((*self.hw()).flags).write_volatile(flags) };
    }

    /// A 64-bit word of driver data kept with the event (`hw.last_tag`, which only x86 uses).
    ///
    /// It is set once, at event_init, and may then be read from the event_init of another event
    /// of its group.
    pub(crate) fn hw_driver_word(&self) -> u64 {
        // SAFETY: By the type invariant the event is valid; the word is written only at
        // event_init, before the event is visible to others.
        unsafe { (*self.hw()).last_tag }
    }

    /// Sets the word [`PerfEvent::hw_driver_word`] returns; only at event_init.
    pub(crate) fn set_hw_driver_word(&self, word: u64) {
        // SAFETY: By the type invariant the event is valid; in event_init nothing else sees it.
        unsafe { (*self.hw()).last_tag = word };
    }

    /// Calls `f` with each event of the group this event joins that belongs to the same PMU, other
    /// than this event: the group leader and its siblings. Only for `event_init`: perf core holds
    /// the group's context mutex while it initialises a sibling, which keeps the sibling list as
    /// it is, and this event is not on the list yet.
    pub(crate) fn for_each_group_member(&self, mut f: impl FnMut(&PerfEvent)) {
        let event = self.as_raw();
        // SAFETY: By the type invariant the event is valid; perf core sets `group_leader` and
        // `pmu` before it calls event_init.
        let (leader, pmu) = unsafe { ((*event).group_leader, (*event).pmu) };
        if leader.is_null() || leader == event {
            return;
        }
        // SAFETY: The leader outlives the event's event_init: the new event holds a reference on
        // the leader's file, and the context mutex keeps the group as it is.
        let member = |ptr: *mut bindings::perf_event| unsafe { (*ptr).pmu } == pmu;
        if member(leader) {
            // SAFETY: `leader` is a valid event (see above); the reference does not outlive `f`.
            f(unsafe { PerfEvent::from_raw(leader) });
        }
        // SAFETY: `leader` is valid; its sibling list is stable under the context mutex.
        let head = unsafe { addr_of_mut!((*leader).sibling_list) };
        // SAFETY: `head` is a valid, initialised list head.
        let mut pos = unsafe { (*head).next };
        while !pos.is_null() && pos != head {
            // SAFETY: Every entry of the list is the `sibling_list` member of a sibling event.
            let sibling = unsafe { kernel::container_of!(pos, bindings::perf_event, sibling_list) }
                .cast_mut();
            if member(sibling) {
                // SAFETY: `sibling` is a valid event of the group; the reference does not outlive
                // `f`.
                f(unsafe { PerfEvent::from_raw(sibling) });
            }
            // SAFETY: `pos` is a valid list entry.
            pos = unsafe { (*pos).next };
        }
    }

    /// The hardware state (`hw.state`, `PERF_HES_*` bits).
    pub(crate) fn hw_state_bits(&self) -> u32 {
        // SAFETY: By the type invariant the event is valid and the callback owns `hw`.
        let state = unsafe { (*self.as_raw()).hw.state };
        // CAST: `hw.state` holds `PERF_HES_*` bits.
        state as u32
    }

    /// Sets the hardware state (`hw.state`).
    pub(crate) fn set_hw_state_bits(&self, state: u32) {
        // CAST: `PERF_HES_*` bits fit in the `int` field.
        let state = state as c_int;
        // SAFETY: By the type invariant the event is valid and the callback owns `hw`.
        unsafe { (*self.as_raw()).hw.state = state };
    }

    /// The counter value the event's count was last brought up to date with (`hw.prev_count`).
    pub(crate) fn prev_count(&self) -> u64 {
        // SAFETY: By the type invariant the event is valid.
        unsafe { bindings::rpmu_event_prev_count_read(self.as_raw()) }
    }

    /// Sets `hw.prev_count`.
    pub(crate) fn set_prev_count(&self, value: u64) {
        // SAFETY: By the type invariant the event is valid.
        unsafe { bindings::rpmu_event_prev_count_set(self.as_raw(), value) };
    }

    /// Adds `delta` to the event's count.
    pub(crate) fn add_count(&self, delta: u64) {
        // SAFETY: By the type invariant the event is valid.
        unsafe { bindings::rpmu_event_count_add(self.as_raw(), delta) };
    }

    /// What is left of the sampling period (`hw.period_left`).
    pub(crate) fn period_left(&self) -> i64 {
        // SAFETY: By the type invariant the event is valid.
        unsafe { bindings::rpmu_event_period_left_read(self.as_raw()) }
    }

    /// Sets `hw.period_left`.
    pub(crate) fn set_period_left(&self, value: i64) {
        // SAFETY: By the type invariant the event is valid.
        unsafe { bindings::rpmu_event_period_left_set(self.as_raw(), value) };
    }

    /// The sampling period (`hw.sample_period`).
    pub(crate) fn sample_period(&self) -> u64 {
        // SAFETY: By the type invariant the event is valid and the callback owns `hw`.
        unsafe { (*self.as_raw()).hw.sample_period }
    }

    /// Sets the sampling period (`hw.sample_period`).
    pub(crate) fn set_sample_period(&self, period: u64) {
        // SAFETY: By the type invariant the event is valid and the callback owns `hw`.
        unsafe { (*self.as_raw()).hw.sample_period = period };
    }

    /// The period of the last sample (`hw.last_period`).
    pub(crate) fn last_period(&self) -> u64 {
        // SAFETY: By the type invariant the event is valid and the callback owns `hw`; the
        // counting member of the union is the one hardware PMU drivers use.
        unsafe {
            (*self.as_raw())
                .hw
                .__bindgen_anon_2
                .__bindgen_anon_1
                .last_period
        }
    }

    /// Sets the period of the last sample (`hw.last_period`).
    pub(crate) fn set_last_period(&self, period: u64) {
        // SAFETY: By the type invariant the event is valid and the callback owns `hw`; the
        // counting member of the union is the one hardware PMU drivers use.
        unsafe {
            (*self.as_raw())
                .hw
                .__bindgen_anon_2
                .__bindgen_anon_1
                .last_period = period
        };
    }

    /// Publishes the event's state to its user-space mapping (`perf_event_update_userpage()`).
    pub(crate) fn update_userpage(&self) {
        // SAFETY: By the type invariant the event is valid.
        unsafe { bindings::perf_event_update_userpage(self.as_raw()) };
    }
}

/// The address space an event is mapped into (`struct mm_struct`), handed to the mmap callbacks.
///
/// # Invariants
///
/// The wrapped `struct mm_struct` is valid while the reference exists, which is only for the
/// duration of an `event_mapped` or `event_unmapped` callback.
#[repr(transparent)]
pub(crate) struct Mm(Opaque<bindings::mm_struct>);

impl Mm {
    /// # Safety
    ///
    /// `ptr` must be the `mm` argument of a running `event_mapped` or `event_unmapped` callback, and
    /// the returned reference must not outlive it.
    unsafe fn from_raw<'a>(ptr: *mut bindings::mm_struct) -> &'a Self {
        // CAST: `Self` is `repr(transparent)` over `Opaque<mm_struct>`, itself transparent over
        // `mm_struct`.
        // SAFETY: Guaranteed by the caller.
        // INVARIANT: The caller guarantees that the reference does not outlive the callback.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Runs `f` on every CPU the address space has run on (`mm_cpumask()`), with interrupts
    /// disabled, and waits for all of them.
    pub(crate) fn on_each_cpu<F: Fn() + Sync>(&self, f: &F) {
        let info: *const F = f;
        // SAFETY: By the type invariant the address space is valid. `info` points to `f`, which
        // outlives the call since it waits for every CPU; `F: Sync` lets the CPUs share it.
        unsafe {
            bindings::rpmu_on_each_cpu_of_mm(
                self.0.get(),
                Some(percpu::call_fn::<F>),
                info.cast_mut().cast::<c_void>(),
            )
        };
    }
}

/// A PMU driver.
///
/// perf core calls these methods through the `struct pmu` callbacks of a [`Registration`]. All but
/// `event_init` run on the CPU the event counts on, with interrupts disabled, and get that CPU's
/// [`Driver::CpuData`].
#[vtable]
pub(crate) trait Driver: Sized + Send + Sync + 'static {
    /// The PMU name, as it appears under `/sys/bus/event_source/devices/`.
    const NAME: &'static CStr;

    /// The PMU type: a `PERF_TYPE_*` value to claim a fixed type, or `-1` for a dynamic one.
    const TYPE: i32;

    /// Per-CPU state of the PMU.
    type CpuData: Send;

    /// Checks an event and prepares it for counting (`pmu::event_init`).
    ///
    /// Returns `ENOENT` for an event this PMU does not handle, so perf core tries another PMU.
    fn event_init(&self, event: &PerfEvent) -> Result;

    /// Puts an event on a counter of this CPU (`pmu::add`).
    fn add(&self, cpu: &mut Self::CpuData, event: &PerfEvent, flags: EventFlags) -> Result;

    /// Takes an event off its counter (`pmu::del`).
    fn del(&self, cpu: &mut Self::CpuData, event: &PerfEvent, flags: EventFlags);

    /// Starts counting (`pmu::start`).
    fn start(&self, cpu: &mut Self::CpuData, event: &PerfEvent, flags: EventFlags);

    /// Stops counting (`pmu::stop`).
    fn stop(&self, cpu: &mut Self::CpuData, event: &PerfEvent, flags: EventFlags);

    /// Brings the event's count up to date (`pmu::read`).
    fn read(&self, cpu: &mut Self::CpuData, event: &PerfEvent);

    /// Opens a window in which perf core adds, removes, starts and stops events of this CPU
    /// (`pmu::pmu_disable`); perf core does not nest the calls.
    fn pmu_disable(&self, _cpu: &mut Self::CpuData) {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Closes the window opened by [`Driver::pmu_disable`] (`pmu::pmu_enable`).
    fn pmu_enable(&self, _cpu: &mut Self::CpuData) {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The mmap page's `index` of a running event: one more than the index of the counter user
    /// space may read directly, or 0 when it must use read(2) (`pmu::event_idx`). It may run on
    /// any CPU.
    fn event_idx(&self, _event: &PerfEvent) -> u32 {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The event was mmap'd into `mm` (`pmu::event_mapped`): user space may now read its counter
    /// directly. Runs in the mapping task, on any CPU.
    fn event_mapped(&self, _event: &PerfEvent, _mm: &Mm) {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The last mapping of the event in `mm` went away (`pmu::event_unmapped`).
    fn event_unmapped(&self, _event: &PerfEvent, _mm: &Mm) {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The width of counter `idx` in bits, minus one (`riscv_pmu::ctr_get_width`), or `None` for
    /// a counter that does not exist. perf publishes it in the mmap page of an event user space
    /// reads directly. It is asked once, at registration.
    fn ctr_width(&self, idx: usize) -> Option<u8>;
}

/// The number of counters a RISC-V PMU may have (`RISCV_MAX_COUNTERS`).
const MAX_COUNTERS: usize = 64;

#[allow(
    clippy::declare_interior_mutable_const,
    reason = "the constant only initialises the elements of CTR_WIDTHS"
)]
const NO_WIDTH: AtomicU8 = AtomicU8::new(0);

/// The counter widths `riscv_pmu::ctr_get_width` returns. Its C signature carries only a counter
/// index, no PMU, so the widths live here; perf core has a single `cpu` PMU, so one table serves.
static CTR_WIDTHS: [AtomicU8; MAX_COUNTERS] = [NO_WIDTH; MAX_COUNTERS];

/// `riscv_pmu::ctr_get_width`: the width of counter `idx` minus one, 0 for an unknown counter.
extern "C" fn ctr_get_width_callback(idx: c_int) -> c_int {
    usize::try_from(idx)
        .ok()
        .and_then(|idx| CTR_WIDTHS.get(idx))
        .map_or(0, |width| c_int::from(width.load(Ordering::Relaxed)))
}

/// A registered PMU: the `struct pmu` perf core knows, the driver, and its per-CPU data.
///
/// # Invariants
///
/// `rvpmu.pmu` is registered with perf core from the end of initialisation until drop, and its
/// callbacks are those of [`Adapter<T>`].
#[pin_data(PinnedDrop)]
pub(crate) struct Registration<T: Driver> {
    data: T,
    cpu_data: Arc<PerCpu<T::CpuData>>,
    events: Arc<PerCpu<EventSlots>>,
    #[pin]
    rvpmu: Opaque<bindings::riscv_pmu>,
}

// SAFETY: The registration is only reached through shared references; `T` is `Sync`, per-CPU data
// is only used on its own CPU, and the `struct pmu` is only changed by perf core under its locks.
unsafe impl<T: Driver> Sync for Registration<T> {}

// SAFETY: Nothing in the registration is tied to the thread that created it.
unsafe impl<T: Driver> Send for Registration<T> {}

impl<T: Driver> Registration<T> {
    /// Registers `data` as a PMU with perf core, with `cpu_data` as its per-CPU state.
    ///
    /// The PMU holds a reference on `module` while events exist, so the module cannot be unloaded
    /// under them. `cpu_data` may be shared with code that runs on each CPU with interrupts
    /// disabled, such as CPU hotplug callbacks: perf core calls the PMU callbacks that get the
    /// per-CPU state with interrupts disabled too, so the two never overlap on a CPU.
    ///
    /// The callbacks keep `events` up to date: each CPU's table holds the events on its counters.
    pub(crate) fn new<const N: usize>(
        module: &'static ThisModule,
        data: T,
        cpu_data: Arc<PerCpu<T::CpuData>>,
        events: Arc<PerCpu<EventSlots>>,
        capabilities: Capabilities,
        attr_groups: &'static AttributeGroups<N>,
    ) -> impl PinInit<Self, Error> {
        for (idx, width) in CTR_WIDTHS.iter().enumerate() {
            width.store(data.ctr_width(idx).unwrap_or(0), Ordering::Relaxed);
        }
        try_pin_init!(Self {
            data,
            cpu_data,
            events,
            rvpmu <- Self::register(module, capabilities, attr_groups),
        }? Error)
    }

    fn register<const N: usize>(
        module: &'static ThisModule,
        capabilities: Capabilities,
        attr_groups: &'static AttributeGroups<N>,
    ) -> impl PinInit<Opaque<bindings::riscv_pmu>, Error> {
        let init = move |slot: *mut Opaque<bindings::riscv_pmu>| {
            let rvpmu = Opaque::raw_get(slot);
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
                pmu_enable: T::HAS_PMU_ENABLE.then_some(Adapter::<T>::pmu_enable_callback),
                pmu_disable: T::HAS_PMU_DISABLE.then_some(Adapter::<T>::pmu_disable_callback),
                event_idx: T::HAS_EVENT_IDX.then_some(Adapter::<T>::event_idx_callback),
                event_mapped: T::HAS_EVENT_MAPPED.then_some(Adapter::<T>::event_mapped_callback),
                event_unmapped: T::HAS_EVENT_UNMAPPED
                    .then_some(Adapter::<T>::event_unmapped_callback),
                ..Default::default()
            };
            // Only `pmu` and `ctr_get_width` of the `struct riscv_pmu` are used by the kernel
            // outside the C drivers; the rest stays zero.
            let value = bindings::riscv_pmu {
                pmu,
                ctr_get_width: Some(ctr_get_width_callback),
                ..Default::default()
            };
            // SAFETY: `slot` is valid for writes and pinned: the registration does not move.
            unsafe { rvpmu.write(value) };
            // SAFETY: `rvpmu` is valid: it was just written.
            let pmu = unsafe { addr_of_mut!((*rvpmu).pmu) };
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
        // SAFETY: By the type invariant the PMU is registered. perf_pmu_unregister() waits until
        // no callback runs any more, so the other fields outlive every use by perf core.
        unsafe { bindings::perf_pmu_unregister(addr_of_mut!((*self.rvpmu.get()).pmu)) };
    }
}

/// The `struct pmu` callbacks of a [`Registration<T>`].
struct Adapter<T: Driver>(PhantomData<T>);

impl<T: Driver> Adapter<T> {
    /// Returns the registration an event belongs to.
    ///
    /// # Safety
    ///
    /// `event` must be the argument of a running callback of a [`Registration<T>`].
    unsafe fn registration<'a>(event: *mut bindings::perf_event) -> &'a Registration<T> {
        // SAFETY: The caller guarantees that `event` is valid; perf core set `event->pmu` to the
        // PMU whose callback runs.
        let pmu = unsafe { (*event).pmu };
        // SAFETY: `pmu` is the PMU of a running callback of a `Registration<T>`.
        unsafe { Self::registration_of_pmu(pmu) }
    }

    /// Returns the registration a `struct pmu` belongs to.
    ///
    /// # Safety
    ///
    /// `pmu` must be the argument (or the event's PMU) of a running callback of a
    /// [`Registration<T>`].
    unsafe fn registration_of_pmu<'a>(pmu: *mut bindings::pmu) -> &'a Registration<T> {
        // SAFETY: `pmu` is the `pmu` field of the `riscv_pmu` of a `Registration<T>`, since only
        // those have these callbacks.
        let rvpmu = unsafe { kernel::container_of!(pmu, bindings::riscv_pmu, pmu) };
        // CAST: `Opaque<riscv_pmu>` is `repr(transparent)` over `riscv_pmu`.
        let rvpmu = rvpmu.cast_mut().cast::<Opaque<bindings::riscv_pmu>>();
        // SAFETY: `rvpmu` is the `rvpmu` field of a `Registration<T>`, as above.
        let registration = unsafe { kernel::container_of!(rvpmu, Registration<T>, rvpmu) };
        // SAFETY: The registration outlives its callbacks (see `PinnedDrop`).
        unsafe { &*registration }
    }

    /// Runs `f` with the driver, this CPU's data and the event.
    ///
    /// # Safety
    ///
    /// `event` must be the argument of a running `add`, `del`, `start`, `stop` or `read` callback
    /// of a [`Registration<T>`].
    unsafe fn with_cpu<R>(
        event: *mut bindings::perf_event,
        f: impl FnOnce(&T, &mut T::CpuData, &PerfEvent) -> R,
    ) -> R {
        // SAFETY: Guaranteed by the caller.
        let registration = unsafe { Self::registration(event) };
        // SAFETY: perf core calls these callbacks on the event's CPU with interrupts disabled and
        // never runs two of them at once on a CPU, so nothing else uses this CPU's data now.
        let cpu = unsafe { registration.cpu_data.this_cpu_mut() };
        // SAFETY: Guaranteed by the caller; the reference does not leave this function.
        let event = unsafe { PerfEvent::from_raw(event) };
        f(&registration.data, cpu, event)
    }

    /// [`Self::with_cpu`], with this CPU's table of the events on its counters too (for `add` and
    /// `del`, which keep it).
    ///
    /// # Safety
    ///
    /// `event` must be the argument of a running `add` or `del` callback of a [`Registration<T>`].
    unsafe fn with_cpu_slots<R>(
        event: *mut bindings::perf_event,
        f: impl FnOnce(&T, &mut T::CpuData, &mut EventSlots, &PerfEvent) -> R,
    ) -> R {
        // SAFETY: Guaranteed by the caller.
        let registration = unsafe { Self::registration(event) };
        // SAFETY: As in `with_cpu`: on the event's CPU, interrupts disabled, no other callback of
        // this PMU running there.
        let (cpu, slots) = unsafe {
            (
                registration.cpu_data.this_cpu_mut(),
                registration.events.this_cpu_mut(),
            )
        };
        // SAFETY: Guaranteed by the caller; the reference does not leave this function.
        let ev = unsafe { PerfEvent::from_raw(event) };
        f(&registration.data, cpu, slots, ev)
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `event_init` callback.
    unsafe extern "C" fn event_init_callback(event: *mut bindings::perf_event) -> c_int {
        from_result(|| {
            // SAFETY: perf core calls `event_init` of this PMU only.
            let registration = unsafe { Self::registration(event) };
            // SAFETY: The event is being initialised by this callback.
            let event = unsafe { PerfEvent::from_raw(event) };
            registration.data.event_init(event)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `add` callback.
    unsafe extern "C" fn add_callback(event: *mut bindings::perf_event, flags: c_int) -> c_int {
        from_result(|| {
            // SAFETY: Guaranteed by the caller.
            unsafe {
                Self::with_cpu_slots(event, |pmu, cpu, slots, ev| {
                    pmu.add(cpu, ev, EventFlags::from_raw(flags))?;
                    slots.set(ev.hw_idx(), event);
                    Ok::<(), Error>(())
                })
            }?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `del` callback.
    unsafe extern "C" fn del_callback(event: *mut bindings::perf_event, flags: c_int) {
        // SAFETY: Guaranteed by the caller.
        unsafe {
            Self::with_cpu_slots(event, |pmu, cpu, slots, ev| {
                slots.clear(ev.hw_idx(), event);
                pmu.del(cpu, ev, EventFlags::from_raw(flags))
            })
        }
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `start` callback.
    unsafe extern "C" fn start_callback(event: *mut bindings::perf_event, flags: c_int) {
        // SAFETY: Guaranteed by the caller.
        unsafe {
            Self::with_cpu(event, |pmu, cpu, event| {
                pmu.start(cpu, event, EventFlags::from_raw(flags))
            })
        }
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `stop` callback.
    unsafe extern "C" fn stop_callback(event: *mut bindings::perf_event, flags: c_int) {
        // SAFETY: Guaranteed by the caller.
        unsafe {
            Self::with_cpu(event, |pmu, cpu, event| {
                pmu.stop(cpu, event, EventFlags::from_raw(flags))
            })
        }
    }

    /// Runs `f` with the driver and this CPU's data.
    ///
    /// # Safety
    ///
    /// `pmu` must be the argument of a running `pmu_enable` or `pmu_disable` callback of a
    /// [`Registration<T>`].
    unsafe fn with_pmu_cpu(pmu: *mut bindings::pmu, f: impl FnOnce(&T, &mut T::CpuData)) {
        // SAFETY: Guaranteed by the caller.
        let registration = unsafe { Self::registration_of_pmu(pmu) };
        // SAFETY: perf core calls these callbacks with interrupts disabled, on the CPU whose
        // events they bracket, and never inside another callback of this PMU on that CPU.
        let cpu = unsafe { registration.cpu_data.this_cpu_mut() };
        f(&registration.data, cpu)
    }

    /// # Safety
    ///
    /// `pmu` must be passed by perf core to the `pmu_enable` callback.
    unsafe extern "C" fn pmu_enable_callback(pmu: *mut bindings::pmu) {
        // SAFETY: Guaranteed by the caller.
        unsafe { Self::with_pmu_cpu(pmu, |data, cpu| data.pmu_enable(cpu)) }
    }

    /// # Safety
    ///
    /// `pmu` must be passed by perf core to the `pmu_disable` callback.
    unsafe extern "C" fn pmu_disable_callback(pmu: *mut bindings::pmu) {
        // SAFETY: Guaranteed by the caller.
        unsafe { Self::with_pmu_cpu(pmu, |data, cpu| data.pmu_disable(cpu)) }
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `event_idx` callback.
    unsafe extern "C" fn event_idx_callback(event: *mut bindings::perf_event) -> c_int {
        // SAFETY: Guaranteed by the caller.
        let registration = unsafe { Self::registration(event) };
        // SAFETY: Guaranteed by the caller; the reference does not leave this function.
        let event = unsafe { PerfEvent::from_raw(event) };
        c_int::try_from(registration.data.event_idx(event)).unwrap_or(0)
    }

    /// # Safety
    ///
    /// `event` and `mm` must be passed by perf core to the `event_mapped` callback.
    unsafe extern "C" fn event_mapped_callback(
        event: *mut bindings::perf_event,
        mm: *mut bindings::mm_struct,
    ) {
        // SAFETY: Guaranteed by the caller.
        let registration = unsafe { Self::registration(event) };
        // SAFETY: Guaranteed by the caller; the references do not leave this function.
        let (event, mm) = unsafe { (PerfEvent::from_raw(event), Mm::from_raw(mm)) };
        registration.data.event_mapped(event, mm);
    }

    /// # Safety
    ///
    /// `event` and `mm` must be passed by perf core to the `event_unmapped` callback.
    unsafe extern "C" fn event_unmapped_callback(
        event: *mut bindings::perf_event,
        mm: *mut bindings::mm_struct,
    ) {
        // SAFETY: Guaranteed by the caller.
        let registration = unsafe { Self::registration(event) };
        // SAFETY: Guaranteed by the caller; the references do not leave this function.
        let (event, mm) = unsafe { (PerfEvent::from_raw(event), Mm::from_raw(mm)) };
        registration.data.event_unmapped(event, mm);
    }

    /// # Safety
    ///
    /// `event` must be passed by perf core to the `read` callback.
    unsafe extern "C" fn read_callback(event: *mut bindings::perf_event) {
        // SAFETY: Guaranteed by the caller.
        unsafe { Self::with_cpu(event, |pmu, cpu, event| pmu.read(cpu, event)) }
    }
}

/// The events on the counters of one CPU (`cpu_hw_events::events`), indexed by counter: the PMU
/// callbacks record an event when `add` gives it a counter and forget it in `del`.
///
/// # Invariants
///
/// A non-null entry is an event perf core has added to this CPU's PMU and not deleted yet.
pub(crate) struct EventSlots([*mut bindings::perf_event; MAX_COUNTERS]);

// SAFETY: The table only holds pointers; they are used on the CPU the table belongs to.
unsafe impl Send for EventSlots {}

impl EventSlots {
    /// A table without events.
    pub(crate) const fn new() -> Self {
        // INVARIANT: No entry is set.
        Self([core::ptr::null_mut(); MAX_COUNTERS])
    }

    /// Records `event` on counter `idx`; `add` calls it once the event has the counter.
    fn set(&mut self, idx: Option<usize>, event: *mut bindings::perf_event) {
        // INVARIANT: `add` succeeded, so perf core has added the event to this CPU's PMU.
        if let Some(slot) = idx.and_then(|idx| self.0.get_mut(idx)) {
            *slot = event;
        }
    }

    /// Forgets `event` on counter `idx`; `del` calls it before the event leaves the counter.
    fn clear(&mut self, idx: Option<usize>, event: *mut bindings::perf_event) {
        if let Some(slot) = idx.and_then(|idx| self.0.get_mut(idx)) {
            if *slot == event {
                *slot = core::ptr::null_mut();
            }
        }
    }
}

/// The events on this CPU's counters, for code that runs on the CPU with interrupts disabled
/// outside perf's callbacks (the overflow interrupt, CPU PM notifiers): no `add` or `del` can run
/// meanwhile, so the events stay on their counters while this view exists.
pub(crate) struct ActiveEvents<'a> {
    slots: &'a EventSlots,
}

impl<'a> ActiveEvents<'a> {
    /// The event on counter `idx`, if any.
    pub(crate) fn get(&self, idx: usize) -> Option<&'a PerfEvent> {
        let ptr = *self.slots.0.get(idx)?;
        if ptr.is_null() {
            return None;
        }
        // SAFETY: By the type invariant of `EventSlots` the event is added to this CPU's PMU; it
        // cannot be deleted while this view exists (see `ActiveEvents`), and the reference does not
        // outlive the view.
        Some(unsafe { PerfEvent::from_raw(ptr) })
    }

    /// Calls `f` with each counter that holds an event, and the event, in counter order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(usize, &'a PerfEvent)) {
        for idx in 0..MAX_COUNTERS {
            if let Some(event) = self.get(idx) {
                f(idx, event);
            }
        }
    }
}

/// What the counter overflow interrupt handler gets: the events on this CPU's counters, and the
/// means to report a sample.
pub(crate) struct Overflow<'a> {
    /// The events on this CPU's counters.
    pub(crate) events: ActiveEvents<'a>,
}

impl Overflow<'_> {
    /// Reports a counter overflow of a sampling event to perf core (`perf_event_overflow()`), with
    /// the period the sample stands for. Returns `true` when perf core throttles the event: the
    /// driver should stop it, perf core starts it again later.
    pub(crate) fn report(&self, event: &PerfEvent, last_period: u64) -> bool {
        // SAFETY: By the type invariant of `PerfEvent` the event is valid; this runs in the overflow
        // interrupt (an `Overflow` exists only there), whose registers `get_irq_regs()` returns.
        unsafe { bindings::rpmu_event_overflow(event.as_raw(), last_period) != 0 }
    }
}

/// The counter overflow interrupt handler of a PMU.
pub(crate) trait OverflowHandler: Send + Sync + 'static {
    /// The per-CPU state of the PMU.
    type CpuData: Send;

    /// Runs on the interrupted CPU, in hard interrupt context, with that CPU's state and events.
    /// Returns whether the interrupt was the PMU's (`IRQ_HANDLED`).
    fn overflow(&self, cpu: &mut Self::CpuData, ovf: &Overflow<'_>) -> bool;
}

/// The number of a requested per-CPU interrupt, for enabling it on each CPU.
#[derive(Clone, Copy)]
pub(crate) struct PercpuIrq {
    irq: u32,
    hwirq: u32,
}

impl PercpuIrq {
    /// Enables the interrupt on this CPU, its stale pending state cleared first.
    pub(crate) fn enable_here(self) {
        // SAFETY: FFI call; `irq` is a per-CPU interrupt requested by an `OverflowIrq`, and a
        // `PercpuIrq` is only used while it lives (the hotplug callbacks that use it go first).
        unsafe { bindings::rpmu_pmu_irq_enable(self.irq, self.hwirq) };
    }

    /// Disables the interrupt on this CPU.
    pub(crate) fn disable_here(self) {
        // SAFETY: As in `enable_here`.
        unsafe { bindings::rpmu_pmu_irq_disable(self.irq) };
    }
}

/// Where the overflow interrupt finds its handler and state.
struct OverflowIrqData<H: OverflowHandler> {
    handler: H,
    cpu_data: Arc<PerCpu<H::CpuData>>,
    events: Arc<PerCpu<EventSlots>>,
}

/// The RISC-V counter overflow interrupt (`RV_IRQ_PMU`, Sscofpmf's local counter overflow
/// interrupt), requested as a per-CPU interrupt; freed on drop.
///
/// # Invariants
///
/// `irq` is requested with `cookie`, whose per-CPU copies point to `*_data`, until drop.
pub(crate) struct OverflowIrq<H: OverflowHandler> {
    /// Only the interrupt handler uses it, through the pointer the interrupt was requested with.
    _data: KBox<OverflowIrqData<H>>,
    irq: PercpuIrq,
    cookie: *mut c_void,
}

// SAFETY: The cookie is only passed back to the kernel on drop; the data is `Send`.
unsafe impl<H: OverflowHandler> Send for OverflowIrq<H> {}

// SAFETY: Shared references give access to nothing but the interrupt number.
unsafe impl<H: OverflowHandler> Sync for OverflowIrq<H> {}

impl<H: OverflowHandler> OverflowIrq<H> {
    /// Requests the overflow interrupt, disabled on every CPU until [`PercpuIrq::enable_here`].
    /// `cpu_data` and `events` are the state of the PMU whose counters it serves.
    pub(crate) fn request(
        name: &'static CStr,
        handler: H,
        cpu_data: Arc<PerCpu<H::CpuData>>,
        events: Arc<PerCpu<EventSlots>>,
    ) -> Result<Self> {
        let data = KBox::new(
            OverflowIrqData {
                handler,
                cpu_data,
                events,
            },
            GFP_KERNEL,
        )?;
        let ptr: *const OverflowIrqData<H> = &*data;
        let hwirq = bindings::IRQ_PMU_OVF;
        let mut cookie = core::ptr::null_mut();
        // SAFETY: The name is a static string; `ptr` points to the boxed data, which stays at its
        // address and outlives the interrupt (it is freed on drop, after the interrupt).
        let irq = unsafe {
            bindings::rpmu_pmu_irq_request(
                hwirq,
                name.as_char_ptr(),
                Some(Self::handler_callback),
                ptr.cast_mut().cast::<c_void>(),
                &mut cookie,
            )
        };
        to_result(irq)?;
        // INVARIANT: The interrupt was requested with `cookie` pointing to the data.
        Ok(Self {
            _data: data,
            // CAST: A non-negative return value is the interrupt number.
            irq: PercpuIrq {
                irq: irq as u32,
                hwirq,
            },
            cookie,
        })
    }

    /// The interrupt, for enabling and disabling it on each CPU.
    pub(crate) fn irq(&self) -> PercpuIrq {
        self.irq
    }

    /// # Safety
    ///
    /// `data` must be the data pointer an `OverflowIrq<H>` requested the interrupt with, and the
    /// call must be the interrupt's handler, on the interrupted CPU.
    unsafe extern "C" fn handler_callback(data: *mut c_void) -> bool {
        // SAFETY: Guaranteed by the caller: the data lives until the interrupt is freed.
        let data = unsafe { &*data.cast_const().cast::<OverflowIrqData<H>>() };
        // SAFETY: A hard interrupt handler runs on this CPU with interrupts disabled, and every other
        // user of this CPU's state (perf callbacks, hotplug and CPU PM callbacks) runs with
        // interrupts disabled too, so none runs now.
        let cpu = unsafe { data.cpu_data.this_cpu_mut() };
        // SAFETY: As above.
        let slots = unsafe { data.events.this_cpu_mut() };
        let ovf = Overflow {
            events: ActiveEvents { slots },
        };
        data.handler.overflow(cpu, &ovf)
    }
}

impl<H: OverflowHandler> Drop for OverflowIrq<H> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the interrupt is requested with this cookie. Freeing it waits
        // for a running handler, so `data` outlives every use.
        unsafe { bindings::rpmu_pmu_irq_free(self.irq.irq, self.cookie) };
    }
}

/// What a PMU does when a CPU enters and leaves a low-power state (CPU PM notifiers).
pub(crate) trait CpuPmNotify: Send + Sync + 'static {
    /// The per-CPU state of the PMU.
    type CpuData: Send;

    /// The CPU is about to enter a low-power state in which its counters may lose their state
    /// (`CPU_PM_ENTER`). Runs on that CPU with interrupts disabled.
    fn enter(&self, cpu: &mut Self::CpuData, events: &ActiveEvents<'_>);

    /// The CPU is back (`CPU_PM_EXIT`), or did not go (`CPU_PM_ENTER_FAILED`).
    fn exit(&self, cpu: &mut Self::CpuData, events: &ActiveEvents<'_>);
}

/// A registered CPU PM notifier of a PMU: its calls reach `T` with the state of the CPU that
/// enters or leaves a low-power state; unregistered on drop.
///
/// # Invariants
///
/// `nb` is registered with `cpu_pm_register_notifier()` from the end of initialisation until
/// drop, with [`CpuPmRegistration::notifier_callback`] as its function.
#[pin_data(PinnedDrop)]
pub(crate) struct CpuPmRegistration<T: CpuPmNotify> {
    notify: T,
    cpu_data: Arc<PerCpu<T::CpuData>>,
    events: Arc<PerCpu<EventSlots>>,
    #[pin]
    nb: Opaque<bindings::notifier_block>,
}

// SAFETY: Only shared references reach the registration; `T` is `Sync` and per-CPU data is only
// used on its own CPU.
unsafe impl<T: CpuPmNotify> Sync for CpuPmRegistration<T> {}

// SAFETY: Nothing in the registration is tied to the thread that created it.
unsafe impl<T: CpuPmNotify> Send for CpuPmRegistration<T> {}

impl<T: CpuPmNotify> CpuPmRegistration<T> {
    /// Registers `notify` for the CPU PM events of every CPU, with the PMU state of `cpu_data`
    /// and `events`.
    pub(crate) fn new(
        notify: T,
        cpu_data: Arc<PerCpu<T::CpuData>>,
        events: Arc<PerCpu<EventSlots>>,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            notify,
            cpu_data,
            events,
            nb <- Self::register(),
        }? Error)
    }

    fn register() -> impl PinInit<Opaque<bindings::notifier_block>, Error> {
        let init = move |slot: *mut Opaque<bindings::notifier_block>| {
            let nb = Opaque::raw_get(slot);
            let value = bindings::notifier_block {
                notifier_call: Some(Self::notifier_callback),
                ..Default::default()
            };
            // SAFETY: `slot` is valid for writes and pinned: the registration does not move.
            unsafe { nb.write(value) };
            // SAFETY: `nb` is initialised and stays at this address until `drop` unregisters it.
            // The other fields are initialised before this one, so the callback finds them.
            to_result(unsafe { bindings::rpmu_cpu_pm_register_notifier(nb) })
        };
        // SAFETY: On success the closure has initialised the slot; on failure nothing was
        // registered and the slot holds nothing that needs dropping.
        unsafe { pin_init_from_closure(init) }
    }

    /// # Safety
    ///
    /// `nb` must be the notifier block of a `CpuPmRegistration<T>`, and the call a CPU PM
    /// notification, which runs on the CPU concerned with interrupts disabled.
    unsafe extern "C" fn notifier_callback(
        nb: *mut bindings::notifier_block,
        action: c_ulong,
        _data: *mut c_void,
    ) -> c_int {
        // CAST: `Opaque<notifier_block>` is `repr(transparent)` over `notifier_block`.
        let nb = nb.cast::<Opaque<bindings::notifier_block>>();
        // SAFETY: Guaranteed by the caller: `nb` is the `nb` field of a registration.
        let registration = unsafe { kernel::container_of!(nb, Self, nb) };
        // SAFETY: The registration outlives its notifications (see `PinnedDrop`).
        let registration = unsafe { &*registration };
        // SAFETY: CPU PM notifications run on their CPU with interrupts disabled, as every other
        // user of this CPU's state does, so none runs now.
        let cpu = unsafe { registration.cpu_data.this_cpu_mut() };
        // SAFETY: As above.
        let slots = unsafe { registration.events.this_cpu_mut() };
        let events = ActiveEvents { slots };
        match bindings::cpu_pm_event::try_from(action) {
            Ok(bindings::cpu_pm_event_CPU_PM_ENTER) => registration.notify.enter(cpu, &events),
            Ok(bindings::cpu_pm_event_CPU_PM_EXIT | bindings::cpu_pm_event_CPU_PM_ENTER_FAILED) => {
                registration.notify.exit(cpu, &events)
            }
            _ => {}
        }
        // CAST: NOTIFY_OK is 1.
        bindings::NOTIFY_OK as c_int
    }
}

#[pinned_drop]
impl<T: CpuPmNotify> PinnedDrop for CpuPmRegistration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant the notifier is registered. Unregistering waits for running
        // notifications (the chain is RCU-protected), so the fields outlive every use.
        unsafe { bindings::rpmu_cpu_pm_unregister_notifier(self.nb.get()) };
    }
}
