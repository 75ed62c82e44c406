// SPDX-License-Identifier: GPL-2.0

//! The SBI PMU driver: counter discovery at probe, and the perf callbacks of the `cpu` PMU.
//!
//! C version of this driver: [`drivers/perf/riscv_pmu_sbi.c`](srctree/drivers/perf/riscv_pmu_sbi.c)
//! with the core library [`drivers/perf/riscv_pmu.c`](srctree/drivers/perf/riscv_pmu.c). The
//! functions carry the names of their C counterparts.
//!
//! The logic lives in the `sbi_pmu` crate: the event mapping (`sbi_pmu::events`), the counter table
//! (`sbi_pmu::counters`) and the per-CPU core (`sbi_pmu::pmu::CpuHwEvents`), which batches the SBI
//! calls of a context switch. The callbacks here copy the event's `hw_perf_event` into the crate's
//! plain copy, run the operation with this CPU's SBI calls, and copy the result back.
//!
//! Every event kind the C driver counts is counted: hardware, cache, raw and firmware events, with
//! the C driver's errno for requests it refuses. With Sscofpmf, hardware counters sample through the
//! counter overflow interrupt (`pmu_sbi_ovf_handler()`); throttled events are stopped until perf
//! starts them again. Events are stopped while their CPU is in a low-power state (CPU PM).
//!
//! User space reads counters directly as the `kernel.perf_user_access` sysctl allows (0: never; 1,
//! the default: the counter of an event it has mmap'd, while the event runs; 2, legacy: `cycle`
//! and `instret` always), through the `scounteren` bits of each CPU.

use crate::glue::{
    cpuhp::CpuStarting,
    debugfs::{SeqFile, Show},
    deferred::{Deferred, Job},
    percpu::{self, PerCpu},
    perf::{
        self, ActiveEvents, Capabilities, CpuPmNotify, EventFlags, Mm, Overflow, OverflowHandler,
        PercpuIrq, PerfEvent,
    },
    platform,
    sbi::{self, EcallFirmware},
    sysctl::IntSysctl,
    sysfs::{AttributeGroup, AttributeGroups, Attributes, FormatAttr},
};
use core::sync::atomic::{AtomicI32, Ordering};
use kernel::{c_str, fmt, prelude::*, str::CString, sync::Arc};
use sbi_pmu::{
    abi::{SbiVersion, EXT_PMU, RISCV_MAX_COUNTERS},
    counters::{
        group_fits, scounteren_base, user_read_allowed, EventFlags as HwFlags, HesState,
        HwPerfEvent, PmuInfo,
    },
    events::{EventAttr, MapError, StdEvents, UserAccess, PERF_TYPE_RAW},
    pmu::{CpuHwEvents, PmuStats, Strategy},
};

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
        percpu::on_each_cpu(&|| sbi::write_scounteren(base));
    }
}

static FORMAT_EVENT: FormatAttr = FormatAttr::new(c_str!("event"), c_str!("config:0-47"));
static FORMAT_EVENT_V2: FormatAttr = FormatAttr::new(c_str!("event"), c_str!("config:0-55"));
static FORMAT_FIRMWARE: FormatAttr = FormatAttr::new(c_str!("firmware"), c_str!("config:62-63"));
static FORMAT_ATTRS: Attributes<2> = Attributes::new([&FORMAT_EVENT, &FORMAT_FIRMWARE]);
static FORMAT_ATTRS_V2: Attributes<2> = Attributes::new([&FORMAT_EVENT_V2, &FORMAT_FIRMWARE]);
static FORMAT_GROUP: AttributeGroup = AttributeGroup::new(c_str!("format"), &FORMAT_ATTRS);
static FORMAT_GROUP_V2: AttributeGroup = AttributeGroup::new(c_str!("format"), &FORMAT_ATTRS_V2);

/// The sysfs groups of the PMU (`riscv_pmu_attr_groups`): the same `format/` as the C driver.
static RISCV_PMU_ATTR_GROUPS: AttributeGroups<1> = AttributeGroups::new([&FORMAT_GROUP]);

/// The sysfs groups with SBI v3.0 or later, where raw events carry 56 bits (raw events v2).
static RISCV_PMU_ATTR_GROUPS_V2: AttributeGroups<1> = AttributeGroups::new([&FORMAT_GROUP_V2]);

