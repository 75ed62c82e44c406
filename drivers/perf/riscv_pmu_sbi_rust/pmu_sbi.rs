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
    arch::{self, SbiRet},
    cpu_pm::CpuPmNotify,
    cpuhp::CpuStarting,
    debugfs::{SeqFile, Show},
    deferred::{Deferred, Job},
    fwmem::FirmwareMem,
    irq::{IrqContext, PercpuHandler, PercpuIrq},
    of::OfNode,
    percpu::{self, LocalCpu},
    perf::{
        self, Capabilities, CpuStates, EventFlags, EventInit, HwPerfEvent, PerfEvent, PmuWindow,
    },
    platform,
    sysctl::IntSysctl,
    sysfs::{
        AttributeGroup, AttributeGroups, Attributes, EventList, FormatAttr, PmuEventAttr,
        PmuEventAttrs,
    },
};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use kernel::{c_str, fmt, prelude::*, str::CString, sync::Arc};
use sbi_pmu::{
    abi::{
        EventIdx, Fid, SbiVersion, BASE_GET_IMPL_ID, EXT_BASE, EXT_PMU, IMPL_ID_KVM,
        RISCV_MAX_COUNTERS,
    },
    counters::{
        counters_in, group_fits, scounteren_base, user_read_allowed, EventFlags as HwFlags,
        HesState, HwEvent, PmuInfo,
    },
    dt::{DtError, DtErrorKind, DtPmuMaps, DtProperty},
    events::{EventAttr, MapError, StdEvents, UserAccess, PERF_TYPE_RAW},
    firmware::SbiEcall,
    pmu::{CpuHwEvents, OverflowEvent, PmuStats},
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

static FORMAT_EVENT: FormatAttr = FormatAttr::new(c_str!("event"), c_str!("config:0-47"));
static FORMAT_EVENT_V2: FormatAttr = FormatAttr::new(c_str!("event"), c_str!("config:0-55"));
static FORMAT_FIRMWARE: FormatAttr = FormatAttr::new(c_str!("firmware"), c_str!("config:62-63"));
static FORMAT_ATTRS: Attributes<2> = Attributes::new([&FORMAT_EVENT, &FORMAT_FIRMWARE]);
static FORMAT_ATTRS_V2: Attributes<2> = Attributes::new([&FORMAT_EVENT_V2, &FORMAT_FIRMWARE]);
static FORMAT_GROUP: AttributeGroup = AttributeGroup::new(c_str!("format"), &FORMAT_ATTRS);
static FORMAT_GROUP_V2: AttributeGroup = AttributeGroup::new(c_str!("format"), &FORMAT_ATTRS_V2);

/// The standard events as the PMU's sysfs `events/` directory lists them: the name perf gives each
/// (`perf list`), in the order of [`StdEvents::nth`]. Which are listed, and their `event=` values,
/// are found at probe ([`RiscvPmu::publish_events`]).
static STD_EVENT_ATTRS: [PmuEventAttr<StdEventList>; StdEvents::COUNT] = [
    PmuEventAttr::new(c_str!("cpu-cycles"), 0),
    PmuEventAttr::new(c_str!("instructions"), 1),
    PmuEventAttr::new(c_str!("cache-references"), 2),
    PmuEventAttr::new(c_str!("cache-misses"), 3),
    PmuEventAttr::new(c_str!("branch-instructions"), 4),
    PmuEventAttr::new(c_str!("branch-misses"), 5),
    PmuEventAttr::new(c_str!("bus-cycles"), 6),
    PmuEventAttr::new(c_str!("stalled-cycles-frontend"), 7),
    PmuEventAttr::new(c_str!("stalled-cycles-backend"), 8),
    PmuEventAttr::new(c_str!("ref-cycles"), 9),
    PmuEventAttr::new(c_str!("L1-dcache-loads"), 10),
    PmuEventAttr::new(c_str!("L1-dcache-load-misses"), 11),
    PmuEventAttr::new(c_str!("L1-dcache-stores"), 12),
    PmuEventAttr::new(c_str!("L1-dcache-store-misses"), 13),
    PmuEventAttr::new(c_str!("L1-dcache-prefetches"), 14),
    PmuEventAttr::new(c_str!("L1-dcache-prefetch-misses"), 15),
    PmuEventAttr::new(c_str!("L1-icache-loads"), 16),
    PmuEventAttr::new(c_str!("L1-icache-load-misses"), 17),
    PmuEventAttr::new(c_str!("L1-icache-stores"), 18),
    PmuEventAttr::new(c_str!("L1-icache-store-misses"), 19),
    PmuEventAttr::new(c_str!("L1-icache-prefetches"), 20),
    PmuEventAttr::new(c_str!("L1-icache-prefetch-misses"), 21),
    PmuEventAttr::new(c_str!("LLC-loads"), 22),
    PmuEventAttr::new(c_str!("LLC-load-misses"), 23),
    PmuEventAttr::new(c_str!("LLC-stores"), 24),
    PmuEventAttr::new(c_str!("LLC-store-misses"), 25),
    PmuEventAttr::new(c_str!("LLC-prefetches"), 26),
    PmuEventAttr::new(c_str!("LLC-prefetch-misses"), 27),
    PmuEventAttr::new(c_str!("dTLB-loads"), 28),
    PmuEventAttr::new(c_str!("dTLB-load-misses"), 29),
    PmuEventAttr::new(c_str!("dTLB-stores"), 30),
    PmuEventAttr::new(c_str!("dTLB-store-misses"), 31),
    PmuEventAttr::new(c_str!("dTLB-prefetches"), 32),
    PmuEventAttr::new(c_str!("dTLB-prefetch-misses"), 33),
    PmuEventAttr::new(c_str!("iTLB-loads"), 34),
    PmuEventAttr::new(c_str!("iTLB-load-misses"), 35),
    PmuEventAttr::new(c_str!("iTLB-stores"), 36),
    PmuEventAttr::new(c_str!("iTLB-store-misses"), 37),
    PmuEventAttr::new(c_str!("iTLB-prefetches"), 38),
    PmuEventAttr::new(c_str!("iTLB-prefetch-misses"), 39),
    PmuEventAttr::new(c_str!("branch-loads"), 40),
    PmuEventAttr::new(c_str!("branch-load-misses"), 41),
    PmuEventAttr::new(c_str!("branch-stores"), 42),
    PmuEventAttr::new(c_str!("branch-store-misses"), 43),
    PmuEventAttr::new(c_str!("branch-prefetches"), 44),
    PmuEventAttr::new(c_str!("branch-prefetch-misses"), 45),
    PmuEventAttr::new(c_str!("node-loads"), 46),
    PmuEventAttr::new(c_str!("node-load-misses"), 47),
    PmuEventAttr::new(c_str!("node-stores"), 48),
    PmuEventAttr::new(c_str!("node-store-misses"), 49),
    PmuEventAttr::new(c_str!("node-prefetches"), 50),
    PmuEventAttr::new(c_str!("node-prefetch-misses"), 51),
];
static STD_EVENT_LIST: PmuEventAttrs<StdEventList, { StdEvents::COUNT }> =
    PmuEventAttrs::new(&STD_EVENT_ATTRS);
static EVENTS_GROUP: AttributeGroup =
    AttributeGroup::with_events(c_str!("events"), &STD_EVENT_LIST);

/// The standard events `events/` lists: bit `i` for [`StdEvents::nth`]`(i)`.
static EVENTS_LISTED: AtomicU64 = AtomicU64::new(0);
/// The `event=` value of each listed standard event.
static EVENT_CONFIGS: [AtomicU64; StdEvents::COUNT] = [EVENT_CONFIG_UNSET; StdEvents::COUNT];
#[expect(
    clippy::declare_interior_mutable_const,
    reason = "the initial value of each element of EVENT_CONFIGS, copied and never shared"
)]
const EVENT_CONFIG_UNSET: AtomicU64 = AtomicU64::new(0);

