// SPDX-License-Identifier: GPL-2.0

//! The SBI PMU driver: counter discovery at probe, and the perf callbacks of the `cpu` PMU.
//!
//! C version of this driver: [`drivers/perf/riscv_pmu_sbi.c`](srctree/drivers/perf/riscv_pmu_sbi.c)
//! with the core library [`drivers/perf/riscv_pmu.c`](srctree/drivers/perf/riscv_pmu.c). The
//! functions carry the names of their C counterparts.
//!
//! The logic lives in the `sbi_pmu` crate: the event mapping (`sbi_pmu::events`), the counter table
//! (`sbi_pmu::counters`) and the per-CPU core (`sbi_pmu::pmu::CpuHwEvents`), which batches the SBI
//! calls of a context switch. The callbacks here run the core's operations on the event's
//! `hw_perf_event` in place, with the CPU's state ([`CpuState`]) borrowed for the callback.
//!
//! Every event kind the C driver counts is counted: hardware, cache, raw and firmware events, with
//! the C driver's errno for requests it refuses. With Sscofpmf, hardware counters sample through the
//! counter overflow interrupt (`pmu_sbi_ovf_handler()`); throttled events are stopped until perf
//! starts them again. Events are stopped while their CPU is in a low-power state (CPU PM).
//!
//! User space reads counters directly as the `kernel.perf_user_access` sysctl allows (0: never; 1,
//! the default: the counter of an event it has mmap'd, while the event runs; 2, legacy: `cycle`
//! and `instret` always), through the `scounteren` bits of each CPU.

#![deny(unsafe_code)]

use crate::glue::{
    arch::{self, RiscvPmuContainer, TimeCsr},
    compat,
    cpu_pm::CpuPmNotify,
    cpuhp::{CpuStarting, StartingState},
    csr::DelegatedCsrs,
    debugfs::{SeqFile, Show},
    deferred::{Deferred, Job},
    fwmem::{FirmwareMem, SnapshotShmem},
    irq::{Handler, InterruptContext, IrqReturn, PercpuIrq},
    of::OfNode,
    percpu::{self, ConstInit, LocalInterruptDisabled},
    perf::{self, CpuStates, EventInit, EventMut, EventOpFlags, MappedEvent, PerfEvent},
    platform,
    sysctl::IntSysctl,
    sysfs::{
        AttributeGroup, AttributeGroups, Attributes, EventId, EventList, FormatAttr, PmuEventAttr,
    },
};
use crate::pmu_deleg::{self, CpuFirmware, DelegSetup};
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use kernel::{c_str, prelude::*, sync::Arc};
use sbi_pmu::{
    abi::{
        sbi_result, EventIdx, Fid, SbiError, SbiVersion, EXT_PMU, IMPL_ID_KVM, RISCV_MAX_COUNTERS,
    },
    counters::{
        counters_in, group_fits, scounteren_base, user_read_allowed, HesState, HwEvent, HwFlags,
        PmuInfo,
    },
    dt::{DtError, DtErrorKind, DtPmuMaps, DtProperty},
    events::{EventAttr, MapError, StdEvents, UserAccess, PERF_TYPE_RAW},
    firmware::Firmware,
    pmu::{count_call, CpuHwEvents, OverflowEvent, PmuStats},
};

/// The local counter overflow interrupt of Sscofpmf (`RV_IRQ_PMU`, bit 13 of `sip`).
pub(crate) const RV_IRQ_PMU: u32 = 13;

/// The platform devices of the C drivers that register the `cpu` PMU.
const C_DRIVER_DEVICES: [&CStr; 2] = [c_str!("riscv-pmu-sbi"), c_str!("riscv-pmu-legacy")];

/// `kernel.perf_user_access` (the C driver's `sysctl_perf_user_access`): 1 by default.
static PERF_USER_ACCESS: AtomicI32 = AtomicI32::new(1);

/// The `perf_user_access` mode now; new events take it at event_init and keep it.
fn user_access() -> UserAccess {
    UserAccess::from_sysctl(PERF_USER_ACCESS.load(Ordering::Relaxed)).unwrap_or_default()
}

/// The `kernel.perf_user_access` sysctl, 0 to 2.
pub(crate) struct PerfUserAccess;

impl IntSysctl for PerfUserAccess {
    const NAME: &'static CStr = c_str!("perf_user_access");
    const MIN: i32 = 0;
    const MAX: i32 = 2;

    fn value() -> &'static AtomicI32 {
        &PERF_USER_ACCESS
    }

    /// `riscv_pmu_proc_user_access_handler()`: every CPU's `scounteren` is reset to the new mode's
    /// base. Running events keep the mode they were created with; those of mode 1 regain their
    /// counter's bit when they next start.
    fn changed(_old: i32, _new: i32) {
        let base = scounteren_base(user_access());
        percpu::on_each_cpu(&|| arch::scounteren_write(base));
    }
}

static FORMAT_ATTRS: [FormatAttr; 2] = [
    FormatAttr::new(c_str!("event"), c_str!("config:0-47")),
    FormatAttr::new(c_str!("firmware"), c_str!("config:62-63")),
];
static FORMAT_ATTRS_V2: [FormatAttr; 2] = [
    FormatAttr::new(c_str!("event"), c_str!("config:0-55")),
    FormatAttr::new(c_str!("firmware"), c_str!("config:62-63")),
];
static FORMAT_LIST: Attributes<2> = Attributes::new(&FORMAT_ATTRS);
static FORMAT_LIST_V2: Attributes<2> = Attributes::new(&FORMAT_ATTRS_V2);
static FORMAT_GROUP: AttributeGroup = AttributeGroup::new(c_str!("format"), &FORMAT_LIST);
static FORMAT_GROUP_V2: AttributeGroup = AttributeGroup::new(c_str!("format"), &FORMAT_LIST_V2);

/// Makes the `events/` attributes of the standard events from their names, numbered in order.
macro_rules! std_event_attrs {
    ($($name:literal,)*) => {{
        let mut id = 0;
        [$(PmuEventAttr::new(c_str!($name), EventId::new({ id += 1; id - 1 })),)*]
    }};
}

