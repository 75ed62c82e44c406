// SPDX-License-Identifier: GPL-2.0

//! The hart's delegated counter CSRs, modelled from the RISC-V specifications: Smcdeleg/Ssccfg
//! ("Counter Delegation", v1.0), Smcsrind/Sscsrind ("Indirect CSR Access", v1.0) and Sscofpmf
//! ("Count Overflow and Mode-Based Filtering", v1.0). The model implements the crate's
//! [`CounterCsrs`] with its own transcription of the encodings, never the crate's constants.
//!
//! What the model follows:
//! - with `menvcfg.CDE` set (the model's [`Config::cdeleg`] is `Some`), `siselect` values 0x40 to
//!   0x5F select hardware counter `siselect - 0x40`; 0x41 (`time`) is reserved. `sireg` is then the
//!   counter (`mcycle`, `minstret`, `mhpmcounterN`) and `sireg2` its configuration (`mhpmeventN`,
//!   or `mcyclecfg`/`minstretcfg`, which need Smcntrpmf, which the model does not have). An access
//!   to a counter whose `mcounteren` bit is clear, or without CDE, raises an illegal instruction
//!   exception: the model records it as an anomaly and reads 0;
//! - `scountinhibit` is `mcountinhibit` restricted to the delegated counters: bits of counters that
//!   are not delegated (or not implemented) read as zero and ignore writes (WARL);
//! - `mhpmevent` holds the event selector in its low bits, and with Sscofpmf OF (bit 63), MINH (62),
//!   SINH (61), UINH (60), VSINH (59), VUINH (58). A counter counts the event its selector names in
//!   the modes its xINH bits leave; which selector names which event is the platform's
//!   ([`Config::cd_selectors`]); a selector no row names is a raw event; 0 counts nothing;
//! - a wrap sets OF and, when OF was clear, the overflow interrupt (the same as for SBI-configured
//!   counters, [`Model::tick`]); software may write OF.

use sbi_pmu::deleg::CounterCsrs;

use crate::spec::{self, Event};
use crate::{Anomaly, Config, CounterSpec, Mapping, Model};

/// QEMU's `virt` machine: the selectors of the standard events its programmable counters count,
/// each the event's SBI `event_idx` (QEMU's `riscv,event-to-mhpmcounters` rows: cycles,
/// instructions, dTLB read miss, dTLB write miss, iTLB read miss).
pub const QEMU_VIRT_SELECTORS: [(usize, u64); 5] = [
    (0x00001, 0x00001),
    (0x00002, 0x00002),
    (0x10019, 0x10019),
    (0x1001B, 0x1001B),
    (0x10021, 0x10021),
];

/// First `siselect` value of the counter delegation range.
const ISELECT_CD_FIRST: usize = 0x40;
/// Last `siselect` value of the counter delegation range.
const ISELECT_CD_LAST: usize = 0x5F;
/// `mhpmevent.OF`.
const OF: u64 = 1 << 63;
/// The selector field below the Sscofpmf bits.
const SELECTOR: u64 = (1 << 56) - 1;
/// The `mhpmevent` xINH bits and the SBI `config_flags` inhibit hint each one stands for.
const INH: [(u64, usize); 5] = [
    (1 << 62, spec::SBI_PMU_CFG_FLAG_SET_MINH),
    (1 << 61, spec::SBI_PMU_CFG_FLAG_SET_SINH),
    (1 << 60, spec::SBI_PMU_CFG_FLAG_SET_UINH),
    (1 << 59, spec::SBI_PMU_CFG_FLAG_SET_VSINH),
    (1 << 58, spec::SBI_PMU_CFG_FLAG_SET_VUINH),
];
/// The raw event v2 `event_idx` (type #3, code 0), under which a raw selector is recorded.
const RAW_V2_EVENT_IDX: usize = 3 << 16;

impl Config {
    /// This configuration with counter delegation of every hardware counter (`mcounteren` all ones,
    /// as OpenSBI writes it).
    pub fn with_cdeleg(mut self) -> Self {
        self.cdeleg = Some(u64::MAX);
        self
    }
}

impl Model {
    /// The logical counter behind hardware counter `n`.
    fn hw_counter(&self, n: usize) -> Option<usize> {
        let csr = spec::CSR_CYCLE.checked_add(u16::try_from(n).ok()?)?;
        self.counters
            .iter()
            .position(|c| matches!(c.spec, CounterSpec::Hw { csr: x, .. } if x == csr))
    }

