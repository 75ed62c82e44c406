// SPDX-License-Identifier: GPL-2.0

//! A small simulated system for driving a per-CPU driver the way perf core does: several CPUs (one
//! [`Model`] hart and one driver each), perf events with the state perf keeps for them, and the
//! ground truth of how many simulated events each one should have counted.
//!
//! The harness plays perf core: it calls event_init, add, del, start, stop, read and the
//! `pmu_disable`/`pmu_enable` bracket, and takes overflow interrupts as soon as a counter wraps, as
//! hardware would. It never lets simulated events happen inside a disable window, where the kernel
//! runs with interrupts off and perf's own bookkeeping is in flux.
//!
//! The driver is the crate's [`CpuHwEvents`] or the C driver's per-event calls
//! ([`PerEvent`]), behind the [`CpuDriver`] trait; event_init is always the crate's.

use sbi_pmu::abi::{SbiError, SbiVersion};
use sbi_pmu::counters::{HwEvent, HwPerfEvent, PmuInfo};
use sbi_pmu::deleg::{probe_delegated, Delegation, Hybrid, Selectors, QEMU_VIRT};
use sbi_pmu::dt::{DtError, DtPmuMaps};
use sbi_pmu::events::{
    EventAttr, EventRequest, MapError, StdEvents, UserAccess, PERF_TYPE_HARDWARE,
    PERF_TYPE_HW_CACHE, PERF_TYPE_RAW,
};
use sbi_pmu::firmware::Firmware;
use sbi_pmu::pmu::{AddError, CpuHwEvents, OverflowEvent};

use crate::reference::PerEvent;
use crate::spec::{self, Version};
use crate::{Config, Mode, Model, SimEvent};

/// The per-CPU driver operations perf core calls, with the overflow interrupt handler in three
/// steps: `overflow_begin` returns the overflowed counters, `overflow_event` handles the event of
/// each, `overflow_end` restarts the counters.
pub trait CpuDriver: Clone + core::fmt::Debug {
    /// A CPU with no event, using the counters `info` describes.
    fn new(info: &PmuInfo) -> Self;
    /// The CPU comes up: its counters are reset, and snapshot memory is set up when the firmware has
    /// it.
    fn cpu_starting<F: Firmware>(&mut self, fw: &mut F) -> Result<(), SbiError>;
    /// `pmu->add`, with `PERF_EF_START` when `start`.
    fn add<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &mut HwPerfEvent,
        start: bool,
    ) -> Result<(), AddError>;
    /// `pmu->del`; returns the count to add to the event.
    fn del<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) -> u64;
    /// `pmu->start(PERF_EF_RELOAD)`.
    fn start<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent);
    /// `pmu->stop(PERF_EF_UPDATE)`; returns the count to add to the event.
    fn stop<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) -> u64;
    /// `pmu->read`; returns the count to add to the event.
    fn read<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) -> u64;
    /// `pmu->pmu_disable`, when perf core's count of windows leaves 0.
    fn pmu_disable(&mut self);
    /// `pmu->pmu_enable`, when the count returns to 0.
    fn pmu_enable<F: Firmware>(&mut self, fw: &mut F);
    /// First step of the overflow handler: the overflowed counters that hold an event.
    fn overflow_begin<F: Firmware>(&mut self, fw: &mut F) -> u64;
    /// The handler's step for the event of an overflowed counter.
    fn overflow_event<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &mut HwPerfEvent,
    ) -> Option<OverflowEvent>;
    /// Last step of the overflow handler.
    fn overflow_end<F: Firmware>(&mut self, fw: &mut F);
    /// The counters events hold.
    fn used_ctrs(&self) -> u64;
    /// The counters no event holds that the driver left running.
    fn coasting_ctrs(&self) -> u64 {
        0
    }
}

impl CpuDriver for CpuHwEvents {
    fn new(info: &PmuInfo) -> Self {
        CpuHwEvents::new(info)
    }

    fn cpu_starting<F: Firmware>(&mut self, fw: &mut F) -> Result<(), SbiError> {
        CpuHwEvents::cpu_starting(self, fw, true)
    }

