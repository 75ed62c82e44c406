#!/bin/bash
# The SBI snapshot shared memory: under KVM (the SBI implementation that has it) the driver in use registers
# its per-CPU snapshot pages at load and says so in the kernel log, as the C driver does; elsewhere (OpenSBI,
# which answers NOT_SUPPORTED) the Rust driver says in one line that it reads counters with SBI calls.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

case "${RPMU_DRIVER:-c}" in
  rust) prefix='riscv_pmu_sbi_rust: ' ;;
  *) prefix='riscv-pmu-sbi: ' ;;
esac
log=$(dmesg)
if [ "${RPMU_SBI_PMU:-1}" != 1 ]; then
  pass "snapshot_detected # SKIP the firmware has no SBI PMU extension"
elif [ "${RPMU_NESTED:-0}" = 1 ]; then
  if grep -q "${prefix}SBI PMU snapshot detected" <<<"$log"; then
    pass "snapshot_detected"
  else
    fail "snapshot_detected no '${prefix}SBI PMU snapshot detected' line: $(grep -i snapshot <<<"$log" | tr '\n' ' ')"
  fi
else
  # OpenSBI has no snapshot memory; the Rust driver reports the fallback once per load (counted from its
  # last load: the module may have been reloaded), unless it delegates the counters (it then asks for no
  # snapshot memory); the C driver says nothing.
  n=$(grep -F "$prefix" <<<"$(log_since_load "$prefix")" | grep -c snapshot)
  want=$([ "${RPMU_DRIVER:-c}" = rust ] && ! rust_delegates && echo 1 || echo 0)
  if [ "$n" = "$want" ]; then
    pass "snapshot_fallback_logged_once"
  else
    fail "snapshot_fallback_logged_once $n snapshot lines from the driver, expected $want: $(grep -i snapshot <<<"$log" | tr '\n' ' ')"
  fi
fi
