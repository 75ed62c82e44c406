#!/bin/bash
# The context switch's SBI calls: a task with 4 counting hardware events costs no SBI call when it is switched
# out and back in (its counters keep running while it is out and are read when it leaves and when it comes
# back), and no counter_config_matching once its counters are mapped; with snapshot memory too (KVM's SBI PMU:
# there a counter read traps to the hypervisor, but a stop and a start of a counter cost several reads).
# The driver's debugfs file counts SBI calls per CPU; the monitored side of a ping-pong pair says how often it
# was switched out.
# With snapshot memory a second task has 8 events, 5 hardware and 3 firmware, and the switch costs one stop and
# one start, of the firmware counters: their events are updated from the values the stop saved, so no
# counter_fw_read; and once the events are freed no counter stays parked for them.
# Under KVM, which lets user mode read any configured counter whatever the guest's scounteren says, the driver
# releases the counters of events that leave a CPU: then each switch out is one stop with RESET over them (and,
# with firmware events, the stop that saves their values), each switch in a counter_config_matching per event
# and one start; still no counter_fw_read, and no counter left configured.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

STATS=/sys/kernel/debug/riscv_pmu_sbi_rust/sbi_calls
# Under nested virtualisation every SBI call is two traps through an emulated hypervisor: fewer rounds. A driver
# that made its calls per event would make 4 to 8 times the allowed number in either case.
ROUNDS=$([ "${RPMU_NESTED:-0}" = 1 ] && echo 200 || echo 2000)
HW_EVENTS=cycles,instructions,dTLB-load-misses,iTLB-load-misses
# Firmware events are raw events with bit 63 set: SBI_PMU_FW_SET_TIMER (5), ILLEGAL_INSN (4), IPI_SENT (6).
MIX_EVENTS=cycles,instructions,dTLB-load-misses,dTLB-store-misses,iTLB-load-misses,r8000000000000005,r8000000000000004,r8000000000000006
SNAPSHOT=0
klog_has 'riscv_pmu_sbi_rust: SBI PMU snapshot detected' && SNAPSHOT=1
RELEASE=0
klog_has 'riscv_pmu_sbi_rust: KVM lets user mode read any configured counter' && RELEASE=1

if [ "${RPMU_DRIVER:-}" != rust ]; then
  pass "sbi_calls_per_switch # SKIP only the Rust driver counts its SBI calls"
  exit 0
fi
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null
if [ ! -r "$STATS" ]; then
  fail "sbi_calls_per_switch $STATS is missing"
  exit 0
fi

# sums: the totals over the CPUs (not the check's line) of the columns counter_config_matching, counter_start,
# counter_stop and counter_fw_read.
sums() { awk '$1 ~ /^[0-9]+$/ { m += $4; s += $5; t += $6; r += $7 } END { print m + 0, s + 0, t + 0, r + 0 }' "$STATS"; }

# switch_case NAME EVENTS NEVENTS: the ping-pong with EVENTS on the monitored side; with 8 events (the mix) one
# start and one stop per switch are expected, else none.
switch_case() {
  local name=$1 events=$2 nevents=$3 m0 s0 t0 r0 m1 s1 t1 r1 out vol nonvol sw match start stop reads
  read -r m0 s0 t0 r0 < <(sums)
  out=$(perf stat --no-inherit -x, -e "$events" -- $RPMU_SELFTEST_DIR/pingpong "$ROUNDS" 2>/tmp/pingpong.stat)
  read -r m1 s1 t1 r1 < <(sums)
  echo "# $name: $(cat /tmp/pingpong.stat | tr '\n' ' ')"
  read -r _ vol nonvol <<<"$out"
  if ! [[ ${vol:-} =~ ^[0-9]+$ && ${nonvol:-} =~ ^[0-9]+$ ]]; then
    fail "$name pingpong printed '$out'"
    return
  fi
  sw=$((vol + nonvol))
  match=$((m1 - m0)); start=$((s1 - s0)); stop=$((t1 - t0)); reads=$((r1 - r0))
  echo "# $name: $ROUNDS round trips, $sw switches of the monitored task; SBI calls: config_matching $match, start $start, stop $stop, fw_read $reads"
  echo "# $name per switch: start $(awk -v a=$start -v b=$sw 'BEGIN { printf "%.3f", a / b }'), stop $(awk -v a=$stop -v b=$sw 'BEGIN { printf "%.3f", a / b }')"
  # Outside the round trips perf enables, disables and reads the events, and the task is switched a few times
  # before and after the counted loop: a margin of 50 calls covers that. Each CPU the task runs on maps its
  # counters once.
  # On two harts the reply is sometimes there before the monitored task waits for it, so not every round trip
  # switches it out; most must, for the margin to stay small.
  if [ "$sw" -lt $((ROUNDS / 2)) ]; then
    fail "$name the monitored task was switched out only $sw times in $ROUNDS round trips"
  elif [ "$RELEASE" = 1 ]; then
    if [ "$match" -lt $((nevents * sw)) ] || [ "$match" -gt $((nevents * (sw + 50))) ]; then
      fail "$name expected $nevents counter_config_matching per switch (counters released at del): $match for $sw switches"
    elif [ "$start" -gt $((sw + 50)) ] || [ "$stop" -gt $((2 * sw + 50)) ]; then
      fail "$name expected at most one start and two stops per switch: $start starts and $stop stops for $sw switches"
    elif [ "$nevents" = 8 ] && [ "$reads" -gt 3 ]; then
      fail "$name $reads counter_fw_read calls for $sw switches: firmware events are not read from the snapshot"
    else
      pass "$name"
    fi
  elif [ "$nevents" = 8 ] && { [ "$start" -gt $((sw + 50)) ] || [ "$stop" -gt $((sw + 50)) ] ||
                               [ "$start" -lt "$sw" ] || [ "$stop" -lt "$sw" ]; }; then
    fail "$name expected one start and one stop per switch: $start starts and $stop stops for $sw switches"
  elif [ "$nevents" = 4 ] && { [ "$start" -gt 50 ] || [ "$stop" -gt 50 ]; }; then
    fail "$name expected no start or stop on the switch path: $start starts and $stop stops for $sw switches"
  elif [ "$match" -gt $((nevents * $(nproc))) ]; then
    fail "$name $match counter_config_matching calls for $nevents events on $(nproc) CPUs: mappings are not kept across switches"
  elif [ "$nevents" = 8 ] && [ "$reads" -gt 3 ]; then
    # At most perf stat's final read of each firmware event, if it came while the event ran.
    fail "$name $reads counter_fw_read calls for $sw switches: firmware events are not read from the snapshot"
  else
    pass "$name"
  fi
}

if [ "$SNAPSHOT" = 1 ]; then
  switch_case sbi_calls_per_switch_snapshot_hw "$HW_EVENTS" 4
  switch_case sbi_calls_per_switch_snapshot "$MIX_EVENTS" 8
  # Under the hypervisor each configured counter is a perf event of the host: once perf stat has exited and
  # its events are freed, no CPU keeps a counter parked for them, running or not.
  COUNTERS=/sys/kernel/debug/riscv_pmu_sbi_rust/counters
  kept=$(awk '$1 ~ /^[0-9]+$/ && ($6 != "0x0" || $7 != "0x0")' "$COUNTERS")
  if [ -n "$kept" ]; then
    fail "sbi_calls_per_switch_snapshot_released counters still parked after the events were freed: $(tr '\n' ';' <<<"$kept")"
  else
    pass "sbi_calls_per_switch_snapshot_released"
  fi
else
  switch_case sbi_calls_per_switch "$HW_EVENTS" 4
fi