    /// The hardware counters delegated to S-mode: `mcounteren` less the counters that do not exist
    /// (`mcounteren` is WARL too).
    pub fn delegated_hw(&self) -> u64 {
        let Some(mcounteren) = self.cfg.cdeleg else {
            return 0;
        };
        (0..32)
            .filter(|&n| mcounteren & (1 << n) != 0 && self.hw_counter(n).is_some())
            .fold(0, |m, n| m | 1 << n)
    }

    /// The logical counter `siselect` selects for `sireg`/`sireg2` (`reg` 1 or 2), or the anomaly
    /// of an access that raises an illegal instruction exception.
    fn selected(&mut self, reg: u8) -> Option<usize> {
        let isel = self.siselect;
        let ok = (ISELECT_CD_FIRST..=ISELECT_CD_LAST).contains(&isel)
            && isel != ISELECT_CD_FIRST + 1
            && self.delegated_hw() & (1 << (isel - ISELECT_CD_FIRST)) != 0
            // mcyclecfg and minstretcfg need Smcntrpmf.
            && !(reg == 2 && isel - ISELECT_CD_FIRST <= 2);
        let idx = ok
            .then(|| self.hw_counter(isel - ISELECT_CD_FIRST))
            .flatten();
        if idx.is_none() {
            self.anomalies.push(Anomaly::IllegalCsrAccess(isel, reg));
        }
        idx
    }

    /// The event a delegated counter counts with `selector`, on this platform.
    fn decode_selector(&self, selector: u64) -> Option<Mapping> {
        if selector == 0 {
            return None;
        }
        let has = |idx: usize| {
            self.cfg
                .hw_events
                .as_ref()
                .is_none_or(|events| events.contains(&idx))
        };
        if let Some(&(idx, _)) = self
            .cfg
            .cd_selectors
            .iter()
            .find(|(idx, sel)| *sel == selector && has(*idx))
        {
            let event = spec::decode_event_idx(idx)?;
            return Some(Mapping {
                idx,
                event,
                data: 0,
            });
        }
        self.cfg.raw_events.then_some(Mapping {
            idx: RAW_V2_EVENT_IDX,
            event: Event::Raw { v2: true },
            data: selector,
        })
    }

    /// Reads `sireg`: the selected counter (the driver reads counters through their own CSRs).
    pub fn sireg_read(&mut self) -> u64 {
        self.selected(1).map_or(0, |i| self.counters[i].value)
    }

    /// Reads `sireg2`: the selected counter's event selector and overflow bit.
    pub fn sireg2_read(&mut self) -> u64 {
        self.selected(2).map_or(0, |i| {
            let c = &self.counters[i];
            c.cd_event | if c.overflow { OF } else { 0 }
        })
    }
}

impl CounterCsrs for Model {
    fn siselect_write(&mut self, value: usize) {
        self.siselect = value;
    }

    fn sireg_write(&mut self, value: u64) {
        if let Some(i) = self.selected(1) {
            let mask = self.counters[i].mask(self.cfg.fw_bits);
            self.counters[i].value = value & mask;
        }
    }

    fn sireg2_write(&mut self, value: u64) {
        let Some(i) = self.selected(2) else { return };
        let mapping = self.decode_selector(value & SELECTOR);
        let inhibit = INH
            .iter()
            .filter(|(bit, _)| value & bit != 0)
            .fold(0, |m, (_, flag)| m | flag);
        let c = &mut self.counters[i];
        c.event = mapping;
        c.inhibit = inhibit;
        c.cd_event = value & !OF;
        c.overflow = self.cfg.sscofpmf && value & OF != 0;
    }

    fn scountinhibit_read(&mut self) -> u64 {
        if self.cfg.cdeleg.is_none() {
            self.anomalies.push(Anomaly::IllegalCsrAccess(0, 0));
            return 0;
        }
        let delegated = self.delegated_hw();
        (0..32)
            .filter(|&n| delegated & (1 << n) != 0)
            .filter(|&n| {
                self.hw_counter(n)
                    .is_some_and(|i| !self.counters[i].started)
            })
            .fold(0, |m, n| m | 1 << n)
    }

