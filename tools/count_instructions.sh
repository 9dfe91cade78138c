#!/usr/bin/env bash
# Instructions per packet in the TX and RX poll loops, counted by valgrind's
# callgrind (repeatable on a shared host, unlike the wall clock): 10^6 RoCEv2
# SEND_ONLY frames of 78 B, unpaced, TX only into net_null and on the net_ring
# loopback. Numbers for docs/benchmarks.md and the comments at the loops.
# With `closed`: the whole worker loop (LcoreMain) per data packet for the
# closed-loop bench's 8 RC QPs (tools/bench_vs_testpmd.sh, part closed):
# open loop, then responder + DCQCN + go-back-N with ack_req never and last.
#
#   tools/count_instructions.sh [BUILD_DIR] [closed]
set -euo pipefail
cd "$(dirname "$0")/.."
fg="${1:-build}/app/fabricgen"
tmp=$(mktemp -d /tmp/fabricgen-instr-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
eal=(--no-huge --no-shconf -m 1024 --no-pci --log-level=warning -l 0-1)
cat > "$tmp/tx.yaml" <<'PLAN'
duration: 60 s
drain: 10 ms
ports: [{name: p0, device: "net_null_fg0", rx_queues: 0, mtu: 9000}]
streams: [{name: s, rate: max, count: 1000000, frame: {roce: {op: SEND, message: 16, pmtu: 4096}}}]
PLAN
cat > "$tmp/loop.yaml" <<'PLAN'
duration: 60 s
drain: 10 ms
streams: [{name: s, rate: max, count: 1000000, frame: {roce: {op: SEND, message: 16, dest_qp: 1}}}]
PLAN
count() {  # plan function -> instructions per packet
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" --toggle-collect="$2" \
    "$fg" run "$1" --out "$tmp/out" --quiet -- "${eal[@]}" > "$tmp/log" 2>&1
  local n
  n=$(grep -E '^summary:' "$tmp/cg" | awk '{print $2}')
  printf '%s: %s instructions in %s for 10^6 packets = %.1f per packet\n' "$(basename "$1" .yaml)" "$n" "$2" \
    "$(echo "$n / 1000000" | bc -l)"
}
if [ "${2:-}" = closed ]; then
  for v in "open||last" "closed-never|, respond: true|never, dcqcn: paper" "closed-last|, respond: true|last, dcqcn: paper"; do
    IFS='|' read -r name respond req <<< "$v"
    cat > "$tmp/$name.yaml" <<PLAN
duration: 120 s
drain: 10 ms
ports: [{name: p0, device: loopback, link_speed: 100 Gbps$respond}]
streams: [{name: s, count: 1000000, flows: {count: 8, rates: [5 Mpps]},
           frame: {roce: {op: WRITE, message: 16, dest_qp: 1, ack_req: $req}}}]
PLAN
    count "$tmp/$name.yaml" 'fg::engine::LcoreMain*'
  done
  exit 0
fi
count "$tmp/tx.yaml" 'fg::tx::TxTask::Poll*'
count "$tmp/loop.yaml" 'fg::rx::RxTask::Poll*'
