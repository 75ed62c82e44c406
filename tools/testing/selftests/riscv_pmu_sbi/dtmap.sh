#!/bin/bash
# The riscv,pmu event maps of the kernel's device tree (the dtmap entries: U-Boot hands the kernel the board's
# device tree, scripts/dtmap/): what the cpu PMU lists in sysfs events/, what a group of two events that share
# one counter does, a raw event no map row covers, exact counts, and for a malformed map the one log line and the
# fallback to the behaviour without a map. Without a map in the device tree (every other entry) it is skipped.
#
# What the driver should list is worked out here from the device tree itself (/proc/device-tree), not from the
# driver: each event with a riscv,event-to-mhpmevent selector that a riscv,raw-event-to-mhpmcounters row covers.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

W=$RPMU_SELFTEST_DIR/workload
GRPOPEN=$RPMU_SELFTEST_DIR/grpopen
PMU=/proc/device-tree/pmu
EVENTS=/sys/bus/event_source/devices/cpu/events

if [ ! -e "$PMU/riscv,event-to-mhpmcounters" ]; then
  pass "dtmap # SKIP the kernel's device tree has no riscv,pmu event maps"
  exit 0
fi

stat() {
  env -i PATH=/usr/bin perf stat -x, "$@" -- "$W" "${ITER:-100000}" 2>&1 >/dev/null
}
# field EVENT COLUMN CSV: the COLUMN-th field of the first CSV line whose event name contains EVENT (perf names
# an event it opened through the PMU's sysfs events/ cpu/NAME/).
field() {
  printf '%s\n' "$3" | awk -F, -v e="$1" -v c="$2" 'index($3, e) { print $c; exit }'
}
kind() {
  case "$1" in
    "<not supported>") echo not-supported ;;
    "<not counted>") echo not-counted ;;
    [0-9]*) echo counted ;;
    *) echo "other:$1" ;;
  esac
}
# cells PROPERTY: the property's 32-bit cells, one per line, in decimal.
cells() {
  od -An -v -tu4 --endian=big "$PMU/$1" 2>/dev/null | tr -s ' ' '\n' | sed '/^$/d'
}

# The names perf gives the five events QEMU's PMU counts, by event_idx.
name_of() {
  case $1 in
    1) echo cpu-cycles ;;
    2) echo instructions ;;
    65561) echo dTLB-load-misses ;;
    65563) echo dTLB-store-misses ;;
    65569) echo iTLB-load-misses ;;
  esac
}