    fn add<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &mut HwPerfEvent,
        start: bool,
    ) -> Result<(), AddError> {
        CpuHwEvents::add(self, fw, hw, start)
    }

    fn del<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) -> u64 {
        CpuHwEvents::del(self, fw, hw)
    }

    fn start<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) {
        CpuHwEvents::start(self, fw, hw);
    }

    fn stop<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) -> u64 {
        CpuHwEvents::stop(self, fw, hw)
    }

    fn read<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) -> u64 {
        CpuHwEvents::read(self, fw, hw)
    }

    fn pmu_disable(&mut self) {
        CpuHwEvents::pmu_disable(self);
    }

    fn pmu_enable<F: Firmware>(&mut self, fw: &mut F) {
        CpuHwEvents::pmu_enable(self, fw);
    }

    fn overflow_begin<F: Firmware>(&mut self, fw: &mut F) -> u64 {
        CpuHwEvents::overflow_begin(self, fw)
    }

    fn overflow_event<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &mut HwPerfEvent,
    ) -> Option<OverflowEvent> {
        CpuHwEvents::overflow_event(self, fw, hw)
    }

    fn overflow_end<F: Firmware>(&mut self, fw: &mut F) {
        CpuHwEvents::overflow_end(self, fw);
    }

    fn used_ctrs(&self) -> u64 {
        self.masks().used()
    }

    fn coasting_ctrs(&self) -> u64 {
        self.masks().coasting()
    }
}

impl CpuDriver for PerEvent {
    fn new(info: &PmuInfo) -> Self {
        PerEvent::new(info)
    }

    fn cpu_starting<F: Firmware>(&mut self, fw: &mut F) -> Result<(), SbiError> {
        PerEvent::cpu_starting(self, fw)
    }

    fn add<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &mut HwPerfEvent,
        start: bool,
    ) -> Result<(), AddError> {
        PerEvent::add(self, fw, hw, start)
    }

    fn del<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) -> u64 {
        PerEvent::del(self, fw, hw)
    }

    fn start<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) {
        PerEvent::start(self, fw, hw);
    }

    fn stop<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) -> u64 {
        PerEvent::stop(self, fw, hw)
    }

    fn read<F: Firmware>(&mut self, fw: &mut F, hw: &mut HwPerfEvent) -> u64 {
        PerEvent::read(self, fw, hw)
    }

    // The C driver has no pmu_disable/pmu_enable callbacks: every operation makes its calls at once.
    fn pmu_disable(&mut self) {}

    fn pmu_enable<F: Firmware>(&mut self, _fw: &mut F) {}

    fn overflow_begin<F: Firmware>(&mut self, fw: &mut F) -> u64 {
        PerEvent::overflow_begin(self, fw)
    }

    fn overflow_event<F: Firmware>(
        &mut self,
        fw: &mut F,
        hw: &mut HwPerfEvent,
    ) -> Option<OverflowEvent> {
        PerEvent::overflow_event(self, fw, hw)
    }

    fn overflow_end<F: Firmware>(&mut self, fw: &mut F) {
        PerEvent::overflow_end(self, fw);
    }

    fn used_ctrs(&self) -> u64 {
        PerEvent::used_ctrs(self)
    }
}

/// A perf event as perf core holds it.
#[derive(Clone, Debug)]
pub struct PerfEvent {
    /// The attribute it was opened with.
    pub attr: EventAttr,
    /// The SBI request it maps to.
    pub req: EventRequest,
    /// `event->hw`.
    pub hw: HwPerfEvent,
    /// The simulated event it counts.
    pub stream: SimEvent,
    /// The CPU it is added on.
    pub cpu: Option<usize>,
    /// Whether perf considers it counting (added and started).
    pub active: bool,
    /// `event->count`.
    pub count: u64,
    /// The number of simulated events it should have counted.
    pub truth: u64,
    /// Samples delivered.
    pub samples: u64,
    /// Overflows after which the handler brought the mmap page up to date.
    pub page_updates: u64,
    /// perf core throttles the event at this many samples: the overflow handler then stops it, as the
    /// driver does when `perf_event_overflow()` says so.
    pub throttle_at: Option<u64>,
    /// The events perf core 7.x stops itself when it throttles this one, from inside
    /// `perf_event_overflow()` and before the driver's own stop: the whole group, this event
    /// included. Empty for perf core 6.12, which leaves the stop to the driver.
    pub throttle_group: Vec<usize>,
}

