// SPDX-License-Identifier: GPL-2.0

//! A model of one hart's SBI PMU implementation, written from the SBI specification (chapter
//! "Performance Monitoring Unit Extension", v3.0), for host tests of the `sbi_pmu` crate.
//!
//! The model takes raw SBI calls ([`Model::ecall`]: extension ID, function ID, `a0`..`a5`) and answers
//! with the `sbiret` the specification prescribes, including every error of its tables. It implements
//! [`sbi_pmu::firmware::Firmware`] with that call, so the driver logic talks to it through the same
//! default argument encodings as it could in the kernel.
//!
//! The model is an oracle independent of the crate: it decodes every argument and encodes every
//! return value with its own transcription of the specification's tables ([`spec`]), never with the
//! crate's `abi` encodings, so an encoding mistake in the crate makes the two disagree instead of
//! being shared. From the crate it takes only the interface: the `Firmware` trait with its `Fid`
//! argument (decoded here from its number) and the `#[repr(C)]` shared memory views the trait hands
//! over, whose layouts the unit tests below check against the specification's offsets.
//!
//! Counters advance from a simulated event stream the test controls ([`Model::tick`]): `n` occurrences
//! of a hardware, raw or firmware event in a privilege mode. A started counter configured for that
//! event counts them unless its inhibit flags exclude the mode; a hardware counter wraps at its width,
//! and with Sscofpmf the wrap sets the counter's overflow bit and a pending overflow interrupt.
//!
//! Where the specification is silent the model follows OpenSBI, and says so:
//! - a set operation (`counter_start`/`counter_stop`) first rejects invalid counters and reserved flags
//!   as a whole (SBI_ERR_INVALID_PARAM), then acts on every counter of the set and reports
//!   SBI_ERR_ALREADY_STARTED / SBI_ERR_ALREADY_STOPPED if any counter already was in that state;
//! - `counter_stop` with RESET resets the mapping of already stopped counters too (the C driver's
//!   del path relies on it);
//! - counters that are not configured for an event are skipped by start and stop;
//! - firmware counters ignore the inhibit hints, and without Sscofpmf no counter can filter by mode.
//!
//! Where the specification allows more than OpenSBI does, the model takes the specification's side
//! and is stricter toward the caller: `counter_config_matching` may pick any counter that is not
//! started (so a stopped counter of another event can be taken over, as the specification's
//! "not started" says), and SET_INIT_VALUE applies to one counter only.

use sbi_pmu::abi::{sbi_result, Fid, SbiError, SnapshotPage};
use sbi_pmu::firmware::Firmware;

use spec::{fw_class, Error, Event, Function, FwClass, Version};

pub mod csrs;
pub mod harness;
pub mod reference;
pub mod spec;

/// The simulated physical address of the supervisor's snapshot page.
pub const SNAPSHOT_PHYS: u64 = 0x8020_0000;
/// The simulated physical address of the supervisor's event-info array.
pub const EVENT_INFO_PHYS: u64 = 0x8030_0000;
/// The number of entries of the simulated event-info array.
pub const EVENT_INFO_ENTRIES: usize = 64;

/// A privilege mode in which simulated events happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// User mode.
    U,
    /// Supervisor mode (the kernel).
    S,
    /// Machine mode (firmware).
    M,
    /// Virtual user mode (guest user).
    VU,
    /// Virtual supervisor mode (guest kernel).
    VS,
}

impl Mode {
    /// All modes.
    pub const ALL: [Mode; 5] = [Mode::U, Mode::S, Mode::M, Mode::VU, Mode::VS];

    /// The `config_flags` bit that inhibits counting in this mode (Table 8).
    pub const fn inhibit_flag(self) -> usize {
        match self {
            Mode::U => spec::SBI_PMU_CFG_FLAG_SET_UINH,
            Mode::S => spec::SBI_PMU_CFG_FLAG_SET_SINH,
            Mode::M => spec::SBI_PMU_CFG_FLAG_SET_MINH,
            Mode::VU => spec::SBI_PMU_CFG_FLAG_SET_VUINH,
            Mode::VS => spec::SBI_PMU_CFG_FLAG_SET_VSINH,
        }
    }
}

/// One kind of simulated event occurrence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimEvent {
    /// A hardware general or cache event, by its `event_idx` ([`spec::hw_general_event`],
    /// [`spec::hw_cache_event`]).
    Hw(usize),
    /// A raw hardware event with this `mhpmevent` selector value.
    Raw(u64),
    /// A firmware event with this code.
    Fw(usize),
    /// A platform specific firmware event with this `event_data`.
    FwPlatform(u64),
}

