#!/bin/bash
# Unloading and reloading the Rust driver module: three rmmod/insmod rounds (make stress runs 100), counting
# afterwards, rmmod refused while an event exists and allowed once it is gone, and a kernel log free of
# BUG/WARNING/Oops/lockdep reports.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

MOD=riscv_pmu_sbi_rust
KO=${RPMU_MODULE:-/root/$MOD.ko}

# With the C driver, the module must refuse to load, name the C driver and leave the kernel log clean.
if [ "${RPMU_DRIVER:-}" != rust ]; then
  pass "module_reload # SKIP the C driver is built in"
  if [ ! -f "$KO" ]; then
    pass "module_refused_with_c_driver # SKIP no $KO in this guest"
    exit 0
  fi
  log_start=$(dmesg | wc -l)
  if insmod "$KO" >/dev/null 2>&1; then
    fail "module_refused_with_c_driver insmod succeeded while the C driver owns the cpu PMU"
    rmmod "$MOD"
    exit 0
  fi
  log=$(dmesg | tail -n +$((log_start + 1)))
  printf '%s\n' "$log" | sed 's/^/# /'
  if ! grep -q "$MOD: the C driver .* already provides the cpu PMU" <<<"$log"; then
    fail "module_refused_with_c_driver no kernel log line naming the C driver"
  elif grep -qE 'BUG|WARNING|Oops|lockdep' <<<"$log"; then
    fail "module_refused_with_c_driver the kernel log has BUG/WARNING/Oops/lockdep lines"
  else
    pass "module_refused_with_c_driver"
  fi
  exit 0
fi

W=$RPMU_SELFTEST_DIR/workload
PMU=/sys/bus/event_source/devices/cpu
# make stress runs 100 rounds; here a few show that the driver unloads and loads cleanly.
ROUNDS=3

loaded() { grep -q "^$MOD " /proc/modules; }

# Only the kernel log written from here on is judged.
log_start=$(dmesg | wc -l)

# Unload/load rounds; the cpu PMU must disappear with the module and come back with it.
fail=
for i in $(seq 1 $ROUNDS); do
  if ! out=$(rmmod "$MOD" 2>&1); then fail="round $i: rmmod failed: $out"; break; fi
  if [ -e "$PMU" ]; then fail="round $i: $PMU still exists after rmmod"; break; fi
  if ! out=$(insmod "$KO" 2>&1); then fail="round $i: insmod failed: $out"; break; fi
  if [ ! -e "$PMU/format/event" ]; then fail="round $i: no $PMU/format/event after insmod"; break; fi
done
if [ -z "$fail" ]; then
  pass "module_reload"
else
  fail "module_reload $fail"
  loaded || insmod "$KO" >/dev/null 2>&1
fi

# The reloaded driver counts.
out=$(perf stat -x, -e cycles,instructions -- "$W" 1000000 2>&1 >/dev/null)
cyc=$(printf '%s\n' "$out" | awk -F, '$3 == "cycles" { print $1; exit }')
ins=$(printf '%s\n' "$out" | awk -F, '$3 == "instructions" { print $1; exit }')
printf '%s\n' "$out" | sed 's/^/# /'
if [[ $cyc =~ ^[0-9]+$ ]] && [[ $ins =~ ^[0-9]+$ ]] && [ "$cyc" -gt 0 ] && [ "$ins" -gt 1000000 ]; then
  pass "module_counts_after_reload"
else
  fail "module_counts_after_reload expected cycles > 0 and instructions > 1000000, got '$cyc' and '$ins'"
fi

# While an event exists perf core holds a reference on the module: rmmod must fail, then succeed once the
# event is gone.
ref0=$(cat "/sys/module/$MOD/refcnt" 2>/dev/null || echo 0)
perf stat -e cycles -- sleep 60 >/dev/null 2>&1 &
perf_pid=$!
# perf core takes the reference when perf opens the event: wait for it rather than for a fixed time (a guest
# on a loaded host may take seconds to start perf), up to 30 s.
opened=0
for _ in $(seq 300); do
  if [ "$(cat "/sys/module/$MOD/refcnt" 2>/dev/null || echo 0)" -gt "$ref0" ]; then
    opened=1
    break
  fi
  sleep 0.1
done
if [ "$opened" = 0 ]; then
  fail "module_rmmod_refused_while_counting perf stat opened no event within 30 s"
elif out=$(rmmod "$MOD" 2>&1); then
  fail "module_rmmod_refused_while_counting rmmod succeeded with a perf stat running"
else
  echo "# rmmod while counting: $out"
  pass "module_rmmod_refused_while_counting"
fi
# Ending the workload ends perf stat, which closes its event.
pkill -TERM -P "$perf_pid" sleep 2>/dev/null
wait "$perf_pid"
if loaded; then
  if out=$(rmmod "$MOD" 2>&1); then
    pass "module_rmmod_allowed_after_counting"
  else
    fail "module_rmmod_allowed_after_counting rmmod failed after perf stat ended: $out"
  fi
else
  fail "module_rmmod_allowed_after_counting the module was already unloaded"
fi
# Leave the driver loaded for the checks that follow.
loaded || insmod "$KO" >/dev/null 2>&1 || echo "# reloading $KO failed"

# The kernel log of all the above.
bad=$(dmesg | tail -n +$((log_start + 1)) | grep -E 'BUG|WARNING|Oops|lockdep|possible (recursive|circular) locking|INFO: ' || true)
if [ -z "$bad" ]; then
  pass "module_reload_kernel_log_clean"
else
  printf '%s\n' "$bad" | head -20 | sed 's/^/# /'
  fail "module_reload_kernel_log_clean the kernel log has BUG/WARNING/Oops/lockdep lines (above)"
fi