/// One simulated CPU.
#[derive(Clone, Debug)]
pub struct Cpu<D> {
    /// The hart's SBI implementation.
    pub model: Model,
    /// The driver's per-CPU state.
    pub pmu: D,
    /// The driver's counter delegation state: no counter delegated unless the hart has counter
    /// delegation ([`Config::cdeleg`]).
    pub deleg: Delegation,
    /// Depth of the open `pmu_disable` windows (perf core's `pmu_disable_count`).
    pub window: u32,
}

/// The system, with the crate's driver unless another is named.
#[derive(Clone, Debug)]
pub struct System<D = CpuHwEvents> {
    /// The CPUs.
    pub cpus: Vec<Cpu<D>>,
    /// The counter table probed at boot.
    pub info: PmuInfo,
    /// The standard event availability found at boot.
    pub std_events: StdEvents,
    /// The events opened so far.
    pub events: Vec<PerfEvent>,
    /// The device tree event maps the driver was given ([`System::set_dt`]).
    pub dt: Option<DtCells>,
    setup_calls: u64,
    overflow_calls: u64,
    overflows: u64,
}

impl System {
    /// Boots `ncpus` CPUs with the crate's driver; see [`System::with_driver`].
    pub fn new(cfg: Config, ncpus: usize) -> Self {
        Self::with_driver(cfg, ncpus)
    }
}

impl<D: CpuDriver> System<D> {
    /// Boots `ncpus` CPUs of the same configuration: probe on CPU 0, the standard event check, and the
    /// CPU start of each (with snapshot when the firmware offers it).
    pub fn with_driver(cfg: Config, ncpus: usize) -> Self {
        let mut boot = Model::new(cfg.clone());
        let version = SbiVersion::from_raw(boot.spec_version());
        let mut info = PmuInfo::probe(&mut boot, version).expect("probe");
        info.configured_counters_readable = cfg.reads_configured_counters;
        let std_events = info.check_std_events(&mut boot);
        let cpus = (0..ncpus)
            .map(|i| {
                let mut c = cfg.clone();
                c.seed = cfg.seed.wrapping_add(i as u64 * 7919);
                let mut model = if i == 0 { boot.clone() } else { Model::new(c) };
                let mut pmu = D::new(&info);
                // As the kernel's probe: the delegated counters by the WARL probe of
                // scountinhibit, the selectors of QEMU's virt machine.
                let mut deleg = if cfg.cdeleg.is_some() {
                    let hw = probe_delegated(&mut model);
                    Delegation::new(&info, hw, Selectors::from_rows(QEMU_VIRT.iter().copied()))
                } else {
                    Delegation::SBI_ONLY
                };
                // Snapshot setup fails with NOT_SUPPORTED when the firmware lacks it: run without.
                let _ = pmu.cpu_starting(&mut Hybrid::new(&mut model, &mut deleg));
                Cpu {
                    model,
                    pmu,
                    deleg,
                    window: 0,
                }
            })
            .collect();
        let mut sys = Self {
            cpus,
            info,
            std_events,
            events: Vec::new(),
            dt: None,
            setup_calls: 0,
            overflow_calls: 0,
            overflows: 0,
        };
        sys.setup_calls = sys.total_calls();
        sys
    }

    /// SBI calls made on all CPUs since boot.
    pub fn total_calls(&self) -> u64 {
        self.cpus.iter().map(|c| c.model.total_calls()).sum()
    }

    /// SBI calls made on all CPUs since the end of boot.
    pub fn calls_since_boot(&self) -> u64 {
        self.total_calls() - self.setup_calls
    }

