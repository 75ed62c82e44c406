#!/bin/bash
# Every kind of counting request, answered by whichever driver provides the `cpu` PMU: the standard events
# perf knows (which are available, which are `<not supported>`), cache, raw and firmware events, the errno of
# each malformed or unsupported request, mode filters, groups, per-CPU counting and multiplexing.
#
# Most results are `value` lines, which the harness compares with the other driver's in the same matrix entry:
# the C driver is the reference. With -icount the counts themselves are exact and compared too.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

W=$RPMU_SELFTEST_DIR/workload
EVOPEN=$RPMU_SELFTEST_DIR/evopen

# stat ARGS...: perf stat -x, over `workload 100000` in a fixed environment; prints perf's CSV lines. The
# iterations can be changed with ITER.
stat() {
  env -i PATH=/usr/bin perf stat -x, "$@" -- "$W" "${ITER:-100000}" 2>&1 >/dev/null
}

# kind VALUE: a count reduced to what is comparable across runs: "available" when perf opened the event (it
# counted, or it is "<not counted>" because it shares its only counter with another event of the same perf run,
# as the dTLB load and store misses of the dtmap entry's map do, and the run ended before perf core rotated it
# in: that depends on where the timer tick falls), or perf's reason for no count.
kind() {
  case "$1" in
    "<not supported>") echo not-supported ;;
    "<not counted>" | [0-9]*) echo available ;;
    *) echo "other:$1" ;;
  esac
}

# field EVENT COLUMN CSV: the COLUMN-th field of the first line of CSV whose event name is EVENT.
field() {
  printf '%s\n' "$3" | awk -F, -v e="$1" -v c="$2" '$3 == e { print $c; exit }'
}

if [ ! -x "$EVOPEN" ]; then
  fail "count_events evopen is not in the guest"
  exit 0
fi

# 1. Standard events: the availability check at load hides what no counter can count.
hw="cycles instructions cache-references cache-misses branches branch-misses bus-cycles stalled-cycles-frontend stalled-cycles-backend ref-cycles"
out=$(stat -e "$(echo $hw | tr ' ' ,)")
n=0
for e in $hw; do
  v=$(field "$e" 1 "$out")
  value "std_$e $(kind "$v")"
  [ -n "$v" ] && n=$((n + 1))
done
# The cache events perf has names for (it refuses stores and prefetches of the instruction caches and the
# branch predictor), one perf run per cache; all 42 are opened by number below.
for c in L1-dcache L1-icache LLC dTLB iTLB branch node; do
  case $c in
    L1-icache|iTLB|branch) cache="$c-loads $c-load-misses"; m=2 ;;
    *) cache="$c-loads $c-load-misses $c-stores $c-store-misses $c-prefetches $c-prefetch-misses"; m=6 ;;
  esac
  out=$(stat -e "$(echo $cache | tr ' ' ,)")
  for e in $cache; do
    v=$(field "$e" 1 "$out")
    [ -n "$v" ] && n=$((n + 1))
    value "std_$e $(kind "${v:-missing}")"
  done
done
if [ "$n" -eq 40 ]; then
  pass "std_events_reported"
else
  fail "std_events_reported perf stat reported $n of the 40 standard events it has names for"
fi

# 2. Requests perf's tool does not make, through perf_event_open directly: the errno or whether it counted.
# The cases are collected and opened one after another by one evopen process.
cases=
open_case() { cases+="$1 $2 $3 ${4:-}"$'\n'; }
open_case hw_cycles 0 0
open_case hw_instructions 0 1
open_case hw_cache_references 0 2
open_case hw_ref_cycles 0 9
open_case hw_config_out_of_range 0 10
open_case hw_config_huge 0 0x100000000
open_case cache_dtlb_read_miss 3 0x10003
open_case cache_l1d_read_access 3 0x0
for id in 0 1 2 3 4 5 6; do
  for op in 0 1 2; do
    for res in 0 1; do
      open_case "cache_${id}_${op}_$res" 3 "$(printf '0x%x' $((id | op << 8 | res << 16)))"
    done
  done
done
open_case cache_bad_id 3 0x7
open_case cache_bad_op 3 0x300
open_case cache_bad_result 3 0x20000
open_case cache_high_bits_ignored 3 0xdead00010003
open_case raw_zero 4 0
open_case raw_event_1 4 1
open_case raw_reserved_class 4 0x4000000000000000
open_case raw_bits_above_field 4 0x1000000000000
open_case platform_fw 4 0xc000000000000000
open_case platform_fw_data 4 0xc000000000000123
for code in $(seq 0 21) 255 65535; do
  open_case "fw_$code" 4 "$(printf '0x%x' $((0x8000000000000000 | code)))"
done
open_case unknown_type 1000 0
open_case branch_stack 0 0 b
for f in u k h H G gk gu gh; do
  open_case "filter_$f" 0 1 "$f"
done
want=$(printf '%s' "$cases" | grep -c .)
got=0
while read -r name result; do
  value "open_$name $result"
  got=$((got + 1))
done < <(printf '%s' "$cases" | "$EVOPEN" -)
if [ "$got" = "$want" ]; then
  pass "open_cases_answered"
else
  fail "open_cases_answered evopen answered $got of $want cases"
fi