/// One logical counter of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterSpec {
    /// A hardware counter read through `csr`, `bits` wide (1 to 64).
    Hw {
        /// The CSR number.
        csr: u16,
        /// The width in bits.
        bits: u32,
    },
    /// A firmware counter.
    Fw,
    /// An index that is not a counter (`counter_get_info` fails), like `time` on OpenSBI.
    Absent,
}

/// How the model is built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The SBI version the model implements; functions newer than it are SBI_ERR_NOT_SUPPORTED.
    pub version: Version,
    /// The logical counters, in index order.
    pub counters: Vec<CounterSpec>,
    /// The width of every firmware counter, in bits.
    pub fw_bits: u32,
    /// Whether `snapshot_set_shmem` is implemented (SBI v2.0 and later only).
    pub snapshot: bool,
    /// Whether `event_get_info` is implemented (SBI v3.0 and later only).
    pub event_info: bool,
    /// Whether the hart has Sscofpmf: overflow bits, the overflow interrupt and mode filtering.
    pub sscofpmf: bool,
    /// The `event_idx` of the standard events the hardware has (`None`: all of them); every
    /// programmable counter counts each of them.
    pub hw_events: Option<Vec<usize>>,
    /// Whether raw events are accepted (on every programmable counter).
    pub raw_events: bool,
    /// Whether the platform firmware event (code 0xffff) is implemented.
    pub platform_fw_events: bool,
    /// Seed of the values hardware counters hold before anything configures them.
    pub seed: u64,
    /// Whether user mode can read any configured counter whatever `scounteren` says, as under KVM
    /// (the driver is told so: [`sbi_pmu::counters::PmuInfo::configured_counters_readable`]).
    pub reads_configured_counters: bool,
    /// Counter delegation (Smcdeleg, Ssccfg, Sscsrind): the hardware counters M-mode delegates
    /// (its `mcounteren`, bit `n` = hardware counter `n`, with `menvcfg.CDE` set); `None` for a
    /// hart without the extensions. See [`csrs`].
    pub cdeleg: Option<u64>,
    /// The platform's `mhpmevent` selectors of standard events, `(event_idx, selector)`: a
    /// delegated counter programmed with one of these selectors counts that event; any other
    /// non-zero selector is a raw event ([`csrs`]).
    pub cd_selectors: Vec<(usize, u64)>,
}

impl Config {
    /// OpenSBI's layout on QEMU `virt` with `version`: `cycle`, `time` (absent), `instret`, then
    /// `programmable` hardware counters of `bits` bits, then 16 firmware counters, and every other
    /// feature on.
    pub fn opensbi_like(version: Version, programmable: usize, bits: u32) -> Self {
        let mut counters = vec![
            CounterSpec::Hw {
                csr: spec::CSR_CYCLE,
                bits: 64,
            },
            CounterSpec::Absent,
            CounterSpec::Hw {
                csr: spec::CSR_INSTRET,
                bits: 64,
            },
        ];
        for i in 0..programmable {
            counters.push(CounterSpec::Hw {
                csr: spec::CSR_CYCLE + 3 + i as u16,
                bits,
            });
        }
        counters.extend(std::iter::repeat_n(CounterSpec::Fw, 16));
        Self {
            version,
            counters,
            fw_bits: 64,
            snapshot: version >= Version::V2_0,
            event_info: version >= Version::V3_0,
            sscofpmf: true,
            hw_events: None,
            raw_events: true,
            platform_fw_events: true,
            seed: 1,
            reads_configured_counters: false,
            cdeleg: None,
            cd_selectors: csrs::QEMU_VIRT_SELECTORS.to_vec(),
        }
    }
}

/// A call the model saw that a correct driver should not make; tests assert there are none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Anomaly {
    /// `counter_start` on a counter that is not configured for an event.
    StartUnconfigured(usize),
    /// A read of a CSR that is not a counter of this hart.
    UnknownCsr(u16),
    /// An access to a delegated-counter CSR that raises an illegal instruction exception
    /// (`siselect` value, and which register: 1 `sireg`, 2 `sireg2`, 0 `scountinhibit`).
    IllegalCsrAccess(usize, u8),
}

/// The event a counter is configured for: the raw `event_idx` and `event_data` the caller passed,
/// and the event they decode to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mapping {
    idx: usize,
    event: Event,
    data: u64,
}