/// The standard events as the PMU's sysfs `events/` directory lists them: the name perf gives each
/// (`perf list`), in the order of [`StdEvents::nth`]. Which are listed, and their `event=` values,
/// are found at probe ([`SbiPmu::publish_events`]).
static STD_EVENT_ATTRS: [PmuEventAttr<StdEventList>; StdEvents::COUNT] = std_event_attrs! {
    "cpu-cycles", "instructions", "cache-references", "cache-misses",
    "branch-instructions", "branch-misses", "bus-cycles", "stalled-cycles-frontend",
    "stalled-cycles-backend", "ref-cycles", "L1-dcache-loads", "L1-dcache-load-misses",
    "L1-dcache-stores", "L1-dcache-store-misses", "L1-dcache-prefetches", "L1-dcache-prefetch-misses",
    "L1-icache-loads", "L1-icache-load-misses", "L1-icache-stores", "L1-icache-store-misses",
    "L1-icache-prefetches", "L1-icache-prefetch-misses", "LLC-loads", "LLC-load-misses",
    "LLC-stores", "LLC-store-misses", "LLC-prefetches", "LLC-prefetch-misses",
    "dTLB-loads", "dTLB-load-misses", "dTLB-stores", "dTLB-store-misses",
    "dTLB-prefetches", "dTLB-prefetch-misses", "iTLB-loads", "iTLB-load-misses",
    "iTLB-stores", "iTLB-store-misses", "iTLB-prefetches", "iTLB-prefetch-misses",
    "branch-loads", "branch-load-misses", "branch-stores", "branch-store-misses",
    "branch-prefetches", "branch-prefetch-misses", "node-loads", "node-load-misses",
    "node-stores", "node-store-misses", "node-prefetches", "node-prefetch-misses",
};
static STD_EVENT_LIST: Attributes<{ StdEvents::COUNT }, EventId<StdEventList>> =
    Attributes::new(&STD_EVENT_ATTRS);
static EVENTS_GROUP: AttributeGroup =
    AttributeGroup::with_events(c_str!("events"), &STD_EVENT_LIST);

/// The standard events `events/` lists: bit `i` for [`StdEvents::nth`]`(i)`.
static EVENTS_LISTED: AtomicU64 = AtomicU64::new(0);
/// The `event=` value of each listed standard event.
static EVENT_CONFIGS: [AtomicU64; StdEvents::COUNT] =
    [const { AtomicU64::new(0) }; StdEvents::COUNT];

/// The standard events of the PMU's `events/` directory.
pub(crate) struct StdEventList;

impl EventList for StdEventList {
    fn listed(id: usize) -> bool {
        id < StdEvents::COUNT && EVENTS_LISTED.load(Ordering::Relaxed) & (1 << id) != 0
    }

    fn config(id: usize) -> u64 {
        EVENT_CONFIGS
            .get(id)
            .map_or(0, |config| config.load(Ordering::Relaxed))
    }
}

/// The sysfs groups of the PMU (`riscv_pmu_attr_groups`): the same `format/` as the C driver, and
/// `events/` when the device tree maps name events the hardware counts.
static RISCV_PMU_ATTR_GROUPS: AttributeGroups<2> =
    AttributeGroups::new([&FORMAT_GROUP, &EVENTS_GROUP]);

/// The sysfs groups with SBI v3.0 or later, where raw events carry 56 bits (raw events v2).
static RISCV_PMU_ATTR_GROUPS_V2: AttributeGroups<2> =
    AttributeGroups::new([&FORMAT_GROUP_V2, &EVENTS_GROUP]);

/// The names of the `riscv,pmu` properties, for the OF property reads, in [`DtProperty::ALL`]
/// order.
const PROPERTY_NAMES: [&CStr; 3] = [
    c_str!("riscv,event-to-mhpmevent"),
    c_str!("riscv,event-to-mhpmcounters"),
    c_str!("riscv,raw-event-to-mhpmcounters"),
];

/// The event maps of the device tree's `riscv,pmu` node, read at probe and validated against the
/// counters firmware reports (`riscv,event-to-mhpmevent`, `riscv,event-to-mhpmcounters`,
/// `riscv,raw-event-to-mhpmcounters`, in [`DtProperty::ALL`] order).
pub(crate) struct DtMaps {
    cells: [Option<KVec<u32>>; 3],
}

impl DtMaps {
    /// Reads and validates the maps. Without a `riscv,pmu` node, or a node without any of the
    /// three properties, there are none and nothing is logged. A malformed or inconsistent map
    /// gives exactly one log line naming the property and the row, and the driver then works as
    /// without a map.
    fn read(info: &PmuInfo) -> Option<Self> {
        let node = OfNode::find_compatible(c_str!("riscv,pmu"))?;
        let mut cells: [Option<KVec<u32>>; 3] = [None, None, None];
        for ((slot, property), name) in cells.iter_mut().zip(DtProperty::ALL).zip(PROPERTY_NAMES) {
            // An absent property has no cells.
            let Some(len) = node.property_len(name) else {
                continue;
            };
            if len % 4 != 0 {
                dt_map_refused(&DtError {
                    property,
                    row: len / 4 / property.cells_per_row(),
                    kind: DtErrorKind::Length,
                });
                return None;
            }
            let read = node.read_u32_array(name, len / 4).inspect_err(|err| {
                pr_warn!(
                    "riscv,pmu: {} cannot be read ({err:?}); the event maps are ignored\n",
                    property.name()
                )
            });
            *slot = Some(read.ok()?);
        }
        if cells.iter().all(Option::is_none) {
            return None;
        }
        let maps = DtPmuMaps::parse(cells.each_ref().map(|c| c.as_deref()))
            .and_then(|maps| maps.check_platform(info.hw_counters()).map(|()| maps))
            .inspect_err(dt_map_refused)
            .ok()?;
        pr_info!(
            "event maps from the device tree: {} event ranges, {} raw event rows, {} selectors\n",
            maps.counter_ranges().count(),
            maps.raw_maps().count(),
            maps.selectors().count()
        );
        Some(Self { cells })
    }

    /// The maps, checked when they were read.
    fn maps(&self) -> DtPmuMaps<'_> {
        // An absent property has no cells.
        DtPmuMaps::from_parsed(self.cells.each_ref().map(|c| c.as_deref().unwrap_or(&[])))
    }
}

/// The one log line of a refused map.
fn dt_map_refused(err: &DtError) {
    pr_warn!(
        "riscv,pmu: {} row {}: {}; the event maps are ignored\n",
        err.property.name(),
        err.row,
        err.kind.reason()
    );
}

