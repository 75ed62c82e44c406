#!/bin/bash
# The programs of samples/: a group count of a command with time scaling, and self-monitoring through the
# perf mmap page (or read(2) when the page does not offer the counter). Each must produce plausible counts.
set -uo pipefail

B=/opt/rpmu/bin
ITER=1000000

if [ ! -x "$B/stat_group" ] || [ ! -x "$B/self_monitor" ]; then
  echo "not ok samples_built the samples are not in the guest"
  exit 0
fi

out=$("$B/stat_group" "$B/workload" "$ITER" 2>&1)
echo "# stat_group: $(echo "$out" | tr '\n' ' ')"
cyc=$(echo "$out" | awk '$1 == "cycles" { print $2 }')
ins=$(echo "$out" | awk '$1 == "instructions" { print $2 }')
# The workload's loop runs at least one instruction per iteration.
if [[ ${ins:-x} =~ ^[0-9]+$ && ${cyc:-x} =~ ^[0-9]+$ ]] && [ "$ins" -ge "$ITER" ] && [ "$cyc" -gt 0 ]; then
  echo "ok sample_stat_group"
else
  echo "not ok sample_stat_group expected at least $ITER instructions and some cycles: $out"
fi

out=$("$B/self_monitor" "$ITER" 2>&1)
echo "# self_monitor: $(echo "$out" | tr '\n' ' ')"
path=$(echo "$out" | awk '$1 == "path" { print $2 }')
ins=$(echo "$out" | awk '$1 == "instructions" { print $2 }')
# Between its two reads the program runs its loop: at least one instruction per iteration. Without Sscofpmf
# the count includes kernel mode (interrupts, and on the read(2) path the event's setup), so the upper bound
# only rejects a count that cannot come from the loop, such as a counter read across a wrap.
if [[ ${ins:-x} =~ ^[0-9]+$ ]] && [ "$ins" -ge "$ITER" ] && [ "$ins" -le $((ITER * 200)) ] && [ -n "$path" ]; then
  echo "ok sample_self_monitor"
else
  echo "not ok sample_self_monitor expected between $ITER and $((ITER * 200)) instructions: $out"
fi