    fn scountinhibit_write(&mut self, value: u64) {
        if self.cfg.cdeleg.is_none() {
            self.anomalies.push(Anomaly::IllegalCsrAccess(0, 0));
            return;
        }
        let delegated = self.delegated_hw();
        for n in (0..32).filter(|&n| delegated & (1 << n) != 0) {
            let Some(i) = self.hw_counter(n) else {
                continue;
            };
            let start = value & (1 << n) == 0;
            let c = &mut self.counters[i];
            if start && !c.started && c.event.is_none() {
                self.anomalies.push(Anomaly::StartUnconfigured(i));
            }
            c.started = start;
        }
    }

    fn scountinhibit_set(&mut self, bits: u64) {
        let v = self.scountinhibit_read();
        self.scountinhibit_write(v | bits);
    }

    fn scountinhibit_clear(&mut self, bits: u64) {
        let v = self.scountinhibit_read();
        self.scountinhibit_write(v & !bits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Version;
    use crate::{Mode, SimEvent};

    fn model() -> Model {
        Model::new(Config::opensbi_like(Version::V2_0, 4, 48).with_cdeleg())
    }

    #[test]
    fn scountinhibit_is_warl_over_the_delegated_counters() {
        let mut m = model();
        m.scountinhibit_write(u64::MAX);
        // cycle, instret and hpmcounter3..6; not time.
        assert_eq!(m.scountinhibit_read(), 0b111_1101);
        let mut m = Model::new(Config {
            cdeleg: Some(0b1000),
            ..Config::opensbi_like(Version::V2_0, 4, 48)
        });
        m.scountinhibit_write(u64::MAX);
        assert_eq!(m.scountinhibit_read(), 0b1000);
        assert!(m.anomalies().is_empty());
    }

    #[test]
    fn a_programmed_counter_counts_its_event_in_the_modes_it_does_not_inhibit() {
        let mut m = model();
        m.siselect_write(0x43);
        m.sireg_write(100);
        // Instructions, SINH.
        m.sireg2_write(2 | 1 << 61);
        m.scountinhibit_clear(1 << 3);
        m.tick(SimEvent::Hw(2), Mode::U, 5);
        m.tick(SimEvent::Hw(2), Mode::S, 7);
        m.tick(SimEvent::Hw(1), Mode::U, 9);
        assert_eq!(m.sireg_read(), 105);
        m.scountinhibit_set(1 << 3);
        m.tick(SimEvent::Hw(2), Mode::U, 5);
        assert_eq!(m.counter_value(3), Some(105));
        // Any other selector is a raw event.
        m.sireg2_write(0x12);
        m.scountinhibit_clear(1 << 3);
        m.tick(SimEvent::Raw(0x12), Mode::S, 3);
        assert_eq!(m.sireg_read(), 108);
        assert!(m.anomalies().is_empty());
    }

    #[test]
    fn a_wrap_sets_of_and_interrupts_only_when_of_was_clear() {
        let mut m = model();
        m.siselect_write(0x44);
        m.sireg_write((1 << 48) - 2);
        m.sireg2_write(1 | OF);
        m.scountinhibit_clear(1 << 4);
        m.tick(SimEvent::Hw(1), Mode::S, 4);
        assert!(!m.irq_pending());
        m.sireg_write((1 << 48) - 2);
        m.sireg2_write(1);
        m.tick(SimEvent::Hw(1), Mode::S, 4);
        assert!(m.irq_pending());
        assert_eq!(m.sireg2_read(), 1 | OF);
        use sbi_pmu::firmware::Firmware;
        assert_eq!(m.read_counter_csr(spec::CSR_SCOUNTOVF) & 1 << 4, 1 << 4);
    }

    #[test]
    fn illegal_accesses_are_reported() {
        let mut m = model();
        m.siselect_write(0x41);
        m.sireg_read();
        m.siselect_write(0x40);
        m.sireg2_write(1);
        m.siselect_write(0x60);
        m.sireg_read();
        let mut plain = Model::new(Config::opensbi_like(Version::V2_0, 4, 48));
        plain.scountinhibit_read();
        plain.siselect_write(0x43);
        plain.sireg_read();
        assert_eq!(
            m.anomalies(),
            [
                Anomaly::IllegalCsrAccess(0x41, 1),
                Anomaly::IllegalCsrAccess(0x40, 2),
                Anomaly::IllegalCsrAccess(0x60, 1),
            ]
        );
        assert_eq!(
            plain.anomalies(),
            [
                Anomaly::IllegalCsrAccess(0, 0),
                Anomaly::IllegalCsrAccess(0x43, 1)
            ]
        );
    }
}
