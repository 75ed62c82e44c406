#!/bin/bash
# Permission and isolation semantics for an unprivileged user (uid 65534, no capabilities), with
# perm.c:
#   perf_event_paranoid=2   counting kernel mode is refused (EACCES), ":u" opens and counts, a CPU-wide event is
#                           refused (EACCES); at -1 the same user may count kernel mode (the refusal comes from
#                           the sysctl, not from the user);
#   perf_user_access=0      no counter CSR (cycle, instret, hpmcounter3..31) reads from user mode, with or without
#                           an mmap'd event;
#   perf_user_access=1      a task reads the counter of an event it has mmap'd, and only that one, while the
#                           event runs; another task on the same CPU, while the owner sleeps, traps on it, and so
#                           does a task on another CPU the owner's address space ran on; a fresh task reads no
#                           counter;
#   perf_user_access=2      cycle and instret read from every task; no other counter does.
# Time (CSR 0xc01) is never probed: it is not a PMU counter and stays readable for the vDSO.
# Every observation is also a value that the harness compares between drivers.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

P=$RPMU_SELFTEST_DIR/perm
PARANOID=/proc/sys/kernel/perf_event_paranoid
ACCESS=/proc/sys/kernel/perf_user_access
# nobody, without supplementary groups; dropping root's uid drops its capabilities.
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

if ! command -v setpriv >/dev/null; then
  fail "permissions_setup setpriv (util-linux) is missing"
  exit 0
fi
if [ "$(as_user id -u)" != 65534 ]; then
  fail "permissions_setup setpriv did not switch to uid 65534"
  exit 0
fi
old_paranoid=$(cat "$PARANOID")
old_access=$(cat "$ACCESS")

out=
# expect NAME KEY WANT: compares one key of $out with the rule.
expect() {
  local got
  got=$(second_word "$2" "$out")
  if [ "$got" = "$3" ]; then
    pass "$1_$2"
  else
    fail "$1_$2 expected '$3', got '${got:-nothing}': ${out//$'\n'/ }"
  fi
}
get() { second_word "$1" "$out"; }
values() { # values PREFIX: every key of $out as a compared value
  local key val
  while read -r key val; do
    [ -n "$key" ] && value "$1_$key $val"
  done <<<"$out"
}

# --- perf_event_paranoid ---
echo 2 >"$PARANOID"
out=$(as_user "$P" open 2>&1)
echo "# paranoid 2: ${out//$'\n'/ }"
values perm_paranoid2
expect perm_paranoid2 kernel EACCES
expect perm_paranoid2 cpu_wide EACCES
if [ "$RPMU_SSCOFPMF" = 1 ]; then
  expect perm_paranoid2 user ok
  expect perm_paranoid2 user_counts yes
else
  # Without Sscofpmf there is no mode filtering: perf core refuses exclude_kernel for every driver.
  pass "perm_paranoid2_user_counts # SKIP no mode filtering without Sscofpmf"
fi
echo -1 >"$PARANOID"
out=$(as_user "$P" open 2>&1)
echo "# paranoid -1: ${out//$'\n'/ }"
values perm_paranoid_minus1
expect perm_paranoid_minus1 kernel ok
expect perm_paranoid_minus1 cpu_wide ok

