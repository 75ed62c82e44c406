#!/bin/bash
# Counter delegation (Smcdeleg/Ssccfg with Sscsrind): where the harts have it, the Rust driver programs the
# hardware counters with CSRs and makes no SBI call for hardware events. Its debugfs file counts the SBI calls
# really made, per CPU; across counting (open, read, close), context switches of a monitored task, sampling with
# its overflow interrupts and leader sampling, their sum must not move.
# Both drivers report the count of a fixed loop, which the harness compares (the 6.12 C driver uses SBI calls: it
# is the reference), and under -icount check that a fixed period gives floor(N/P) samples.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

MOD=riscv_pmu_sbi_rust
STATS=/sys/kernel/debug/$MOD/sbi_calls
W=$RPMU_SELFTEST_DIR/workload
PINGPONG=$RPMU_SELFTEST_DIR/pingpong
ISA=/proc/device-tree/cpus/cpu@0/riscv,isa-extensions
DETECTED="$MOD: counter delegation: hardware counters programmed with CSRs"
ITER=1000000
PERIOD=100003

if ! tr '\0' '\n' <"$ISA" 2>/dev/null | grep -qx smcdeleg; then
  pass "counter_delegation # SKIP the harts have no counter delegation (no smcdeleg in $ISA)"
  exit 0
fi

# count EVENT: the count of EVENT over `workload $ITER`, in a fixed environment.
count() {
  env -i PATH=/usr/bin perf stat -x, -e "$1" -- "$W" $ITER 2>&1 >/dev/null | awk -F, 'NR == 1 { print $1 }'
}

# samples: the samples perf record takes of instructions:u with period $PERIOD over `workload 10*$ITER`.
samples() {
  env -i PATH=/usr/bin perf record -q -o /tmp/cdeleg.data -e instructions:u -c $PERIOD -- "$W" $((10 * ITER)) \
    >/dev/null 2>&1 || { echo 0; return; }
  perf report -i /tmp/cdeleg.data --stats 2>/dev/null | awk '$1 == "SAMPLE" && $2 == "events:" { print $3; exit }'
}

# exact NAME VALUE: a value the harness compares with the other driver's; under -icount the count itself, else
# whether there is one.
exact() {
  if [ "${RPMU_ICOUNT:-0}" = 1 ]; then
    value "$1 $2"
  elif [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -gt 0 ]; then
    value "$1 counted"
  else
    value "$1 $2"
  fi
}

# calls: the SBI calls of all functions summed over the CPUs (not the load-time check's line).
calls() { awk '$1 ~ /^[0-9]+$/ { for (i = 2; i <= 10; i++) s += $i } END { print s + 0 }' "$STATS"; }

n_deleg=$(count instructions:u)
exact cdeleg_instructions_u "$n_deleg"
s_deleg=$(samples)
# floor(N / P) samples of a period P over N user-mode instructions (the workload's own, with perf's tail).
if [ "${RPMU_ICOUNT:-0}" = 1 ]; then
  n_big=$(ITER=$((10 * ITER)) count instructions:u)
  if [[ $n_big =~ ^[0-9]+$ ]] && [ "$s_deleg" = $((n_big / PERIOD)) ]; then
    pass "cdeleg_samples_floor"
  else
    fail "cdeleg_samples_floor $s_deleg samples of period $PERIOD over $n_big instructions:u, expected $((n_big / PERIOD))"
  fi
fi

if [ "${RPMU_DRIVER:-}" != rust ]; then
  pass "counter_delegation # SKIP the C driver of 6.12 has no counter delegation (its counts above are the reference)"
  exit 0
fi
if ! klog_has "$DETECTED"; then
  fail "counter_delegation_detected the harts list smcdeleg but the kernel log has no line '$DETECTED'"
  exit 0
