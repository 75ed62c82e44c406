#!/bin/bash
# Sampling through the counter overflow interrupt (Sscofpmf): perf record with a fixed period and in frequency mode,
# and a profile whose shape is known. In the deterministic entry the number of samples of a fixed workload is
# compared with the other driver's and with the event's count divided by the period (from perf stat in the same
# boot), so a lost or doubled overflow shows.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

W=$RPMU_SELFTEST_DIR/workload
H=$RPMU_SELFTEST_DIR/hotspots
DATA=/tmp/sampling.data

if [ "${RPMU_SSCOFPMF:-0}" != 1 ]; then
  for t in sample_fixed_period sample_frequency_mode sample_profile_shape; do
    pass "$t # SKIP no counter overflow interrupt without Sscofpmf: perf core refuses sampling events of the cpu PMU"
  done
  exit 0
fi

# record PERF_RECORD_ARGS... -- COMMAND...: perf record into $DATA, quietly; 0, or 2 with the reason in $why (a
# failure attempts does not repeat).
record() {
  ${RECORD_ENV:-} perf record -q -o "$DATA" "$@" >/dev/null 2>/tmp/sampling.err && return 0
  why="perf record failed: $(tail -2 /tmp/sampling.err | tr '\n' ' ')"
  return 2
}
# samples PERIOD: the number of samples in $DATA and how many of them do not stand for PERIOD events.
samples() { perf script -i "$DATA" -F period 2>/dev/null | awk -v p="$1" '{ n++; if ($1 != p) bad++ } END { print n + 0, bad + 0 }'; }

# Without -icount a record may get no sample, or too few for a profile's shape, on either driver (in 50 runs of this
# script per driver in one boot each on two harts: sample_fixed_period failed C 19, Rust 8 times,
# sample_frequency_mode C 4, Rust 5, sample_profile_shape C 36, Rust 31; a record's interrupts outnumbered its
# samples by up to three, mostly one or two, on both). Each check therefore runs through attempts (lib.sh): up to
# three records there, one strictly under -icount.

# 1. A fixed period: every sample stands for the period; under -icount the count is exact.
PERIOD=100003
fixed_period() {
  local n bad count want
  # The environment is emptied for perf, not between perf and the workload: the counted command is the workload
  # alone, as for perf stat below (the count depends on the environment's size, which libc's start-up reads).
  RECORD_ENV="env -i PATH=/usr/bin" record -e instructions:u -c $PERIOD -- "$W" 1000000 || return 2
  read -r n bad < <(samples $PERIOD)
  count=$(env -i PATH=/usr/bin perf stat -x, -e instructions:u -- "$W" 1000000 2>&1 >/dev/null | awk -F, '$3 == "instructions:u" { print $1 }')
  echo "# $n samples of period $PERIOD ($bad with another period); instructions:u counted alone: $count"
  want=$(( ${count:-0} / PERIOD ))
  [ "$bad" -eq 0 ] || { why="$n samples, $bad of them with a period other than $PERIOD"; return 2; }
  [ "$n" -gt 0 ] || { why="no sample"; return 1; }
  if [ "${RPMU_ICOUNT:-0}" = 1 ] && { [ "$n" -lt $((want - 1)) ] || [ "$n" -gt $((want + 1)) ]; }; then
    why="$n samples where the count $count gives $want"
    return 1
  fi
}
attempts sample_fixed_period fixed_period

# 2. Frequency mode: perf core adjusts the period from the interrupt rate; the record must have samples.
frequency_mode() {
  local n
  record -F 1000 -e instructions:u -- "$W" 3000000 || return 2
  read -r n _ < <(samples 0)
  echo "# frequency mode: $n samples"
  [ "$n" -gt 0 ] || { why="no sample"; return 1; }
}
attempts sample_frequency_mode frequency_mode

# 3. A profile: hotspots spends two thirds of its loop iterations in heavy() and one third in light().
profile_shape() {
  local heavy light
  record -e cycles:u -c 20011 -- "$H" 300 || return 2
  read -r heavy light < <(perf report -i "$DATA" --stdio --sort symbol 2>/dev/null |
    awk '$2 == "[.]" && $3 == "heavy" { h = $1 } $2 == "[.]" && $3 == "light" { l = $1 }
      END { gsub("%", "", h); gsub("%", "", l); print h + 0, l + 0 }')
  echo "# heavy $heavy %, light $light % of the samples"
  awk -v h="$heavy" -v l="$light" 'BEGIN { s = h + l; exit !(s > 50 && h / s > 0.55 && h / s < 0.78) }' && return 0
  perf report -i "$DATA" --stdio --sort symbol 2>&1 | grep -v '^#' | grep . | head -5 | sed 's/^/# /'
  why="heavy $heavy %, light $light %: expected about 2:1"
  return 1
}
attempts sample_profile_shape profile_shape
rm -f "$DATA" "$DATA.old"
