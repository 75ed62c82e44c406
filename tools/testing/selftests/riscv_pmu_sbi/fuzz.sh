#!/bin/bash
# A short run of the seeded perf_event_attr fuzzer (pfuzz.c): random attributes over every
# type, raw class, flag, period/frequency, sample type, read format, group and target, with enable, read, mmap
# and ioctls. The digest of the open outcomes (the errno of every attempt, in order) and the count of each
# outcome are values the harness compares with the C driver's for the same seed; the kernel log must stay clean
# (the harness checks it) and every event is closed at the end. `make stress` runs the same fuzzer at 100,000
# attempts and more seeds.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

F=$RPMU_SELFTEST_DIR/pfuzz
SEED=${FUZZ_SEED:-1}
ATTEMPTS=${FUZZ_ATTEMPTS:-3000}
# Kernel-inclusive events sample at periods of 1000 and more here: a shorter one keeps a hart of the
# deterministic entries in its overflow interrupt for a long time (make stress runs periods down to 1).
MIN_PERIOD=1000

out=$("$F" -s "$SEED" -n "$ATTEMPTS" -m "$MIN_PERIOD" 2>&1)
rc=$?
printf '%s\n' "$out" | sed -n "s/^value fuzz_/# value fuzz_s${SEED}_/p"
summary=$(printf '%s\n' "$out" | grep '^attempts ')
echo "# $summary; $(printf '%s\n' "$out" | grep '^ops_digest ')"
if [ "$rc" -ne 0 ]; then
  fail "fuzz_completed pfuzz exited with $rc: $(printf '%s\n' "$out" | tail -3 | tr '\n' ' ')"
elif [ "$(awk '{ print $2 }' <<<"$summary")" != "$ATTEMPTS" ]; then
  fail "fuzz_completed expected $ATTEMPTS attempts, got: $summary"
else
  pass "fuzz_completed"
fi
# Some attributes must have opened, or the run tested only the refusals.
opened=$(awk '{ print $4 }' <<<"$summary")
if [ "${opened:-0}" -gt 0 ] 2>/dev/null; then
  pass "fuzz_some_opened"
else
  fail "fuzz_some_opened no attempt opened an event: $summary"
fi