    /// Calls of one function made on all CPUs, boot included.
    pub fn calls_of(&self, f: spec::Function) -> u64 {
        self.cpus.iter().map(|c| c.model.calls_of(f)).sum()
    }

    /// SBI calls the overflow handler made on all CPUs, as the firmware saw them.
    pub fn overflow_calls(&self) -> u64 {
        self.overflow_calls
    }

    /// Overflow interrupts taken on all CPUs.
    pub fn overflows(&self) -> u64 {
        self.overflows
    }

    /// Gives the driver device tree event maps, as probe does when the kernel's device tree has a
    /// `riscv,pmu` node: they are validated against the platform, and when they cover the standard
    /// events they answer which ones are available. A refused map leaves the driver without one.
    pub fn set_dt(&mut self, cells: DtCells) -> Result<(), DtError> {
        let maps = cells.maps()?;
        maps.check_platform(self.info.hw_counters())?;
        if let Some(found) = self.info.std_events_from_maps(&maps) {
            self.std_events = found;
        }
        self.dt = Some(cells);
        Ok(())
    }

    /// Gives every delegating CPU these event selectors, as probe does with the device tree's
    /// `riscv,event-to-mhpmevent` map ([`Selectors::from_maps`]), its delegated counters found
    /// again.
    pub fn set_selectors(&mut self, selectors: Selectors) {
        for c in &mut self.cpus {
            if c.model.config().cdeleg.is_some() {
                let hw = probe_delegated(&mut c.model);
                c.deleg = Delegation::new(&self.info, hw, selectors);
            }
        }
    }

    /// `perf_event_open()` up to event_init: maps the attribute and prepares the event's state.
    /// `sample_period` is 0 for a counting event.
    pub fn open(&mut self, attr: EventAttr, sample_period: u64) -> Result<usize, MapError> {
        let attr = EventAttr {
            sampling: sample_period != 0,
            ..attr
        };
        let mut hw = HwPerfEvent {
            sample_period,
            period_left: i64::try_from(sample_period).unwrap_or(i64::MAX),
            // perf's event ids start at 1 and are unique.
            id: self.events.len() as u64 + 1,
            ..HwPerfEvent::default()
        };
        let maps = self
            .dt
            .as_ref()
            .map(|d| d.maps().expect("validated by set_dt"));
        let req = self.info.event_init(
            &attr,
            UserAccess::UserAccess,
            &self.std_events,
            maps.as_ref(),
            &mut hw,
        )?;
        let version = self.cpus[0].model.config().version;
        let stream = stream_of(&attr, version).expect("an attribute the driver accepted");
        self.events.push(PerfEvent {
            attr,
            req,
            hw,
            stream,
            cpu: None,
            active: false,
            count: 0,
            truth: 0,
            samples: 0,
            page_updates: 0,
            throttle_at: None,
            throttle_group: Vec::new(),
        });
        Ok(self.events.len() - 1)
    }

    /// `pmu->add` with or without `PERF_EF_START`.
    pub fn add(&mut self, e: usize, cpu: usize, start: bool) -> Result<(), AddError> {
        let ev = &mut self.events[e];
        assert!(ev.cpu.is_none(), "event {e} added twice");
        let c = &mut self.cpus[cpu];
        c.pmu.add(
            &mut Hybrid::new(&mut c.model, &mut c.deleg),
            &mut ev.hw,
            start,
        )?;
        ev.cpu = Some(cpu);
        ev.active = start;
        Ok(())
    }

    /// `pmu->del`.
    pub fn del(&mut self, e: usize) {
        let ev = &mut self.events[e];
        let cpu = ev.cpu.take().expect("del of an event that is not added");
        let c = &mut self.cpus[cpu];
        ev.count += c
            .pmu
            .del(&mut Hybrid::new(&mut c.model, &mut c.deleg), &mut ev.hw);
        ev.active = false;
    }

    /// `pmu->start(PERF_EF_RELOAD)`.
    pub fn start(&mut self, e: usize) {
        let ev = &mut self.events[e];
        let cpu = ev.cpu.expect("start of an event that is not added");
        let c = &mut self.cpus[cpu];
        c.pmu
            .start(&mut Hybrid::new(&mut c.model, &mut c.deleg), &mut ev.hw);
        ev.active = true;
    }