/// The SBI PMU as probe found it (the C driver's `struct riscv_pmu`, `cmask` and `pmu_ctr_list`).
pub(crate) struct SbiPmu {
    /// The counters and the SBI version.
    pub(crate) info: PmuInfo,
    /// The standard events the platform can count (`pmu_sbi_check_std_events()`), found on the
    /// system workqueue after load; `None` before [`SbiPmu::start_std_events_check`].
    std_events: Option<Pin<KBox<Deferred<StdEventsCheck>>>>,
    /// Whether the harts have Sscofpmf, so that firmware honours the mode filters, and whose
    /// counter overflow interrupt sampling needs.
    pub(crate) sscofpmf: bool,
    /// The device tree event maps, when the kernel's device tree has valid ones.
    dt: Option<DtMaps>,
    /// The standard events the maps say the platform counts, when they cover the standard events:
    /// then firmware is not asked.
    dt_std_events: Option<StdEvents>,
    /// Whether the CPUs have snapshot memory, which means a hypervisor (KVM): a freed event's parked
    /// counters are then given back ([`SbiPmu::destroy`](perf::Driver::destroy)).
    snapshot: bool,
    /// Counter delegation, when the harts have it ([`pmu_deleg::probe`]).
    deleg: Option<DelegSetup>,
}
/// Refuses to load while a C driver owns the `cpu` PMU.
///
/// perf core has a single `PERF_TYPE_RAW` PMU: registering a second one does not fail cleanly
/// (perf_pmu_register() warns and then fails to create the duplicate sysfs device), so the check
/// is made before anything is set up.
pub(crate) fn pmu_sbi_check_c_driver() -> Result {
    for name in C_DRIVER_DEVICES {
        if platform::device_bound(name) {
            pr_err!(
                "the C driver ({name}) already provides the cpu PMU; boot with initcall_blacklist=pmu_sbi_devinit,riscv_pmu_legacy_devinit to use this driver\n"
            );
            return Err(EBUSY);
        }
    }
    Ok(())
}

/// Whether firmware implements the SBI PMU extension (SBI v0.3 or later, and the extension
/// probed): without it the module registers the legacy PMU.
pub(crate) fn has_pmu_extension() -> bool {
    SbiVersion::from_raw(arch::sbi_spec_version()) >= SbiVersion::V0_3
        && arch::sbi_probe_extension(EXT_PMU)
}

impl SbiPmu {
    /// The PMU before [`SbiPmu::probe`].
    pub(crate) const UNPROBED: Self = Self {
        info: PmuInfo::EMPTY,
        std_events: None,
        sscofpmf: false,
        dt: None,
        dt_std_events: None,
        snapshot: false,
        deleg: None,
    };

    /// Finds the SBI PMU and its counters (`pmu_sbi_devinit()` and `pmu_sbi_device_probe()`), and
    /// which standard events they can count (`pmu_sbi_check_std_events()`), in place: the counter
    /// table is about 1 KiB, which a copy on the stack would double. Not inlined: its temporaries
    /// stay out of the module init's stack frame.
    #[inline(never)]
    pub(crate) fn probe(&mut self) -> Result {
        // The module's init called this only after `has_pmu_extension()` found the extension.
        let version = SbiVersion::from_raw(arch::sbi_spec_version());
        pr_info!("SBI PMU extension is available\n");

        let info = &mut self.info;
        let mut hart = SbiFirmware::NO_SNAPSHOT;
        info.probe_into(&mut hart, version).map_err(|_| {
            pr_err!("SBI PMU extension doesn't provide any counters\n");
            ENODEV
        })?;
        // KVM answers a user-mode read of any configured counter, whatever the guest's scounteren
        // says: no counter may stay configured for an event that left its CPU.
        if arch::sbi_get_impl_id() == (0, IMPL_ID_KVM) {
            info.configured_counters_readable = true;
            pr_info!("KVM lets user mode read any configured counter: counters are released when their events leave a CPU\n");
        }
        if info.cmask == 0 {
            pr_err!("SBI PMU extension doesn't provide any counters\n");
            return Err(ENODEV);
        }
        pr_info!(
            "{} firmware and {} hardware counters\n",
            info.fw_mask.count_ones(),
            info.hw_mask.count_ones()
        );

        self.sscofpmf = arch::has_sscofpmf();
        if !self.sscofpmf {
            pr_info!(
                "Perf sampling/filtering is not supported as sscof extension is not available\n"
            );
        }

        // Boards whose bootloader hands the kernel the board's device tree carry the event maps
        // (OpenSBI deletes them from the device tree it passes on).
        self.dt = DtMaps::read(&self.info);
        let maps = self.dt.as_ref().map(DtMaps::maps);
        self.deleg = pmu_deleg::probe(maps.as_ref());
        self.dt_std_events = maps.and_then(|m| self.info.std_events_from_maps(&m));
        Ok(())
    }

    /// Starts finding which standard events the platform can count, on the system workqueue: it
    /// is a few SBI calls for each of the 52 events, which module load does not wait for. The
    /// first event_init waits for it, so no event is counted before it is done. When the device
    /// tree maps answer for the standard events there is nothing to check.
    pub(crate) fn start_std_events_check(&mut self) -> Result {
        if self.dt_std_events.is_none() {
            let job = StdEventsCheck { info: self.info };
            self.std_events = Some(KBox::pin_init(Deferred::new(job), GFP_KERNEL)?);
        }
        Ok(())
    }

    /// The standard events the platform can count, waiting for the check if it still runs.
    fn std_events(&self) -> StdEvents {
        self.dt_std_events
            .or_else(|| self.std_events_check().map(|(events, _)| *events))
            .unwrap_or(StdEvents::ALL)
    }

    /// What the standard-event check found and the SBI calls it made (waiting for it if it runs);
    /// `None` when there is no check.
    fn std_events_check(&self) -> Option<&(StdEvents, PmuStats)> {
        self.std_events.as_ref().and_then(|check| check.wait())
    }

    /// Records whether the CPUs set up snapshot memory (when they started, `cpus`).
    pub(crate) fn set_snapshot(&mut self, cpus: &CpuStates<CpuState>) {
        percpu::for_each_possible_cpu(|cpu| {
            self.snapshot |=
                cpus.with_cpu(cpu, |state| state.core.snapshot_enabled()) == Some(true);
        });
    }

