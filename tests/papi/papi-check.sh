#!/bin/bash
# PAPI as a client of the `cpu` PMU, whichever driver provides it. Runs in the guest with the archive of
# scripts/build-papi as /root/papi.tar.gz (qemu-run --add): unpacks it into /opt/papi and runs PAPI's
# tools (papi_component_avail, papi_avail, papi_native_avail, papi_command_line) and papi_gemm (PAPI's API
# on a 64x64 double GEMM, tests/papi/papi_gemm.c).
#
# Output in the project's check style: "ok NAME", "not ok NAME REASON", "ok NAME # SKIP REASON",
# "value NAME VALUE" (compared between the two drivers' runs in the same machine configuration) and "# "
# comments, among them the relevant part of each tool's output. Exit status 1 when a check failed.
#
# papi-check.sh [ARCHIVE]   (default /root/papi.tar.gz)
set -uo pipefail

ARCHIVE=${1:-/root/papi.tar.gz}
N=64
failed=0
pass() { echo "ok $1"; }
fail() { echo "not ok $1"; failed=1; }
skip() { echo "ok $1 # SKIP $2"; }
value() { echo "value $1"; }
comment() { sed 's/^/# /'; }
[ -r /etc/rpmu/run.conf ] && . /etc/rpmu/run.conf
echo "# papi-check: driver ${RPMU_DRIVER:-?}, icount ${RPMU_ICOUNT:-?}, sscofpmf ${RPMU_SSCOFPMF:-?}"

if [ ! -x /opt/papi/bin/papi_avail ]; then
  # -m: the archive's times are the build machine's, ahead of the guest's clock.
  if ! tar -xzmf "$ARCHIVE" -C / 2>/tmp/papi-tar.err; then
    comment </tmp/papi-tar.err
    fail "papi_unpacked tar could not unpack $ARCHIVE"
    exit 1
  fi
fi
pass "papi_unpacked"
comment </opt/papi/LIBC
grep -E '^(papi-tools|libpapi7.2|libpfm4|libc6) ' /opt/papi/PACKAGES | sed 's/^/# package /'

# Every tool runs in the same minimal environment (the user-mode counts include libc's start-up, which reads
# it), plus the pass's own variables.
run() { env -i PATH=/opt/papi/bin:/usr/bin:/bin HOME=/root "${PASS_ENV[@]}" "$@" 2>&1; }