    /// `pmu->stop(PERF_EF_UPDATE)`.
    pub fn stop(&mut self, e: usize) {
        let ev = &mut self.events[e];
        let cpu = ev.cpu.expect("stop of an event that is not added");
        let c = &mut self.cpus[cpu];
        ev.count += c
            .pmu
            .stop(&mut Hybrid::new(&mut c.model, &mut c.deleg), &mut ev.hw);
        ev.active = false;
    }

    /// `pmu->read`.
    pub fn read(&mut self, e: usize) {
        let ev = &mut self.events[e];
        let Some(cpu) = ev.cpu else { return };
        let c = &mut self.cpus[cpu];
        ev.count += c
            .pmu
            .read(&mut Hybrid::new(&mut c.model, &mut c.deleg), &mut ev.hw);
    }

    /// `perf_pmu_disable()`.
    pub fn disable(&mut self, cpu: usize) {
        let c = &mut self.cpus[cpu];
        c.window += 1;
        if c.window == 1 {
            c.pmu.pmu_disable();
        }
    }

    /// `perf_pmu_enable()`.
    pub fn enable(&mut self, cpu: usize) {
        let c = &mut self.cpus[cpu];
        assert!(c.window > 0, "enable without disable");
        c.window -= 1;
        if c.window == 0 {
            c.pmu
                .pmu_enable(&mut Hybrid::new(&mut c.model, &mut c.deleg));
        }
    }

    /// The events added on a CPU, in the order they were opened.
    pub fn events_on(&self, cpu: usize) -> Vec<usize> {
        (0..self.events.len())
            .filter(|e| self.events[*e].cpu == Some(cpu))
            .collect()
    }

    /// Whether `n` occurrences of `stream` in `mode` on its CPU count toward the event's truth: the
    /// event counts them unless its attribute excludes the mode and the counter can filter by mode
    /// (a hardware counter with Sscofpmf).
    fn counts_toward(&self, e: usize, stream: SimEvent, mode: Mode) -> bool {
        let ev = &self.events[e];
        if !ev.active || ev.stream != stream {
            return false;
        }
        let hw_stream = matches!(stream, SimEvent::Hw(_) | SimEvent::Raw(_));
        let filters = self.cpus[0].model.config().sscofpmf && hw_stream;
        !(filters && excluded(&ev.attr, mode))
    }

    /// `n` occurrences of `stream` happen on `cpu` in `mode`. Overflow interrupts are taken at the
    /// first wrap, as hardware raises them.
    pub fn tick(&mut self, cpu: usize, stream: SimEvent, mode: Mode, n: u64) {
        assert_eq!(
            self.cpus[cpu].window, 0,
            "simulated events inside a disable window"
        );
        let mut left = n;
        while left > 0 {
            let to_ovf = self.cpus[cpu].model.ticks_to_overflow(stream, mode);
            let step = to_ovf.map_or(left, |t| t.min(left));
            self.cpus[cpu].model.tick(stream, mode, step);
            for e in self.events_on(cpu) {
                if self.counts_toward(e, stream, mode) {
                    self.events[e].truth += step;
                }
            }
            left -= step;
            if self.cpus[cpu].model.irq_pending() {
                self.overflow_irq(cpu);
            }
        }
    }

