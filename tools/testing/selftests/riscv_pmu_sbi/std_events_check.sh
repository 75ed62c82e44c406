#!/bin/bash
# How the driver found which standard events the platform can count, at load: with SBI v3.0 firmware one
# event_get_info call answers for all 52 events and no event is probed with counter_config_matching; before SBI
# v3.0 each event is probed (config_matching, then a stop with RESET for those that configured). The driver's
# debugfs file has the check's calls on its `check` line. That the events found are the same as the C driver's is
# checked by count_events (the `std_*` values). When the kernel's device tree has a riscv,pmu map with
# riscv,event-to-mhpmcounters that the driver accepted (the dtmap entry), the map answers and firmware is not asked.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

STATS=/sys/kernel/debug/riscv_pmu_sbi_rust/sbi_calls

if [ "${RPMU_DRIVER:-}" != rust ]; then
  pass "std_events_check_calls # SKIP only the Rust driver counts its SBI calls"
  exit 0
fi
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null
# The first event waits for the check, which runs on a workqueue after load; opening one makes sure it is done.
perf stat -e cycles -- true >/dev/null 2>&1
line=$(awk '$1 == "check"' "$STATS" 2>/dev/null)
if [ -z "$line" ]; then
  fail "std_events_check_calls $STATS has no check line"
  exit 0
fi
# Columns: check num_counters counter_get_info counter_config_matching counter_start counter_stop counter_fw_read
# counter_fw_read_hi snapshot_set_shmem event_get_info.
read -r _ _ _ match _ stop _ _ _ info _ <<<"$line"
version=$(dmesg | sed -n 's/.*SBI specification v\([0-9]*\)\.\([0-9]*\) detected.*/\1 \2/p' | head -1)
read -r major _ <<<"${version:-0 0}"
echo "# SBI v${version/ /.}: check made $info event_get_info, $match counter_config_matching and $stop counter_stop calls"
if [ -e /proc/device-tree/pmu/riscv,event-to-mhpmcounters ] && ! klog_has 'the event maps are ignored'; then
  if [ "$info" -eq 0 ] && [ "$match" -eq 0 ] && [ "$stop" -eq 0 ]; then
    pass "std_events_check_calls"
  else
    fail "std_events_check_calls a device tree map covers the standard events: expected no SBI call, got $info event_get_info and $match counter_config_matching"
  fi
elif [ "$major" -ge 3 ]; then
  if [ "$info" -eq 1 ] && [ "$match" -eq 0 ] && [ "$stop" -eq 0 ]; then
    pass "std_events_check_calls"
  else
    fail "std_events_check_calls SBI v3.0: expected 1 event_get_info and no probing, got $info event_get_info and $match counter_config_matching"
  fi
elif [ "$info" -eq 0 ] && [ "$match" -eq 52 ]; then
  pass "std_events_check_calls"
else
  fail "std_events_check_calls before SBI v3.0: expected 52 counter_config_matching and no event_get_info, got $match and $info"
fi
