#!/bin/bash
# The programs of samples/: a group count of a command with time scaling, and self-monitoring through the
# perf mmap page (or read(2) when the page does not offer the counter). Each must produce plausible counts.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

B=$RPMU_SAMPLES
ITER=1000000

if [ ! -x "$B/stat_group" ] || [ ! -x "$B/self_monitor" ]; then
  fail "samples_built the programs of samples/ are not in $B (set RPMU_SAMPLES)"
  exit 0
fi

out=$("$B/stat_group" "$RPMU_SELFTEST_DIR/workload" "$ITER" 2>&1)
echo "# stat_group: $(echo "$out" | tr '\n' ' ')"
cyc=$(echo "$out" | awk '$1 == "cycles" { print $2 }')
ins=$(echo "$out" | awk '$1 == "instructions" { print $2 }')
# The workload's loop runs at least one instruction per iteration.
if [[ ${ins:-x} =~ ^[0-9]+$ && ${cyc:-x} =~ ^[0-9]+$ ]] && [ "$ins" -ge "$ITER" ] && [ "$cyc" -gt 0 ]; then
  pass "sample_stat_group"
else
  fail "sample_stat_group expected at least $ITER instructions and some cycles: $out"
fi

out=$("$B/self_monitor" "$ITER" 2>&1)
echo "# self_monitor: $(echo "$out" | tr '\n' ' ')"
path=$(echo "$out" | awk '$1 == "path" { print $2 }')
ins=$(echo "$out" | awk '$1 == "instructions" { print $2 }')
# Between its two reads the program runs its loop: at least one instruction per iteration. Without Sscofpmf
# the count includes kernel mode (interrupts, and on the read(2) path the event's setup), so the upper bound
# only rejects a count that cannot come from the loop, such as a counter read across a wrap.
if [[ ${ins:-x} =~ ^[0-9]+$ ]] && [ "$ins" -ge "$ITER" ] && [ "$ins" -le $((ITER * 200)) ] && [ -n "$path" ]; then
  pass "sample_self_monitor"
else
  fail "sample_self_monitor expected between $ITER and $((ITER * 200)) instructions: $out"
fi