# --- perf_user_access ---
# A task event of the user's own, counting user mode where the PMU can filter (paranoid 2 allows that), both
# modes otherwise (paranoid 1 allows that).
if [ "$RPMU_SSCOFPMF" = 1 ]; then echo 2 >"$PARANOID"; else echo 1 >"$PARANOID"; fi
cpus=$(seq 0 $(($(nproc --all) - 1)))
# fresh NAME WANT: a task that opened nothing, on each CPU, reads exactly the counters WANT.
fresh() {
  local cpu
  for cpu in $cpus; do
    out=$(as_user "$P" probe "$cpu" 2>&1)
    value "${1}_cpu${cpu}_readable $(get readable)"
    expect "${1}_cpu$cpu" readable "$2"
  done
}
for mode in 0 1 2; do
  echo "$mode" >"$ACCESS"
  case $mode in 0 | 1) base=none ;; 2) base=0,2 ;; esac
  fresh "perm_access${mode}_fresh_before" "$base"
  for ev in instructions dtlb; do
    name=perm_access${mode}_$ev
    out=$(as_user "$P" share 0 "$ev" 2>&1)
    rc=$?
    echo "# access $mode, $ev: ${out//$'\n'/ }"
    idx=$(get index)
    expect "$name" open ok
    [ "$rc" = 0 ] || fail "${name}_run perm share exited with $rc"
    case $mode in
      0)
        values "$name"
        expect "$name" index 0
        expect "$name" own_readable none
        expect "$name" other_readable none
        ;;
      1)
        # Which counter an event gets is the driver's choice: the values say whether it is the event's own.
        own=$(get own_readable)
        [ -n "$idx" ] && [ "$idx" -gt 0 ] 2>/dev/null && [ "$own" = $((idx - 1)) ] && own=own-counter-only
        value "${name}_index $([ "${idx:-0}" -gt 0 ] 2>/dev/null && echo nonzero || echo "${idx:-none}")"
        value "${name}_own_readable $own"
        for k in own_counter other_readable other_owner_counter own_after; do value "${name}_$k $(get $k)"; done
        if [ "${idx:-0}" -gt 0 ] 2>/dev/null; then pass "${name}_index"; else
          fail "${name}_index expected a counter index for an mmap'd event: ${out//$'\n'/ }"; fi
        if [ "$own" = own-counter-only ]; then pass "${name}_own_readable"; else
          fail "${name}_own_readable expected exactly counter $((${idx:-1} - 1)), got '$own'"; fi
        expect "$name" own_counter ok
        expect "$name" other_readable none
        expect "$name" other_owner_counter sigill
        expect "$name" own_after ok
        ;;
      2)
        values "$name"
        expect "$name" own_readable 0,2
        expect "$name" other_readable 0,2
        if [ "$ev" = instructions ]; then
          # instructions sits on instret (index 3), which every task reads in this mode.
          expect "$name" index 3
          expect "$name" other_owner_counter ok
        fi
        ;;
    esac
  done
  fresh "perm_access${mode}_fresh_after" "$base"
  # Mode 1 with two CPUs: the owner's address space ran on CPU 1 before its event runs on CPU 0, so CPU 1 is
  # in its mm_cpumask() (the ASID allocator keeps every CPU an address space ran on); a task on CPU 1 must not
  # read that counter index, which there belongs to whatever else runs.
  if [ "$mode" = 1 ] && [ "$(nproc)" -ge 2 ]; then
    for ev in instructions dtlb; do
      name=perm_access1_elsewhere_$ev
      out=$(as_user "$P" elsewhere 0 1 "$ev" 2>&1)
      rc=$?
      echo "# access 1, $ev on CPU 0 after running on CPU 1: ${out//$'\n'/ }"
      expect "$name" open ok
      [ "$rc" = 0 ] || fail "${name}_run perm elsewhere exited with $rc"
      idx=$(get index)
      value "${name}_index $([ "${idx:-0}" -gt 0 ] 2>/dev/null && echo nonzero || echo "${idx:-none}")"
      for k in elsewhere_readable elsewhere_owner_counter; do value "${name}_$k $(get $k)"; done
      expect "$name" elsewhere_readable none
      if [ "${idx:-0}" -gt 0 ] 2>/dev/null; then
        expect "$name" elsewhere_owner_counter sigill
      else
        fail "${name}_index expected a counter index for an mmap'd event: ${out//$'\n'/ }"
      fi
    done
  fi
done

echo "$old_access" >"$ACCESS"
echo "$old_paranoid" >"$PARANOID"
