#!/usr/bin/env bash
# Side-by-side speed against dpdk-testpmd on the same virtual devices, one
# forwarding core each, in one run (numbers for docs/benchmarks.md):
#  1. TX: testpmd --forward-mode=txonly on net_null vs fabricgen sending
#     RoCEv2 SEND_ONLY frames with per-packet sequence, timestamp and a valid
#     (incrementally updated) ICRC on a TX-only net_null port; 78 B and 1022 B.
#  2. Loopback: testpmd --forward-mode=flowgen on a net_ring loopback (one core
#     generates frames, receives them back and frees them) vs fabricgen
#     generating and analysing on a net_ring loopback (one lcore does TX and
#     RX), 1 flow and 1,000,000 flows. (testpmd io mode on a ring only moves
#     pointers, ~1000 Mpps: it is shown for reference, not as the yardstick.)
#  3. Closed loop (issue 14): fabricgen alone, both ends of 8 RC QPs on the
#     built-in loopback, one lcore: WRITEs of one 94 B packet (each with
#     AckReq: an ACK per coalesced burst), the port their responder and
#     notification point, each QP a DCQCN reaction point and a go-back-N
#     requester, against the same 8 QPs open loop (no responder, no DCQCN);
#     each QP paced at 5 Mpps on a 100 Gbit/s loopback (more than one core
#     makes: both run flat out, neither capped by the port).
# Every figure (but the io reference) is the median of three runs. The runs
# of the two sides of a row alternate (A B A B A B) and a row's ratio is the
# median of the three pairs' ratios: on a shared host whose speed drifts
# within minutes, a pair taken seconds apart compares like with like.
#
#   tools/bench_vs_testpmd.sh [BUILD_DIR] [SECONDS] [PARTS]
# PARTS: any of tx, loop, closed (default: all three), or ab:
#   BASELINE=OTHER_BUILD_DIR tools/bench_vs_testpmd.sh build 10 ab
# runs fabricgen's rows (TX 78 B and 1022 B, loopback 1 and 1,000,000 flows,
# closed loop) with the baseline build and this one alternating (A B A B A B):
# a change's own cost in one sitting, which two runs of the testpmd rows
# minutes apart on a drifting host cannot give. AB_ONLY=TEXT runs only the
# rows whose label contains TEXT.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
secs="${2:-10}"
parts="${3:-tx loop closed}"
fg="$build/app/fabricgen"
tmp=$(mktemp -d /tmp/fabricgen-bench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
eal=(--no-huge --no-shconf -m 1024 --no-pci --log-level=warning -l 0-1)

median() {  # numbers... -> their median (of an odd count)
  printf '%s\n' "$@" | sort -g | sed -n "$((($# + 1) / 2))p"
}

# paired3 "A command" "B command" -> "medianA medianB medianB/A": A and B run
# alternately, three times each; the ratio is the median of the pairs' ratios.
paired3() {
  local as=() bs=() rs=() a b
  for _ in 1 2 3; do
    a=$(eval "$1"); b=$(eval "$2")
    as+=("$a"); bs+=("$b"); rs+=("$(echo "$b / $a" | bc -l)")
  done
  echo "$(median "${as[@]}") $(median "${bs[@]}") $(median "${rs[@]}")"
}

# testpmd_pps mode vdev txpkts -> mean Tx-pps (txonly) or Rx-pps (io, flowgen) of
# its periodic stats over SECONDS of forwarding. testpmd takes ~6 s to start
# with --no-huge here, printing 0 meanwhile: the leading zeros, the first forwarding
# second and the last (both partial) are left out. (Until 2026-12-02 this took
# the last 3 lines of a SECONDS + 2 s run: with 5 s that averaged in the
# start-up zeros and understated testpmd by a third; with 10 s it averaged
# 3 of testpmd's first ~4 s, fabricgen's figure being over its whole run.)
testpmd_pps() {
  local mode="$1" vdev="$2" txpkts="$3" key="Tx-pps"
  [ "$mode" != txonly ] && key="Rx-pps"
  timeout -s INT "$((secs + 12))" dpdk-testpmd "${eal[@]}" --vdev="$vdev" --file-prefix "tp$$" -- \
    --forward-mode="$mode" --txpkts="$txpkts" --stats-period=1 --auto-start --nb-cores=1 --burst=32 \
    --total-num-mbufs=16384 $([ "$mode" = io ] && echo --tx-first) > "$tmp/tp.txt" 2>&1 || true
  grep -E "^ +$key:" "$tmp/tp.txt" | awk 'f || $2 > 0 {f = 1; print $2}' | sed '1d;$d' | head -n "$secs" > "$tmp/tp.pps"
  [ "$(wc -l < "$tmp/tp.pps")" -lt "$secs" ] && echo "bench: testpmd forwarded only $(wc -l < "$tmp/tp.pps") whole seconds of $secs" >&2
  awk '{s+=$1} END {if (NR) printf "%.0f", s/NR; else print 0}' "$tmp/tp.pps"
}

fabricgen_pps() {  # plan-yaml -> received (or sent) packets per second of stream 0
  printf '%s' "$1" > "$tmp/plan.yaml"
  "${FG:-$fg}" run "$tmp/plan.yaml" --out "$tmp/out" --quiet -- "${eal[@]}" > /dev/null
  /usr/bin/python3 - "$tmp/out/report.json" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); s = r["streams"][0]
n = s["tx_packets"] if sys.argv[2] == "tx" else s["rx_packets"]
print("%.0f" % (n / (r["duration_ns"] / 1e9)))
PY
}

