#!/usr/bin/env bash
# A collective's own frame rate on the built-in loopback against the open-loop
# TX rate of the same frames (issue 28: the collective at >= 0.7x), on one
# worker and on two, in alternating rounds so that a drifting host moves both.
#
#   tools/bench_collective.sh [BUILD_DIR] [ROUNDS]         # default: build 3
#   BASELINE=OTHER_BUILD_DIR tools/bench_collective.sh build 3   # adds the baseline's collective
#
# The collective: configs/collectives/bench-collective.yaml (8 ranks, ring
# AllReduce of 16 MiB in 1 KB frames, 4,816,896 frames an iteration), its rate
# the trial line's frames over its time. The open loop:
# configs/collectives/bench-open-loop.yaml (the same frames as one plain
# stream), report.json streams[0].tx_rate_pps. Two workers: `--lcores
# 0@0,1@1,2@0` (on a 2-CPU machine the second worker shares CPU 0 with the
# main lcore). Prints one Markdown row per round and the medians' ratio.
# Run nothing else meanwhile (no build, lab or other benchmark).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
rounds="${2:-3}"
tmp=$(mktemp -d /tmp/fabricgen-bench-coll-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# collective BUILD [EAL...]: Mpps of one run of bench-collective.yaml
collective() {
  local b="$1"; shift
  local line
  line=$("$b/app/fabricgen" run configs/collectives/bench-collective.yaml --out "$tmp/c" -- "$@" 2>&1 |
         grep -m1 "trial 0") || { echo "bench_collective.sh: $b: the collective printed no trial line" >&2; exit 1; }
  # "... iterations for 178.3 ms: 4,816,896 sent ..."
  /usr/bin/python3 - "$line" <<'EOF'
import re, sys
m = re.search(r" for ([0-9.]+) ms: ([0-9,]+) sent", sys.argv[1])
if not m:
    sys.exit("bench_collective.sh: no frames and time in: " + sys.argv[1])
print("%.2f" % (int(m.group(2).replace(",", "")) / (float(m.group(1)) / 1e3) / 1e6))
EOF
}

# open_loop BUILD [EAL...]: Mpps of bench-open-loop.yaml
open_loop() {
  local b="$1"; shift
  "$b/app/fabricgen" run configs/collectives/bench-open-loop.yaml --out "$tmp/o" -- "$@" > /dev/null 2>&1 ||
    { echo "bench_collective.sh: $b: the open loop failed" >&2; exit 1; }
  /usr/bin/python3 -c "import json,sys; print('%.2f' % (json.load(open(sys.argv[1]))['streams'][0]['tx_rate_pps'] / 1e6))" \
    "$tmp/o/report.json"
}

echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs; $(date -u +%F)"
for workers in 1 2; do
  eal=()
  [ "$workers" = 2 ] && eal=(--lcores 0@0,1@1,2@0)
  echo
  echo "$workers worker(s):"
  if [ -n "${BASELINE:-}" ]; then
    echo "| round | collective, baseline | collective, this build | open loop, this build | ratio |"
    echo "|---|---|---|---|---|"
  else
    echo "| round | collective | open loop | ratio |"
    echo "|---|---|---|---|"
  fi
  cs=(); os=()
  for r in $(seq 1 "$rounds"); do
    base=""
    [ -n "${BASELINE:-}" ] && base=$(collective "$BASELINE" "${eal[@]}")
    c=$(collective "$build" "${eal[@]}")
    o=$(open_loop "$build" "${eal[@]}")
    cs+=("$c"); os+=("$o")
    ratio=$(/usr/bin/python3 -c "print('%.3f' % ($c / $o))")
    if [ -n "$base" ]; then
      echo "| $r | $base | $c | $o | ${ratio}x |"
    else
      echo "| $r | $c | $o | ${ratio}x |"
    fi
  done
  /usr/bin/python3 - "${cs[*]}" "${os[*]}" "$workers" <<'EOF'
import statistics, sys
c = [float(x) for x in sys.argv[1].split()]
o = [float(x) for x in sys.argv[2].split()]
mc, mo = statistics.median(c), statistics.median(o)
print("%s worker(s): collective %.2f Mpps against %.2f open loop (medians): %.3fx" % (sys.argv[3], mc, mo, mc / mo))
EOF
done
