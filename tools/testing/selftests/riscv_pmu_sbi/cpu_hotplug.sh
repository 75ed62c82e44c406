#!/bin/bash
# CPU hotplug under per-CPU counting: CPU1 goes offline and online 50 times while `perf stat -a` counts. Every
# cycle must succeed, counting must go on after the last one (the counters of a CPU coming back are prepared
# again), and the kernel log must stay clean, which the harness checks.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

CPU=/sys/devices/system/cpu/cpu1/online
CYCLES=50
DONE=/tmp/hotplug.done
READY=/tmp/hotplug.ready
STAT=/tmp/hotplug.stat

if [ ! -w "$CPU" ]; then
  pass "cpu_hotplug_under_perf_stat # SKIP needs a second CPU that can go offline"
  exit 0
fi
rm -f "$DONE" "$READY" "$STAT"
# perf counts every CPU in 300 ms intervals until the loop below is over and one more second has passed. perf
# starts the command only once it has opened its events, so the command says when that is: CPU1 must not go
# offline while perf still opens them (an open on an offline CPU fails, and perf gives up).
perf stat -a -I 300 -x, -o "$STAT" -e cycles,instructions -- \
  /bin/sh -c "touch $READY; while [ ! -e $DONE ]; do sleep 0.1; done; sleep 1" &
perf_pid=$!
for _ in $(seq 600); do
  [ -e "$READY" ] || ! kill -0 "$perf_pid" 2>/dev/null && break
  sleep 0.1
done
if [ ! -e "$READY" ]; then
  wait "$perf_pid"
  fail "cpu_hotplug_under_perf_stat perf stat -a did not start its command (exit $?): $(tail -2 "$STAT" 2>/dev/null | tr '\n' ' ')"
  exit 0
fi
# set_online VALUE: writes VALUE to CPU1's online file, retrying twice. Under load the emulator may take longer
# than the kernel's 5 s to stop a hart ("CPU1 may not have stopped"), and the next online then fails with
# ENOTSUPP: that is the emulator's timing, not the PMU driver's, so a failed write is tried again.
retries=0
set_online() {
  local try
  for try in 1 2 3; do
    echo "$1" >"$CPU" 2>/dev/null && return 0
    retries=$((retries + 1))
    sleep 1
  done
  return 1
}
failed=0
for i in $(seq 1 $CYCLES); do
  set_online 0 || failed=$((failed + 1))
  set_online 1 || failed=$((failed + 1))
done
echo "# $retries offline/online writes were retried"
touch "$DONE"
wait "$perf_pid"
rc=$?
[ "$(cat "$CPU")" = 1 ] || echo 1 >"$CPU"

# The last interval started after the last cycle: both events must have counted in it.
last=$(awk -F, '$4 == "cycles" || $4 == "instructions" { t[$4] = $2 } END { print t["cycles"] + 0, t["instructions"] + 0 }' "$STAT")
read -r cyc ins <<<"$last"
echo "# last interval: cycles $cyc instructions $ins; perf exited with $rc"
if [ "$failed" -ne 0 ]; then
  fail "cpu_hotplug_under_perf_stat $failed of $((2 * CYCLES)) offline/online writes failed three times"
elif [ "$rc" -ne 0 ]; then
  fail "cpu_hotplug_under_perf_stat perf stat -a exited with $rc: $(tail -2 "$STAT" | tr '\n' ' ')"
elif [ "$cyc" -gt 0 ] && [ "$ins" -gt 0 ]; then
  pass "cpu_hotplug_under_perf_stat"
else
  fail "cpu_hotplug_under_perf_stat no count after $CYCLES offline/online cycles: $(tail -4 "$STAT" | tr '\n' ' ')"
fi