roce_tx_plan() {  # payload bytes
  cat <<EOF2
duration: $secs s
ports: [{name: p0, device: "net_null_fg0", rx_queues: 0, mtu: 9000}]
streams: [{name: s, rate: max, frame: {roce: {op: SEND, message: $1, pmtu: 4096}}}]
EOF2
}

loop_plan() {  # flows
  cat <<EOF2
duration: $secs s
drain: 200 ms
streams: [{name: s, rate: max, flows: $1, frame: {roce: {op: SEND, message: 16, dest_qp: 1}}}]
EOF2
}

qp_plan() {  # closed|open ack_req -> 8 RC QPs on the loopback, with or without responder and DCQCN
  local respond="" dcqcn=""
  if [ "$1" = closed ]; then respond=", respond: true"; dcqcn=", dcqcn: paper"; fi
  cat <<EOF2
duration: $secs s
drain: 200 ms
ports: [{name: p0, device: loopback, link_speed: 100 Gbps$respond}]
streams: [{name: s, flows: {count: 8, rates: [5 Mpps]},
           frame: {roce: {op: WRITE, message: 16, dest_qp: 1, ack_req: $2$dcqcn}}}]
EOF2
}

if [[ " $parts " == *" ab "* ]]; then
  base="${BASELINE:?ab needs BASELINE=BUILD_DIR, the build to compare with}/app/fabricgen"
  printf '| measurement (Mpps) | baseline %s | this build | ratio |\n|---|---|---|---|\n' "$BASELINE"
  ab_row() {  # label plan-command tx|rx (AB_ONLY=TEXT: only the rows whose label contains it)
    [[ -n "${AB_ONLY:-}" && "$1" != *"$AB_ONLY"* ]] && return 0
    read -r a b r <<< "$(paired3 "FG=$base fabricgen_pps \"\$($2)\" $3" "fabricgen_pps \"\$($2)\" $3")"
    printf '| %s | %.2f | %.2f | %.3fx |\n' "$1" "$(echo "$a/1000000" | bc -l)" "$(echo "$b/1000000" | bc -l)" "$r"
  }
  ab_row "TX 78 B frames, net_null, 1 core" "roce_tx_plan 16" tx
  ab_row "TX 1022 B frames, net_null, 1 core" "roce_tx_plan 960" tx
  ab_row "loopback generate + receive, 78 B, 1 flow" "loop_plan 1" rx
  ab_row "same, 1,000,000 flows" "loop_plan 1000000" rx
  ab_row "closed loop, 8 RC QPs (ack_req never)" "qp_plan closed never" rx
  ab_row "closed loop, 8 RC QPs (ack_req last)" "qp_plan closed last" rx
  exit 0
fi
printf '| measurement | dpdk-testpmd | fabricgen | ratio |\n|---|---|---|---|\n'
if [[ " $parts " == *" closed "* ]]; then
  # ack_req last: every one-packet message asks for an ACK (one per QP per
  # coalesced burst, ~1 in 3 packets); never: an ACK every ack_every = 16.
  for req in never last; do
    read -r o c r <<< "$(paired3 'fabricgen_pps "$(qp_plan open last)" rx' "fabricgen_pps \"\$(qp_plan closed $req)\" rx")"
    printf '| closed loop: 8 RC QPs, 94 B WRITEs (ack_req %s), responder + NP + DCQCN RP + go-back-N, loopback, 1 lcore (Mpps) | - | %.2f (open loop, same QPs: %.2f) | %.2fx open loop |\n' \
      "$req" "$(echo "$c/1000000" | bc -l)" "$(echo "$o/1000000" | bc -l)" "$r"
  done
fi
[[ " $parts " == *" tx "* ]] && for payload in 16 960; do
  size=$((62 + payload))  # Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4
  read -r t f r <<< "$(paired3 "testpmd_pps txonly net_null0 $((size - 4))" "fabricgen_pps \"\$(roce_tx_plan $payload)\" tx")"
  printf '| TX %d B frames, net_null, 1 core (Mpps) | %.2f | %.2f | %.2fx |\n' "$size" "$(echo "$t/1000000" | bc -l)" \
    "$(echo "$f/1000000" | bc -l)" "$r"
done
[[ " $parts " == *" loop "* ]] || exit 0
read -r t f1 r1 <<< "$(paired3 "testpmd_pps flowgen net_ring0 74" 'fabricgen_pps "$(loop_plan 1)" rx')"
read -r t2 fm rm <<< "$(paired3 "testpmd_pps flowgen net_ring0 74" 'fabricgen_pps "$(loop_plan 1000000)" rx')"
read -r _ _ rmf <<< "$(paired3 'fabricgen_pps "$(loop_plan 1)" rx' 'fabricgen_pps "$(loop_plan 1000000)" rx')"
io=$(testpmd_pps io net_ring0 74)
printf '| loopback generate + receive, 78 B, net_ring, 1 flow (Mpps) | %.2f (flowgen: frees) | %.2f (analyses) | %.2fx |\n' \
  "$(echo "$t/1000000" | bc -l)" "$(echo "$f1/1000000" | bc -l)" "$r1"
printf '| same, 1,000,000 flows (Mpps) | %.2f (flowgen) | %.2f | %.2fx; %.1f %% below 1 flow |\n' \
  "$(echo "$t2/1000000" | bc -l)" "$(echo "$fm/1000000" | bc -l)" "$rm" \
  "$(echo "(1 - $rmf) * 100" | bc -l)"
printf '| reference: testpmd io on the net_ring loopback (pointer moves only) | %.2f | - | - |\n' "$(echo "$io/1000000" | bc -l)"