    /// Decides what the sysfs `events/` directory lists, before the PMU is registered: the standard
    /// events the device tree maps say the platform counts, under the `riscv,event-to-mhpmevent`
    /// selector perf opens them with as raw events. Without maps nothing is listed and there is no
    /// `events/` directory: the `cpu` PMU has perf's raw type, so an entry must be the event's
    /// hardware selector, which only the maps give.
    pub(crate) fn publish_events(&self) {
        if let (Some(dt), Some(std_events)) = (&self.dt, self.dt_std_events) {
            let maps = dt.maps();
            for (i, config) in EVENT_CONFIGS.iter().enumerate() {
                let found = StdEvents::nth(i)
                    .and_then(|idx| self.info.listed_event_config(idx, &std_events, &maps));
                config.store(found.unwrap_or(0), Ordering::Relaxed);
                EVENTS_LISTED.fetch_or(u64::from(found.is_some()) << i, Ordering::Relaxed);
            }
        }
    }

    /// The sysfs groups: `format/event` covers the raw event bits of the SBI version, as the C
    /// driver of 6.12 shows them; the C driver of 7.x shows the 56 bits of raw events v2 on every
    /// firmware (and refuses the bits above the firmware's field at event_init, as this driver does).
    pub(crate) fn attr_groups(&self) -> &'static AttributeGroups<2> {
        if self.info.version >= SbiVersion::V3_0 || compat::KERNEL_MAJOR >= 7 {
            &RISCV_PMU_ATTR_GROUPS_V2
        } else {
            &RISCV_PMU_ATTR_GROUPS
        }
    }

    /// Makes `state` the state every CPU starts with, in place.
    pub(crate) fn init_cpu_state(&self, state: &mut CpuState) {
        state.core.reinit(&self.info);
        // With SBI v2.0 the CPU has a snapshot page if one can be allocated (else it runs without).
        let snapshot = self.info.version >= SbiVersion::V2_0;
        let page = snapshot.then(|| SnapshotShmem::new().ok()).flatten();
        state.fw.init(page, self.deleg.as_ref());
    }
}

/// `pmu_sbi_check_std_events()` as a job for the system workqueue. It finds the standard events
/// the platform can count, and the SBI calls it took (the `calls` of its [`PmuStats`]).
pub(crate) struct StdEventsCheck {
    info: PmuInfo,
}

impl Job for StdEventsCheck {
    type Output = (StdEvents, PmuStats);

    fn run(&self) -> (StdEvents, PmuStats) {
        // With SBI v3.0 one `event_get_info` call answers for every event, through an array lent to
        // firmware; without it (or if that fails) each event is probed.
        let mut fw = CheckFirmware {
            mem: FirmwareMem::new().ok(),
            stats: PmuStats::default(),
        };
        // The check configures and releases counters of the hart it runs on, so it stays on one
        // hart. No event exists meanwhile: event_init waits for the check.
        let events = percpu::with_preemption_disabled(|| self.info.check_std_events(&mut fw));
        (events, fw.stats)
    }
}

/// The words of the event-info array: two per standard event (SBI v3.0, Table 18).
const EVENT_INFO_WORDS: usize = 2 * StdEvents::COUNT;

/// The SBI calls of the standard-event check: those of [`SbiFirmware`] without a snapshot page,
/// counted, with an event-info array lent to firmware for `event_get_info`.
struct CheckFirmware {
    /// The array firmware reads and writes, if it could be allocated.
    mem: Option<FirmwareMem<EVENT_INFO_WORDS>>,
    /// The calls made, by function.
    stats: PmuStats,
}

impl Firmware for CheckFirmware {
    fn sbi_ecall(&mut self, fid: Fid, args: [usize; 6]) -> Result<usize, SbiError> {
        count_call(&mut self.stats.calls, fid);
        let (error, value) = arch::sbi_pmu_call(fid.id(), args);
        sbi_result(error, value)
    }

    fn read_counter_csr(&mut self, csr: u16) -> u64 {
        arch::read_counter_csr(csr)
    }

    fn event_get_info(&mut self, entries: &mut [u64]) -> Result<(), SbiError> {
        let mem = self.mem.as_mut().ok_or(SbiError::NotSupported)?;
        let (error, value) = mem.event_get_info(entries);
        count_call(&mut self.stats.calls, Fid::EventGetInfo);
        sbi_result(error, value).map(|_| ())
    }
}

/// The SBI PMU extension of the calling hart, and its delegated counter CSRs when it has them
/// (`csrs`, [`crate::pmu_deleg`]): the hart under the counter backend of [`CpuState`].
///
/// Each call is one `ecall` (a7 = PMU extension, a6 = function ID); counter reads are `csrr`
/// instructions. With SBI v2.0 it owns the hart's snapshot page, which firmware writes during
/// `counter_stop` with TAKE_SNAPSHOT and reads during `counter_start` with INIT_SNAPSHOT; the core
/// reaches it one word at a time, between calls.
pub(crate) struct SbiFirmware {
    /// The hart's snapshot page, if it has one.
    pub(crate) page: Option<SnapshotShmem>,
    pub(crate) csrs: Option<DelegatedCsrs>,
}

impl SbiFirmware {
    /// The backend of a CPU without a snapshot page or delegated counters.
    pub(crate) const NO_SNAPSHOT: Self = Self {
        page: None,
        csrs: None,
    };
}

impl Firmware for SbiFirmware {
    #[inline(always)]
    fn sbi_ecall(&mut self, fid: Fid, args: [usize; 6]) -> Result<usize, SbiError> {
        let (error, value) = arch::sbi_pmu_call(fid.id(), args);
        sbi_result(error, value)
    }

    #[inline(always)]
    fn read_counter_csr(&mut self, csr: u16) -> u64 {
        arch::read_counter_csr(csr)
    }

    fn has_snapshot_mem(&mut self) -> bool {
        self.page.is_some()
    }

    fn snapshot_set_shmem(&mut self, enable: bool) -> Result<(), SbiError> {
        let (error, value) = match (&self.page, enable) {
            (Some(page), true) => page.register(),
            (Some(page), false) => page.unregister(),
            (None, _) => return Err(SbiError::NotSupported),
        };
        sbi_result(error, value).map(|_| ())
    }

