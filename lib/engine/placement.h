// engine/placement.h: which worker lcore owns each flow, and which queues each serves.
//
// Every flow has exactly one owner: the worker lcore that sends it (on its
// own TX queue of the stream's port) and holds its RX analysis and feedback
// state. RX queues are spread over the workers (queue q of a port: worker
// q % workers); a frame received on a queue whose worker does not own its
// flow is handed to the owner (rx/rx.h). The policy decides the owners:
//
//   flow    flow id g -> worker g % W (W: the workers that have a TX queue on
//           the stream's port); a stream's flows spread over every worker.
//           The default.
//   stream  stream k -> worker k % W: all of a stream's flows on one lcore.
//   port    every stream sent from port p -> worker p % W.
//
// A burst-scheduled stream keeps all its flows on one worker (its bursts
// must leave back to back), whatever the policy; a collective's QPs go to
// their sending rank's worker (CompiledStream::flow_home: rank % W), where
// its barrier is.
//
//   fg::engine::Placement pl = fg::engine::Place(streams, workers, tx_queues, Policy::kFlow);
//   uint32_t w = pl.owner[g];            // owner of flow g
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "config/plan.h"
#include "stream/stream.h"

namespace fg::engine {

inline constexpr uint32_t kNoOwner = UINT32_MAX;

using PlacementPolicy = config::PlacementPolicy;  // the plan's `placement`
std::string_view PolicyName(PlacementPolicy p);

struct Placement {
  PlacementPolicy policy = PlacementPolicy::kFlow;
  uint32_t workers = 1;
  std::vector<uint32_t> owner;  // per global flow id (kNoOwner: no stream of the trial has it)
  std::vector<uint32_t> slot;   // per global flow id: its position in the owner's table
  // Every flow g is owned by g % workers and sits at slot g / workers (so RX
  // computes owners instead of looking them up).
  bool modulo = false;
  std::vector<std::vector<uint32_t>> owned;  // per worker: its flows, increasing
  // One line: "flow: 2 workers; stream s0: 8 flows on lcores 1,2; ...".
  std::string Describe(const std::vector<stream::CompiledStream>& streams, const std::vector<unsigned>& lcores) const;
};

// `tx_queues[p]`: TX queues of port p (a worker needs one of its own to send there).
Placement Place(const std::vector<stream::CompiledStream>& streams, uint32_t workers,
                const std::vector<uint16_t>& tx_queues, PlacementPolicy policy);

}  // namespace fg::engine