# 3. Firmware events through perf's `format/firmware` field, as perf list documents them.
# The event name holds a comma, so perf's fields are separated by semicolons here.
out=$(env -i PATH=/usr/bin perf stat -x';' -e cpu/firmware=2,event=0x3/ -- "$W" 100000 2>&1 >/dev/null)
value "fw_format_event $(kind "$(printf '%s\n' "$out" | awk -F';' '$3 == "cpu/firmware=2,event=0x3/" { print $1; exit }')")"

# 4. Groups, per-CPU counting and more events than counters.
out=$(stat -e '{cycles,instructions}')
value "group2 $(kind "$(field cycles 1 "$out")") $(kind "$(field instructions 1 "$out")")"
big=$(for i in $(seq 1 40); do printf 'instructions,'; done)
# A group is scheduled all at once. Instructions may use every hardware counter but cycle, so a group of that
# many fits; with one more event than there are hardware counters it cannot, and must be refused when it is
# opened (EINVAL, as other PMUs do) rather than accepted and never counted.
nhw=$(dmesg | sed -n 's/.* \([0-9][0-9]*\) hardware counters.*/\1/p' | tail -1)
if [[ ${nhw:-x} =~ ^[0-9]+$ ]] && [ "$nhw" -ge 3 ] && [ "$nhw" -lt 64 ]; then
  value "group_of_all_counters $($RPMU_SELFTEST_DIR/grpopen $((nhw - 1)) 0 1)"
  out=$($RPMU_SELFTEST_DIR/grpopen $((nhw + 1)) 0 1)
  if [[ $out == "errno EINVAL member "* ]]; then
    pass "group_too_large_refused"
  else
    fail "group_too_large_refused a group of $((nhw + 1)) instructions events for $nhw hardware counters: $out"
  fi
else
  fail "group_too_large_refused no hardware counter count in the kernel log: '${nhw:-}'"
fi
out=$(stat -a -e cycles,instructions)
value "percpu $(kind "$(field cycles 1 "$out")") $(kind "$(field instructions 1 "$out")")"
# Long enough for perf core to rotate the events several times (every 4 ms at HZ=250): about 150 million
# instructions, 60 ms where the guest runs at host speed (with 3 million iterations, 9 ms on a fast host, the C
# driver's boot once saw no rotation at all) and 0.15 guest seconds under -icount.
out=$(ITER=20000000 stat -e "${big%,}")
rot=$(printf '%s\n' "$out" | awk -F, '$3 == "instructions" && $5 + 0 > 0 && $5 + 0 < 100 { n++ } END { print n + 0 }')
if [ "$rot" -gt 0 ]; then
  pass "multiplex_rotates"
else
  fail "multiplex_rotates no event of 40 ran part of the time: $(printf '%s\n' "$out" | head -3 | tr '\n' ' ')"
fi

# 5. Exact counts, with -icount on one hart: a fixed workload gives the same count on both drivers.
if [ "$RPMU_ICOUNT" = 1 ] && [ "$RPMU_SSCOFPMF" = 1 ]; then
  out=$(stat -e instructions:u,cycles:u)
  value "exact_pair $(field instructions:u 1 "$out") $(field cycles:u 1 "$out")"
  out=$(stat -e '{instructions:u,cycles:u}')
  value "exact_group $(field instructions:u 1 "$out") $(field cycles:u 1 "$out")"
  task=$(field instructions:u 1 "$out")
  # Counting the CPU includes perf's own user-mode instructions, whose number varies between runs; it
  # must cover the workload's count and stay within 10 %.
  out=$(stat -a -e instructions:u)
  cpu=$(field instructions:u 1 "$out")
  if [[ $task =~ ^[0-9]+$ && $cpu =~ ^[0-9]+$ ]] && [ "$cpu" -ge "$task" ] && [ "$cpu" -le $((task + task / 10)) ]; then
    pass "percpu_covers_task"
  else
    fail "percpu_covers_task per-CPU count '$cpu' is not between the task's '$task' and 10 % more"
  fi
  # Multiplexing: two exclusive groups cannot be on the PMU together, so perf core rotates them and scales
  # each count by time_enabled / time_running. Over a uniform loop long enough for many rotations, each scaled
  # count must lie within 0.5 % of the count of the same event alone (so the two drivers agree within 1 %).
  alone=$(ITER=150000000 stat -e instructions:u,cycles:u)
  mux=$(ITER=150000000 stat -e '{instructions:u}:e,{cycles:u}:e')
  for e in instructions:u cycles:u; do
    a=$(field "$e" 1 "$alone") m=$(field "$e" 1 "$mux") pct=$(field "$e" 5 "$mux")
    echo "# multiplexed $e: alone $a, scaled $m, running ${pct}% of the time"
    if [[ $a =~ ^[0-9]+$ && $m =~ ^[0-9]+$ ]] && awk -v a="$a" -v m="$m" -v p="$pct" \
        'BEGIN { d = (m - a) / a; if (d < 0) d = -d; exit !(d <= 0.005 && p + 0 > 0 && p + 0 < 100) }'; then
      pass "multiplex_scaled_${e%:u}"
    else
      fail "multiplex_scaled_${e%:u} alone '$a', multiplexed and scaled '$m' (running ${pct}%): not within 0.5 %"
    fi
  done
  pass "exact_counts_reported"
else
  pass "exact_counts_reported # SKIP counts are exact only with -icount on one hart with Sscofpmf"
fi