/// The standard events of the PMU's `events/` directory.
pub(crate) struct StdEventList;

impl EventList for StdEventList {
    fn listed(id: usize) -> bool {
        id < StdEvents::COUNT && EVENTS_LISTED.load(Ordering::Relaxed) & (1 << id) != 0
    }

    fn any_listed() -> bool {
        EVENTS_LISTED.load(Ordering::Relaxed) != 0
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

/// Converts an errno of the `sbi_pmu` crate (positive) to an [`Error`].
fn errno(errno: i32) -> Error {
    Error::from_errno(-errno)
}

/// Converts an event mapping error to the errno the C driver returns for it.
fn map_err_errno(err: MapError) -> Error {
    errno(err.errno())
}

/// The name of a `riscv,pmu` property, for the OF property reads.
fn dt_property_name(property: DtProperty) -> &'static CStr {
    match property {
        DtProperty::EventToMhpmevent => c_str!("riscv,event-to-mhpmevent"),
        DtProperty::EventToMhpmcounters => c_str!("riscv,event-to-mhpmcounters"),
        DtProperty::RawEventToMhpmcounters => c_str!("riscv,raw-event-to-mhpmcounters"),
    }
}

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
        for (slot, property) in cells.iter_mut().zip(DtProperty::ALL) {
            let name = dt_property_name(property);
            match node.read_u32_array(name) {
                Ok(read) => *slot = read,
                Err(err) => {
                    match node.property_len(name).filter(|len| len % 4 != 0) {
                        Some(len) => dt_map_refused(&DtError {
                            property,
                            row: len / 4 / property.cells_per_row(),
                            kind: DtErrorKind::Length,
                        }),
                        None => pr_warn!(
                            "riscv,pmu: {} cannot be read ({:?}); the event maps are ignored\n",
                            property.name(),
                            err
                        ),
                    }
                    return None;
                }
            }
        }
        if cells.iter().all(Option::is_none) {
            return None;
        }
        let this = Self { cells };
        let [sel, ctr, raw] = &this.cells;
        let checked = DtPmuMaps::parse(sel.as_deref(), ctr.as_deref(), raw.as_deref())
            .and_then(|maps| maps.check_platform(info.hw_counters()).map(|()| maps));
        match checked {
            Ok(maps) => {
                pr_info!(
                    "event maps from the device tree: {} event ranges, {} raw event rows, {} selectors\n",
                    maps.counter_ranges().count(),
                    maps.raw_maps().count(),
                    maps.selectors().count()
                );
                Some(this)
            }
            Err(err) => {
                dt_map_refused(&err);
                None
            }
        }
    }

    /// The maps, checked when they were read.
    fn maps(&self) -> DtPmuMaps<'_> {
        let [sel, ctr, raw] = &self.cells;
        DtPmuMaps::from_parsed(cells_of(sel), cells_of(ctr), cells_of(raw))
    }
}

/// The cells of a property, none when it is absent.
fn cells_of(cells: &Option<KVec<u32>>) -> &[u32] {
    cells.as_deref().unwrap_or(&[])
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
pub(crate) struct RiscvPmu {
    /// The counters and the SBI version.
    info: PmuInfo,
    /// The standard events the platform can count (`pmu_sbi_check_std_events()`), found on the
    /// system workqueue after load; `None` before [`RiscvPmu::start_std_events_check`].
    std_events: Option<Pin<KBox<Deferred<StdEventsCheck>>>>,
    /// Whether the harts have Sscofpmf, so that firmware honours the mode filters.
    sscofpmf: bool,
    /// Whether the counter overflow interrupt is set up, so that events can sample.
    overflow_irq: bool,
    /// The device tree event maps, when the kernel's device tree has valid ones.
    dt: Option<DtMaps>,
    /// The standard events the maps say the platform counts, when they cover the standard events:
    /// then firmware is not asked.
    dt_std_events: Option<StdEvents>,
    /// Whether the CPUs have snapshot memory, which means a hypervisor (KVM): a freed event's parked
    /// counters are then given back ([`RiscvPmu::destroy`](perf::Driver::destroy)).
    snapshot: bool,
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
                "the C driver ({}) already provides the cpu PMU; boot with initcall_blacklist=pmu_sbi_devinit,riscv_pmu_legacy_devinit to use this driver\n",
                name
            );
            return Err(EBUSY);
        }
    }
    Ok(())
}

