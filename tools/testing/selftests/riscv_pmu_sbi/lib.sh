# SPDX-License-Identifier: GPL-2.0
# Shared by the riscv_pmu_sbi selftests: KTAP output through the kselftest helpers, the directory of the test
# programs, and the description of the machine the checks adapt to.
#
# Result helpers, each taking one string "NAME[ REASON]":
#   pass "NAME"                  ok N NAME
#   pass "NAME # SKIP REASON"    ok N NAME # SKIP REASON
#   fail "NAME REASON"           "# NAME: REASON", then not ok N NAME
#   value "NAME VALUE"           "# value NAME VALUE": a measured value, for comparing two drivers' runs
# The plan and the totals are printed when the script exits, and the exit status is the kselftest one
# (0 when nothing failed, 1 otherwise).
#
# The checks adapt to the machine through these variables; a test harness sets them, otherwise they are found
# out here:
#   RPMU_DRIVER    rust when the riscv_pmu_sbi_rust module is loaded or built in, c otherwise
#   RPMU_MODULE    the .ko module_reload.sh reloads (default: the module's file under /lib/modules)
#   RPMU_SSCOFPMF  1 when the harts list the Sscofpmf extension
#   RPMU_ICOUNT    1 when counts are exact (QEMU -icount on one hart); default 0
#   RPMU_NESTED    1 in a guest under KVM; default 0
#   RPMU_SBI_PMU   0 when the firmware has no SBI PMU extension (the legacy PMU); default 1
#   RPMU_UNPATCHED 1 when the kernel does not export perf_event_overflow() and perf_sample_event_took() to
#                  modules (the kernel without the project's patches); default 0
#   RPMU_SAMPLES   the directory of the built samples/ programs (default /opt/rpmu/bin)
#   RPMU_SAMPLE_RATE  if set, kernel.perf_event_max_sample_rate is set to it first, where perf's dynamic throttle
#                  is on: a harness running the checks one after another sets it, so that no check inherits the
#                  lower rate the throttle left after an earlier one

RPMU_SELFTEST_DIR=$(dirname "$(readlink -f "$0")")
# shellcheck source=/dev/null
. "$RPMU_SELFTEST_DIR/../kselftest/ktap_helpers.sh"

if [ -z "${RPMU_DRIVER:-}" ]; then
  if [ -d /sys/module/riscv_pmu_sbi_rust ]; then RPMU_DRIVER=rust; else RPMU_DRIVER=c; fi
fi
: "${RPMU_MODULE:=$(modinfo -n riscv_pmu_sbi_rust 2>/dev/null || echo riscv_pmu_sbi_rust.ko)}"
if [ -z "${RPMU_SSCOFPMF:-}" ]; then
  if grep -q -i -E '^isa(-ext)?\s*:.*(_|\s)sscofpmf' /proc/cpuinfo 2>/dev/null; then RPMU_SSCOFPMF=1; else RPMU_SSCOFPMF=0; fi
fi
: "${RPMU_ICOUNT:=0}" "${RPMU_NESTED:=0}" "${RPMU_SBI_PMU:=1}" "${RPMU_SAMPLES:=/opt/rpmu/bin}"
if [ -n "${RPMU_SAMPLE_RATE:-}" ] && [ "$(cat /proc/sys/kernel/perf_cpu_time_max_percent)" != 0 ]; then
  echo "$RPMU_SAMPLE_RATE" >/proc/sys/kernel/perf_event_max_sample_rate
fi

pass() {
  case "$1" in
    *" # SKIP"*)
      # The helpers' skip carries no reason; KTAP's directive does: "ok N NAME # SKIP REASON".
      __ktap_test ok "${1%% # SKIP*}" "SKIP${1#* # SKIP}"
      KTAP_CNT_SKIP=$((KTAP_CNT_SKIP + 1)) ;;
    *) ktap_test_pass "$1" ;;
  esac
}

fail() {
  local name=${1%% *}
  [ "$name" = "$1" ] || echo "# $name: ${1#* }"
  ktap_test_fail "$name"
}

value() {
  echo "# value $1"
}

# second_word KEY TEXT: the second word of each line of TEXT whose first word is KEY, as
# awk '$1 == KEY { print $2 }' prints it, without starting a process.
second_word() {
  local k v _
  while read -r k v _; do
    [ "$k" = "$1" ] && echo "$v"
  done <<<"$2"
  return 0
}

# klog_has GREP_ARGS...: whether the kernel log has a line grep matches. Not "dmesg | grep -q": grep -q
# leaves at its first match, dmesg's next write then dies of SIGPIPE, and with pipefail the pipeline fails.
klog_has() {
  grep -q "$@" <<<"$(dmesg)"
}

# log_since_load PREFIX: the kernel log from the driver's last "PREFIXSBI PMU extension is available" line (its last
# load: the module may have been reloaded) to the end; all of it when there is no such line.
log_since_load() {
  awk -v p="$1SBI PMU extension is available" 'index($0, p) { n = 0 } { l[n++] = $0 }
    END { for (i = 0; i < n; i++) print l[i] }' <<<"$(dmesg)"
}

# rust_delegates: whether the Rust driver, as last loaded, programs the hardware counters with CSRs (counter
# delegation): its kernel log since its last load says so. It then makes no SBI call for hardware events and has
# no snapshot memory.
rust_delegates() {
  grep -q "riscv_pmu_sbi_rust: counter delegation: hardware counters programmed with CSRs" \
    <<<"$(log_since_load 'riscv_pmu_sbi_rust: ')"
}

# attempts NAME FUNCTION [ARGS...]: the check NAME, passed when FUNCTION [ARGS...] returns 0, which is called at
# most three times where QEMU runs without -icount (RPMU_ICOUNT not 1) and once under -icount. For the checks whose
# samples depend on host timing: without -icount QEMU raises the overflow interrupt of cycles and instructions from
# a timer of its own clock while the counters follow host time, so a short workload may end with few or none of
# its interrupts delivered, on either driver. Under -icount every run is the same and one failure fails. FUNCTION
# leaves a reason in $why and returns 1 for a failure timing can explain (tried again, reported as
# "# NAME: attempt N of at most M: REASON") or 2 for one it cannot (perf failed, a sample is wrong: fails at once).
# Returns 0 when the check passed.
attempts() {
  local name=$1 tries=3 try status
  shift
  [ "$RPMU_ICOUNT" = 1 ] && tries=1
  for try in $(seq "$tries"); do
    why=
    "$@"
    status=$?
    if [ "$status" -eq 0 ]; then
      pass "$name"
      return 0
    fi
    [ "$status" -eq 1 ] && [ "$try" -lt "$tries" ] || break
    echo "# $name: attempt $try of at most $tries: $why"
  done
  fail "$name $why"
  return 1
}

rpmu_finish() {
  ktap_set_plan $((KTAP_TESTNO - 1))
  ktap_finished
}

ktap_print_header
trap rpmu_finish EXIT
