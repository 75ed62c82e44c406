#!/bin/bash
# Firmware without the SBI PMU extension: the cpu PMU offers the generic cycles and instructions events, counted
# from the base counters (the C kernel's riscv_pmu_legacy; the Rust driver's legacy mode), and refuses every
# other event, sampling and mode filtering. Each outcome is printed as a value line, so the harness compares the
# two drivers' answers to the same requests; the checks say what both must do.
# Runs where scripts/qemu-run says the firmware has no PMU extension (RPMU_SBI_PMU=0).
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

EVOPEN=$RPMU_SELFTEST_DIR/evopen
W=$RPMU_SELFTEST_DIR/workload

if [ "${RPMU_SBI_PMU:-1}" != 0 ]; then
  pass "no_pmu_extension # SKIP the firmware has the SBI PMU extension"
  exit 0
fi

# Which driver provides the PMU: the log line of the C legacy driver or of the Rust driver's legacy mode.
if klog_has -e 'Legacy PMU implementation is available' -e 'riscv_pmu_sbi_rust: no SBI PMU extension'; then
  pass "no_pmu_extension_legacy_pmu"
else
  fail "no_pmu_extension_legacy_pmu no legacy PMU line in the kernel log: $(dmesg | grep -i pmu | tr '\n' ' ')"
fi

# cycles and instructions open and count; perf prints a number for each. On real counters (firmware without the
# extension) the count covers at least the workload's loop, 3 instructions an iteration (and as many cycles: an
# instruction takes at least one); under a hypervisor whose host has no Sscofpmf, KVM reads both base counters
# as 0 by design, so there a number is all that can be checked.
N=100000
out=$(perf stat -x, -e cycles,instructions -- "$W" "$N" 2>&1 >/dev/null)
for e in cycles instructions; do
  v=$(echo "$out" | awk -F, -v e="$e" '$3 == e { print $1 }')
  value "legacy_count_$e ${v:-missing}"
  if ! [[ ${v:-} =~ ^[0-9]+$ ]]; then
    fail "legacy_counts_$e perf stat printed '${v:-nothing}' for $e"
  elif [ "${RPMU_NESTED:-0}" != 1 ] && [ "$v" -lt $((3 * N)) ]; then
    fail "legacy_counts_$e $v is below the workload's own $((3 * N))"
  else
    pass "legacy_counts_$e"
  fi
done

# The other generic events, cache events and raw events are refused (ENOENT), sampling is refused
# (EOPNOTSUPP, no overflow interrupt) and so are mode filters (EINVAL).
declare -A want=(
  ["0 0"]=counted ["0 1"]=counted ["0 4"]=ENOENT ["0 5"]=ENOENT ["3 0x10003"]=ENOENT ["4 0x12"]=ENOENT
  ["0 0 s"]=EOPNOTSUPP ["0 1 u"]=EINVAL ["0 1 k"]=EINVAL
)
for req in "0 0" "0 1" "0 4" "0 5" "3 0x10003" "4 0x12" "0 0 s" "0 1 u" "0 1 k"; do
  # shellcheck disable=SC2086
  got=$("$EVOPEN" $req 2>&1 | tail -1)
  name="open_$(echo "$req" | tr ' ' '_')"
  value "legacy_$name $got"
  case "$got" in
    "${want[$req]}"|"errno ${want[$req]}") pass "legacy_$name" ;;
    *) fail "legacy_$name expected ${want[$req]}, got '$got'" ;;
  esac
done