# cmdline PREFIX TAG EVENT...: papi_command_line with EVENTs; a value per counted event, one check for the run.
cmdline() {
  local P=$1 tag=$2 out v e counted=0
  shift 2
  out=$(run papi_command_line "$@")
  echo "# --- papi_command_line $*"
  printf '%s\n' "$out" | grep -vE '^(This utility|-+$|$)' | comment
  for e in "$@"; do
    v=$(printf '%s\n' "$out" | awk -v e="$e" '$1 == e && $2 == ":" { print $3; exit }')
    if [[ $v =~ ^[0-9]+$ ]]; then
      counted=$((counted + 1))
      value "${P}_cmdline_$(tr -c 'A-Za-z0-9_\n' _ <<<"$e") $v"
    fi
  done
  if [ "$counted" -eq $# ]; then
    pass "${P}_command_line_counts_$tag"
  else
    fail "${P}_command_line_counts_$tag $counted of $# events counted: $(printf '%s\n' "$out" | grep -m1 '^because:' || echo 'no count')"
  fi
}

# checks PREFIX: one pass over PAPI's tools and papi_gemm; check and value names start with PREFIX.
checks() {
  local P=$1 out pe_reason avail npresets presets natives total e p

  # --- papi_component_avail: is the perf_event component (the `cpu` PMU through libpfm4) enabled?
  out=$(run papi_component_avail)
  echo "# --- papi_component_avail"
  printf '%s\n' "$out" | sed -n '/^Compiled-in components:/,$p' | comment
  pe_reason=$(printf '%s\n' "$out" | awk '/^Name: +perf_event /{ f = 1; next } f && /Disabled:/ { sub(/.*Disabled: */, ""); print; exit } /^Name:/{ f = 0 }')
  if sed -n '/^Active components:/,$p' <<<"$out" | grep -cE '^Name: +perf_event ' >/dev/null; then
    pass "${P}_perf_event_component_enabled"
    value "${P}_perf_event_component enabled"
    printf '%s\n' "$out" | sed -n '/^Active components:/,$p' | grep -A1 -E '^Name: +perf_event ' | comment
  else
    fail "${P}_perf_event_component_enabled disabled: ${pe_reason:-not listed}"
    value "${P}_perf_event_component disabled:$(tr ' ' _ <<<"${pe_reason:-unknown}")"
  fi
  value "${P}_hw_counters $(printf '%s\n' "$out" | awk -F: '/^Number Hardware Counters/ { gsub(/ /, "", $2); print $2; exit }')"

  # --- papi_avail: the presets available here.
  out=$(run papi_avail -a)
  echo "# --- papi_avail -a (the available presets; the header first)"
  printf '%s\n' "$out" | sed -n '/^Vendor string/,/^Number Hardware/p' | comment
  avail=$(printf '%s\n' "$out" | grep -E '^PAPI_[A-Z0-9_]+ +0x[0-9a-f]+ ' || true)
  printf '%s\n' "$avail" | sed '/^$/d' | comment
  printf '%s\n' "$out" | grep -E '^Of [0-9]+ possible events' | comment
  npresets=$(printf '%s\n' "$avail" | grep -c '^PAPI_' || true)
  value "${P}_avail_presets $npresets"
  presets=()
  for p in PAPI_TOT_INS PAPI_TOT_CYC PAPI_TLB_DM PAPI_TLB_IM; do
    grep -qE "^$p " <<<"$avail" && presets+=("$p")
  done
  if [ "$npresets" -gt 0 ]; then pass "${P}_avail_presets"; else fail "${P}_avail_presets no preset is available"; fi

  # --- papi_native_avail: the native events (perf:: through libpfm4's generic perf table, a core PMU's own).
  out=$(run papi_native_avail)
  echo "# --- papi_native_avail (component sections and the first perf_event events)"
  # Event lines are "| NAME   |" (the default PMU's events carry no "perf::" prefix); attribute and description
  # lines are indented.
  printf '%s\n' "$out" | grep -E '^ Native Events in Component' | comment
  printf '%s\n' "$out" | awk '/^\| [^ ]/ { printf "%s%s", (n++ ? " " : ""), $2 } END { if (n) print "" }' | fold -w 110 -s | comment
  printf '%s\n' "$out" | grep -E '^Total events reported' | comment
  total=$(printf '%s\n' "$out" | awk '/^Total events reported:/ { print $4; exit }')
  value "${P}_native_events ${total:-none}"
  natives=()
  for e in perf::PERF_COUNT_HW_INSTRUCTIONS perf::PERF_COUNT_HW_CPU_CYCLES; do
    grep -qE "^\| (perf::)?${e#perf::} " <<<"$out" && natives+=("$e:u")
  done
  if [ "${total:-0}" -gt 0 ]; then pass "${P}_native_events"; else fail "${P}_native_events no native event: see papi_component_avail"; fi

  # --- papi_command_line: PAPI's own workload with the events PAPI offers here, the presets in one run and the
  # generic perf events (user mode) in another (both sets hold an instructions event, and the machine has one
  # counter that counts instructions); when it offers none, the names it would take, to show its answer.
  if [ ${#presets[@]} -gt 0 ] || [ ${#natives[@]} -gt 0 ]; then
    [ ${#presets[@]} -eq 0 ] || cmdline "$P" presets "${presets[@]}"
    [ ${#natives[@]} -eq 0 ] || cmdline "$P" perf "${natives[@]}"
  else
    cmdline "$P" offered PAPI_TOT_INS PAPI_TOT_CYC perf::PERF_COUNT_HW_INSTRUCTIONS:u perf::PERF_COUNT_HW_CPU_CYCLES:u
  fi

  # --- papi_gemm: PAPI's API on a GEMM, with its default events (PAPI_TOT_INS and PAPI_TOT_CYC when PAPI offers
  # them, else the generic perf events), then with the generic perf events PAPI lists (user mode).
  gemm "$P" default
  [ ${#natives[@]} -eq 0 ] || gemm "$P" perf "${natives[@]}"
}

# gemm PREFIX TAG [EVENT...]: papi_gemm N [EVENT...]; its values renamed PREFIX_gemm_EVENT.
gemm() {
  local P=$1 tag=$2 out
  shift 2
  out=$(run papi_gemm $N "$@")
  echo "# --- papi_gemm $N $*"
  printf '%s\n' "$out" | grep -vE '^(value|ok|not ok) ' | sed 's/^# //' | comment
  printf '%s\n' "$out" | grep -E '^value ' | sed "s/^value papi_gemm_/value ${P}_gemm_/"
  if grep -q '^value papi_gemm_' <<<"$out"; then
    pass "${P}_gemm_counts_$tag"
  else
    fail "${P}_gemm_counts_$tag $(printf '%s\n' "$out" | grep -m1 '^not ok' | sed 's/^not ok //')"
  fi
}

# Stock: Debian unstable's PAPI and libpfm4 as packaged.
PASS_ENV=()
echo "# === stock PAPI (Debian unstable's libpapi7.2 and libpfm4)"
checks papi

# The demonstration fix (scripts/build-papi): the same PAPI with libpfm4 patched so that its generic perf table
# is the core PMU on RISC-V (tests/papi/libpfm4-riscv-perf-core.patch), and presets for it
# (tests/papi/papi_events-perf.csv). Names start with papi_fix_.
if [ -f /opt/papi/fix/lib/libpfm.so.4 ]; then
  PASS_ENV=(LD_LIBRARY_PATH=/opt/papi/fix/lib PAPI_CSV_EVENT_FILE=/opt/papi/fix/papi_events.csv)
  echo "# === PAPI with the demonstration fix: $(cat /opt/papi/fix/SOURCE)"
  checks papi_fix
else
  skip "papi_fix" "the archive has no /opt/papi/fix (scripts/build-papi --no-fix)"
fi

# The control: the same GEMM through perf_event_open with the generic events PAPI's perf:: names stand for.
PASS_ENV=()
out=$(run papi_gemm --perf $N)
echo "# --- papi_gemm --perf $N (control: perf_event_open, no PAPI)"
printf '%s\n' "$out" | grep -E '^# ' | sed 's/^# //' | comment
printf '%s\n' "$out" | grep -E '^value '
if grep -q '^value papi_gemm_perf_instructions_u' <<<"$out"; then
  pass "gemm_perf_event_open_counts"
else
  fail "gemm_perf_event_open_counts $(printf '%s\n' "$out" | grep -m1 '^not ok' | sed 's/^not ok //')"
fi

exit $failed