# 1. Is the map consistent? Two inconsistencies are looked for, in the order the driver checks them: a fixed
#    counter (bits 0-2) in an event-to-mhpmcounters row for an event other than cycles and instructions (the
#    malformed variant's), then a row whose counter bitmap names no counter at all (QEMU's map under KVM, made
#    for its own PMU, whose counters a KVM guest's -cpu host does not have: rows of bitmap 0).
mapfile -t ctr < <(cells riscv,event-to-mhpmcounters)
bad_row=
for ((r = 0; r * 3 + 2 < ${#ctr[@]}; r++)); do
  if [ "${ctr[r * 3]}" -gt 2 ] && [ $((ctr[r * 3 + 2] & 7)) -ne 0 ]; then
    bad_row=$r
    break
  fi
done
for ((r = 0; r * 3 + 2 < ${#ctr[@]} && ${#bad_row} == 0; r++)); do
  [ "${ctr[r * 3 + 2]}" -eq 0 ] && bad_row=$r
done
if [ -n "$bad_row" ]; then
  value "dtmap_map_state malformed"
else
  value "dtmap_map_state valid"
fi

# 2. What events/ should list with a valid map, and what it lists.
mapfile -t sel < <(cells riscv,event-to-mhpmevent)
mapfile -t raw < <(cells riscv,raw-event-to-mhpmcounters)
expected=()
for ((r = 0; r * 3 + 2 < ${#sel[@]}; r++)); do
  name=$(name_of "${sel[r * 3]}")
  s=$((sel[r * 3 + 1] * 4294967296 + sel[r * 3 + 2]))
  covered=
  for ((q = 0; q * 5 + 4 < ${#raw[@]}; q++)); do
    m=$((raw[q * 5] * 4294967296 + raw[q * 5 + 1]))
    k=$((raw[q * 5 + 2] * 4294967296 + raw[q * 5 + 3]))
    [ $((s & k)) -eq "$m" ] && covered=1
  done
  [ -n "$name" ] && [ -n "$covered" ] && expected+=("$name=event=$(printf '0x%x' "$s")")
done
listed=()
if [ -d "$EVENTS" ]; then
  for f in "$EVENTS"/*; do
    listed+=("$(basename "$f")=$(cat "$f")")
  done
fi
want=$(printf '%s\n' "${expected[@]}" | sed '/^$/d' | sort | tr '\n' ' ')
have=$(printf '%s\n' "${listed[@]}" | sed '/^$/d' | sort | tr '\n' ' ')
value "dtmap_events_dir ${have:-none}"
if [ "$RPMU_DRIVER" = rust ]; then
  if [ -n "$bad_row" ]; then
    # A refused map: exactly one log line, naming the property and the row, and no events/.
    lines=$(dmesg | grep -c 'the event maps are ignored')
    named=$(dmesg | grep -c "riscv,pmu: riscv,event-to-mhpmcounters row $bad_row: ")
    if [ "$lines" -eq 1 ] && [ "$named" -eq 1 ] && [ ! -d "$EVENTS" ]; then
      pass "map_refused_with_one_line"
    else
      fail "map_refused_with_one_line $lines refusal line(s), $named naming row $bad_row, events/ $( [ -d "$EVENTS" ] && echo present || echo absent): $(dmesg | grep 'riscv,pmu' | tr '\n' ' ')"
    fi
  elif [ "$have" = "$want" ]; then
    pass "events_listed_from_map"
  else
    fail "events_listed_from_map expected '$want', events/ has '${have:-nothing}'"
  fi
  # With a valid map covering the standard events, availability comes from it: no SBI call of the check.
  check=$(awk '$1 == "check" { s = 0; for (i = 2; i <= NF; i++) s += $i; print s }' /sys/kernel/debug/riscv_pmu_sbi_rust/sbi_calls 2>/dev/null)
  if [ -z "$bad_row" ]; then
    if [ "$check" = 0 ]; then
      pass "availability_without_firmware_calls"
    else
      fail "availability_without_firmware_calls the standard-event check made ${check:-?} SBI calls"
    fi
  fi
fi

# 3. perf list shows the listed events as the PMU's own.
pmu_events=$(perf list pmu 2>/dev/null | awk '/\[Kernel PMU event\]/ { print $1 }' | sort | tr '\n' ' ')
value "dtmap_perf_list ${pmu_events:-none}"

# 4. dTLB load and store misses share one counter in the map: a group of the two never fits. Cache events:
#    dTLB (3), read (0) or write (1), miss (1).
value "dtmap_group_shared_counter $($GRPOPEN 2 3 0x10003 0x10103)"
value "dtmap_group_separate_counters $($GRPOPEN 2 3 0x10003 0x10004)"

# 5. A raw event no row of riscv,raw-event-to-mhpmcounters covers, and one a row covers.
out=$(stat -e r5,r10019:u)
value "dtmap_raw_uncovered $(kind "$(field r5 1 "$out")")"
value "dtmap_raw_covered $(kind "$(field r10019:u 1 "$out")")"

# 6. Counts: exact with -icount, on the counters the map allows.
if [ "$RPMU_ICOUNT" = 1 ]; then
  out=$(stat -e instructions:u)
  value "dtmap_exact_instructions $(field instructions:u 1 "$out")"
  # perf names the second event dTLB-load-misses in its output, without the modifier.
  out=$(stat -e '{instructions:u,dTLB-load-misses:u}')
  value "dtmap_exact_group $(field instructions:u 1 "$out") $(kind "$(field dTLB-load-misses 1 "$out")")"
fi
