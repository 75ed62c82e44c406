// SPDX-License-Identifier: GPL-2.0

//! The batching planner: the fewest SBI calls that take one CPU's counters from their state in
//! firmware to the state perf wants.
//!
//! perf brackets a context switch with `pmu_disable`/`pmu_enable`. The C driver issues SBI calls per
//! event inside that bracket (`config_matching` and `start` on add, `stop` twice on del). The driver
//! instead records what perf asked for and, when the outermost `pmu_enable` comes, hands this planner
//! four counter masks; the planner answers with at most one `counter_stop` over a mask, one
//! `counter_stop` with RESET over a mask, one `counter_start` over a mask for counters that continue
//! from the value they hold, and either one `counter_start` with INIT_SNAPSHOT (snapshot memory) or
//! one `counter_start` with SET_INIT_VALUE per counter whose value must be rewritten (sampling
//! reloads). The plan is data: five counter masks, which the driver core turns into those calls.
//!
//! All masks are logical counter indices with `counter_idx_base` 0: on RV64 one mask covers all 64
//! counters the driver handles.

use crate::pmu::CtrMasks;

/// The calls of one flush, as counter masks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Plan {
    /// Counters to stop, keeping their event mapping.
    pub stop: u64,
    /// Counters to stop (if running) and reset.
    pub reset: u64,
    /// Counters to start from the value they hold, in one call.
    pub start: u64,
    /// Counters to start from the snapshot page, in one call; the caller writes their values into
    /// the page first (the new value for reloads, the current value for the others).
    pub start_snapshot: u64,
    /// Counters to start one by one with SET_INIT_VALUE.
    pub start_with_value: u64,
}

impl Plan {
    /// Plans a flush of the work the masks `m` record, on a CPU whose firmware counters are
    /// `fw_counters` (their values only firmware knows: they cannot join a snapshot start unless
    /// they are reloaded or their value is known), with snapshot shared memory or not
    /// (`snapshot`).
    ///
    /// A running counter stops when it is no longer wanted or must be reloaded (a started counter
    /// cannot be given a new value). A counter in `reset` is stopped and reset by the RESET call
    /// alone. Wanted counters that are not left running start: those needing no new value in one
    /// plain call; reloads from the snapshot page in one call when there is snapshot memory, else one
    /// call each. With snapshot memory, counters that need no new value join the snapshot call when
    /// none of them is a firmware counter whose value is unknown (the caller writes the values a
    /// snapshot saved, or reads hardware counters' CSRs), so a flush then starts everything in a
    /// single call.
    #[inline]
    pub const fn new(m: &CtrMasks, fw_counters: u64, snapshot: bool) -> Self {
        let reset = m.reset;
        let want = m.want & !reset;
        let stop = m.running & (!want | m.reload) & !reset;
        let left_running = m.running & !stop & !reset;
        let to_start = want & !left_running;
        let reload = to_start & m.reload;
        let plain = to_start & !m.reload;
        let (start, start_snapshot, start_with_value) = if !snapshot || reload == 0 {
            (plain, 0, reload)
        } else if plain & fw_counters & !m.known == 0 {
            (0, reload | plain, 0)
        } else {
            (plain, reload, 0)
        };
        Self {
            stop,
            reset,
            start,
            start_snapshot,
            start_with_value,
        }
    }

    /// The counters running once the plan for `m` is carried out: those perf wants, less the
    /// reset ones.
    #[inline]
    pub const fn running_after(m: &CtrMasks) -> u64 {
        m.want & !m.reset
    }

    /// Whether the plan makes no call.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        (self.stop | self.reset | self.start | self.start_snapshot | self.start_with_value) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{StartFlags, StopFlags};
    use crate::counters::counters_in;