    #[inline(always)]
    fn snapshot_page_word(&mut self, word: usize) -> u64 {
        self.page.as_ref().map_or(0, |page| page.read(word))
    }

    #[inline(always)]
    fn set_snapshot_page_word(&mut self, word: usize, value: u64) {
        if let Some(page) = self.page.as_mut() {
            page.write(word, value);
        }
    }
}

/// One CPU's driver state (the C driver's `struct cpu_hw_events`): the counter core and its
/// backend. The events on each counter are kept beside it by the perf glue ([`EventTable`]).
#[repr(C)]
pub(crate) struct CpuState {
    core: CpuHwEvents,
    fw: CpuFirmware,
    /// The counters whose events a CPU PM enter stopped, to start again at the exit (the C
    /// driver's notifier restarts every event, also those perf had stopped).
    pm_saved: u64,
}

impl ConstInit for CpuState {
    const INIT: Self = Self {
        core: CpuHwEvents::EMPTY,
        fw: CpuFirmware::EMPTY,
        pm_saved: 0,
    };
}

// The core's per-event words are perf core's fields of the same meaning, with the counter mask in
// the driver's private word and the counter the event last left in the upper half of `event_base`
// (see `HwEvent`).
perf::hw_fields!(HwEvent);

/// `riscv_pmu_start()`: starts the event, and lets user space read its counter if it may.
fn start_event(state: &mut CpuState, event: &mut EventMut<'_>) {
    let mut hw = event.hw_mut();
    state.core.start(&mut state.fw.hybrid(), &mut hw);
    // User space may read the counter of an mmap'd event while it runs. The start itself may wait
    // for pmu_enable; the counter holds its start value until then, which is what the mmap page
    // says it holds.
    grant_user_read(state.core.info(), event);
    event.update_userpage();
}

/// `riscv_pmu_stop()`: user space loses the right to read the counter, which then stops; the
/// event is brought up to date (always, as in the C driver).
fn stop_event(state: &mut CpuState, event: &mut EventMut<'_>) {
    // The counter may stay mapped to this event while another task runs: user space loses the
    // right to read it first.
    revoke_user_access(state.core.info(), event);
    let delta = state.core.stop(&mut state.fw.hybrid(), &mut event.hw_mut());
    event.add_count(delta);
}

/// Sets the `scounteren` bit of the event's counter if user space may read it now: the event is
/// mmap'd and runs.
#[inline]
fn grant_user_read(info: &PmuInfo, event: &PerfEvent) {
    let hw = event.hw();
    if let Some(bit) = info.user_read_bit(HwFlags::from_bits_retain(hw.flags()), || hw.idx()) {
        arch::scounteren_set(bit);
    }
}

/// Clears the `scounteren` bit of the event's counter if user space may read it, mmap'd or not:
/// the mapping may have gone while the event ran, and the bit must not outlive the event there.
#[inline]
fn revoke_user_access(info: &PmuInfo, event: &PerfEvent) {
    let hw = event.hw();
    if let Some(bit) = info.user_access_bit(HwFlags::from_bits_retain(hw.flags()), || hw.idx()) {
        arch::scounteren_clear(bit);
    }
}

/// The perf attribute fields the event mapping depends on.
fn event_attr(event: &PerfEvent) -> EventAttr {
    EventAttr {
        ty: event.attr_type(),
        config: event.config(),
        config1: event.config1(),
        exclude_user: event.exclude_user(),
        exclude_kernel: event.exclude_kernel(),
        exclude_hv: event.exclude_hv(),
        exclude_host: event.exclude_host(),
        exclude_guest: event.exclude_guest(),
        sampling: event.is_sampling(),
    }
}

/// The counters an event of a group may use once event_init set its state: its `event_idx`'s,
/// narrowed by the device tree maps (`hw.cmask`), read-only (the group's other members too).
fn member_cmask(info: &PmuInfo, member: &PerfEvent) -> u64 {
    let hw = member.hw();
    // CAST: The lower half of `event_base` holds the `event_idx` (see `HwEvent::event_idx`).
    EventIdx::from_raw(hw.event_base() as u32)
        .map_or(0, |idx| info.allowed_cmask(idx, hw.pmu_private()))
}

#[vtable]
impl perf::Driver for SbiPmu {
    const NAME: &'static CStr = c_str!("cpu");
    // CAST: `PERF_TYPE_RAW` is 4.
    const TYPE: i32 = PERF_TYPE_RAW as i32;

    type CpuState = CpuState;
    type Container = RiscvPmuContainer;

    /// `riscv_pmu_event_init()` with `pmu_sbi_event_map()` and `pmu_sbi_event_init()`.
    fn event_init(&self, event: &mut EventMut<'_>, init: &EventInit<'_>) -> Result {
        // The driver does not support branch stack sampling.
        if event.has_branch_stack() {
            return Err(Error::from_errno(-MapError::NotSupported.errno()));
        }
        let attr = event_attr(event);
        let maps = self.dt.as_ref().map(DtMaps::maps);
        let std_events = self.std_events();
        let mut hw = event.hw_mut();
        self.info
            .event_init(&attr, user_access(), &std_events, maps.as_ref(), &mut hw)
            .map_err(|err| {
                pr_debug!("event {:x}:{:x} not supported\n", attr.ty, attr.config);
                Error::from_errno(-err.errno())
            })?;
        // A group is scheduled all at once or not at all: one whose events cannot all have a counter
        // at the same time would never count, so it is refused now (the C driver accepts it). Each
        // event may use the counters event_init narrowed it to: an exact check, not a count.
        let mut masks = [0u64; RISCV_MAX_COUNTERS + 1];
        masks[0] = member_cmask(&self.info, event);
        let mut events = 1usize;
        init.for_each_group_member(|member| {
            if let Some(slot) = masks.get_mut(events) {
                *slot = member_cmask(&self.info, member);
            }
            events += 1;
        });
        // `None` for more events than a PMU can have counters.
        if events > 1 && !masks.get(..events).is_some_and(group_fits) {
            pr_debug!("a group of {events} events cannot have counters at once\n");
            return Err(EINVAL);
        }
        Ok(())
    }

