# SPDX-License-Identifier: GPL-2.0
# One sampling storm, shared by storm.sh and make stress's storm loop (tests/stress/guest-stress.sh, which sources
# it from the installed selftests):
#   rpmu_storm TIMEOUT DATA PERIOD EVENT COMMAND...
# runs `perf record -a -c PERIOD -e EVENT -o DATA -- COMMAND...` under `timeout TIMEOUT`, prints one "# storm"
# line, and leaves perf's output in $out, its exit status in $rc and the recorded sample and throttle records
# in $samples and $throttles (0 when none).
rpmu_storm() {
  local limit=$1 data=$2 p=$3 ev=$4 stats
  shift 4
  out=$(timeout -k 5 "$limit" perf record -a -c "$p" -e "$ev" -o "$data" -- "$@" 2>&1)
  rc=$?
  stats=$(perf report -i "$data" --stats 2>/dev/null)
  samples=$(awk '/SAMPLE events:/ { print $3; exit }' <<<"$stats")
  throttles=$(awk '/THROTTLE events:/ { print $3; exit }' <<<"$stats")
  samples=${samples:-0} throttles=${throttles:-0}
  echo "# storm period $p $ev: exit $rc, $samples samples, $throttles throttle records"
}
