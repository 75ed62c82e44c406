#!/bin/bash
# Leader sampling with PERF_SAMPLE_READ: a group leader samples and every sample carries the read values of the
# whole group (PERF_FORMAT_GROUP). perf core writes those values from inside the driver's overflow interrupt
# (perf_event_overflow() -> perf_output_read_group() -> the driver's read callback for every sibling), so this
# checks that a driver re-entered from its own overflow handler reads the sibling right: every sample must carry
# non-zero values of both members with the same ids, and the leader's value must grow from sample to sample.
# Run through perf record ({...}:S) and through a program that opens the group itself and parses its ring
# buffer. In the deterministic entry the program's number of samples and final count, and for perf record the
# difference between the sibling's and the leader's value in each sample (both count user-mode instructions
# there), are compared with the other driver's.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

W=$RPMU_SELFTEST_DIR/workload
G=$RPMU_SELFTEST_DIR/grpsample
DATA=/tmp/leader_sampling.data

if [ "${RPMU_SSCOFPMF:-0}" != 1 ]; then
  for t in leader_sample_read_perf leader_sample_read_group_prog; do
    pass "$t # SKIP no counter overflow interrupt without Sscofpmf: perf core refuses sampling events of the cpu PMU"
  done
  exit 0
fi

# 1. perf record of an {instructions:u,cycles:u} group sampled through its leader. A period of about a million
# keeps the interrupt rate far below perf core's throttle limit. The workload runs about 300 million instructions:
# without -icount QEMU raises the overflow interrupt from a host timer and a run of a few tens of milliseconds
# sometimes gets no sample at all.
# Nested under KVM a guest runs several times slower, and a third of that workload still spans about a hundred
# periods.
PERIOD=1000003
ITERATIONS=$([ "${RPMU_NESTED:-0}" = 1 ] && echo 30000000 || echo 100000000)
# The environment is emptied for perf, not between perf and the workload, as in the sampling check: the counted
# command is the workload alone, and its user-mode count depends on the environment's size.
if ! env -i PATH=/usr/bin perf record -q -o "$DATA" -e '{instructions:u,cycles:u}:S' -c $PERIOD -- "$W" $ITERATIONS \
  >/dev/null 2>/tmp/leader_sampling.err; then
  fail "leader_sample_read_perf perf record failed: $(tail -2 /tmp/leader_sampling.err | tr '\n' ' ')"
else
  # perf script -D dumps every PERF_RECORD_SAMPLE with its read values ("..... id ID, value VALUE", both in hex).
  # The awk program prints: samples, bad samples, the last sample's leader and sibling values, the distinct
  # differences sibling - leader over all samples (comma-separated, in order of appearance) and the first problem
  # found.
  read -r n bad leader sibling diffs why < <(perf script -i "$DATA" -D 2>/dev/null | awk '
    function hex(s,  i, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
    function problem(s) { bad++; if (why == "") why = "sample " n ": " s }
    function finish() {
      if (!insample) return
      insample = 0
      if (k != 2 || nr != 2) { problem("group nr " nr " with " k " values"); return }
      if (n == 1) { id1 = ids[1]; id2 = ids[2] }
      if (ids[1] != id1 || ids[2] != id2 || id1 == id2) problem("ids " ids[1] " " ids[2] " (first sample: " id1 " " id2 ")")
      if (vals[1] == 0 || vals[2] == 0) problem("a zero value: " vals[1] " " vals[2])
      if (n > 1 && vals[1] <= last1) problem("leader value " vals[1] " after " last1)
      if (n > 1 && vals[2] < last2) problem("sibling value " vals[2] " after " last2)
      last1 = vals[1]; last2 = vals[2]
      d = sprintf("%.0f", vals[2] - vals[1])
      if (!(d in seen)) { seen[d] = 1; ndiffs++; diffs = diffs (ndiffs > 1 ? "," : "") d }
    }
    /PERF_RECORD_SAMPLE/ { finish(); insample = 1; n++; k = 0; nr = -1; next }
    insample && /^\.\.\.\. group nr / { nr = $4 + 0; next }
    insample && /^\.\.\.\.\. id / { k++; id = $3; sub(",", "", id); ids[k] = id; v = $5; sub(",", "", v); vals[k] = hex(v); next }
    END { finish(); printf "%d %d %.0f %.0f %s %s\n", n, bad, last1, last2, (ndiffs > 4 ? "many" : (diffs == "" ? "none" : diffs)), (why == "" ? "-" : why) }')
  echo "# $n samples of period $PERIOD; last sample: instructions:u $leader, cycles:u $sibling; cycles:u - instructions:u: $diffs"
  if [ "${n:-0}" -eq 0 ]; then
    fail "leader_sample_read_perf no sample"
  elif [ "${bad:-0}" -ne 0 ]; then
    fail "leader_sample_read_perf $bad of $n samples inconsistent, first: $why"
  else
    pass "leader_sample_read_perf"
  fi
  # Under -icount cycles and instructions advance together, so the sibling's value in a sample is exactly the
  # leader's whenever the driver reads the sibling's counter at the overflow. The number of samples is not
  # compared: even on the C driver, and for a single sampling event too, it varies from run to run by a few,
  # because some of the overflows in the workload's first few million instructions are not reported.
  if [ "${RPMU_ICOUNT:-0}" = 1 ]; then
    value "leader_sampling_perf_sibling_minus_leader $diffs"
  fi
fi
rm -f "$DATA" "$DATA.old"

# 2. The same through perf_event_open(2): grpsample opens the group, parses every sample in its ring buffer
# (small, so that records wrap around its end), then compares a read(2) of the group with the last sample.
if out=$(env -i PATH=/usr/bin "$G" 2>&1); then
  echo "# grpsample: $out"
  read -r n leader < <(printf '%s\n' "$out" | awk '$1 == "samples" { print $2, $6; exit }')
  pass "leader_sample_read_group_prog"
  # A single process with no other task on the hart: under -icount both numbers are exactly repeatable.
  if [ "${RPMU_ICOUNT:-0}" = 1 ]; then
    value "leader_sampling_prog_samples ${n:-none}"
    value "leader_sampling_prog_final_leader ${leader:-none}"
  fi
else
  fail "leader_sample_read_group_prog $(printf '%s\n' "$out" | tail -1)"
fi
exit 0