    /// `riscv_pmu_add()`.
    #[inline]
    fn add(&self, cpu: &mut CpuState, event: &mut EventMut<'_>, flags: EventOpFlags) -> Result {
        let start = flags.contains(EventOpFlags::START);
        cpu.core
            .add(&mut cpu.fw.hybrid(), &mut event.hw_mut(), start)
            .map_err(|err| Error::from_errno(-err.errno(compat::KERNEL_MAJOR)))?;
        // Adding with START starts the event, as `start` would.
        if start {
            grant_user_read(&self.info, event);
        }
        event.update_userpage();
        Ok(())
    }

    /// `riscv_pmu_del()`.
    #[inline]
    fn del(&self, cpu: &mut CpuState, event: &mut EventMut<'_>, _flags: EventOpFlags) {
        // Deleting stops the event, as `stop` would: the counter is no longer user-readable.
        revoke_user_access(&self.info, event);
        let delta = cpu.core.del(&mut cpu.fw.hybrid(), &mut event.hw_mut());
        event.add_count(delta);
        event.update_userpage();
    }

    /// `riscv_pmu_start()`.
    fn start(&self, cpu: &mut CpuState, event: &mut EventMut<'_>, _flags: EventOpFlags) {
        start_event(cpu, event);
    }

    /// `riscv_pmu_stop()`.
    fn stop(&self, cpu: &mut CpuState, event: &mut EventMut<'_>, _flags: EventOpFlags) {
        stop_event(cpu, event);
    }

    /// `riscv_pmu_read()`.
    fn read(&self, cpu: &mut CpuState, event: &mut EventMut<'_>) {
        let delta = cpu.core.read(&mut cpu.fw.hybrid(), &mut event.hw_mut());
        event.add_count(delta);
    }

    /// `pmu->pmu_disable`: from here to `pmu_enable`, stops and starts are only recorded.
    #[inline]
    fn pmu_disable(&self, cpu: &mut CpuState) {
        cpu.core.pmu_disable();
    }

    /// `pmu->pmu_enable`: the recorded stops and starts are made, one call for each kind.
    #[inline]
    fn pmu_enable(&self, cpu: &mut CpuState) {
        cpu.core.pmu_enable(&mut cpu.fw.hybrid());
    }

    /// `pmu->start_txn`: nothing to record. `add` claims a counter or fails at once (and
    /// `event_init` refused groups that cannot have their counters together), so a group has
    /// nothing left to check at commit; and the adds of a group are batched already, since perf
    /// core disables the PMU around the scheduling of a whole context (`perf_ctx_disable()`),
    /// while an add outside such a window flushes at once as it must. perf core's own stubs would
    /// open one more window per group, on every context switch.
    fn start_txn(&self) {}

    /// `pmu->commit_txn`: every event of the group has its counter (see `start_txn`).
    fn commit_txn(&self) -> Result {
        Ok(())
    }

    /// `pmu->cancel_txn`: perf core deleted the events it had added; nothing else to undo.
    fn cancel_txn(&self) {}

    /// `event->destroy`: with snapshot memory (a hypervisor, KVM), the counters the event left
    /// parked are given back to firmware on every CPU (one `counter_stop` with RESET where it left
    /// one), running or not: there each configured counter is a perf event of the host, and those
    /// the counters of closed events kept made every later SBI PMU call of the guest slower (see
    /// the driver-api documentation). Without snapshot memory a parked counter costs nothing and
    /// stays for the next event that needs it.
    fn destroy(&self, cpus: &CpuStates<CpuState>, event: &PerfEvent) {
        // Under KVM nothing is parked (`PmuInfo::configured_counters_readable`): no cross-CPU call.
        if !self.snapshot || self.info.configured_counters_readable {
            return;
        }
        let owner = event.hw().id();
        percpu::for_each_possible_cpu(|cpu| {
            cpus.with_cpu(cpu, |state| {
                state.core.release_parked_of(&mut state.fw.hybrid(), owner)
            });
        });
    }

    /// `riscv_pmu_event_idx()`.
    fn event_idx(&self, event: &PerfEvent) -> u32 {
        let hw = event.hw();
        self.info
            .event_idx(HwFlags::from_bits_retain(hw.flags()), || hw.idx())
    }

    /// `pmu_sbi_event_mapped()`: user space may read the event's counter from now on, on the CPU
    /// the event runs on: there now (its bit is set before the mmap page says so), and wherever it
    /// starts next (`start` sets the bit). The C driver sets the bit on every CPU of the address
    /// space's `mm_cpumask()`, which under the ASID allocator holds every CPU it ever ran on:
    /// another task there could read whatever that counter counted.
    fn event_mapped(&self, event: &MappedEvent<'_>) {
        let flags = HwFlags::from_bits_retain(event.hw().flags());
        if !user_read_allowed(flags, event.attr_type(), event.config()) {
            return;
        }
        event.set_flags(HwFlags::USER_READ_CNT.bits());
        event.on_active_cpu(&|event: &PerfEvent| grant_user_read(&self.info, event));
        event.update_userpage();
    }

    /// `pmu_sbi_event_unmapped()`: user space can no longer see the mmap page, so the right to read
    /// the counter goes: a later start sets no bit, the CPU the event runs on loses it now, and
    /// one it leaves meanwhile loses it as the event leaves (`stop` and `del` clear the bit of
    /// every event user space may read, mmap'd or not).
    fn event_unmapped(&self, event: &MappedEvent<'_>) {
        let flags = HwFlags::from_bits_retain(event.hw().flags());
        if !user_read_allowed(flags, event.attr_type(), event.config()) {
            return;
        }
        event.clear_flags(HwFlags::USER_READ_CNT.bits());
        event.on_active_cpu(&|event: &PerfEvent| revoke_user_access(&self.info, event));
        event.update_userpage();
    }
}

/// The counter overflow interrupt handler (`pmu_sbi_ovf_handler()`).
pub(crate) struct PmuSbiOverflow {
    /// The CPUs' state.
    pub(crate) cpus: Arc<CpuStates<CpuState>>,
    /// The clock that times the handler.
    pub(crate) clock: TimeCsr,
}

impl PmuSbiOverflow {
    /// Tells perf core of the overflow of `event`, which [`CpuHwEvents::overflow_event`] brought up
    /// to date. The CPU's state is not borrowed meanwhile: perf core may read the other events of
    /// the group through the `read` callback.
    #[inline(always)]
    fn report(&self, ctx: &InterruptContext<'_>, event: &mut EventMut<'_>, result: &OverflowEvent) {
        // The counter restarts from a new value: where user space reads it directly, the mmap
        // page's offset (the count less that value) follows, or a count read from user space
        // would miss what was counted so far.
        if result.publish {
            event.update_userpage();
        }
        if result.sample && event.overflow(ctx, result.last_period) {
            // perf core throttles the event: it stays stopped until perf core starts it again
            // (the C driver lets it run on).
            self.cpus.with_local(ctx, |state| stop_event(state, event));
        }
    }

