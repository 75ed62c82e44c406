#!/bin/bash
# A short sampling storm (make stress runs the long one): `perf record -a -c P` at periods 1 and 10 on the
# kernel-inclusive cycles and instructions events of every CPU, with perf's sample rate lowered so that perf core
# throttles them. Each run must complete with samples and, at period 1, throttle records; afterwards no counter
# is left in use (the Rust driver's debugfs) and counting still works. The kernel log must stay clean, which
# the harness checks.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"
# shellcheck source=storm_lib.sh
. "$RPMU_SELFTEST_DIR/storm_lib.sh"

W=$RPMU_SELFTEST_DIR/workload
COUNTERS=/sys/kernel/debug/riscv_pmu_sbi_rust/counters
PCT=/proc/sys/kernel/perf_cpu_time_max_percent
RATE=/proc/sys/kernel/perf_event_max_sample_rate

if [ "$RPMU_SSCOFPMF" != 1 ]; then
  pass "storm # SKIP sampling needs Sscofpmf (without it both drivers refuse sampling events)"
  exit 0
fi
if [ "$RPMU_ICOUNT" = 1 ]; then
  # Under -icount QEMU 10.0.2 can abort on a storm of overflow interrupts ("Raised interrupt while not in I/O
  # function"), as under the fuzzer; the storm runs where the harts are not exact.
  pass "storm # SKIP not under -icount (QEMU aborts on overflow storms there)"
  exit 0
fi

old_pct=$(cat "$PCT")
old_rate=$(cat "$RATE")
restore() { echo "$old_rate" >"$RATE" 2>/dev/null; echo "$old_pct" >"$PCT"; }
trap 'restore; rpmu_finish' EXIT
# perf core throttles an event that overflows more often than perf_event_max_sample_rate / HZ times in a tick;
# the dynamic limit is turned back on and the rate lowered to 1000 per second, as make stress does.
echo 25 >"$PCT"
echo 1000 >"$RATE"
# one_storm PERIOD EVENT: one storm; it must complete with samples. A run of a few milliseconds may end before
# QEMU's overflow timer fires (see attempts in lib.sh; seen once for the Rust driver in make test beside other jobs,
# not in 90 rounds of these four storms in fresh boots, alone or beside busy loops), so each runs through attempts: a
# driver that never delivers a sample still fails, and a failed perf fails at once.
one_storm() {
  rpmu_storm 120 /tmp/storm.data "$1" "$2" "$W" 200000
  [ "$rc" -eq 0 ] && [ "$samples" -gt 0 ] && return 0
  why="exit $rc, $samples samples: $(tail -2 <<<"$out" | tr '\n' ' ')"
  [ "$rc" -eq 0 ] && return 1
  return 2
}

for p in 1 10; do
  for ev in cycles instructions; do
    attempts "storm_p${p}_${ev}_completed" one_storm "$p" "$ev"
    if [ "$p" = 1 ]; then
      if [ "$throttles" -gt 0 ]; then pass "storm_p1_${ev}_throttled"; else
        fail "storm_p1_${ev}_throttled no throttle record at period 1"; fi
    fi
    rm -f /tmp/storm.data
  done
done
restore

if [ "$RPMU_DRIVER" = rust ] && [ -r "$COUNTERS" ]; then
  used=$(awk 'NR > 1 && ($2 != 0 || $3 != "0x0" || $4 != "0x0" || $5 != "0x0")' "$COUNTERS")
  if [ -z "$used" ]; then pass "storm_counters_free"; else
    fail "storm_counters_free counters still in use: $(tr '\n' ';' <<<"$used")"; fi
else
  pass "storm_counters_free # SKIP only the Rust driver's debugfs shows counter use"
fi
n=$(env -i PATH=/usr/bin perf stat -x, -e instructions -- "$W" 100000 2>&1 >/dev/null | awk -F, '$3 == "instructions" { print $1 }')
if [[ ${n:-x} =~ ^[0-9]+$ ]] && [ "$n" -gt 100000 ]; then pass "storm_counting_after"; else
  fail "storm_counting_after perf stat of instructions after the storms gave '${n:-nothing}'"; fi
