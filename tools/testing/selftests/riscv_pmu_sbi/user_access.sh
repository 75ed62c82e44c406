#!/bin/bash
# User-space counter reads under each kernel.perf_user_access mode (Documentation/admin-guide/sysctl/kernel.rst):
#   0  no direct reads: the mmap page offers no counter;
#   1  (default) an mmap'd event's counter is readable while the event runs, and no longer once unmapped;
#      cycle and instret are not readable on their own;
#   2  legacy: cycle and instret are always readable, and cycles/instructions events sit on them (index 1 and 3).
# Each mode is checked against these rules, and every observation is a value the harness compares between drivers.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

U=$RPMU_SELFTEST_DIR/uaccess
S=/proc/sys/kernel/perf_user_access

if [ ! -w "$S" ]; then
  fail "perf_user_access_sysctl $S is missing or not writable"
  exit 0
fi
value "perf_user_access_default $(cat "$S")"

# A value outside 0..2 is refused and changes nothing.
if (echo 3 > "$S") 2>/dev/null; then
  fail "perf_user_access_range writing 3 succeeded"
else
  pass "perf_user_access_range"
fi
value "perf_user_access_after_bad_write $(cat "$S")"

# expect MODE EVENT KEY WANT: compares one observed key with the rule of the mode.
expect() {
  local got
  got=$(second_word "$3" "$out")
  if [ "$got" = "$4" ]; then
    pass "user_access_$1_$2_$3"
  else
    fail "user_access_$1_$2_$3 expected '$4', got '${got:-nothing}': ${out//$'\n'/ }"
  fi
}

for mode in 1 0 2; do
  echo "$mode" > "$S"
  for ev in instructions cycles; do
    out=$("$U" "$ev" 2>&1)
    echo "# mode $mode $ev: ${out//$'\n'/ }"
    while read -r key val; do
      # Which programmable counter an event gets is the driver's choice (the Rust driver keeps counters of
      # switched-out events mapped and picks others): in mode 1 only whether there is an index is compared.
      if [ "$mode" = 1 ] && [ "$key" = index ]; then
        [ "$val" != 0 ] && val=nonzero
      fi
      value "user_access_${mode}_${ev}_$key $val"
    done <<<"$out"
    expect "$mode" "$ev" open ok
    case $mode in
      0)
        expect 0 "$ev" index 0
        expect 0 "$ev" rdcycle_unmapped sigill
        expect 0 "$ev" rdinstret_unmapped sigill
        ;;
      1)
        expect 1 "$ev" cap_user_rdpmc 1
        if [ "$(second_word index "$out")" -gt 0 ] 2>/dev/null; then
          pass "user_access_1_${ev}_index"
        else
          fail "user_access_1_${ev}_index expected a counter index: ${out//$'\n'/ }"
        fi
        expect 1 "$ev" direct_read ok
        expect 1 "$ev" rdpmc_agrees yes
        expect 1 "$ev" after_munmap sigill
        expect 1 "$ev" rdcycle_unmapped sigill
        expect 1 "$ev" rdinstret_unmapped sigill
        ;;
      2)
        want=3
        [ "$ev" = cycles ] && want=1
        expect 2 "$ev" cap_user_rdpmc 1
        expect 2 "$ev" index "$want"
        expect 2 "$ev" direct_read ok
        expect 2 "$ev" rdpmc_agrees yes
        expect 2 "$ev" after_munmap ok
        expect 2 "$ev" rdcycle_unmapped ok
        expect 2 "$ev" rdinstret_unmapped ok
        ;;
    esac
  done
done

# Mode 1, a sampling event read from user space after about 100 overflow interrupts: each reloads the counter
# with the next period, and the mmap page must follow (its offset holds the count minus the counter's start
# value), or the count computed from the page misses the periods counted since the event was last scheduled in.
# Without Sscofpmf there is no overflow interrupt and perf_event_open refuses a sampling event.
echo 1 > "$S"
for ev in instructions cycles; do
  out=$("$U" "$ev" sample 2>&1)
  echo "# mode 1 $ev sampling: ${out//$'\n'/ }"
  while read -r key val; do
    [ "$key" = index ] && [ "$val" != 0 ] && val=nonzero
    value "user_access_1_${ev}_sample_$key $val"
  done <<<"$out"
  if [ "$(second_word open "$out")" = ok ]; then
    expect 1 "${ev}_sample" overflowed yes
    expect 1 "${ev}_sample" direct_read ok
    expect 1 "${ev}_sample" rdpmc_agrees yes
  fi
done
