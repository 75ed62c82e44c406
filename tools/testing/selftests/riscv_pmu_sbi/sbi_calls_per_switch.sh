#!/bin/bash
# The context switch's SBI calls: a task with 4 counting hardware events costs no SBI call when it is switched
# out and back in (its counters keep running while it is out and are read when it comes back), and no
# counter_config_matching once its counters are mapped.
# The driver's debugfs file counts SBI calls per CPU; the monitored side of a ping-pong pair says how often it
# was switched out.
# With snapshot memory (KVM's SBI PMU, where a counter read traps to the hypervisor) the task has 8 events, 5
# hardware and 3 firmware, and the switch costs one stop and one start: every event is updated from the values
# the stop saved, so no counter_fw_read.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

STATS=/sys/kernel/debug/riscv_pmu_sbi_rust/sbi_calls
# Under nested virtualisation every SBI call is two traps through an emulated hypervisor: fewer rounds. A driver
# that made its calls per event would make 4 to 8 times the allowed number in either case.
ROUNDS=$([ "${RPMU_NESTED:-0}" = 1 ] && echo 200 || echo 2000)
EVENTS=cycles,instructions,dTLB-load-misses,iTLB-load-misses
NAME=sbi_calls_per_switch
NEVENTS=4
if klog_has 'riscv_pmu_sbi_rust: SBI PMU snapshot detected'; then
  # Firmware events are raw events with bit 63 set: SBI_PMU_FW_SET_TIMER (5), ILLEGAL_INSN (4), IPI_SENT (6).
  EVENTS=cycles,instructions,dTLB-load-misses,dTLB-store-misses,iTLB-load-misses,r8000000000000005,r8000000000000004,r8000000000000006
  NAME=sbi_calls_per_switch_snapshot
  NEVENTS=8
fi

if [ "${RPMU_DRIVER:-}" != rust ]; then
  pass "$NAME # SKIP only the Rust driver counts its SBI calls"
  exit 0
fi
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null
if [ ! -r "$STATS" ]; then
  fail "$NAME $STATS is missing"
  exit 0
fi

# sums: the totals over the CPUs (not the check's line) of the columns counter_config_matching, counter_start,
# counter_stop and counter_fw_read.
sums() { awk '$1 ~ /^[0-9]+$/ { m += $4; s += $5; t += $6; r += $7 } END { print m + 0, s + 0, t + 0, r + 0 }' "$STATS"; }

read -r m0 s0 t0 r0 < <(sums)
out=$(perf stat --no-inherit -x, -e "$EVENTS" -- $RPMU_SELFTEST_DIR/pingpong "$ROUNDS" 2>/tmp/pingpong.stat)
read -r m1 s1 t1 r1 < <(sums)
echo "# $(cat /tmp/pingpong.stat | tr '\n' ' ')"
read -r _ vol nonvol <<<"$out"
if ! [[ ${vol:-} =~ ^[0-9]+$ && ${nonvol:-} =~ ^[0-9]+$ ]]; then
  fail "$NAME pingpong printed '$out'"
  exit 0
fi
sw=$((vol + nonvol))
match=$((m1 - m0)); start=$((s1 - s0)); stop=$((t1 - t0)); reads=$((r1 - r0))
echo "# $ROUNDS round trips, $sw switches of the monitored task; SBI calls: config_matching $match, start $start, stop $stop, fw_read $reads"
echo "# per switch: start $(awk -v a=$start -v b=$sw 'BEGIN { printf "%.3f", a / b }'), stop $(awk -v a=$stop -v b=$sw 'BEGIN { printf "%.3f", a / b }')"
# Outside the round trips perf enables, disables and reads the events, and the task is switched a few times
# before and after the counted loop: a margin of 50 calls covers that. Each CPU the task runs on maps its 4
# counters once.
# On two harts the reply is sometimes there before the monitored task waits for it, so not every round trip
# switches it out; most must, for the margin to stay small.
if [ "$sw" -lt $((ROUNDS / 2)) ]; then
  fail "$NAME the monitored task was switched out only $sw times in $ROUNDS round trips"
elif [ "$NEVENTS" = 8 ] && { [ "$start" -gt $((sw + 50)) ] || [ "$stop" -gt $((sw + 50)) ] ||
                             [ "$start" -lt "$sw" ] || [ "$stop" -lt "$sw" ]; }; then
  fail "$NAME expected one start and one stop per switch: $start starts and $stop stops for $sw switches"
elif [ "$NEVENTS" = 4 ] && { [ "$start" -gt 50 ] || [ "$stop" -gt 50 ]; }; then
  fail "$NAME expected no start or stop on the switch path: $start starts and $stop stops for $sw switches"
elif [ "$match" -gt $((NEVENTS * $(nproc))) ]; then
  fail "$NAME $match counter_config_matching calls for $NEVENTS events on $(nproc) CPUs: mappings are not kept across switches"
elif [ "$NEVENTS" = 8 ] && [ "$reads" -gt 3 ]; then
  # At most perf stat's final read of each firmware event, if it came while the event ran.
  fail "$NAME $reads counter_fw_read calls for $sw switches: firmware events are not read from the snapshot"
else
  pass "$NAME"
fi
