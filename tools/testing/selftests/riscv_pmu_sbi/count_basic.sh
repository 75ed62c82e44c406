#!/bin/bash
# Basic counting through the `cpu` PMU, whichever driver provides it.
# Results in KTAP (lib.sh); the `value` lines are what a harness compares with the other driver's in the same
# machine configuration.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

W=$RPMU_SELFTEST_DIR/workload

# count EVENT N: prints the count perf stat reports for EVENT over `workload N`, or the reason it has none.
count() {
  local out val
  # A fixed, minimal environment: libc's start-up code reads it, so the user-mode count depends on its size.
  out=$(env -i PATH=/usr/bin perf stat -x, -e "$1" -- "$W" "$2" 2>&1 >/dev/null) || { echo "perf-failed: $(echo "$out" | tail -1)"; return; }
  val=$(printf '%s\n' "$out" | awk -F, -v e="$1" '$3 == e { print $1; exit }')
  echo "${val:-no-line: $(echo "$out" | tail -1)}"
}

is_num() { [[ $1 =~ ^[0-9]+$ ]]; }

# The PMU exists and exposes the format attributes perf needs.
if [ -r /sys/bus/event_source/devices/cpu/type ] && [ -r /sys/bus/event_source/devices/cpu/format/event ]; then
  pass "pmu_registered"
else
  fail "pmu_registered no cpu PMU with format/event in sysfs"
fi
for f in event firmware; do
  value "format_$f $(cat /sys/bus/event_source/devices/cpu/format/$f 2>/dev/null || echo missing)"
done

# cycles and instructions count something on every configuration.
for e in cycles instructions; do
  v=$(count "$e" 1000000)
  if is_num "$v" && [ "$v" -gt 1000000 ]; then
    pass "count_$e"
  else
    fail "count_$e expected more than 1000000 over a 1M-iteration loop, got '$v'"
  fi
done

# User-mode filtering needs Sscofpmf; without it both drivers must refuse it (perf shows <not supported>).
v1=$(count instructions:u 1000000)
if [ "$RPMU_SSCOFPMF" = 1 ]; then
  if is_num "$v1"; then
    pass "count_instructions_u"
  else
    fail "count_instructions_u got '$v1'"
  fi
else
  case "$v1" in
    *"not supported"*) pass "instructions_u_refused_without_sscofpmf" ;;
    *) fail "instructions_u_refused_without_sscofpmf expected <not supported>, got '$v1'" ;;
  esac
fi

# Exact counts in the deterministic mode: the same workload gives the same count every time, and doubling the
# iterations adds exactly 1M times the loop body's instruction count, a whole number between 2 and 10.
if [ "$RPMU_ICOUNT" = 1 ] && [ "$RPMU_SSCOFPMF" = 1 ]; then
  a=$(count instructions:u 1000000)
  b=$(count instructions:u 2000000)
  value "instructions_u_1M $a"
  value "instructions_u_2M $b"
  if is_num "$a" && is_num "$b" && [ "$a" = "$v1" ]; then
    pass "instructions_u_repeatable"
    d=$((b - a))
    if [ $((d % 1000000)) -eq 0 ] && [ "$d" -ge 2000000 ] && [ "$d" -le 10000000 ]; then
      pass "instructions_u_exact_per_iteration"
    else
      fail "instructions_u_exact_per_iteration 2M minus 1M iterations gave $d instructions, not a multiple of 1M in [2M, 10M]"
    fi
  else
    fail "instructions_u_repeatable runs gave '$v1' and '$a' (2M: '$b')"
  fi
  c=$(count cycles:u 1000000)
  value "cycles_u_1M $c"
else
  pass "instructions_u_repeatable # SKIP counts are exact only with -icount on one hart with Sscofpmf"
fi