    /// The handler's work; whether any counter overflowed.
    #[inline(always)]
    fn handle_overflow(&self, ctx: &InterruptContext<'_>) -> bool {
        let irq: &LocalInterruptDisabled = ctx;
        // Every running hardware counter stops (one SBI call) before the overflow bits are read,
        // and in the same borrow of the CPU's state the first overflowed counter's event is
        // brought up to date and given its next period (with one sampling event, the only one).
        let Some((overflowed, first)) = self.cpus.with_local_events(irq, |state, events| {
            let overflowed = state.core.overflow_begin(&mut state.fw.hybrid());
            let first = counters_in(overflowed).find_map(|idx| {
                let mut event = events.get(idx, irq)?;
                let result = overflow_step(state, &mut event)?;
                Some((idx, event, result))
            });
            (overflowed, first)
        }) else {
            return false;
        };
        // The pending bit is cleared only now that the counters are stopped: an overflow before
        // this point is in the bits just read, none can come after.
        arch::clear_pending_interrupt(RV_IRQ_PMU);
        // `None` when no overflowed counter had an event to update.
        if let Some((first_idx, mut event, result)) = first {
            self.report(ctx, &mut event, &result);
            // The other overflowed counters, one borrow each around perf core's part.
            // Those above the first (`counters_in` gives counters below 64, in increasing order).
            for idx in counters_in(overflowed & !(u64::MAX >> (63 - first_idx))) {
                let stepped = self.cpus.with_local_events(irq, |state, events| {
                    let mut event = events.get(idx, irq)?;
                    let result = overflow_step(state, &mut event)?;
                    Some((event, result))
                });
                if let Some((mut event, result)) = stepped.flatten() {
                    self.report(ctx, &mut event, &result);
                }
            }
        }
        // The overflowed counters start again from their next period, the others from their
        // values, in one call (or one per new value without snapshot memory).
        self.cpus
            .with_local(irq, |state| state.core.overflow_end(&mut state.fw.hybrid()));
        overflowed != 0
    }
}

impl Handler for PmuSbiOverflow {
    #[inline(always)]
    fn handle(&self, ctx: &InterruptContext<'_>) -> IrqReturn {
        let start = self.clock.now();
        if !self.handle_overflow(ctx) {
            return IrqReturn::None;
        }
        // perf core lowers the sampling rate when the handler takes too long.
        perf::sample_event_took(self.clock.ns_since(start));
        IrqReturn::Handled
    }
}

/// The overflow handler's step for the event of an overflowed counter, in a borrow of the CPU's
/// state: the count brought up to date and the next period ([`CpuHwEvents::overflow_event`]).
#[inline(always)]
fn overflow_step(state: &mut CpuState, event: &mut EventMut<'_>) -> Option<OverflowEvent> {
    let result = state
        .core
        .overflow_event(&mut state.fw.hybrid(), &mut event.hw_mut())?;
    event.add_count(result.delta);
    Some(result)
}

/// Stops the events of a CPU while it is in a low-power state (`riscv_pm_pmu_notify()`), with one
/// SBI call each way.
pub(crate) struct PmuSbiCpuPm {
    /// The CPUs' state.
    pub(crate) cpus: Arc<CpuStates<CpuState>>,
}

impl CpuPmNotify for PmuSbiCpuPm {
    /// `CPU_PM_ENTER`: the running events stop, their counts brought up to date.
    fn enter(&self, irq: &LocalInterruptDisabled) {
        self.cpus.with_local_events(irq, |state, events| {
            if state.core.masks().used() == 0 {
                return;
            }
            state.pm_saved = 0;
            state.core.pmu_disable();
            for idx in 0..RISCV_MAX_COUNTERS {
                let Some(mut event) = events.get(idx, irq) else {
                    continue;
                };
                if !event.hw_mut().hes().contains(HesState::STOPPED) {
                    stop_event(state, &mut event);
                    state.pm_saved |= 1 << idx;
                }
            }
            state.core.pmu_enable(&mut state.fw.hybrid());
        });
    }

    /// `CPU_PM_EXIT` and `CPU_PM_ENTER_FAILED`: the events stopped at the enter start again; those
    /// perf had stopped stay stopped (the C driver starts them too).
    fn exit(&self, irq: &LocalInterruptDisabled) {
        self.cpus.with_local_events(irq, |state, events| {
            let saved = core::mem::take(&mut state.pm_saved);
            if saved == 0 {
                return;
            }
            state.core.pmu_disable();
            for idx in counters_in(saved) {
                if let Some(mut event) = events.get(idx, irq) {
                    start_event(state, &mut event);
                }
            }
            state.core.pmu_enable(&mut state.fw.hybrid());
        });
    }
}

/// What every CPU needs before its counters serve perf (`pmu_sbi_starting_cpu()`), and when it
/// stops (`pmu_sbi_dying_cpu()`): the counters reset, and the overflow interrupt enabled.
///
/// It owns the overflow interrupt: the hotplug registration runs `dying` on every CPU (disabling
/// the interrupt there) before it drops this, and with it the interrupt.
pub(crate) struct PmuSbiStartingCpu {
    /// The CPUs' state.
    pub(crate) cpus: Arc<CpuStates<CpuState>>,
    /// The overflow interrupt, enabled on each CPU, if there is one.
    pub(crate) irq: Option<Pin<KBox<PercpuIrq<PmuSbiOverflow>>>>,
    /// Set when firmware refused snapshot memory: CPUs that start later do not ask again.
    pub(crate) no_snapshot: AtomicBool,
    /// Set once the outcome of the snapshot setup was logged (one line per load).
    pub(crate) logged: AtomicBool,
}

impl CpuStarting for PmuSbiStartingCpu {
    const STATE: StartingState = arch::PERF_STARTING;
    const NAME: &'static CStr = c_str!("perf/riscv/pmu_sbi_rust:starting");