/// Converts an errno of the `sbi_pmu` crate (positive) to an [`Error`].
fn errno(errno: i32) -> Error {
    Error::from_errno(-errno)
}

/// Converts an event mapping error to the errno the C driver returns for it.
fn map_err_errno(err: MapError) -> Error {
    errno(err.errno())
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
                "the C driver ({}) already provides the cpu PMU; boot with initcall_blacklist=pmu_sbi_devinit to use this driver\n",
                name
            );
            return Err(EBUSY);
        }
    }
    Ok(())
}

impl RiscvPmu {
    /// Finds the SBI PMU and its counters (`pmu_sbi_devinit()` and `pmu_sbi_device_probe()`), and
    /// which standard events they can count (`pmu_sbi_check_std_events()`).
    pub(crate) fn probe(fw: &mut EcallFirmware) -> Result<Self> {
        let version = sbi::spec_version();
        if !version.at_least(SbiVersion::V0_3) {
            pr_err!(
                "SBI specification {}.{} has no PMU extension (0.3 or later needed)\n",
                version.major,
                version.minor
            );
            return Err(ENODEV);
        }
        if !sbi::probe_extension(EXT_PMU) {
            pr_err!("the SBI implementation has no PMU extension\n");
            return Err(ENODEV);
        }
        pr_info!("SBI PMU extension is available\n");

        let info = PmuInfo::probe(fw, version).map_err(|_| {
            pr_err!("SBI PMU extension doesn't provide any counters\n");
            ENODEV
        })?;
        if info.cmask == 0 {
            pr_err!("SBI PMU extension doesn't provide any counters\n");
            return Err(ENODEV);
        }
        pr_info!(
            "{} firmware and {} hardware counters\n",
            info.num_fw_counters(),
            info.num_hw_counters()
        );

        let sscofpmf = sbi::has_sscofpmf();
        if !sscofpmf {
            pr_info!(
                "Perf sampling/filtering is not supported as sscof extension is not available\n"
            );
        }

        Ok(Self {
            info,
            std_events: None,
            sscofpmf,
            overflow_irq: false,
        })
    }

    /// Starts finding which standard events the platform can count, on the system workqueue: it
    /// is a few SBI calls for each of the 52 events, which module load does not wait for. The
    /// first event_init waits for it, so no event is counted before it is done.
    pub(crate) fn start_std_events_check(&mut self) -> Result {
        let check = KBox::pin_init(
            Deferred::new(StdEventsCheck { info: self.info }),
            GFP_KERNEL,
        )?;
        self.std_events = Some(check);
        Ok(())
    }

    /// The standard events the platform can count, waiting for the check if it still runs.
    fn std_events(&self) -> StdEvents {
        self.std_events
            .as_ref()
            .and_then(|check| check.wait())
            .copied()
            .unwrap_or(StdEvents::ALL)
    }

    /// Whether the harts have Sscofpmf, whose counter overflow interrupt sampling needs.
    pub(crate) fn has_sscofpmf(&self) -> bool {
        self.sscofpmf
    }

    /// The handler of the counter overflow interrupt.
    pub(crate) fn overflow_handler(&self) -> PmuSbiOverflow {
        PmuSbiOverflow { info: self.info }
    }

    /// The CPU PM notifier.
    pub(crate) fn cpu_pm_notifier(&self) -> PmuSbiCpuPm {
        PmuSbiCpuPm { info: self.info }
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

    /// What perf core may ask of this PMU: without the overflow interrupt (no Sscofpmf, or no
    /// interrupt), no sampling and no mode filtering, as in the C driver.
    pub(crate) fn capabilities(&self) -> Capabilities {
        if self.overflow_irq {
            Capabilities::NONE
        } else {
            Capabilities::NO_INTERRUPT | Capabilities::NO_EXCLUDE
        }
    }

    /// The sysfs groups: `format/event` covers the raw event bits of the SBI version.
    pub(crate) fn attr_groups(&self) -> &'static AttributeGroups<1> {
        if self.info.version.at_least(SbiVersion::V3_0) {
            &RISCV_PMU_ATTR_GROUPS_V2
        } else {
            &RISCV_PMU_ATTR_GROUPS
        }
    }

    /// The per-CPU state every CPU starts with.
    pub(crate) fn new_cpu_hw_events(&self) -> CpuHwEvents {
        CpuHwEvents::new(&self.info, Strategy::Batched)
    }
}

