#!/bin/bash
# The module on a kernel that does not export perf_event_overflow() and perf_sample_event_took() (the kernel
# without the project's two patches, scripts/build-kernel --unpatched): it loads and counts, says once in the
# kernel log that it cannot sample, and refuses sampling events with EOPNOTSUPP, counting ones with mode filters
# accepted. Runs where scripts/qemu-run says the kernel lacks the exports (RPMU_UNPATCHED=1) and the Rust module
# provides the PMU; the C driver is built into the kernel, which needs no export, and samples there as anywhere.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

EVOPEN=$RPMU_SELFTEST_DIR/evopen
W=$RPMU_SELFTEST_DIR/workload
CHECKS="no_sample_exports_log_line no_sample_exports_counts no_sample_exports_refuses_sampling no_sample_exports_record"

if [ "${RPMU_UNPATCHED:-0}" != 1 ]; then
  for t in $CHECKS; do pass "$t # SKIP the kernel exports what sampling from a module needs"; done
  exit 0
fi
if [ "${RPMU_DRIVER:-}" != rust ]; then
  for t in $CHECKS; do pass "$t # SKIP the C driver is built in: it needs no export"; done
  exit 0
fi

line='riscv_pmu_sbi_rust: sampling is not supported: this kernel does not export perf_event_overflow() and perf_sample_event_took() to modules'
# Once per load: the log since the module's last "SBI PMU extension is available" line (check/module_reload, which
# make test-full runs before this check, loads it again).
n=$(grep -cF "$line" <<<"$(log_since_load 'riscv_pmu_sbi_rust: ')")
if [ "$n" = 1 ]; then
  pass "no_sample_exports_log_line"
else
  fail "no_sample_exports_log_line expected the line once since the module's last load, found it $n times: $(dmesg | grep riscv_pmu_sbi_rust | tr '\n' ' ')"
fi

# Counting, with and without mode filters (Sscofpmf filters without the overflow report).
N=100000
out=$(perf stat -x, -e instructions:u,cycles:u -- "$W" "$N" 2>&1 >/dev/null)
bad=
for e in instructions:u cycles:u; do
  v=$(echo "$out" | awk -F, -v e="$e" '$3 == e { print $1 }')
  [[ ${v:-} =~ ^[0-9]+$ ]] && [ "$v" -ge $((3 * N)) ] || bad+=" $e=${v:-missing}"
done
if [ -z "$bad" ]; then pass "no_sample_exports_counts"; else fail "no_sample_exports_counts perf stat counted:$bad (at least $((3 * N)) each expected)"; fi

# perf_event_open(2): a sampling event is refused with EOPNOTSUPP; the same event counting opens and counts.
declare -A want=(["0 0 s"]=EOPNOTSUPP ["0 1 s"]=EOPNOTSUPP ["0 1 su"]=EOPNOTSUPP ["0 0"]=counted ["0 1 k"]=counted)
bad=
for req in "0 0 s" "0 1 s" "0 1 su" "0 0" "0 1 k"; do
  # shellcheck disable=SC2086
  got=$("$EVOPEN" $req 2>&1 | tail -1)
  case "$got" in
    "${want[$req]}" | "errno ${want[$req]}") ;;
    *) bad+=" [$req] expected ${want[$req]}, got '$got';" ;;
  esac
done
if [ -z "$bad" ]; then pass "no_sample_exports_refuses_sampling"; else fail "no_sample_exports_refuses_sampling$bad"; fi

# perf record says why.
if perf record -q -o /tmp/no_sample_exports.data -e instructions:u -- "$W" 1000 >/dev/null 2>/tmp/no_sample_exports.err; then
  fail "no_sample_exports_record perf record sampled"
elif grep -q "doesn't support sampling" /tmp/no_sample_exports.err; then
  pass "no_sample_exports_record"
else
  fail "no_sample_exports_record perf record failed otherwise: $(tail -2 /tmp/no_sample_exports.err | tr '\n' ' ')"
fi