/// Whether firmware implements the SBI PMU extension (SBI v0.3 or later, and the extension
/// probed): without it the module registers the legacy PMU.
pub(crate) fn has_pmu_extension() -> bool {
    SbiVersion::from_raw(arch::sbi_spec_version()).at_least(SbiVersion::V0_3)
        && arch::sbi_probe_extension(EXT_PMU)
}

impl RiscvPmu {
    /// Finds the SBI PMU and its counters (`pmu_sbi_devinit()` and `pmu_sbi_device_probe()`), and
    /// which standard events they can count (`pmu_sbi_check_std_events()`).
    pub(crate) fn probe() -> Result<Self> {
        let version = SbiVersion::from_raw(arch::sbi_spec_version());
        if !version.at_least(SbiVersion::V0_3) {
            pr_err!(
                "SBI specification {}.{} has no PMU extension (0.3 or later needed)\n",
                version.major,
                version.minor
            );
            return Err(ENODEV);
        }
        if !arch::sbi_probe_extension(EXT_PMU) {
            pr_err!("the SBI implementation has no PMU extension\n");
            return Err(ENODEV);
        }
        pr_info!("SBI PMU extension is available\n");

        let mut info = PmuInfo::probe(&mut SbiFirmware::new(false), version).map_err(|_| {
            pr_err!("SBI PMU extension doesn't provide any counters\n");
            ENODEV
        })?;
        // KVM answers a user-mode read of any configured counter, whatever the guest's scounteren
        // says: no counter may stay configured for an event that left its CPU.
        let impl_id = arch::sbi_ecall(EXT_BASE, BASE_GET_IMPL_ID, [0; 6]);
        if impl_id.error == 0 && impl_id.value == IMPL_ID_KVM {
            info.configured_counters_readable = true;
            pr_info!("KVM lets user mode read any configured counter: counters are released when their events leave a CPU\n");
        }
        if info.cmask == 0 {
            pr_err!("SBI PMU extension doesn't provide any counters\n");
            return Err(ENODEV);
        }
        pr_info!(
            "{} firmware and {} hardware counters\n",
            info.num_fw_counters(),
            info.num_hw_counters()
        );

        let sscofpmf = arch::has_sscofpmf();
        if !sscofpmf {
            pr_info!(
                "Perf sampling/filtering is not supported as sscof extension is not available\n"
            );
        }

        // Boards whose bootloader hands the kernel the board's device tree carry the event maps
        // (OpenSBI deletes them from the device tree it passes on).
        let dt = DtMaps::read(&info);
        let dt_std_events = dt
            .as_ref()
            .and_then(|dt| info.std_events_from_maps(&dt.maps()));

        Ok(Self {
            info,
            std_events: None,
            sscofpmf,
            overflow_irq: false,
            dt,
            dt_std_events,
            snapshot: false,
        })
    }

    /// Starts finding which standard events the platform can count, on the system workqueue: it
    /// is a few SBI calls for each of the 52 events, which module load does not wait for. The
    /// first event_init waits for it, so no event is counted before it is done. When the device
    /// tree maps answer for the standard events there is nothing to check.
    pub(crate) fn start_std_events_check(&mut self) -> Result {
        if self.dt_std_events.is_some() {
            return Ok(());
        }
        let check = KBox::pin_init(
            Deferred::new(StdEventsCheck { info: self.info }),
            GFP_KERNEL,
        )?;
        self.std_events = Some(check);
        Ok(())
    }

    /// The standard events the platform can count, waiting for the check if it still runs.
    fn std_events(&self) -> StdEvents {
        if let Some(found) = self.dt_std_events {
            return found;
        }
        self.std_events
            .as_ref()
            .and_then(|check| check.wait())
            .map_or(StdEvents::ALL, |check| check.events)
    }

    /// The SBI calls the standard-event check made, by function ID (waiting for it if it runs).
    fn std_events_calls(&self) -> [u64; Fid::COUNT] {
        self.std_events
            .as_ref()
            .and_then(|check| check.wait())
            .map_or([0; Fid::COUNT], |check| check.calls)
    }

    /// Whether the harts have Sscofpmf, whose counter overflow interrupt sampling needs.
    pub(crate) fn has_sscofpmf(&self) -> bool {
        self.sscofpmf
    }

    /// The counters and the SBI version.
    pub(crate) fn info(&self) -> &PmuInfo {
        &self.info
    }

    /// Records whether the counter overflow interrupt could be set up (`pmu_sbi_setup_irqs()`).
    pub(crate) fn set_overflow_irq(&mut self, available: bool) {
        if self.sscofpmf && !available {
            pr_info!(
                "Perf sampling/filtering is not supported as the overflow interrupt could not be set up\n"
            );
        }
        self.overflow_irq = self.sscofpmf && available;
    }

    /// Records whether the CPUs set up snapshot memory (when they started, `cpus`).
    pub(crate) fn set_snapshot(&mut self, cpus: &CpuStates<CpuState>) {
        let mut snapshot = false;
        percpu::for_each_possible_cpu(|cpu| {
            snapshot |= cpus
                .with_cpu(cpu, |state| state.core.snapshot_enabled())
                .unwrap_or(false);
        });
        self.snapshot = snapshot;
    }

    /// What perf core may ask of this PMU: without the overflow interrupt (no Sscofpmf, or no
    /// interrupt), no sampling and no mode filtering, as in the C driver.
    pub(crate) fn capabilities(&self) -> Capabilities {
        if self.overflow_irq {
            Capabilities::NONE
        } else {
            Capabilities::NO_INTERRUPT | Capabilities::NO_EXCLUDE
        }
    }

    /// Decides what the sysfs `events/` directory lists, before the PMU is registered: the standard
    /// events the device tree maps say the platform counts, under the `riscv,event-to-mhpmevent`
    /// selector perf opens them with as raw events. Without maps nothing is listed and there is no
    /// `events/` directory: the `cpu` PMU has perf's raw type, so an entry must be the event's
    /// hardware selector, which only the maps give.
    pub(crate) fn publish_events(&self) {
        let mut listed = 0u64;
        if let (Some(dt), Some(std_events)) = (&self.dt, self.dt_std_events) {
            let maps = dt.maps();
            for (i, config) in EVENT_CONFIGS.iter().enumerate() {
                let found = StdEvents::nth(i)
                    .and_then(|idx| self.info.listed_event_config(idx, &std_events, &maps));
                config.store(found.unwrap_or(0), Ordering::Relaxed);
                if found.is_some() {
                    listed |= 1 << i;
                }
            }
        }
        EVENTS_LISTED.store(listed, Ordering::Relaxed);
    }