    /// The overflow interrupt handler on `cpu`.
    pub fn overflow_irq(&mut self, cpu: usize) {
        let on_cpu = self.events_on(cpu);
        let c = &mut self.cpus[cpu];
        let calls = c.model.total_calls();
        self.overflows += 1;
        let mask = c
            .pmu
            .overflow_begin(&mut Hybrid::new(&mut c.model, &mut c.deleg));
        c.model.clear_irq();
        for e in on_cpu {
            let ev = &mut self.events[e];
            let Some(idx) = ev.hw.counter() else { continue };
            if mask & (1 << idx) == 0 {
                continue;
            }
            if let Some(o) = c
                .pmu
                .overflow_event(&mut Hybrid::new(&mut c.model, &mut c.deleg), &mut ev.hw)
            {
                ev.count += o.delta;
                ev.page_updates += u64::from(o.publish);
                if o.sample {
                    ev.samples += 1;
                    if ev.throttle_at == Some(ev.samples) {
                        // perf core 7.x stops the group first (`perf_event_throttle_group()`,
                        // `pmu->stop(event, 0)` on each member that is active), inside the
                        // handler's window; then the driver's handler stops the event as well.
                        for m in ev.throttle_group.clone() {
                            let member = &mut self.events[m];
                            if member.active {
                                member.count += c.pmu.stop(&mut c.model, &mut member.hw);
                                member.active = false;
                            }
                        }
                        let ev = &mut self.events[e];
                        // As the kernel driver's handler: inside its own window.
                        ev.count += c
                            .pmu
                            .stop(&mut Hybrid::new(&mut c.model, &mut c.deleg), &mut ev.hw);
                        ev.active = false;
                    }
                }
            }
        }
        c.pmu
            .overflow_end(&mut Hybrid::new(&mut c.model, &mut c.deleg));
        self.overflow_calls += c.model.total_calls() - calls;
    }

    /// Reads every added event, so its count is up to date.
    pub fn settle(&mut self) {
        for cpu in 0..self.cpus.len() {
            while self.cpus[cpu].window > 0 {
                self.enable(cpu);
            }
        }
        for e in 0..self.events.len() {
            self.read(e);
        }
    }

    /// Checks what must hold between operations, and panics with a description when it does not:
    /// every added event has its own counter within its allowed mask, configured in firmware for the
    /// simulated event the attribute stands for; outside disable windows exactly the counters of active events run;
    /// the model saw no call a correct driver would not make.
    pub fn check_invariants(&self) {
        for (cpu, c) in self.cpus.iter().enumerate() {
            let mut seen = 0u64;
            for e in self.events_on(cpu) {
                let ev = &self.events[e];
                let idx = ev
                    .hw
                    .counter()
                    .unwrap_or_else(|| panic!("event {e} without counter"));
                let b = 1u64 << idx;
                assert_eq!(seen & b, 0, "cpu {cpu}: counter {idx} shared");
                seen |= b;
                let allowed = self.info.default_event_cmask(ev.req.event_idx);
                assert_ne!(
                    allowed & b,
                    0,
                    "event {e} on counter {idx} outside {allowed:#x}"
                );
                assert!(
                    c.model.is_configured_for(idx, ev.stream),
                    "cpu {cpu}: counter {idx} is configured for {:x?}, not for event {e} ({:x?})",
                    c.model.counter_event(idx),
                    ev.stream
                );
                if c.window == 0 {
                    assert_eq!(
                        c.model.is_started(idx),
                        ev.active,
                        "cpu {cpu} event {e} counter {idx} running state"
                    );
                }
            }
            assert_eq!(seen, c.pmu.used_ctrs(), "cpu {cpu} used masks");
            if c.window == 0 {
                let active: u64 = self
                    .events_on(cpu)
                    .iter()
                    .filter(|e| self.events[**e].active)
                    .map(|e| 1u64 << self.events[*e].hw.idx)
                    .sum();
                let coasting = c.pmu.coasting_ctrs();
                assert_eq!(
                    coasting & c.pmu.used_ctrs(),
                    0,
                    "cpu {cpu}: a coasting counter is held"
                );
                assert_eq!(
                    c.model.started_mask(),
                    active | coasting,
                    "cpu {cpu}: counters running without an active event"
                );
            }
            assert!(
                c.model.anomalies().is_empty(),
                "cpu {cpu}: {:?}",
                c.model.anomalies()
            );
        }
    }

