#!/usr/bin/env bash
# Builds the libFuzzer targets with clang + ASan + UBSan and runs each for
# RUNS executions (default 1,000,000) from its committed corpus.
#
#   tools/fuzz.sh [RUNS] [--update-corpus]
#   FUZZ_TARGETS="cli plan" tools/fuzz.sh 1000000   # only these targets (default: all)
#
# --update-corpus merges new coverage-increasing inputs into test/fuzz/corpus
# (libFuzzer -merge=1), so the unit suite replays them from then on.
# Needs: clang, libclang-rt-14-dev (tools/setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
update="${2:-}"
dir=build-fuzz
if [ ! -f "$dir/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$dir" -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debugoptimized > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
  rm -f "$dir.log"
fi
all_targets=(headers roce uet pfc_lbn signature pcap plan cli)
read -r -a targets <<< "${FUZZ_TARGETS:-${all_targets[*]}}"
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target '$t'; targets: ${all_targets[*]}"; exit 2; }
done
ninja -C "$dir" $(for t in "${targets[@]}"; do echo "test/fuzz/${t}_fuzz"; done)
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1
status=0
for t in "${targets[@]}"; do
  work=$(mktemp -d "/tmp/fabricgen-fuzz-$t-XXXXXX")
  log="$work.log"
  if "$dir/test/fuzz/${t}_fuzz" -runs="$runs" -max_len=9100 -print_final_stats=1 "$work" "test/fuzz/corpus/$t" \
      > "$log" 2>&1; then
    echo "$t: $(grep -E '^Done [0-9]+ runs' "$log" | tail -1), $(grep -E 'stat::number_of_executed_units' "$log" | awk '{print $2}') executions, clean"
    if [ "$update" = "--update-corpus" ]; then
      "$dir/test/fuzz/${t}_fuzz" -merge=1 "test/fuzz/corpus/$t" "$work" > /dev/null 2>&1
    fi
  else
    echo "$t: FAILED (log: $log)"
    tail -30 "$log"
    status=1
  fi
  rm -rf "$work"
done
exit $status
