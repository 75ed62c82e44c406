#!/bin/bash
# The batched context switch: a task with 4 counting events costs one counter_stop call when it is switched out
# and one counter_start call when it comes back, and no counter_config_matching once its counters are mapped.
# The driver's debugfs file counts SBI calls per CPU; the monitored side of a ping-pong pair says how often it
# was switched out.
set -uo pipefail

STATS=/sys/kernel/debug/riscv_pmu_sbi_rust/sbi_calls
ROUNDS=5000
EVENTS=cycles,instructions,dTLB-load-misses,iTLB-load-misses

if [ "${RPMU_DRIVER:-}" != rust ]; then
  echo "ok sbi_calls_per_switch # SKIP only the Rust driver counts its SBI calls"
  exit 0
fi
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null
if [ ! -r "$STATS" ]; then
  echo "not ok sbi_calls_per_switch $STATS is missing"
  exit 0
fi

# sums: the totals over all CPUs of the columns counter_config_matching, counter_start and counter_stop.
sums() { awk 'NR > 1 { m += $4; s += $5; t += $6 } END { print m + 0, s + 0, t + 0 }' "$STATS"; }

read -r m0 s0 t0 < <(sums)
out=$(perf stat --no-inherit -x, -e "$EVENTS" -- /opt/rpmu/bin/pingpong "$ROUNDS" 2>/tmp/pingpong.stat)
read -r m1 s1 t1 < <(sums)
echo "# $(cat /tmp/pingpong.stat | tr '\n' ' ')"
read -r _ vol nonvol <<<"$out"
if ! [[ ${vol:-} =~ ^[0-9]+$ && ${nonvol:-} =~ ^[0-9]+$ ]]; then
  echo "not ok sbi_calls_per_switch pingpong printed '$out'"
  exit 0
fi
sw=$((vol + nonvol))
match=$((m1 - m0)); start=$((s1 - s0)); stop=$((t1 - t0))
echo "# $ROUNDS round trips, $sw switches of the monitored task; SBI calls: config_matching $match, start $start, stop $stop"
echo "# per switch: start $(awk -v a=$start -v b=$sw 'BEGIN { printf "%.3f", a / b }'), stop $(awk -v a=$stop -v b=$sw 'BEGIN { printf "%.3f", a / b }')"
# Outside the round trips perf enables, disables and reads the events, and the task is switched a few times
# before and after the counted loop: a margin of 50 calls covers that. Each CPU the task runs on maps its 4
# counters once.
# On two harts the reply is sometimes there before the monitored task waits for it, so not every round trip
# switches it out; most must, for the margin to stay small.
if [ "$sw" -lt $((ROUNDS / 2)) ]; then
  echo "not ok sbi_calls_per_switch the monitored task was switched out only $sw times in $ROUNDS round trips"
elif [ "$start" -gt $((sw + 50)) ] || [ "$stop" -gt $((sw + 50)) ] || [ "$start" -lt "$sw" ] || [ "$stop" -lt "$sw" ]; then
  echo "not ok sbi_calls_per_switch expected one start and one stop per switch: $start starts and $stop stops for $sw switches"
elif [ "$match" -gt $((4 * $(nproc))) ]; then
  echo "not ok sbi_calls_per_switch $match counter_config_matching calls for 4 events on $(nproc) CPUs: mappings are not kept across switches"
else
  echo "ok sbi_calls_per_switch"
fi