    /// The sysfs groups: `format/event` covers the raw event bits of the SBI version.
    pub(crate) fn attr_groups(&self) -> &'static AttributeGroups<2> {
        if self.info.version.at_least(SbiVersion::V3_0) {
            &RISCV_PMU_ATTR_GROUPS_V2
        } else {
            &RISCV_PMU_ATTR_GROUPS
        }
    }

    /// The state every CPU starts with.
    pub(crate) fn new_cpu_state(&self) -> CpuState {
        CpuState {
            core: CpuHwEvents::new(&self.info),
            fw: SbiFirmware::new(self.info.version.at_least(SbiVersion::V2_0)),
        }
    }
}

/// `pmu_sbi_check_std_events()` as a job for the system workqueue.
pub(crate) struct StdEventsCheck {
    info: PmuInfo,
}

/// What the standard-event check found, and the SBI calls it took.
pub(crate) struct StdEventsFound {
    events: StdEvents,
    calls: [u64; Fid::COUNT],
}

impl Job for StdEventsCheck {
    type Output = StdEventsFound;

    fn run(&self) -> StdEventsFound {
        // With SBI v3.0 one `event_get_info` call answers for every event, through an array lent to
        // firmware; without it (or if that fails) each event is probed.
        let mut fw = CheckFirmware {
            mem: FirmwareMem::new().ok(),
            words: [0; EVENT_INFO_WORDS],
            calls: [0; Fid::COUNT],
            fw: SbiFirmware::new(false),
        };
        // The check configures and releases counters of the hart it runs on, so it stays on one
        // hart. No event exists meanwhile: event_init waits for the check.
        let events = percpu::with_preemption_disabled(|| self.info.check_std_events(&mut fw));
        StdEventsFound {
            events,
            calls: fw.calls,
        }
    }
}

/// The words of the event-info array: two per standard event (SBI v3.0, Table 18).
const EVENT_INFO_WORDS: usize = 2 * StdEvents::COUNT;

/// The SBI calls of the standard-event check: those of [`SbiFirmware`], counted, with an event-info
/// array lent to firmware for `event_get_info`.
struct CheckFirmware {
    /// The array firmware reads and writes, if it could be allocated.
    mem: Option<FirmwareMem<EVENT_INFO_WORDS>>,
    /// The driver's copy of the array: copied to firmware's before the call and back after it.
    words: [u64; EVENT_INFO_WORDS],
    calls: [u64; Fid::COUNT],
    /// The calls themselves; no snapshot page.
    fw: SbiFirmware,
}

impl SbiEcall for CheckFirmware {
    fn sbi_ecall(&mut self, fid: Fid, args: [usize; 6]) -> sbi_pmu::firmware::SbiRet {
        if let Some(n) = self.calls.get_mut(fid.id()) {
            *n += 1;
        }
        let lent = self.mem.as_mut().filter(|_| fid == Fid::EventGetInfo);
        let Some(mem) = lent else {
            return self.fw.sbi_ecall(fid, args);
        };
        mem.write_from(&self.words);
        let ret = self.fw.sbi_ecall(fid, args);
        mem.read_into(&mut self.words);
        ret
    }

    fn read_csr(&mut self, csr: u16) -> u64 {
        self.fw.read_csr(csr)
    }

    fn event_info_mem(&mut self) -> Option<(u64, &mut [u64])> {
        let phys = self.mem.as_ref()?.phys_addr();
        Some((phys, &mut self.words))
    }
}

/// The words of the snapshot page: one page (SBI v2.0, Table 16).
const SNAPSHOT_WORDS: usize = 4096 / core::mem::size_of::<u64>();

/// The SBI PMU extension of the calling hart: the counter backend of [`CpuState`].
///
/// Each call is one `ecall` (a7 = PMU extension, a6 = function ID); counter reads are `csrr`
/// instructions. With SBI v2.0 it owns the hart's snapshot page, which firmware writes during
/// `counter_stop` with TAKE_SNAPSHOT and reads during `counter_start` with INIT_SNAPSHOT; the core
/// reaches it one word at a time, between calls.
pub(crate) struct SbiFirmware {
    page: Option<FirmwareMem<SNAPSHOT_WORDS>>,
}

impl SbiFirmware {
    /// The backend of a CPU, with a snapshot page when `snapshot` asks for one and it can be
    /// allocated (else the CPU runs without).
    fn new(snapshot: bool) -> Self {
        Self {
            page: if snapshot {
                FirmwareMem::new().ok()
            } else {
                None
            },
        }
    }

    /// Whether the snapshot page could be allocated.
    fn has_page(&self) -> bool {
        self.page.is_some()
    }
}

impl SbiEcall for SbiFirmware {
    fn sbi_ecall(&mut self, fid: Fid, args: [usize; 6]) -> sbi_pmu::firmware::SbiRet {
        let SbiRet { error, value } = arch::sbi_ecall(EXT_PMU, fid.id(), args);
        sbi_pmu::firmware::SbiRet { error, value }
    }

    fn read_csr(&mut self, csr: u16) -> u64 {
        arch::read_counter_csr(csr)
    }

    fn snapshot_phys(&mut self) -> Option<u64> {
        self.page.as_ref().map(FirmwareMem::phys_addr)
    }

    fn snapshot_word(&mut self, word: usize) -> u64 {
        self.page.as_ref().and_then(|p| p.read(word)).unwrap_or(0)
    }

    fn set_snapshot_word(&mut self, word: usize, value: u64) {
        if let Some(page) = self.page.as_mut() {
            page.write(word, value);
        }
    }
}

/// One CPU's driver state (the C driver's `struct cpu_hw_events`): the counter core and its
/// backend. The events on each counter are kept with it by the perf glue ([`CpuStates::event`]).
pub(crate) struct CpuState {
    core: CpuHwEvents,
    fw: SbiFirmware,
}

impl CpuState {
    /// The SBI call statistics of this CPU.
    pub(crate) fn stats(&self) -> PmuStats {
        *self.core.stats()
    }