    /// Asserts that every event counted exactly its simulated events, and that sampling events took
    /// one sample per elapsed period.
    pub fn check_counts(&self) {
        for (e, ev) in self.events.iter().enumerate() {
            assert_eq!(
                ev.count, ev.truth,
                "event {e} ({:?}) counted {} of {} events",
                ev.attr, ev.count, ev.truth
            );
            if ev.attr.sampling {
                assert_eq!(
                    ev.samples,
                    ev.truth / ev.hw.sample_period,
                    "event {e}: {} samples for {} events with period {}",
                    ev.samples,
                    ev.truth,
                    ev.hw.sample_period
                );
            }
        }
    }
}

/// The simulated event an attribute asks to count, worked out from perf's encoding of the attribute
/// and the model's tables, not from the driver's mapping: a driver that encodes an event wrongly
/// configures its counter for another event, which then neither counts nor passes the invariants.
///
/// perf's generic hardware ids 0 to 9 are the SBI codes 1 to 10 of Table 2, its generic cache ids,
/// operations and results are the ids of Tables 3 to 5, and a raw `config` selects by bits 63:62 a
/// raw hardware event (with the selector in bits 47:0, or 55:0 from SBI v3.0), a firmware event (code
/// in bits 15:0) or a platform firmware event (data in bits 61:0), as the C driver defines them.
pub fn stream_of(attr: &EventAttr, version: Version) -> Option<SimEvent> {
    let c = attr.config;
    let field = |shift: u32, bits: u32| (c >> shift) as usize & ((1 << bits) - 1);
    match attr.ty {
        PERF_TYPE_HARDWARE if c < 10 => Some(SimEvent::Hw(spec::hw_general_event(c as usize + 1))),
        PERF_TYPE_HW_CACHE => Some(SimEvent::Hw(spec::hw_cache_event(
            field(0, 8),
            field(8, 8),
            field(16, 8),
        ))),
        PERF_TYPE_RAW => match c >> 62 {
            0b00 if version >= Version::V3_0 => Some(SimEvent::Raw(c & ((1 << 56) - 1))),
            0b00 => Some(SimEvent::Raw(c & ((1 << 48) - 1))),
            0b10 => Some(SimEvent::Fw(field(0, 16))),
            0b11 => Some(SimEvent::FwPlatform(c & ((1 << 62) - 1))),
            _ => None,
        },
        _ => None,
    }
}

/// Whether an attribute asks not to count in `mode`, as perf defines its exclude bits and the C
/// driver's `pmu_sbi_get_filter_flags()` applies them: for a guest event (`config1` bit 0)
/// `exclude_kernel` and `exclude_user` are about VS and VU mode and `exclude_hv` about S mode (the
/// host kernel); otherwise they are about S and U mode. `exclude_host` is U and S, `exclude_guest` VS
/// and VU. Nothing excludes M mode.
pub fn excluded(attr: &EventAttr, mode: Mode) -> bool {
    let guest = attr.config1 & 1 != 0;
    match mode {
        Mode::U => (!guest && attr.exclude_user) || attr.exclude_host,
        Mode::S => {
            (!guest && attr.exclude_kernel) || (guest && attr.exclude_hv) || attr.exclude_host
        }
        Mode::VU => (guest && attr.exclude_user) || attr.exclude_guest,
        Mode::VS => (guest && attr.exclude_kernel) || attr.exclude_guest,
        Mode::M => false,
    }
}

/// The cells of the three `riscv,pmu` properties, as the kernel reads them; `None` for an absent one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DtCells {
    /// `riscv,event-to-mhpmevent`.
    pub event_to_mhpmevent: Option<Vec<u32>>,
    /// `riscv,event-to-mhpmcounters`.
    pub event_to_mhpmcounters: Option<Vec<u32>>,
    /// `riscv,raw-event-to-mhpmcounters`.
    pub raw_event_to_mhpmcounters: Option<Vec<u32>>,
}

impl DtCells {
    /// The parsed maps.
    pub fn maps(&self) -> Result<DtPmuMaps<'_>, DtError> {
        DtPmuMaps::parse([
            self.event_to_mhpmevent.as_deref(),
            self.event_to_mhpmcounters.as_deref(),
            self.raw_event_to_mhpmcounters.as_deref(),
        ])
    }
}