    /// One SBI call of a plan.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    enum PlannedCall {
        /// `counter_stop(0, cmask, flags)`.
        Stop { cmask: u64, flags: StopFlags },
        /// `counter_start(0, cmask, flags, 0)` for counters continuing from their value (flags
        /// empty) or loaded from the snapshot page (INIT_SNAPSHOT).
        Start { cmask: u64, flags: StartFlags },
        /// `counter_start(idx, 1, SET_INIT_VALUE, value)` for one counter loaded with a new value.
        StartWithValue { idx: u32 },
    }

    impl Plan {
        /// The calls in the order the driver makes them (`CpuHwEvents::carry_out`): stops before
        /// resets, both before any start, so a counter is never started twice and reloads see a
        /// stopped counter.
        fn calls(&self) -> impl Iterator<Item = PlannedCall> {
            // A call over a mask is made when the mask names a counter.
            let stop = |cmask, flags| (cmask != 0).then_some(PlannedCall::Stop { cmask, flags });
            let start = |cmask, flags| (cmask != 0).then_some(PlannedCall::Start { cmask, flags });
            // CAST: counter indices are below 64.
            let singles = counters_in(self.start_with_value)
                .map(|idx| PlannedCall::StartWithValue { idx: idx as u32 });
            stop(self.stop, StopFlags::empty())
                .into_iter()
                .chain(stop(self.reset, StopFlags::RESET))
                .chain(start(self.start, StartFlags::empty()))
                .chain(start(self.start_snapshot, StartFlags::INIT_SNAPSHOT))
                .chain(singles)
        }

        /// The number of SBI calls the plan makes.
        fn num_calls(&self) -> u32 {
            (self.stop != 0) as u32
                + (self.reset != 0) as u32
                + (self.start != 0) as u32
                + (self.start_snapshot != 0) as u32
                + self.start_with_value.count_ones()
        }
    }

    fn masks(running: u64, want: u64, reload: u64, reset: u64) -> CtrMasks {
        CtrMasks {
            running,
            want,
            reload,
            reset,
            ..CtrMasks::ZERO
        }
    }

    /// The plan of these masks, with firmware counters 8 to 15.
    fn plan(running: u64, want: u64, reload: u64, reset: u64, snapshot: bool) -> Plan {
        Plan::new(&masks(running, want, reload, reset), 0xff00, snapshot)
    }

    #[test]
    fn nothing_to_do_makes_no_call() {
        for snapshot in [false, true] {
            let p = plan(0b1010, 0b1010, 0, 0, snapshot);
            assert!(p.is_empty(), "{p:?}");
            assert_eq!(p.calls().count(), 0);
        }
    }

    #[test]
    fn context_switch_of_counting_events_is_one_stop_and_one_start() {
        // Sched out: every counter stops in one call.
        let out = plan(0b1111_1000, 0, 0, 0, false);
        assert_eq!(out.num_calls(), 1);
        assert_eq!(
            out.calls().collect::<Vec<_>>(),
            [PlannedCall::Stop {
                cmask: 0b1111_1000,
                flags: StopFlags::empty()
            }]
        );
        // Sched in (with firmware counters too): one plain start.
        let back = plan(0, 0x0ff8, 0, 0, false);
        assert_eq!(
            back.calls().collect::<Vec<_>>(),
            [PlannedCall::Start {
                cmask: 0x0ff8,
                flags: StartFlags::empty()
            }]
        );
    }

    #[test]
    fn reloads_without_snapshot_are_one_call_each() {
        let p = plan(0b0110, 0b1110, 0b1100, 0, false);
        // Counter 2 runs and must be reloaded: stopped first. Counter 1 keeps running.
        assert_eq!(p.stop, 0b0100);
        assert_eq!(p.start, 0);
        assert_eq!(p.start_with_value, 0b1100);
        assert_eq!(p.num_calls(), 3);
        assert_eq!(
            p.calls().collect::<Vec<_>>(),
            [
                PlannedCall::Stop {
                    cmask: 0b0100,
                    flags: StopFlags::empty()
                },
                PlannedCall::StartWithValue { idx: 2 },
                PlannedCall::StartWithValue { idx: 3 },
            ]
        );
    }

    #[test]
    fn reloads_with_snapshot_start_in_one_call() {
        // Hardware counters 3..6 restart after an overflow: one INIT_SNAPSHOT start for all.
        let p = plan(0, 0b111_1000, 0b000_1000, 0, true);
        assert_eq!(p.start_snapshot, 0b111_1000);
        assert_eq!(p.num_calls(), 1);
        // A firmware counter without reload keeps its value: it needs its own plain start.
        let p = plan(0, 0x0108, 0x0008, 0, true);
        assert_eq!(p.start_snapshot, 0x0008);
        assert_eq!(p.start, 0x0100);
        assert_eq!(p.num_calls(), 2);
    }

    #[test]
    fn resets_are_one_call_and_win_over_want() {
        let p = plan(0b0011, 0b0101, 0, 0b0011, false);
        assert_eq!(p.reset, 0b0011);
        assert_eq!(p.stop, 0);
        assert_eq!(p.start, 0b0100);
        let p = plan(0, 0b1, 0, 0b1, false);
        assert_eq!(p.start, 0);
        assert_eq!(Plan::running_after(&masks(0, 0b1, 0, 0b1)), 0);
    }

    #[test]
    fn plan_reaches_the_wanted_state_for_all_small_states() {
        // Every combination over 4 counters: simulate the calls and check the end state, and that the
        // plan never costs more than handling each counter on its own.
        for bits in 0..(1u32 << 16) {
            let m = |shift: u32| u64::from((bits >> shift) & 0xf);
            let reset = m(12) & !m(4);
            let s = masks(m(0), m(4), m(8) & m(4), reset);
            let p = Plan::new(&s, 0b1000, bits & 1 == 0);
            let mut running = s.running;
            let mut loaded = 0u64;
            for call in p.calls() {
                match call {
                    PlannedCall::Stop { cmask, .. } => running &= !cmask,
                    PlannedCall::Start { cmask, flags } => {
                        assert_eq!(running & cmask, 0, "start of a running counter {s:?}");
                        running |= cmask;
                        if flags.contains(StartFlags::INIT_SNAPSHOT) {
                            loaded |= cmask;
                        }
                    }
                    PlannedCall::StartWithValue { idx } => {
                        assert_eq!(running & (1 << idx), 0);
                        running |= 1 << idx;
                        loaded |= 1 << idx;
                    }
                }
            }
            // What perf wants runs, but for the reset counters.
            assert_eq!(running, Plan::running_after(&s), "{s:?} {p:?}");
            assert_eq!(loaded & s.reload, s.reload, "{s:?} {p:?}");
            let per_counter = (s.running & !s.want).count_ones()
                + s.reset.count_ones()
                + (s.want & !s.running).count_ones()
                + (s.reload & s.running).count_ones() * 2;
            assert!(
                p.num_calls() <= per_counter.max(1) || p.is_empty(),
                "{s:?} {p:?}"
            );
        }
    }
}