impl Mapping {
    /// Whether a counter of this kind configured so counts `ev`, whatever its state and filters.
    fn counts(&self, hw_counter: bool, ev: SimEvent) -> bool {
        match (ev, self.event) {
            (SimEvent::Hw(idx), Event::General(_) | Event::Cache) => hw_counter && self.idx == idx,
            (SimEvent::Raw(sel), Event::Raw { .. }) => hw_counter && self.data == sel,
            (SimEvent::Fw(code), Event::Firmware(c)) => {
                !hw_counter && c == code && fw_class(code) != FwClass::Platform
            }
            (SimEvent::FwPlatform(data), Event::Firmware(c)) => {
                !hw_counter && fw_class(c) == FwClass::Platform && self.data == data
            }
            _ => false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Counter {
    spec: CounterSpec,
    value: u64,
    event: Option<Mapping>,
    started: bool,
    /// The inhibit hints of `config_flags` the counter was configured with.
    inhibit: usize,
    overflow: bool,
    /// The `mhpmevent` value (selector and inhibit bits, without `OF`) a `sireg2` write set.
    cd_event: u64,
}

impl Counter {
    fn mask(&self, fw_bits: u32) -> u64 {
        let bits = match self.spec {
            CounterSpec::Hw { bits, .. } => bits,
            _ => fw_bits,
        };
        if bits >= 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        }
    }

    fn is_hw(&self) -> bool {
        matches!(self.spec, CounterSpec::Hw { .. })
    }
}

/// One hart's SBI PMU.
#[derive(Clone, Debug)]
pub struct Model {
    cfg: Config,
    counters: Vec<Counter>,
    shmem: Option<u64>,
    page: Box<SnapshotPage>,
    /// The event-info array, as the 64-bit words of shared memory (two per entry, Table 18).
    event_info_mem: Vec<u64>,
    irq_pending: bool,
    calls: [u64; 9],
    /// Counter CSR reads by the supervisor (`cycle`, `instret`, `hpmcounterN`, `scountovf`).
    csr_reads: u64,
    anomalies: Vec<Anomaly>,
    /// `siselect`.
    siselect: usize,
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The `sbiret` pair a call returns in `a0` and `a1`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SbiRet {
    /// `sbiret.error` (`a0`): 0 for success or an SBI error code.
    pub error: isize,
    /// `sbiret.value` (`a1`).
    pub value: usize,
}

impl SbiRet {
    /// The pair as the crate's `Result`, decoded by the crate.
    pub fn result(self) -> Result<usize, SbiError> {
        sbi_result(self.error, self.value)
    }
}

/// Encodes the `sbiret` of a call.
fn ret(result: Result<usize, Error>) -> SbiRet {
    match result {
        Ok(value) => SbiRet {
            error: spec::SBI_SUCCESS,
            value,
        },
        Err(err) => SbiRet {
            error: err.code(),
            value: 0,
        },
    }
}

/// The mask of the low `bits` bits.
const fn low_bits(bits: u32) -> u64 {
    (1 << bits) - 1
}

impl Model {
    /// A hart built from `cfg`. Hardware counters start at values drawn from `cfg.seed`, stopped and
    /// unconfigured.
    pub fn new(cfg: Config) -> Self {
        let mut seed = cfg.seed;
        let counters = cfg
            .counters
            .iter()
            .map(|spec| {
                let mut c = Counter {
                    spec: *spec,
                    value: 0,
                    event: None,
                    started: false,
                    inhibit: 0,
                    overflow: false,
                    cd_event: 0,
                };
                if c.is_hw() {
                    c.value = splitmix(&mut seed) & c.mask(cfg.fw_bits);
                }
                c
            })
            .collect();
        Self {
            cfg,
            counters,
            shmem: None,
            page: Box::new(SnapshotPage::new()),
            event_info_mem: vec![0; 2 * EVENT_INFO_ENTRIES],
            irq_pending: false,
            calls: [0; 9],
            csr_reads: 0,
            anomalies: Vec::new(),
            siselect: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// What `sbi_get_spec_version()` of the base extension returns on this hart.
    pub fn spec_version(&self) -> usize {
        self.cfg.version.encode()
    }

    /// Counter CSR reads (including `scountovf`) the supervisor made.
    pub fn csr_reads(&self) -> u64 {
        self.csr_reads
    }

    /// SBI calls received, by function ID.
    pub fn calls(&self) -> [u64; 9] {
        self.calls
    }

    /// SBI calls of one function received.
    pub fn calls_of(&self, f: Function) -> u64 {
        self.calls[f.fid()]
    }

    /// SBI calls received in total.
    pub fn total_calls(&self) -> u64 {
        self.calls.iter().sum()
    }

    /// Calls the driver should not have made.
    pub fn anomalies(&self) -> &[Anomaly] {
        &self.anomalies
    }

    /// Whether the overflow interrupt (LCOFI) is pending.
    pub fn irq_pending(&self) -> bool {
        self.irq_pending
    }

    /// Clears the pending overflow interrupt (`csrc sip, LCOFIP` in the kernel).
    pub fn clear_irq(&mut self) {
        self.irq_pending = false;
    }

    /// The value of a counter.
    pub fn counter_value(&self, idx: usize) -> Option<u64> {
        self.counters.get(idx).map(|c| c.value)
    }

    /// Sets the value of a counter, as hardware or earlier software might have left it.
    pub fn set_counter_value(&mut self, idx: usize, value: u64) {
        let fw_bits = self.cfg.fw_bits;
        if let Some(c) = self.counters.get_mut(idx) {
            c.value = value & c.mask(fw_bits);
        }
    }

    /// The raw `event_idx` and `event_data` a counter is configured for.
    pub fn counter_event(&self, idx: usize) -> Option<(usize, u64)> {
        self.counters
            .get(idx)
            .and_then(|c| c.event)
            .map(|m| (m.idx, m.data))
    }

    /// Whether a counter is configured for an event that `ev` is an occurrence of, started or not.
    pub fn is_configured_for(&self, idx: usize, ev: SimEvent) -> bool {
        self.counters
            .get(idx)
            .is_some_and(|c| c.event.is_some_and(|m| m.counts(c.is_hw(), ev)))
    }

    /// Whether a counter is started.
    pub fn is_started(&self, idx: usize) -> bool {
        self.counters.get(idx).is_some_and(|c| c.started)
    }

    /// The counters that are started.
    pub fn started_mask(&self) -> u64 {
        self.counters
            .iter()
            .enumerate()
            .filter(|(_, c)| c.started)
            .fold(0, |m, (i, _)| m | 1 << i)
    }

    /// The registered snapshot address, if any.
    pub fn snapshot_address(&self) -> Option<u64> {
        self.shmem
    }

    /// The supervisor's snapshot page (the same memory the driver sees).
    pub fn snapshot_page(&self) -> &SnapshotPage {
        &self.page
    }

    /// The supervisor's snapshot page, to write as the supervisor does.
    pub fn snapshot_page_mut(&mut self) -> &mut SnapshotPage {
        &mut self.page
    }

    fn counts(&self, c: &Counter, ev: SimEvent, mode: Mode) -> bool {
        if !c.started || !c.event.is_some_and(|m| m.counts(c.is_hw(), ev)) {
            return false;
        }
        // Only hardware counters with Sscofpmf can filter by mode; the flags are hints otherwise.
        !(c.is_hw() && self.cfg.sscofpmf && c.inhibit & mode.inhibit_flag() != 0)
    }

    /// Whether a started counter would count `n` occurrences of `ev` in `mode`.
    pub fn would_count(&self, idx: usize, ev: SimEvent, mode: Mode) -> bool {
        self.counters
            .get(idx)
            .is_some_and(|c| self.counts(c, ev, mode))
    }

    /// The number of occurrences of `ev` in `mode` after which the first counter that would raise an
    /// overflow interrupt wraps; `None` when none would. A test advances at most this far before it
    /// takes the interrupt, as hardware interrupts at the first wrap.
    pub fn ticks_to_overflow(&self, ev: SimEvent, mode: Mode) -> Option<u64> {
        if !self.cfg.sscofpmf {
            return None;
        }
        self.counters
            .iter()
            .filter(|c| c.is_hw() && !c.overflow && self.counts(c, ev, mode))
            .map(|c| {
                let mask = c.mask(self.cfg.fw_bits);
                (mask - c.value).saturating_add(1)
            })
            .min()
    }

    /// `n` occurrences of `ev` happen in `mode`: every started counter configured for it and not
    /// inhibited in that mode advances, wrapping at its width. With Sscofpmf a hardware counter that
    /// wraps sets its overflow bit and, if the bit was clear, makes the overflow interrupt pending.
    pub fn tick(&mut self, ev: SimEvent, mode: Mode, n: u64) {
        let fw_bits = self.cfg.fw_bits;
        for i in 0..self.counters.len() {
            let c = self.counters[i];
            if !self.counts(&c, ev, mode) {
                continue;
            }
            let mask = c.mask(fw_bits);
            let room = mask - c.value;
            let c = &mut self.counters[i];
            c.value = c.value.wrapping_add(n) & mask;
            if n > room && c.is_hw() && self.cfg.sscofpmf && !c.overflow {
                c.overflow = true;
                self.irq_pending = true;
            }
        }
    }

    /// Handles one SBI call: `a7` = `ext`, `a6` = `fid`, `a0`..`a5` = `args`.
    pub fn ecall(&mut self, ext: usize, fid: usize, args: [usize; 6]) -> SbiRet {
        if ext != spec::EXT_PMU {
            return ret(Err(Error::NotSupported));
        }
        let Some(f) = Function::from_fid(fid) else {
            return ret(Err(Error::NotSupported));
        };
        self.calls[f.fid()] += 1;
        if self.cfg.version < f.since() {
            return ret(Err(Error::NotSupported));
        }
        // RV64: a 64-bit argument (event_data, initial_value) is passed whole in one register, and
        // the register that would carry its upper half on RV32 (a5, a4) is not looked at.
        let [a0, a1, a2, a3, a4, _a5] = args;
        ret(match f {
            Function::NumCounters => Ok(self.counters.len()),
            Function::CounterGetInfo => self.get_info(a0),
            Function::CounterConfigMatching => self.config_matching(a0, a1, a2, a3, a4 as u64),
            Function::CounterStart => self.start(a0, a1, a2, a3 as u64).map(|()| 0),
            Function::CounterStop => self.stop(a0, a1, a2).map(|()| 0),
            Function::CounterFwRead => self.fw_read(a0).map(|v| v as usize),
            Function::CounterFwReadHi => self.fw_read(a0).map(|_| 0),
            Function::SnapshotSetShmem => self.set_shmem(a0, a1, a2).map(|()| 0),
            Function::EventGetInfo => self.event_get_info(a0, a1, a2, a3).map(|()| 0),
        })
    }

    /// Table 7.
    fn get_info(&self, idx: usize) -> Result<usize, Error> {
        let c = self.counters.get(idx).ok_or(Error::InvalidParam)?;
        match c.spec {
            CounterSpec::Hw { csr, bits } => Ok(spec::counter_info(csr, bits, false)),
            // The CSR field of a firmware counter is to be ignored; it is left zero.
            CounterSpec::Fw => Ok(spec::counter_info(0, self.cfg.fw_bits, true)),
            CounterSpec::Absent => Err(Error::InvalidParam),
        }
    }

    /// The logical counters named by a base and mask, or SBI_ERR_INVALID_PARAM if one is not a
    /// counter.
    fn counter_set(&self, cbase: usize, cmask: usize) -> Result<Vec<(usize, usize)>, Error> {
        let mut set = Vec::new();
        for b in 0..usize::BITS as usize {
            if cmask & (1 << b) == 0 {
                continue;
            }
            let idx = cbase.checked_add(b).ok_or(Error::InvalidParam)?;
            match self.counters.get(idx) {
                Some(c) if c.spec != CounterSpec::Absent => set.push((b, idx)),
                _ => return Err(Error::InvalidParam),
            }
        }
        Ok(set)
    }

    fn fixed_counter(&self, csr: u16) -> Option<usize> {
        self.counters
            .iter()
            .position(|c| matches!(c.spec, CounterSpec::Hw { csr: x, .. } if x == csr))
    }

    /// The counters that can count an event with this data, or `None` when the event (or its data)
    /// is not valid or not implemented.
    fn eligible(&self, idx: usize, event: Event, data: u64) -> Option<Vec<usize>> {
        let std_event = match event {
            // The event_data of hardware general and cache events is reserved: non-zero values are
            // not supported.
            Event::General(_) | Event::Cache => {
                (data == 0).then_some(())?;
                true
            }
            Event::Raw { v2 } => {
                let bits = if v2 {
                    spec::RAW_V2_DATA_BITS
                } else {
                    spec::RAW_DATA_BITS
                };
                if data & !low_bits(bits) != 0 || (v2 && self.cfg.version < Version::V3_0) {
                    return None;
                }
                false
            }
            Event::Firmware(code) => {
                let ok = match fw_class(code) {
                    // Only SBI_PMU_FW_PLATFORM takes event_data; for the others it is reserved.
                    FwClass::Standard => data == 0,
                    FwClass::Platform => self.cfg.platform_fw_events,
                    FwClass::Reserved | FwClass::ImplementationSpecific => false,
                };
                if !ok {
                    return None;
                }
                let fw = (0..self.counters.len())
                    .filter(|i| self.counters[*i].spec == CounterSpec::Fw)
                    .collect();
                return Some(fw);
            }
        };
        let fixed = match event {
            Event::General(spec::SBI_PMU_HW_CPU_CYCLES) => self.fixed_counter(spec::CSR_CYCLE),
            Event::General(spec::SBI_PMU_HW_INSTRUCTIONS) => self.fixed_counter(spec::CSR_INSTRET),
            _ => None,
        };
        let known = if std_event {
            self.cfg.hw_events.as_ref().is_none_or(|l| l.contains(&idx))
        } else {
            self.cfg.raw_events
        };
        // Only the programmable counters (after cycle, time and instret) count any event.
        let mut set: Vec<usize> = if known {
            (0..self.counters.len())
                .filter(|i| match self.counters[*i].spec {
                    CounterSpec::Hw { csr, .. } => csr > spec::CSR_INSTRET,
                    _ => false,
                })
                .collect()
        } else {
            Vec::new()
        };
        if let Some(f) = fixed {
            if !set.contains(&f) {
                set.insert(0, f);
            }
        }
        set.sort_unstable();
        (!set.is_empty()).then_some(set)
    }

    /// Table 9.
    fn config_matching(
        &mut self,
        cbase: usize,
        cmask: usize,
        flags: usize,
        event_idx: usize,
        data: u64,
    ) -> Result<usize, Error> {
        if flags & spec::CFG_FLAGS_RESERVED != 0 {
            return Err(Error::InvalidParam);
        }
        let set = self.counter_set(cbase, cmask)?;
        let event = spec::decode_event_idx(event_idx).ok_or(Error::NotSupported)?;
        let eligible = self
            .eligible(event_idx, event, data)
            .ok_or(Error::NotSupported)?;
        let chosen = if flags & spec::SBI_PMU_CFG_FLAG_SKIP_MATCH != 0 {
            let (_, first) = *set.first().ok_or(Error::NotSupported)?;
            if self.counters[first].started {
                return Err(Error::NotSupported);
            }
            first
        } else {
            set.iter()
                .map(|(_, i)| *i)
                .find(|i| eligible.contains(i) && !self.counters[*i].started)
                .ok_or(Error::NotSupported)?
        };
        let c = &mut self.counters[chosen];
        c.event = Some(Mapping {
            idx: event_idx,
            event,
            data,
        });
        c.inhibit = flags & spec::CFG_FLAG_INHIBIT_HINTS;
        // OpenSBI configures a hardware counter with its overflow bit set (its interrupt masked);
        // only a start clears it.
        if c.is_hw() && self.cfg.sscofpmf {
            c.overflow = true;
        }
        if flags & spec::SBI_PMU_CFG_FLAG_CLEAR_VALUE != 0 {
            c.value = 0;
        }
        if flags & spec::SBI_PMU_CFG_FLAG_AUTO_START != 0 {
            c.started = true;
            c.overflow = false;
        }
        Ok(chosen)
    }

    /// Table 11.
    fn start(&mut self, cbase: usize, cmask: usize, flags: usize, init: u64) -> Result<(), Error> {
        let set_init = flags & spec::SBI_PMU_START_SET_INIT_VALUE != 0;
        let from_snapshot = flags & spec::SBI_PMU_START_FLAG_INIT_SNAPSHOT != 0;
        if flags & spec::START_FLAGS_RESERVED != 0 || (set_init && from_snapshot) {
            return Err(Error::InvalidParam);
        }
        let set = self.counter_set(cbase, cmask)?;
        if from_snapshot && self.shmem.is_none() {
            return Err(Error::NoShmem);
        }
        if set_init && set.len() != 1 {
            return Err(Error::InvalidParam);
        }
        let fw_bits = self.cfg.fw_bits;
        let mut already = false;
        for (b, idx) in set {
            let c = &mut self.counters[idx];
            if c.event.is_none() {
                self.anomalies.push(Anomaly::StartUnconfigured(idx));
                continue;
            }
            if c.started {
                already = true;
                continue;
            }
            let mask = c.mask(fw_bits);
            if set_init {
                c.value = init & mask;
            } else if from_snapshot {
                // counter_values is indexed relative to counter_idx_base (Table 16).
                c.value = self.page.ctr_values.get(b).copied().unwrap_or(0) & mask;
            }
            c.started = true;
            c.overflow = false;
        }
        if already {
            Err(Error::AlreadyStarted)
        } else {
            Ok(())
        }
    }

    /// Table 13.
    fn stop(&mut self, cbase: usize, cmask: usize, flags: usize) -> Result<(), Error> {
        if flags & spec::STOP_FLAGS_RESERVED != 0 {
            return Err(Error::InvalidParam);
        }
        let set = self.counter_set(cbase, cmask)?;
        let snapshot = flags & spec::SBI_PMU_STOP_FLAG_TAKE_SNAPSHOT != 0;
        let reset = flags & spec::SBI_PMU_STOP_FLAG_RESET != 0;
        if snapshot && self.shmem.is_none() {
            return Err(Error::NoShmem);
        }
        let mut already = false;
        let mut overflow = 0u64;
        for (b, idx) in set {
            let c = &mut self.counters[idx];
            if c.event.is_none() {
                continue;
            }
            if c.started {
                c.started = false;
            } else {
                already = true;
            }
            if snapshot {
                // Both the values and the bitmap are relative to counter_idx_base (Table 16).
                if let Some(slot) = self.page.ctr_values.get_mut(b) {
                    *slot = c.value;
                }
                if c.overflow && b < 64 {
                    overflow |= 1 << b;
                }
            }
            if reset {
                c.event = None;
                c.inhibit = 0;
                // As at configuration: a reset hardware counter keeps its overflow bit set, so
                // `scountovf` shows every counter firmware has reset (OpenSBI's
                // pmu_reset_hw_mhpmevent()).
                if c.is_hw() && self.cfg.sscofpmf {
                    c.overflow = true;
                }
            }
        }
        if snapshot {
            // The bitmap is valid only with Sscofpmf; it must be zero otherwise.
            self.page.ctr_overflow_mask = if self.cfg.sscofpmf { overflow } else { 0 };
        }
        if already {
            Err(Error::AlreadyStopped)
        } else {
            Ok(())
        }
    }

    /// Tables 14 and 15.
    fn fw_read(&self, idx: usize) -> Result<u64, Error> {
        match self.counters.get(idx) {
            Some(c) if c.spec == CounterSpec::Fw => Ok(c.value),
            _ => Err(Error::InvalidParam),
        }
    }

    /// Table 17.
    fn set_shmem(&mut self, lo: usize, hi: usize, flags: usize) -> Result<(), Error> {
        if !self.cfg.snapshot {
            return Err(Error::NotSupported);
        }
        if flags != 0 {
            return Err(Error::InvalidParam);
        }
        if lo == spec::SHMEM_DISABLE && hi == spec::SHMEM_DISABLE {
            self.shmem = None;
            return Ok(());
        }
        if !lo.is_multiple_of(spec::SNAPSHOT_SIZE) {
            return Err(Error::InvalidParam);
        }
        if hi != 0 || lo as u64 != SNAPSHOT_PHYS {
            return Err(Error::InvalidAddress);
        }
        self.shmem = Some(lo as u64);
        Ok(())
    }

    /// Table 19.
    fn event_get_info(
        &mut self,
        lo: usize,
        hi: usize,
        num: usize,
        flags: usize,
    ) -> Result<(), Error> {
        const ENTRY: usize = spec::EVENT_INFO_ENTRY_SIZE;
        if !self.cfg.event_info {
            return Err(Error::NotSupported);
        }
        if flags != 0 || !lo.is_multiple_of(ENTRY) {
            return Err(Error::InvalidParam);
        }
        let base = EVENT_INFO_PHYS as usize;
        let end = base + EVENT_INFO_ENTRIES * ENTRY;
        let Some(first) = lo.checked_sub(base).map(|off| off / ENTRY) else {
            return Err(Error::InvalidAddress);
        };
        let fits = num
            .checked_mul(ENTRY)
            .and_then(|len| lo.checked_add(len))
            .is_some_and(|stop| stop <= end);
        if hi != 0 || !fits {
            return Err(Error::InvalidAddress);
        }
        let entries = first..first + num;
        // Table 18: bytes 0-3 the event_idx, 4-7 the output word, 8-15 the event_data; RISC-V
        // memory is little-endian, so the first 64-bit word holds event_idx in its low half.
        let event_idx = |mem: &[u64], i: usize| mem[2 * i] & 0xffff_ffff;
        if entries.clone().any(|i| {
            event_idx(&self.event_info_mem, i) as u32 & spec::EVENT_INFO_EVENT_IDX_RESERVED != 0
        }) {
            return Err(Error::InvalidParam);
        }
        for i in entries {
            let idx = event_idx(&self.event_info_mem, i) as usize;
            let data = self.event_info_mem[2 * i + 1];
            let supported = spec::decode_event_idx(idx)
                .and_then(|event| self.eligible(idx, event, data))
                .is_some();
            // The whole output word is written: bit 0, and zeros in the reserved bits.
            let output = if supported {
                u64::from(spec::EVENT_INFO_OUTPUT_SUPPORTED)
            } else {
                0
            };
            self.event_info_mem[2 * i] = idx as u64 | output << 32;
        }
        Ok(())
    }
}

impl Model {
    /// The supervisor's view of the simulated event-info array.
    pub fn event_info_mem(&mut self) -> &mut [u64] {
        &mut self.event_info_mem
    }
}

impl Firmware for Model {
    fn sbi_ecall(&mut self, fid: Fid, args: [usize; 6]) -> Result<usize, SbiError> {
        self.ecall(spec::EXT_PMU, fid.id(), args).result()
    }

    /// Registers the simulated snapshot page, or disables snapshot memory with all ones.
    fn snapshot_set_shmem(&mut self, enable: bool) -> Result<(), SbiError> {
        let (lo, hi) = if enable {
            (SNAPSHOT_PHYS as usize, 0)
        } else {
            (spec::SHMEM_DISABLE, spec::SHMEM_DISABLE)
        };
        let ret = self.sbi_ecall(Fid::SnapshotSetShmem, [lo, hi, 0, 0, 0, 0]);
        ret.map(|_| ())
    }

    /// Copies `entries` into the simulated event-info array, lends it for as many whole entries as
    /// both hold, and copies firmware's answer back.
    fn event_get_info(&mut self, entries: &mut [u64]) -> Result<(), SbiError> {
        let words = entries.len().min(self.event_info_mem.len());
        self.event_info_mem[..words].copy_from_slice(&entries[..words]);
        let args = [EVENT_INFO_PHYS as usize, 0, words / 2, 0, 0, 0];
        let ret = self.sbi_ecall(Fid::EventGetInfo, args);
        entries[..words].copy_from_slice(&self.event_info_mem[..words]);
        ret.map(|_| ())
    }

    fn read_counter_csr(&mut self, csr: u16) -> u64 {
        self.csr_reads += 1;
        if csr == spec::CSR_SCOUNTOVF {
            if !self.cfg.sscofpmf {
                self.anomalies.push(Anomaly::UnknownCsr(csr));
                return 0;
            }
            return self
                .counters
                .iter()
                .filter_map(|c| match c.spec {
                    CounterSpec::Hw { csr, .. } if c.overflow => Some(csr),
                    _ => None,
                })
                .filter(|csr| (spec::CSR_CYCLE..=spec::CSR_HPMCOUNTER31).contains(csr))
                .fold(0, |m, csr| m | 1 << (csr - spec::CSR_CYCLE));
        }
        match self
            .counters
            .iter()
            .find(|c| matches!(c.spec, CounterSpec::Hw { csr: x, .. } if x == csr))
        {
            Some(c) => c.value,
            None => {
                self.anomalies.push(Anomaly::UnknownCsr(csr));
                0
            }
        }
    }

    fn has_snapshot_mem(&mut self) -> bool {
        true
    }

    fn snapshot_page_word(&mut self, word: usize) -> u64 {
        match word.checked_sub(1) {
            None => self.page.ctr_overflow_mask,
            Some(i) => self.page.ctr_values.get(i).copied().unwrap_or(0),
        }
    }

    fn set_snapshot_page_word(&mut self, word: usize, value: u64) {
        match word.checked_sub(1) {
            None => self.page.ctr_overflow_mask = value,
            Some(i) => {
                if let Some(v) = self.page.ctr_values.get_mut(i) {
                    *v = value;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    // The memory the model shares with the driver is typed by the crate's `#[repr(C)]` structs, which
    // the `Firmware` trait hands over; the model reads and writes it by field. These tests pin each
    // field to the offset the specification gives it, so the fields mean what the model takes them to
    // mean.

    #[test]
    fn snapshot_page_has_the_layout_of_table_16() {
        assert_eq!(size_of::<SnapshotPage>(), spec::SNAPSHOT_SIZE);
        assert_eq!(
            offset_of!(SnapshotPage, ctr_overflow_mask),
            spec::SNAPSHOT_OVERFLOW_BITMAP_OFFSET
        );
        assert_eq!(
            offset_of!(SnapshotPage, ctr_values),
            spec::SNAPSHOT_COUNTER_VALUES_OFFSET
        );
        let page = SnapshotPage::new();
        assert_eq!(
            size_of::<u64>() * page.ctr_values.len(),
            spec::SNAPSHOT_COUNTER_VALUES_SIZE
        );
    }

    #[test]
    fn event_info_words_have_the_layout_of_table_18() {
        // The crate hands firmware an entry as two 64-bit words; in the bytes of a little-endian
        // hart each field must sit where Table 18 puts it.
        let entry = sbi_pmu::abi::EventInfo {
            event_idx: 0x2_1234,
            output: 1,
            event_data: 0xdead_beef_0000_0001,
        };
        let bytes: Vec<u8> = entry
            .to_words()
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        assert_eq!(bytes.len(), spec::EVENT_INFO_ENTRY_SIZE);
        let field = |offset: usize, len: usize| {
            bytes[offset..offset + len]
                .iter()
                .rev()
                .fold(0u64, |value, byte| value << 8 | u64::from(*byte))
        };
        assert_eq!(field(spec::EVENT_INFO_EVENT_IDX_OFFSET, 4), 0x2_1234);
        assert_eq!(field(spec::EVENT_INFO_OUTPUT_OFFSET, 4), 1);
        assert_eq!(
            field(spec::EVENT_INFO_EVENT_DATA_OFFSET, 8),
            0xdead_beef_0000_0001
        );
    }

    #[test]
    fn the_crate_calls_the_extension_the_model_implements() {
        // The trait does not pass the extension ID (the kernel glue puts it in a7), so it is compared
        // here.
        assert_eq!(sbi_pmu::abi::EXT_PMU, spec::EXT_PMU);
    }
}
