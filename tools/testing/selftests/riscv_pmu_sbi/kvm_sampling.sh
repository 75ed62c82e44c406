#!/bin/bash
# Sampling in a guest under KVM, where the counter overflow interrupts the driver sees are the ones KVM injects
# after its host's own overflow interrupts (KVM's perf event per guest counter, on a counter of the host's PMU):
# 1. perf record -c P of a fixed loop: the number of samples must be floor(N/P) +- 1, N the count perf stat gives
#    for the same command in the same boot;
# 2. perf record -F 1000: a plausible rate once perf core's first short periods are past, and the samples' periods
#    must add up to about the count;
# 3. the restart after an overflow (isolated): another event of the same task (cycles:u) must count as much as
#    without overflows, once at least one overflow was taken. A driver that fails to restart its counters after
#    an overflow stops counting there (the C driver's pmu_sbi_start_ovf_ctrs_snapshot() restarts them with
#    counter_idx_base 64 * BITS_PER_LONG, which KVM refuses: its counters stay stopped).
# Elsewhere check/sampling covers the same (exactly under -icount), and this check skips.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

W=$RPMU_SELFTEST_DIR/workload
DATA=/tmp/kvm_sampling.data
TESTS="kvm_sample_fixed_period kvm_sample_frequency_rate kvm_overflow_restart_counts"

if [ "${RPMU_NESTED:-0}" != 1 ] || [ "${RPMU_SSCOFPMF:-0}" != 1 ]; then
  for t in $TESTS; do
    pass "$t # SKIP not a guest under KVM with Sscofpmf: check/sampling covers sampling here"
  done
  exit 0
fi

ITER=3000000
PERIOD=100003
# The environment is emptied for perf, not between perf and the workload (as in check/sampling): the counted
# command is the workload alone, whose user-mode count depends on the environment's size.
run() { env -i PATH=/usr/bin "$@"; }
count=$(run perf stat -x, -e instructions:u -- "$W" $ITER 2>&1 >/dev/null | awk -F, '$3 == "instructions:u" { print $1 }')
echo "# instructions:u of workload $ITER counted alone: ${count:-none}"
irqs() { awk '/riscv-pmu/ { n = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i; print n }' /proc/interrupts; }
if ! [[ ${count:-x} =~ ^[0-9]+$ ]]; then
  for t in $TESTS; do fail "$t perf stat gave no count"; done
  exit 0
fi
# N must be the workload's own, or floor(N/P) would follow a driver's miscount: its loop runs three instructions per
# iteration (add, increment, branch), and the program's start and exit about ten thousand more. (The length test
# comes first: a count beyond bash's integers, such as 2^63, is no integer to [.)
low=$((3 * ITER))
if [ ${#count} -gt 18 ] || [ "$count" -lt $low ] || [ "$count" -gt $((low + low / 100)) ]; then
  for t in $TESTS; do
    fail "$t perf stat counted $count instructions:u of the workload, whose loop alone runs $low: no reference"
  done
  exit 0
fi

# 1. A fixed period.
i0=$(irqs)
if run perf record -q -o "$DATA" -e instructions:u -c $PERIOD -- "$W" $ITER >/dev/null 2>/tmp/kvm_sampling.err; then
  read -r n bad < <(perf script -i "$DATA" -F period 2>/dev/null | awk -v p=$PERIOD '{ n++; if ($1 != p) bad++ } END { print n + 0, bad + 0 }')
  want=$((count / PERIOD))
  echo "# -c $PERIOD: $n samples ($bad with another period) where the count gives $want; overflow interrupts of this guest: $(($(irqs) - i0))"
  if [ "$bad" -ne 0 ]; then
    fail "kvm_sample_fixed_period $bad of $n samples with a period other than $PERIOD"
  elif [ "$n" -lt $((want - 1)) ] || [ "$n" -gt $((want + 1)) ]; then
    fail "kvm_sample_fixed_period $n samples where the count $count gives $want"
  else
    pass "kvm_sample_fixed_period"
  fi
else
  fail "kvm_sample_fixed_period perf record failed: $(tail -2 /tmp/kvm_sampling.err | tr '\n' ' ')"
fi

# 2. Frequency mode at 1000 per second. perf core starts at a period of 1 and raises it from sample to sample, so
# that over this short workload most samples come within its first milliseconds: the rate is judged on the second
# half of the samples, from their own time stamps, and must be within a factor of four of the one asked for. The
# samples' periods add up to about the count only when the overflows are delivered.
if run perf record -q -o "$DATA" -F 1000 -e instructions:u -- "$W" $ITER >/dev/null 2>/tmp/kvm_sampling.err; then
  read -r n sum rate < <(perf script -i "$DATA" -F time,period 2>/dev/null | tr -d : | awk '
    { t[NR] = $1; s += $2 }
    END { h = int(NR / 2) + 1; r = 0; if (NR - h >= 2 && t[NR] > t[h]) r = (NR - h) / (t[NR] - t[h])
          printf "%d %.0f %.0f\n", NR, s, r }')
  echo "# -F 1000: $n samples, periods adding up to $sum of $count; the second half at $rate per second"
  if [ "$n" -lt 8 ]; then
    fail "kvm_sample_frequency_rate $n samples: too few for a rate, overflows lost"
  elif [ "$rate" -lt 250 ] || [ "$rate" -gt 4000 ]; then
    fail "kvm_sample_frequency_rate the second half of the $n samples came at $rate per second for -F 1000"
  elif [ "$sum" -lt $((count / 2)) ] || [ "$sum" -gt "$count" ]; then
    fail "kvm_sample_frequency_rate the samples' periods add up to $sum of the $count events: overflows lost"
  else
    pass "kvm_sample_frequency_rate"
  fi
else
  fail "kvm_sample_frequency_rate perf record failed: $(tail -2 /tmp/kvm_sampling.err | tr '\n' ' ')"
fi

# 3. The restart after an overflow, seen by another event of the same task: perf record samples instructions:u
# of perf stat and the workload with a period of about a tenth of the count, while perf stat counts cycles:u of
# the workload; and the same with a period the workload never reaches. A driver whose counters stay stopped
# after an overflow stops the cycles counter there too (the C driver restarts none of the CPU's counters under
# KVM's snapshot memory).
witness() {
  run perf record -q -o "$DATA" -e instructions:u -c "$1" -- perf stat -x, -e cycles:u -- "$W" $ITER 2>&1 >/dev/null |
    awk -F, '$3 == "cycles:u" { print $1 }'
}
ref=$(witness 1000000000000)
got=$(witness $((count / 10 + 1)))
n=$(perf script -i "$DATA" -F period 2>/dev/null | grep -c .)
echo "# cycles:u of the workload: $got with instructions:u sampled every $((count / 10 + 1)) ($n samples), $ref with no overflow"
if ! [[ ${ref:-x} =~ ^[0-9]+$ && ${got:-x} =~ ^[0-9]+$ ]]; then
  fail "kvm_overflow_restart_counts perf stat gave no cycles:u count ($got, $ref)"
elif [ "$n" -eq 0 ]; then
  fail "kvm_overflow_restart_counts no overflow was delivered, so the restart was not exercised"
elif [ "$got" -lt $((ref - ref / 50)) ]; then
  fail "kvm_overflow_restart_counts cycles:u counted $got of $ref: the counters stopped after an overflow ($n samples)"
else
  pass "kvm_overflow_restart_counts"
fi
rm -f "$DATA" "$DATA.old"
exit 0