    /// The use of this CPU's counters: the events holding one, the hardware and firmware
    /// counters they hold, the counters started in firmware for an event, those parked for a
    /// returning event, and those of the parked ones left running (free like any parked counter).
    pub(crate) fn counter_use(&self) -> [u64; 6] {
        let core = &self.core;
        let coasting = core.coasting_ctrs();
        [
            u64::from(core.n_events()),
            core.used_hw_ctrs(),
            core.used_fw_ctrs(),
            core.running_ctrs() & !coasting,
            core.parked_ctrs(),
            coasting,
        ]
    }
}

/// Forwards accessors of [`HwEvent`] to the glue's accessors of the same names and types.
macro_rules! forward_hw_fields {
    ($($get:ident $set:ident: $ty:ty;)*) => {
        $(
            fn $get(&self) -> $ty {
                HwPerfEvent::$get(self)
            }
            fn $set(&mut self, value: $ty) {
                HwPerfEvent::$set(self, value)
            }
        )*
    };
}

/// The event's `hw_perf_event`, as the core reads and writes it: in place.
impl HwEvent for HwPerfEvent<'_> {
    forward_hw_fields! {
        idx set_idx: i32;
        config set_config: u64;
        config_base set_config_base: usize;
        prev_count set_prev_count: u64;
        period_left set_period_left: i64;
        sample_period set_sample_period: u64;
        last_period set_last_period: u64;
    }

    fn last_tag(&self) -> u64 {
        HwPerfEvent::last_tag(self)
    }
    fn set_last_tag(&mut self, last_tag: u64) {
        HwPerfEvent::set_last_tag(self, last_tag)
    }
    // RISC-V PMUs have no extra register: its configuration word holds the event's counters.
    fn cmask(&self) -> u64 {
        self.extra_reg_config()
    }
    fn set_cmask(&mut self, cmask: u64) {
        self.set_extra_reg_config(cmask)
    }
    fn event_base(&self) -> u32 {
        // An `event_idx` has 20 bits; anything wider is not one.
        u32::try_from(HwPerfEvent::event_base(self)).unwrap_or(u32::MAX)
    }
    fn set_event_base(&mut self, event_base: u32) {
        HwPerfEvent::set_event_base(self, event_base as usize)
    }
    fn flags(&self) -> HwFlags {
        HwFlags::from_bits_retain(HwPerfEvent::flags(self))
    }
    fn set_flags(&mut self, flags: HwFlags) {
        HwPerfEvent::set_flags(self, flags.bits())
    }
    fn state(&self) -> HesState {
        HesState::from_bits_retain(HwPerfEvent::state(self))
    }
    fn set_state(&mut self, state: HesState) {
        HwPerfEvent::set_state(self, state.bits())
    }
    fn owner(&self) -> u64 {
        self.id()
    }
}

/// `riscv_pmu_start()`: starts the event, and lets user space read its counter if it may.
/// `window`: whether perf core has the PMU disabled (see `CpuHwEvents::join_window`).
fn start_event(
    info: &PmuInfo,
    cpu: &mut CpuState,
    event: &PerfEvent,
    reload: bool,
    window: impl FnOnce() -> bool,
) {
    let mut hw = event.hw();
    cpu.core.start(&mut cpu.fw, &mut hw, reload, window);
    // User space may read the counter of an mmap'd event while it runs. The start itself may wait
    // for pmu_enable; the counter holds its start value until then, which is what the mmap page
    // says it holds.
    if let Some(bit) = info.user_read_bit(&hw) {
        arch::scounteren_set(bit);
    }
    event.update_userpage();
}

/// `riscv_pmu_stop()`: user space loses the right to read the counter, which then stops; the
/// event is brought up to date (always, as in the C driver). `window`: as for [`start_event`].
fn stop_event(
    info: &PmuInfo,
    cpu: &mut CpuState,
    event: &PerfEvent,
    update: bool,
    window: impl FnOnce() -> bool,
) {
    let mut hw = event.hw();
    // The counter may stay mapped to this event while another task runs: user space loses the
    // right to read it first.
    revoke_user_access(info, &hw);
    add_count(event, cpu.core.stop(&mut cpu.fw, &mut hw, update, window));
}

/// Clears the `scounteren` bit of the event's counter if user space may read it, mmap'd or not:
/// the mapping may have gone while the event ran, and the bit must not outlive the event there.
#[inline]
fn revoke_user_access(info: &PmuInfo, hw: &HwPerfEvent<'_>) {
    if let Some(bit) = info.user_access_bit(hw) {
        arch::scounteren_clear(bit);
    }
}