/// `pmu_sbi_check_std_events()` as a job for the system workqueue.
pub(crate) struct StdEventsCheck {
    info: PmuInfo,
}

impl Job for StdEventsCheck {
    type Output = StdEvents;

    fn run(&self) -> StdEvents {
        // The check configures and releases counters of the hart it runs on, so it stays on one
        // hart. No event exists meanwhile: event_init waits for the check.
        sbi::on_this_cpu(|| self.info.check_std_events(&mut EcallFirmware))
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

/// The counter and flags of an event, which is all the user-access decisions need: the mmap
/// callbacks and `event_idx` run outside the counting path and need not copy the whole state.
fn hw_access(event: &PerfEvent) -> HwPerfEvent {
    HwPerfEvent {
        idx: event
            .hw_idx()
            .and_then(|idx| i32::try_from(idx).ok())
            .unwrap_or(-1),
        flags: HwFlags::from_bits_retain(event.hw_flags()),
        ..HwPerfEvent::default()
    }
}

/// Copies the event's `hw_perf_event` into the crate's plain copy.
///
/// The counter mask allowed for the event is kept in a 64-bit word of `hw_perf_event` that RISC-V
/// does not use otherwise.
fn hw_load(event: &PerfEvent) -> HwPerfEvent {
    HwPerfEvent {
        idx: event
            .hw_idx()
            .and_then(|idx| i32::try_from(idx).ok())
            .unwrap_or(-1),
        // CAST: `event_base` holds an `event_idx`, which has 20 bits.
        event_base: event.hw_event_base() as u32,
        config: event.hw_config(),
        config_base: event.hw_config_base(),
        cmask: event.hw_driver_word(),
        flags: HwFlags::from_bits_retain(event.hw_flags()),
        state: HesState::from_bits_retain(event.hw_state_bits()),
        prev_count: event.prev_count(),
        period_left: event.period_left(),
        sample_period: event.sample_period(),
        last_period: event.last_period(),
        owner: event.id(),
    }
}

/// Copies the crate's plain copy back into the event's `hw_perf_event`.
///
/// The flags and the counter mask are not copied back: only event_init sets the mask, which the
/// event_init of another member of the group may read meanwhile, and only event_init and the mmap
/// callbacks set the flags (the latter from any CPU), so writing back a copy could undo a
/// concurrent mmap's change.
fn hw_store(event: &PerfEvent, hw: &HwPerfEvent) {
    event.set_hw_idx(usize::try_from(hw.idx).ok());
    event.set_hw_event_base(hw.event_base as usize);
    event.set_hw_config(hw.config);
    event.set_hw_config_base(hw.config_base);
    event.set_hw_state_bits(hw.state.bits());
    event.set_prev_count(hw.prev_count);
    event.set_period_left(hw.period_left);
    event.set_sample_period(hw.sample_period);
    event.set_last_period(hw.last_period);
}

/// Runs a counting operation of the per-CPU core on the event, adds the count it returns to the
/// event (`riscv_pmu_event_update()`'s `local64_add()`), and publishes the event's state to its
/// user page.
fn with_hw(
    cpuc: &mut CpuHwEvents,
    event: &PerfEvent,
    op: impl FnOnce(&mut CpuHwEvents, &mut EcallFirmware, &mut HwPerfEvent) -> u64,
) {
    let mut hw = hw_load(event);
    let delta = op(cpuc, &mut EcallFirmware, &mut hw);
    hw_store(event, &hw);
    if delta != 0 {
        event.add_count(delta);
    }
}

/// `riscv_pmu_start()`: starts the event, and lets user space read its counter if it may.
fn start_event(info: &PmuInfo, cpuc: &mut CpuHwEvents, event: &PerfEvent, reload: bool) {
    with_hw(cpuc, event, |cpuc, fw, hw| {
        cpuc.start(fw, hw, reload);
        // User space may read the counter of an mmap'd event while it runs. The start itself may
        // wait for pmu_enable; the counter holds its start value until then, which is what the
        // mmap page says it holds.
        if let Some(bit) = info.user_read_bit(hw) {
            sbi::scounteren_set(bit);
        }
        0
    });
    event.update_userpage();
}

/// `riscv_pmu_stop()`: user space loses the right to read the counter, which then stops; the
/// event is brought up to date (always, as in the C driver).
fn stop_event(info: &PmuInfo, cpuc: &mut CpuHwEvents, event: &PerfEvent, update: bool) {
    with_hw(cpuc, event, |cpuc, fw, hw| {
        // The counter may stay mapped to this event while another task runs: user space loses the
        // right to read it first.
        if let Some(bit) = info.user_read_bit(hw) {
            sbi::scounteren_clear(bit);
        }
        cpuc.stop(fw, hw, update)
    });
}

#[vtable]
impl perf::Driver for RiscvPmu {
    const NAME: &'static CStr = c_str!("cpu");
    // CAST: `PERF_TYPE_RAW` is 4.
    const TYPE: i32 = PERF_TYPE_RAW as i32;

    type CpuData = CpuHwEvents;

    /// `riscv_pmu_event_init()` with `pmu_sbi_event_map()` and `pmu_sbi_event_init()`.
    fn event_init(&self, event: &PerfEvent) -> Result {
        // The driver does not support branch stack sampling.
        if event.has_branch_stack() {
            return Err(map_err_errno(MapError::NotSupported));
        }
        let attr = event_attr(event);
        let mut hw = HwPerfEvent {
            sample_period: event.sample_period(),
            period_left: event.period_left(),
            last_period: event.last_period(),
            ..HwPerfEvent::default()
        };
        self.info
            .event_init(&attr, user_access(), &self.std_events(), &mut hw)
            .map_err(|err| {
                pr_debug!("event {:x}:{:x} not supported\n", attr.ty, attr.config);
                map_err_errno(err)
            })?;
        // A group is scheduled all at once or not at all: one whose events cannot all have a counter
        // at the same time would never count, so it is refused now (the C driver accepts it).
        let mut masks = [0u64; RISCV_MAX_COUNTERS];
        let mut members = 0usize;
        event.for_each_group_member(|member| {
            if let Some(slot) = masks.get_mut(members) {
                *slot = member.hw_driver_word();
            }
            members += 1;
        });
        if members > 0 {
            let fits = match masks.get_mut(members) {
                // More events than a PMU can have counters.
                None => false,
                Some(slot) => {
                    *slot = hw.cmask;
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
        hw_store(event, &hw);
        event.set_hw_driver_word(hw.cmask);
        event.set_hw_flags(hw.flags.bits());
        Ok(())
    }

    /// `riscv_pmu_add()`.
    fn add(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent, flags: EventFlags) -> Result {
        let mut hw = hw_load(event);
        let start = flags.contains(EventFlags::START);
        let result = cpuc.add(&mut EcallFirmware, &mut hw, start);
        hw_store(event, &hw);
        result.map_err(|err| errno(err.errno()))?;
        // Adding with START starts the event, as `start` would.
        if let Some(bit) = self.info.user_read_bit(&hw).filter(|_| start) {
            sbi::scounteren_set(bit);
        }
        event.update_userpage();
        Ok(())
    }

    /// `riscv_pmu_del()`.
    fn del(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent, _flags: EventFlags) {
        with_hw(cpuc, event, |cpuc, fw, hw| {
            // Deleting stops the event, as `stop` would: the counter is no longer user-readable.
            if let Some(bit) = self.info.user_read_bit(hw) {
                sbi::scounteren_clear(bit);
            }
            cpuc.del(fw, hw)
        });
        event.update_userpage();
    }

    /// `riscv_pmu_start()`.
    fn start(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent, flags: EventFlags) {
        start_event(&self.info, cpuc, event, flags.contains(EventFlags::RELOAD));
    }

    /// `riscv_pmu_stop()`.
    fn stop(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent, flags: EventFlags) {
        stop_event(&self.info, cpuc, event, flags.contains(EventFlags::UPDATE));
    }

    /// `riscv_pmu_read()`.
    fn read(&self, cpuc: &mut CpuHwEvents, event: &PerfEvent) {
        with_hw(cpuc, event, |cpuc, fw, hw| cpuc.read(fw, hw));
    }

    /// `pmu->pmu_disable`: from here to `pmu_enable`, stops and starts are only recorded.
    fn pmu_disable(&self, cpuc: &mut CpuHwEvents) {
        cpuc.pmu_disable();
    }

    /// `pmu->pmu_enable`: the recorded stops and starts are made, one call for each kind.
    fn pmu_enable(&self, cpuc: &mut CpuHwEvents) {
        cpuc.pmu_enable(&mut EcallFirmware);
    }

    /// `riscv_pmu_event_idx()`.
    fn event_idx(&self, event: &PerfEvent) -> u32 {
        self.info.event_idx(&hw_access(event))
    }

    /// `pmu_sbi_event_mapped()`: user space may read the event's counter from now on, on the CPUs
    /// that run the address space, where the event runs now (its bit is set there before the mmap
    /// page says so) or will (`start` sets the bit).
    fn event_mapped(&self, event: &PerfEvent, mm: &Mm) {
        let flags = HwFlags::from_bits_retain(event.hw_flags());
        if !user_read_allowed(flags, event.attr_type(), event.config()) {
            return;
        }
        event.set_hw_flags((flags | HwFlags::USER_READ_CNT).bits());
        if let Some(bit) = self.info.user_read_bit(&hw_access(event)) {
            mm.on_each_cpu(&|| sbi::scounteren_set(bit));
        }
        event.update_userpage();
    }

    /// `pmu_sbi_event_unmapped()`: user space can no longer see the mmap page, so the right to read
    /// the counter goes.
    fn event_unmapped(&self, event: &PerfEvent, mm: &Mm) {
        let flags = HwFlags::from_bits_retain(event.hw_flags());
        if !user_read_allowed(flags, event.attr_type(), event.config()) {
            return;
        }
        let bit = self.info.user_read_bit(&hw_access(event));
        event.set_hw_flags((flags - HwFlags::USER_READ_CNT).bits());
        if let Some(bit) = bit {
            mm.on_each_cpu(&|| sbi::scounteren_clear(bit));
        }
        event.update_userpage();
    }

    /// `pmu_sbi_ctr_get_width()`.
    fn ctr_width(&self, idx: usize) -> Option<u8> {
        self.info.ctr_width(idx)
    }
}

/// The counter overflow interrupt handler (`pmu_sbi_ovf_handler()`).
pub(crate) struct PmuSbiOverflow {
    info: PmuInfo,
}

impl OverflowHandler for PmuSbiOverflow {
    type CpuData = CpuHwEvents;

    fn overflow(&self, cpuc: &mut CpuHwEvents, ovf: &Overflow<'_>) -> bool {
        let fw = &mut EcallFirmware;
        // Every running hardware counter stops (one SBI call) before the overflow bits are read.
        let overflowed = cpuc.overflow_begin(fw);
        // The pending bit is cleared only now that the counters are stopped: an overflow before
        // this point is in the bits just read, none can come after.
        sbi::clear_overflow_pending();
        let mut pending = overflowed;
        while pending != 0 {
            // CAST: trailing_zeros of a non-zero u64 is below 64.
            let idx = pending.trailing_zeros() as usize;
            pending &= pending - 1;
            let Some(event) = ovf.events.get(idx) else {
                continue;
            };
            let mut hw = hw_load(event);
            let Some(result) = cpuc.overflow_event(fw, &mut hw) else {
                continue;
            };
            hw_store(event, &hw);
            if result.delta != 0 {
                event.add_count(result.delta);
            }
            if result.sample && ovf.report(event, result.last_period) {
                // perf core throttles the event: it stays stopped until perf core starts it again
                // (the C driver lets it run on).
                stop_event(&self.info, cpuc, event, true);
            }
        }
        // The overflowed counters start again from their next period, the others from their
        // values, in one call (or one per new value without snapshot memory).
        cpuc.overflow_end(fw);
        overflowed != 0
    }
}

/// Stops the events of a CPU while it is in a low-power state (`riscv_pm_pmu_notify()`), with one
/// SBI call each way.
pub(crate) struct PmuSbiCpuPm {
    info: PmuInfo,
}

impl CpuPmNotify for PmuSbiCpuPm {
    type CpuData = CpuHwEvents;

    /// `CPU_PM_ENTER`: the running events stop, their counts brought up to date.
    fn enter(&self, cpuc: &mut CpuHwEvents, events: &ActiveEvents<'_>) {
        if cpuc.n_events() == 0 {
            return;
        }
        let mut stopped = 0u64;
        cpuc.pmu_disable();
        events.for_each(|idx, event| {
            if HesState::from_bits_retain(event.hw_state_bits()).contains(HesState::STOPPED) {
                return;
            }
            stop_event(&self.info, cpuc, event, true);
            stopped |= 1 << idx;
        });
        cpuc.pmu_enable(&mut EcallFirmware);
        cpuc.set_pm_saved(stopped);
    }

    /// `CPU_PM_EXIT` and `CPU_PM_ENTER_FAILED`: the events stopped at the enter start again; those
    /// perf had stopped stay stopped (the C driver starts them too).
    fn exit(&self, cpuc: &mut CpuHwEvents, events: &ActiveEvents<'_>) {
        let saved = cpuc.take_pm_saved();
        if saved == 0 {
            return;
        }
        cpuc.pmu_disable();
        events.for_each(|idx, event| {
            if saved & (1 << idx) != 0 {
                start_event(&self.info, cpuc, event, true);
            }
        });
        cpuc.pmu_enable(&mut EcallFirmware);
    }
}

/// What every CPU needs before its counters serve perf (`pmu_sbi_starting_cpu()`), and when it
/// stops (`pmu_sbi_dying_cpu()`): the counters reset, and the overflow interrupt enabled.
pub(crate) struct PmuSbiStartingCpu {
    irq: Option<PercpuIrq>,
}

impl PmuSbiStartingCpu {
    /// The hotplug callbacks, enabling `irq` on each CPU if there is one.
    pub(crate) fn new(irq: Option<PercpuIrq>) -> Self {
        Self { irq }
    }
}

impl CpuStarting for PmuSbiStartingCpu {
    const NAME: &'static CStr = c_str!("perf/riscv/pmu_sbi_rust:starting");

    type CpuData = CpuHwEvents;

    fn starting(&self, _cpu: u32, cpuc: &mut CpuHwEvents) -> Result {
        sbi::write_scounteren(scounteren_base(user_access()));
        // Firmware leaves `cycle` and `instret` running from boot, and a CPU may come back with
        // mappings from before it went down: every counter is stopped and reset, and the CPU's
        // state forgotten. Snapshot memory is not used yet.
        let _ = cpuc.cpu_starting(&mut EcallFirmware, false);
        if let Some(irq) = self.irq {
            irq.enable_here();
        }
        Ok(())
    }

    fn dying(&self, _cpu: u32, cpuc: &mut CpuHwEvents) {
        if let Some(irq) = self.irq {
            irq.disable_here();
        }
        // perf has moved every event away: the counters kept mapped for returning events are
        // released, so no mapping outlives the CPU or the module, and user mode reads no counter.
        sbi::write_scounteren(0);
        let _ = cpuc.cpu_dying(&mut EcallFirmware);
    }
}

/// The debugfs file of SBI call statistics: one line per online CPU with the number of calls of
/// each SBI PMU function made so far, the flushes of batched work, the counters taken back from a
/// parked mapping, and the calls that failed.
pub(crate) struct SbiCallStats {
    cpu_data: Arc<PerCpu<CpuHwEvents>>,
}

impl SbiCallStats {
    /// Statistics of the CPUs' state in `cpu_data`.
    pub(crate) fn new(cpu_data: Arc<PerCpu<CpuHwEvents>>) -> Self {
        Self { cpu_data }
    }
}

impl Show for SbiCallStats {
    fn show(&self, out: &mut SeqFile<'_>) -> Result {
        out.puts(c_str!(
            "cpu num_counters counter_get_info counter_config_matching counter_start counter_stop counter_fw_read counter_fw_read_hi snapshot_set_shmem event_get_info flushes reused errors\n"
        ));
        let mut result = Ok(());
        percpu::for_each_possible_cpu(|cpu| {
            if result.is_err() {
                return;
            }
            // The statistics live with the CPU's counters, so they are copied on that CPU.
            let Some(st): Option<PmuStats> = self.cpu_data.with_cpu(cpu, |cpuc| *cpuc.stats())
            else {
                return;
            };
            let c = &st.calls;
            match CString::try_from_fmt(fmt!(
                "{} {} {} {} {} {} {} {} {} {} {} {} {}\n",
                cpu,
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
            )) {
                Ok(line) => out.puts(&line),
                Err(err) => result = Err(err),
            }
        });
        result
    }
}