fi
pass "counter_delegation_detected"
# reload LINE [ARGS...]: unloads the module and loads it again with ARGS; true when both worked and the new load
# logged LINE.
reload() {
  local line=$1
  shift
  rmmod $MOD && insmod "$RPMU_MODULE" "$@" && grep -qF "$line" <<<"$(log_since_load "$MOD: ")"
}
# Only this check's calls are counted: a counter an earlier check had configured with an SBI call (a fixed
# counter, which M-mode never delegates, taken by a group of every counter) stays parked on its CPU until an event
# of the same kind needs a counter, and is reset then, with an SBI call. A reload starts from no such counter.
if [ -e /sys/module/$MOD/initstate ]; then
  reload "$DETECTED" || { fail "cdeleg_fresh_load the module did not load again with delegation"; exit 0; }
fi
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null
log_start=$(dmesg | wc -l)

# no_calls NAME COMMAND...: COMMAND makes no SBI call.
no_calls() {
  local name=$1 before after stats
  shift
  stats=$(cat "$STATS")
  before=$(calls)
  "$@" >/dev/null 2>&1
  after=$(calls)
  echo "# $name: $((after - before)) SBI calls"
  if [ "$after" -eq "$before" ]; then
    pass "$name"
  else
    fail "$name $((after - before)) SBI calls for hardware events with counter delegation"
    echo "# the statistics before, then after:"
    sed 's/^/# /' <<<"$stats"
    sed 's/^/# /' "$STATS"
    dmesg | tail -n +$((log_start + 1)) | sed 's/^/# dmesg: /'
  fi
}

HW=instructions:u,cycles,dTLB-load-misses,iTLB-load-misses
no_calls cdeleg_no_sbi_call_counting env -i PATH=/usr/bin perf stat -e "$HW" -- "$W" $ITER
no_calls cdeleg_no_sbi_call_switch perf stat --no-inherit -e "$HW" -- "$PINGPONG" 2000
no_calls cdeleg_no_sbi_call_sampling perf record -q -o /tmp/cdeleg2.data -e instructions:u -c $PERIOD -- "$W" $((10 * ITER))
no_calls cdeleg_no_sbi_call_leader_sampling perf record -q -o /tmp/cdeleg3.data -e '{instructions:u,cycles:u}:S' \
  -c $PERIOD -- "$W" $((10 * ITER))
echo "# the statistics after a perf record of instructions:u with period $PERIOD (overflow interrupts included):"
sed 's/^/# /' "$STATS"

# The SBI path in the same boot: reloaded with counter_delegation=0, every CPU counts the loop, although
# delegated counters held the same events until the reload: as delegation did under -icount, where counts are
# exact; without it QEMU derives instructions from the host's clock, so any count but 0 stands. Then the module
# is loaded again as it was.
sbi_path() {
  local cpu n
  if ! reload "$MOD: counter delegation: off (counter_delegation=0)" counter_delegation=0; then
    fail "cdeleg_sbi_path_reload no reload of $RPMU_MODULE with counter_delegation=0 that logs 'counter delegation: off'"
    return
  fi
  pass "cdeleg_sbi_path_reload"
  for cpu in $(seq 0 $(($(nproc) - 1))); do
    n=$(env -i PATH=/usr/bin taskset -c "$cpu" perf stat -x, -e instructions:u -- "$W" $ITER 2>&1 >/dev/null \
      | awk -F, 'NR == 1 { print $1 }')
    echo "# CPU $cpu on the SBI path: $n instructions:u, $n_deleg with delegation"
    if [[ $n =~ ^[0-9]+$ ]] && { [ "$n" = "$n_deleg" ] || { [ "${RPMU_ICOUNT:-0}" != 1 ] && [ "$n" -gt 0 ]; }; }
    then
      pass "cdeleg_sbi_path_counts_cpu$cpu"
    else
      fail "cdeleg_sbi_path_counts_cpu$cpu $n instructions:u on the SBI path, $n_deleg with delegation"
    fi
  done
  reload "$DETECTED" && pass "cdeleg_reload_delegation" \
    || fail "cdeleg_reload_delegation the module did not load again with delegation"
}
sbi_path

if grep -qE 'BUG|WARNING|Oops|lockdep' <<<"$(dmesg | tail -n +$((log_start + 1)))"; then
  fail "cdeleg_log_clean the kernel log has BUG/WARNING/Oops/lockdep lines"
else
  pass "cdeleg_log_clean"
fi
