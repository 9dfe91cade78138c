// engine/memory.h: the memory a trial's per-flow state takes, before it runs.
//
// Every flow costs the engine a record in each room that keeps one (RX
// analysis on its owner, TX cursor and fixed fields, the placement's tables,
// the RX dispatch, a responder QP, a reaction point and its rate timeline, a
// pacer slot, feedback targets, and the per-flow report built at the end). A
// plan of millions of flows needs gigabytes; the estimate counts each of
// those structures by its own size (sizeof where the type is public, the
// documented size where it is private to its room), so a plan that would not
// fit is refused before EAL starts (methods/memory.h says which key drives it).
//
//   fg::engine::TrialFootprint t;
//   t.streams.push_back({.flows = 1 << 20, .keyed = true});
//   uint64_t bytes = fg::engine::TrialStateBytes(t);
//   if (bytes > fg::engine::MemAvailableBytes()) ...
#pragma once

#include <cstdint>
#include <vector>

namespace fg::engine {

// What one stream's flows carry (each field adds its structures per flow).
struct StreamFootprint {
  uint64_t flows = 1;
  bool keyed = false;         // RoCE data, UET requests: its feedback found by QP / PDC (RX dispatch keys)
  uint32_t key_ports = 1;     // ports where its feedback may arrive (TX and RX port: 1 or 2)
  bool answered = false;      // received on a responding port: a responder QP per flow
  bool go_back_n = false;     // an RC requester that goes back: per-flow ACK state and a feedback target
  bool per_flow_pacing = false;  // flows: {count, rates} or DCQCN: each flow paced on its own
  bool dcqcn = false;         // a reaction point and a rate timeline per flow
  int64_t duration_ns = 0;    // how long it sends (the rate timeline's points)
  bool read_requests = false;  // an answered READ's requests (its responses are a footprint of their own)
  bool cm = false;            // QPs set up by CM
  bool verify_payload = false;
};

struct TrialFootprint {
  std::vector<StreamFootprint> streams;
  uint32_t per_flow_report = 1024;  // TrialOptions::per_flow: 0 builds no per-flow report
  uint32_t workers = 1;             // worker lcores: per-flow latency is kept in tables of at most 4,096 flows
  uint32_t rx_ports = 1;            // ports that receive data (each may index every flow id)
};

// Bytes each flow of `s` takes (its share of the per-flow report when
// `report`); the rate timeline's points are bounded per stream shard, see
// TrialStateBytes.
uint64_t BytesPerFlow(const StreamFootprint& s, bool report, uint32_t rx_ports);

// Every stream's flows in all, with the per-flow latency tables and the
// timelines' caps: the per-flow state of the trial, in bytes (mbuf pools
// aside: port/eal_args.h sizes those).
uint64_t TrialStateBytes(const TrialFootprint& t);

// /proc/meminfo's MemAvailable, bytes; 0 when it cannot be read.
uint64_t MemAvailableBytes();

}  // namespace fg::engine