    fn starting(&self, irq: &LocalInterruptDisabled) -> Result {
        arch::scounteren_write(scounteren_base(user_access()));
        // Firmware leaves `cycle` and `instret` running from boot, and a CPU may come back with
        // mappings from before it went down: every counter is stopped and reset, and the CPU's
        // state forgotten. With SBI v2.0 the CPU's snapshot page is registered (firmware that
        // refuses it once is not asked again); without it counters are read with SBI calls.
        let use_snapshot = !self.no_snapshot.load(Ordering::Relaxed);
        let outcome = self.cpus.with_local(irq, |state| {
            state.pm_saved = 0;
            state.fw.cpu_starting(state.core.info());
            let result = state
                .core
                .cpu_starting(&mut state.fw.hybrid(), use_snapshot);
            let missing_page = use_snapshot
                && state.core.info().version >= SbiVersion::V2_0
                && !state.fw.hart.has_snapshot_mem();
            (result, state.core.snapshot_enabled(), missing_page)
        });
        if let Some((result, enabled, missing_page)) = outcome {
            if let Err(err) = result {
                self.no_snapshot.store(true, Ordering::Relaxed);
                if !self.logged.swap(true, Ordering::Relaxed) {
                    pr_info!(
                        "no SBI PMU snapshot memory (firmware answered {err:?}): counters are read with SBI calls\n"
                    );
                }
            } else if enabled && !self.logged.swap(true, Ordering::Relaxed) {
                pr_info!("SBI PMU snapshot detected\n");
            } else if missing_page && !self.logged.swap(true, Ordering::Relaxed) {
                pr_info!(
                    "no memory for the SBI PMU snapshot page: counters are read with SBI calls\n"
                );
            }
        }
        if let Some(ovf) = &self.irq {
            arch::clear_pending_interrupt(RV_IRQ_PMU);
            ovf.enable_local(irq);
        }
        Ok(())
    }

    fn dying(&self, irq: &LocalInterruptDisabled) {
        if let Some(ovf) = &self.irq {
            ovf.disable_local(irq);
        }
        // perf has moved every event away: the counters kept mapped for returning events are
        // released, so no mapping outlives the CPU or the module, and user mode reads no counter.
        // It keeps reading `time` (the vDSO's clock): after an unload nothing else would grant it,
        // and under KVM a guest's `scounteren` starts at 0.
        arch::scounteren_write(scounteren_base(UserAccess::NoUserAccess));
        self.cpus.with_local(irq, |state| {
            let _ = state.core.cpu_dying(&mut state.fw.hybrid());
        });
    }
}

/// The debugfs files of the driver.
///
/// `sbi_calls`: one line per online CPU with the number of calls of each SBI PMU function made so
/// far, the flushes of batched work, the counters taken back from a parked mapping, and the calls
/// that failed; then a line `check` with the calls of the standard-event check at load.
///
/// `counters`: one line per online CPU with the number of events holding a counter, and as
/// hexadecimal masks the hardware and firmware counters they hold, the counters started in
/// firmware, and the counters parked (kept configured for a returning event, held by none). With
/// no event open every CPU shows `0 0x0 0x0 0x0`, then its parked mask and the parked counters left
/// running (coasting).
pub(crate) struct SbiCallStats {
    /// The PMU, for the calls of its standard-event check.
    pub(crate) pmu: Arc<SbiPmu>,
    /// Its CPUs' state.
    pub(crate) cpus: Arc<CpuStates<CpuState>>,
}

/// Writes one line of the statistics: a label, the calls of each SBI PMU function, and the flushes,
/// reused counters and failed calls.
fn stats_line(out: &mut SeqFile<'_>, label: fmt::Arguments<'_>, st: &PmuStats) -> fmt::Result {
    write!(out, "{}", label)?;
    for calls in st.calls {
        write!(out, " {}", calls)?;
    }
    writeln!(out, " {} {} {}", st.flushes, st.reused, st.errors)
}

impl Show for SbiCallStats {
    const FILES: &'static [&'static CStr] = &[c_str!("sbi_calls"), c_str!("counters")];

    fn show(&self, file: usize, out: &mut SeqFile<'_>) -> Result {
        // A write fails only when the buffer is full, which seq_file notices itself: every later
        // write of this read fails too, and it reads again with a larger buffer. An error returned
        // here would end the read instead.
        let _ = match file {
            1 => self.show_counters(out),
            _ => self.show_calls(out),
        };
        Ok(())
    }
}

impl SbiCallStats {
    /// The `sbi_calls` file.
    fn show_calls(&self, out: &mut SeqFile<'_>) -> fmt::Result {
        writeln!(out, "cpu num_counters counter_get_info counter_config_matching counter_start counter_stop counter_fw_read counter_fw_read_hi snapshot_set_shmem event_get_info flushes reused errors")?;
        percpu::for_each_possible_cpu(|cpu| {
            // The statistics live with the CPU's counters, so they are copied on that CPU. A failed
            // write leaves the buffer full (see `show`).
            if let Some(st) = self
                .cpus
                .with_cpu(cpu, |state| state.fw.sbi_stats(*state.core.stats()))
            {
                let _ = stats_line(out, format_args!("{}", cpu.as_u32()), &st);
            }
        });
        let check = self.pmu.std_events_check().map(|(_, stats)| *stats);
        stats_line(out, format_args!("check"), &check.unwrap_or_default())
    }

    /// The `counters` file.
    fn show_counters(&self, out: &mut SeqFile<'_>) -> fmt::Result {
        writeln!(out, "cpu events used_hw used_fw running parked coasting")?;
        percpu::for_each_possible_cpu(|cpu| {
            // The counters' state is read on its CPU, which owns it: the events holding a counter,
            // the hardware and firmware counters they hold, the counters started in firmware for
            // an event, those parked for a returning event, and those of the parked ones left
            // running (free like any parked counter). A failed write leaves the buffer full (see
            // `show`).
            if let Some(m) = self.cpus.with_cpu(cpu, |state| *state.core.masks()) {
                let _ = writeln!(
                    out,
                    "{} {} {:#x} {:#x} {:#x} {:#x} {:#x}",
                    cpu.as_u32(),
                    m.used().count_ones(),
                    m.used_hw_ctrs,
                    m.used_fw_ctrs,
                    m.running & !m.coasting(),
                    m.parked,
                    m.coasting(),
                );
            }
        });
        Ok(())
    }
}