/// `riscv_pmu_event_update()`'s `local64_add()` (unconditional, as there: a test would cost more
/// than adding 0).
#[inline(always)]
fn add_count(event: &PerfEvent, delta: u64) {
    event.add_count(delta);
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

#[vtable]
impl perf::Driver for RiscvPmu {
    const NAME: &'static CStr = c_str!("cpu");
    // CAST: `PERF_TYPE_RAW` is 4.
    const TYPE: i32 = PERF_TYPE_RAW as i32;

    type CpuState = CpuState;

    /// `riscv_pmu_event_init()` with `pmu_sbi_event_map()` and `pmu_sbi_event_init()`.
    fn event_init(&self, event: &PerfEvent, init: &EventInit<'_>) -> Result {
        // The driver does not support branch stack sampling.
        if event.has_branch_stack() {
            return Err(map_err_errno(MapError::NotSupported));
        }
        let attr = event_attr(event);
        let mut hw = event.hw();
        let maps = self.dt.as_ref().map(DtMaps::maps);
        let req = self
            .info
            .event_init(
                &attr,
                user_access(),
                &self.std_events(),
                maps.as_ref(),
                &mut hw,
            )
            .map_err(|err| {
                pr_debug!("event {:x}:{:x} not supported\n", attr.ty, attr.config);
                map_err_errno(err)
            })?;
        // A group is scheduled all at once or not at all: one whose events cannot all have a counter
        // at the same time would never count, so it is refused now (the C driver accepts it). Each
        // event may use the counters event_init narrowed it to: an exact check, not a count.
        let cmask = |idx: Option<EventIdx>, narrowed: u64| {
            idx.map_or(0, |idx| self.info.allowed_cmask(idx, narrowed))
        };
        let mut masks = [0u64; RISCV_MAX_COUNTERS + 1];
        let mut members = 0usize;
        init.for_each_group_member(|member| {
            if let Some(slot) = masks.get_mut(members) {
                let hw = member.hw();
                *slot = cmask(hw.event_idx(), hw.cmask());
            }
            members += 1;
        });
        if members > 0 {
            let fits = match masks.get_mut(members) {
                // More events than a PMU can have counters.
                None => false,
                Some(slot) => {
                    *slot = cmask(Some(req.event_idx), hw.cmask());
                    masks.get(..=members).is_some_and(group_fits)
                }
            };
            if !fits {
                pr_debug!(
                    "a group of {} events cannot have counters at once\n",
                    members + 1
                );
                return Err(EINVAL);
            }
        }
        Ok(())
    }

    /// `riscv_pmu_add()`.
    #[inline]
    fn add(
        &self,
        cpu: &mut CpuState,
        event: &PerfEvent,
        flags: EventFlags,
        window: PmuWindow<'_>,
    ) -> Result {
        let mut hw = event.hw();
        let start = flags.contains(EventFlags::START);
        cpu.core
            .add(&mut cpu.fw, &mut hw, start, || window.is_open())
            .map_err(|err| errno(err.errno()))?;
        // Adding with START starts the event, as `start` would.
        if let Some(bit) = self.info.user_read_bit(&hw).filter(|_| start) {
            arch::scounteren_set(bit);
        }
        event.update_userpage();
        Ok(())
    }

    /// `riscv_pmu_del()`.
    #[inline]
    fn del(
        &self,
        cpu: &mut CpuState,
        event: &PerfEvent,
        _flags: EventFlags,
        window: PmuWindow<'_>,
    ) {
        let mut hw = event.hw();
        // Deleting stops the event, as `stop` would: the counter is no longer user-readable.
        revoke_user_access(&self.info, &hw);
        add_count(
            event,
            cpu.core.del(&mut cpu.fw, &mut hw, || window.is_open()),
        );
        event.update_userpage();
    }

    /// `riscv_pmu_start()`.
    fn start(
        &self,
        cpu: &mut CpuState,
        event: &PerfEvent,
        flags: EventFlags,
        window: PmuWindow<'_>,
    ) {
        let reload = flags.contains(EventFlags::RELOAD);
        start_event(&self.info, cpu, event, reload, || window.is_open());
    }

    /// `riscv_pmu_stop()`.
    fn stop(
        &self,
        cpu: &mut CpuState,
        event: &PerfEvent,
        flags: EventFlags,
        window: PmuWindow<'_>,
    ) {
        let update = flags.contains(EventFlags::UPDATE);
        stop_event(&self.info, cpu, event, update, || window.is_open());
    }

    /// `riscv_pmu_read()`.
    fn read(&self, cpu: &mut CpuState, event: &PerfEvent) {
        add_count(event, cpu.core.read(&mut cpu.fw, &mut event.hw()));
    }

    /// `pmu->pmu_enable`: the stops and starts recorded since perf core disabled the PMU are made,
    /// one call for each kind. There is no `pmu_disable`: the callbacks in perf core's window
    /// learn of it when they have work to record (`CpuHwEvents::join_window`), so that a window
    /// whose events only coast costs nothing to open.
    #[inline]
    fn pmu_enable(&self, cpu: &mut CpuState) {
        cpu.core.leave_window(&mut cpu.fw);
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
    /// the counters of closed events kept made every later SBI PMU call of the guest slower (a stop
    /// and a start of one counter 10,300 ns of L1 time with none, 26,500 with four left running,
    /// 36,900 with six). Without snapshot memory a parked counter costs nothing and stays for the
    /// next event that needs it.
    fn destroy(&self, cpus: &CpuStates<CpuState>, event: &PerfEvent) {
        // Under KVM nothing is parked (`PmuInfo::configured_counters_readable`): no cross-CPU call.
        if !self.snapshot || self.info.configured_counters_readable {
            return;
        }
        let owner = event.id();
        percpu::for_each_possible_cpu(|cpu| {
            cpus.with_cpu(cpu, |state| {
                state.core.release_parked_of(&mut state.fw, owner)
            });
        });
    }

    /// `riscv_pmu_event_idx()`.
    fn event_idx(&self, event: &PerfEvent) -> u32 {
        self.info.event_idx(&event.hw())
    }

    /// `pmu_sbi_event_mapped()`: user space may read the event's counter from now on, on the CPU
    /// the event runs on: there now (its bit is set before the mmap page says so), and wherever it
    /// starts next (`start` sets the bit). The C driver sets the bit on every CPU of the address
    /// space's `mm_cpumask()`, which under the ASID allocator holds every CPU it ever ran on:
    /// another task there could read whatever that counter counted.
    fn event_mapped(&self, event: &PerfEvent) {
        let mut hw = event.hw();
        let flags = HwEvent::flags(&hw);
        if !user_read_allowed(flags, event.attr_type(), event.config()) {
            return;
        }
        HwEvent::set_flags(&mut hw, flags | HwFlags::USER_READ_CNT);
        let info = &self.info;
        event.on_active_cpu(&|event: &PerfEvent| {
            if let Some(bit) = info.user_read_bit(&event.hw()) {
                arch::scounteren_set(bit);
            }
        });
        event.update_userpage();
    }

    /// `pmu_sbi_event_unmapped()`: user space can no longer see the mmap page, so the right to read
    /// the counter goes: a later start sets no bit, the CPU the event runs on loses it now, and
    /// one it leaves meanwhile loses it as the event leaves (`stop` and `del` clear the bit of
    /// every event user space may read, mmap'd or not).
    fn event_unmapped(&self, event: &PerfEvent) {
        let mut hw = event.hw();
        let flags = HwEvent::flags(&hw);
        if !user_read_allowed(flags, event.attr_type(), event.config()) {
            return;
        }
        HwEvent::set_flags(&mut hw, flags - HwFlags::USER_READ_CNT);
        let info = &self.info;
        event.on_active_cpu(&|event: &PerfEvent| revoke_user_access(info, &event.hw()));
        event.update_userpage();
    }
}

/// The counter overflow interrupt handler (`pmu_sbi_ovf_handler()`).
pub(crate) struct PmuSbiOverflow {
    info: PmuInfo,
    cpus: Arc<CpuStates<CpuState>>,
}

impl PmuSbiOverflow {
    /// The handler of the counters of `pmu`, whose CPUs' state is `cpus`.
    pub(crate) fn new(pmu: &RiscvPmu, cpus: Arc<CpuStates<CpuState>>) -> Self {
        Self {
            info: pmu.info,
            cpus,
        }
    }
}

impl PmuSbiOverflow {
    /// Tells perf core of the overflow of `event`, which [`CpuHwEvents::overflow_event`] brought up
    /// to date. The CPU's state is not borrowed meanwhile: perf core may read the other events of
    /// the group through the `read` callback.
    #[inline(always)]
    fn report(&self, ctx: &IrqContext<'_>, event: &PerfEvent, result: &OverflowEvent) {
        // The counter restarts from a new value: where user space reads it directly, the mmap
        // page's offset (the count less that value) follows, or a count read from user space
        // would miss what was counted so far.
        if result.publish {
            event.update_userpage();
        }
        if result.sample && event.overflow(ctx, result.last_period) {
            // perf core throttles the event: it stays stopped until perf core starts it again
            // (the C driver lets it run on).
            self.cpus.with_local(ctx.cpu(), |state| {
                stop_event(&self.info, state, event, true, || false)
            });
        }
    }
}

impl PercpuHandler for PmuSbiOverflow {
    #[inline(always)]
    fn handle(&self, ctx: &IrqContext<'_>) -> bool {
        let cpu = ctx.cpu();
        // Every running hardware counter stops (one SBI call) before the overflow bits are read,
        // and in the same borrow of the CPU's state the first overflowed counter's event is
        // brought up to date and given its next period (with one sampling event, the only one).
        let Some((overflowed, first)) = self.cpus.with_local_events(cpu, |state, events| {
            let overflowed = state.core.overflow_begin(&mut state.fw);
            let first = counters_in(overflowed).find_map(|idx| {
                let event = events.get(idx)?;
                Some((idx, event, overflow_step(state, event)?))
            });
            (overflowed, first)
        }) else {
            return false;
        };
        // The pending bit is cleared only now that the counters are stopped: an overflow before
        // this point is in the bits just read, none can come after.
        arch::clear_pending_interrupt(RV_IRQ_PMU);
        let Some((first_idx, event, result)) = first else {
            // No overflowed counter had an event to update.
            self.cpus
                .with_local(cpu, |state| state.core.overflow_end(&mut state.fw));
            return overflowed != 0;
        };
        self.report(ctx, event, &result);
        // The other overflowed counters, one borrow each around perf core's part.
        // Those above the first (`counters_in` gives counters below 64, in increasing order).
        for idx in counters_in(overflowed & !(u64::MAX >> (63 - first_idx))) {
            let Some(event) = self.cpus.event(cpu, idx) else {
                continue;
            };
            let result = self
                .cpus
                .with_local(cpu, |state| overflow_step(state, event));
            if let Some(result) = result.flatten() {
                self.report(ctx, event, &result);
            }
        }
        // The overflowed counters start again from their next period, the others from their
        // values, in one call (or one per new value without snapshot memory).
        self.cpus
            .with_local(cpu, |state| state.core.overflow_end(&mut state.fw));
        true
    }
}

/// The overflow handler's step for the event of an overflowed counter, in a borrow of the CPU's
/// state: the count brought up to date and the next period ([`CpuHwEvents::overflow_event`]).
#[inline(always)]
fn overflow_step(state: &mut CpuState, event: &PerfEvent) -> Option<OverflowEvent> {
    let result = state.core.overflow_event(&mut state.fw, &mut event.hw())?;
    add_count(event, result.delta);
    Some(result)
}

/// Stops the events of a CPU while it is in a low-power state (`riscv_pm_pmu_notify()`), with one
/// SBI call each way.
pub(crate) struct PmuSbiCpuPm {
    info: PmuInfo,
    cpus: Arc<CpuStates<CpuState>>,
}

impl PmuSbiCpuPm {
    /// The notifier of the counters of `pmu`, whose CPUs' state is `cpus`.
    pub(crate) fn new(pmu: &RiscvPmu, cpus: Arc<CpuStates<CpuState>>) -> Self {
        Self {
            info: pmu.info,
            cpus,
        }
    }
}

impl CpuPmNotify for PmuSbiCpuPm {
    /// `CPU_PM_ENTER`: the running events stop, their counts brought up to date.
    fn enter(&self, cpu: &LocalCpu<'_>) {
        self.cpus.with_local(cpu, |state| {
            if state.core.n_events() == 0 {
                return;
            }
            let mut stopped = 0u64;
            state.core.pmu_disable();
            for idx in 0..RISCV_MAX_COUNTERS {
                let Some(event) = self.cpus.event(cpu, idx) else {
                    continue;
                };
                if HwEvent::state(&event.hw()).contains(HesState::STOPPED) {
                    continue;
                }
                stop_event(&self.info, state, event, true, || false);
                stopped |= 1 << idx;
            }
            state.core.pmu_enable(&mut state.fw);
            state.core.set_pm_saved(stopped);
        });
    }

    /// `CPU_PM_EXIT` and `CPU_PM_ENTER_FAILED`: the events stopped at the enter start again; those
    /// perf had stopped stay stopped (the C driver starts them too).
    fn exit(&self, cpu: &LocalCpu<'_>) {
        self.cpus.with_local(cpu, |state| {
            let saved = state.core.take_pm_saved();
            if saved == 0 {
                return;
            }
            state.core.pmu_disable();
            for idx in 0..RISCV_MAX_COUNTERS {
                if saved & (1 << idx) == 0 {
                    continue;
                }
                if let Some(event) = self.cpus.event(cpu, idx) {
                    start_event(&self.info, state, event, true, || false);
                }
            }
            state.core.pmu_enable(&mut state.fw);
        });
    }
}

/// What every CPU needs before its counters serve perf (`pmu_sbi_starting_cpu()`), and when it
/// stops (`pmu_sbi_dying_cpu()`): the counters reset, and the overflow interrupt enabled.
///
/// It owns the overflow interrupt: the hotplug registration runs `dying` on every CPU (disabling
/// the interrupt there) before it drops this, and with it the interrupt.
pub(crate) struct PmuSbiStartingCpu {
    cpus: Arc<CpuStates<CpuState>>,
    irq: Option<PercpuIrq<PmuSbiOverflow>>,
    /// Set when firmware refused snapshot memory: CPUs that start later do not ask again.
    no_snapshot: AtomicBool,
    /// Set once the outcome of the snapshot setup was logged (one line per load).
    logged: AtomicBool,
}

impl PmuSbiStartingCpu {
    /// The hotplug callbacks of the CPUs' state `cpus`, enabling `irq` on each CPU if there is one.
    pub(crate) fn new(
        cpus: Arc<CpuStates<CpuState>>,
        irq: Option<PercpuIrq<PmuSbiOverflow>>,
    ) -> Self {
        Self {
            cpus,
            irq,
            no_snapshot: AtomicBool::new(false),
            logged: AtomicBool::new(false),
        }
    }
}

impl CpuStarting for PmuSbiStartingCpu {
    const NAME: &'static CStr = c_str!("perf/riscv/pmu_sbi_rust:starting");

    fn starting(&self, cpu: &LocalCpu<'_>) -> Result {
        arch::scounteren_write(scounteren_base(user_access()));
        // Firmware leaves `cycle` and `instret` running from boot, and a CPU may come back with
        // mappings from before it went down: every counter is stopped and reset, and the CPU's
        // state forgotten. With SBI v2.0 the CPU's snapshot page is registered (firmware that
        // refuses it once is not asked again); without it counters are read with SBI calls.
        let use_snapshot = !self.no_snapshot.load(Ordering::Relaxed);
        let outcome = self.cpus.with_local(cpu, |state| {
            let result = state.core.cpu_starting(&mut state.fw, use_snapshot);
            let missing_page = use_snapshot
                && state.core.info().version.at_least(SbiVersion::V2_0)
                && !state.fw.has_page();
            (result, state.core.snapshot_enabled(), missing_page)
        });
        if let Some((result, enabled, missing_page)) = outcome {
            if let Err(err) = result {
                self.no_snapshot.store(true, Ordering::Relaxed);
                if !self.logged.swap(true, Ordering::Relaxed) {
                    pr_info!(
                        "no SBI PMU snapshot memory (firmware answered {:?}): counters are read with SBI calls\n",
                        err
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
        if let Some(irq) = &self.irq {
            arch::clear_pending_interrupt(RV_IRQ_PMU);
            irq.enable_local(cpu);
        }
        Ok(())
    }

    fn dying(&self, cpu: &LocalCpu<'_>) {
        if let Some(irq) = &self.irq {
            irq.disable_local(cpu);
        }
        // perf has moved every event away: the counters kept mapped for returning events are
        // released, so no mapping outlives the CPU or the module, and user mode reads no counter.
        // It keeps reading `time` (the vDSO's clock): after an unload nothing else would grant it,
        // and under KVM a guest's `scounteren` starts at 0.
        arch::scounteren_write(scounteren_base(UserAccess::NoUserAccess));
        self.cpus.with_local(cpu, |state| {
            let _ = state.core.cpu_dying(&mut state.fw);
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
    pmu: Arc<RiscvPmu>,
    cpus: Arc<CpuStates<CpuState>>,
}

impl SbiCallStats {
    /// Statistics of `pmu`, whose CPUs' state is `cpus`.
    pub(crate) fn new(pmu: Arc<RiscvPmu>, cpus: Arc<CpuStates<CpuState>>) -> Self {
        Self { pmu, cpus }
    }
}

/// Writes one line of the statistics: a label, the calls of each SBI PMU function, and the flushes,
/// reused counters and failed calls.
fn stats_line(out: &mut SeqFile<'_>, label: core::fmt::Arguments<'_>, st: &PmuStats) -> Result {
    let c = &st.calls;
    let line = CString::try_from_fmt(fmt!(
        "{} {} {} {} {} {} {} {} {} {} {} {} {}\n",
        label,
        c[0],
        c[1],
        c[2],
        c[3],
        c[4],
        c[5],
        c[6],
        c[7],
        c[8],
        st.flushes,
        st.reused,
        st.errors
    ))?;
    out.puts(&line);
    Ok(())
}

impl Show for SbiCallStats {
    const FILES: &'static [&'static CStr] = &[c_str!("sbi_calls"), c_str!("counters")];

    fn show(&self, file: usize, out: &mut SeqFile<'_>) -> Result {
        if file == 1 {
            return self.show_counters(out);
        }
        out.puts(c_str!(
            "cpu num_counters counter_get_info counter_config_matching counter_start counter_stop counter_fw_read counter_fw_read_hi snapshot_set_shmem event_get_info flushes reused errors\n"
        ));
        let mut result = Ok(());
        percpu::for_each_possible_cpu(|cpu| {
            // The statistics live with the CPU's counters, so they are copied on that CPU.
            if let Some(st) = self.cpus.with_cpu(cpu, |state| state.stats()) {
                result = result.and_then(|()| stats_line(out, fmt!("{}", cpu), &st));
            }
        });
        result?;
        let check = PmuStats {
            calls: self.pmu.std_events_calls(),
            ..PmuStats::default()
        };
        stats_line(out, fmt!("check"), &check)
    }
}

impl SbiCallStats {
    /// The `counters` file.
    fn show_counters(&self, out: &mut SeqFile<'_>) -> Result {
        out.puts(c_str!(
            "cpu events used_hw used_fw running parked coasting\n"
        ));
        let mut result = Ok(());
        percpu::for_each_possible_cpu(|cpu| {
            // The counters' state is read on its CPU, which owns it.
            if let Some([events, hw, fw, running, parked, coasting]) =
                self.cpus.with_cpu(cpu, |state| state.counter_use())
            {
                result = result.and_then(|()| {
                    let line = CString::try_from_fmt(fmt!(
                        "{} {} {:#x} {:#x} {:#x} {:#x} {:#x}\n",
                        cpu,
                        events,
                        hw,
                        fw,
                        running,
                        parked,
                        coasting
                    ))?;
                    out.puts(&line);
                    Ok(())
                });
            }
        });
        result
    }
}
