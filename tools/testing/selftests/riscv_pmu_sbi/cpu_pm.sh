#!/bin/bash
# CPU PM: when a CPU enters a low-power state (cpu_pm_enter(), as idle drivers and suspend call it) its counters may
# lose their state, so the PMU driver stops its events and brings their counts up to date; at cpu_pm_exit() it
# starts them again. The test module rpmu_pm_check drives 50 enter/exit cycles on every CPU with a pinned
# instructions and a cycles counter open, and fails to load if a count moved while the CPU was "in low power" or
# did not move after it. For the Rust driver the SBI calls of those cycles are counted too: the two events stop in
# one counter_stop call and start in one counter_start call.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

KO=/root/rpmu_pm_check.ko
STATS=/sys/kernel/debug/riscv_pmu_sbi_rust/sbi_calls
CYCLES=50

if [ ! -r "$KO" ]; then
  fail "cpu_pm_stops_events $KO is missing (scripts/module-build --test-modules)"
  exit 0
fi
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null

# sums: the totals over all CPUs of the columns counter_start and counter_stop.
sums() { awk 'NR > 1 { s += $5; t += $6 } END { print s + 0, t + 0 }' "$STATS"; }

[ -r "$STATS" ] && read -r s0 t0 < <(sums)
out=$(insmod "$KO" cycles=$CYCLES 2>&1)
rc=$?
[ -r "$STATS" ] && read -r s1 t1 < <(sums)
dmesg | grep 'rpmu_pm_check:' | sed 's/^/# /'
rmmod rpmu_pm_check 2>/dev/null
if [ "$rc" -ne 0 ]; then
  fail "cpu_pm_stops_events insmod failed ($rc): $out"
else
  pass "cpu_pm_stops_events"
fi

if [ "${RPMU_DRIVER:-}" != rust ]; then
  pass "cpu_pm_one_call_each_way # SKIP only the Rust driver counts its SBI calls"
  exit 0
fi
if [ ! -r "$STATS" ]; then
  fail "cpu_pm_one_call_each_way $STATS is missing"
  exit 0
fi
cpus=$(nproc)
pm=$((CYCLES * cpus))
start=$((s1 - s0)); stop=$((t1 - t0))
echo "# $pm enter/exit cycles with 2 events: counter_start $start, counter_stop $stop"
if rust_delegates; then
  # With counter delegation both events are on delegated counters, stopped and started with CSRs.
  if [ "$start" -ne 0 ] || [ "$stop" -ne 0 ]; then
    fail "cpu_pm_one_call_each_way expected no SBI call with counter delegation: $start starts, $stop stops"
  else
    pass "cpu_pm_one_call_each_way"
  fi
  exit 0
fi
# Opening, enabling and closing the events costs a few calls per CPU besides the cycles.
if [ "$start" -lt "$pm" ] || [ "$stop" -lt "$pm" ] || [ "$start" -gt $((pm + 8 * cpus)) ] ||
  [ "$stop" -gt $((pm + 8 * cpus)) ]; then
  fail "cpu_pm_one_call_each_way expected one start and one stop per cycle: $start starts, $stop stops for $pm cycles"
else
  pass "cpu_pm_one_call_each_way"
fi
