// engine/connect.h: RC QP set-up by CM MADs (frame.roce.connect: cm) before
// any data flows. On the control thread, before the lcores start (nothing
// else polls the ports then): the stream's port sends each QP's REQ to QP 1
// of its rx_port, which answers as the passive side with a REP, and the
// requester completes with an RTU. Both ends are fabricgen's, so each QP's
// set-up time is measured on one clock: from its first REQ handed to the PMD
// to its RTU received. Lost MADs are sent again as CM does (a REQ without a
// REP and a REP without an RTU, after 50 ms, at most 8 times).
//
//   auto setups = fg::engine::ConnectQps(ports, streams, clock, 10'000'000'000);
//   // (*setups)[i]: stream i's set-up times, or nullopt without connect: cm
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "base/tsc.h"
#include "endpoint/frame_handler.h"
#include "port/port.h"
#include "stats/histogram.h"
#include "stream/stream.h"

namespace fg::engine {

struct QpSetup {
  stats::LatencyHistogram setup;  // per QP: first REQ sent -> RTU received
  uint64_t qps = 0;
  uint64_t resent = 0;       // REQs and REPs sent again (a MAD lost or late)
  int64_t elapsed_ns = 0;    // the stream's first REQ to its last RTU
  uint64_t first_ns = 0, last_ns = 0;  // those two instants (TSC ns): a trial's span over its streams
  // Frames that came during the exchange and were none of its MADs (freed,
  // not counted anywhere else): the exchange's, shown by each connecting stream.
  uint64_t other_frames = 0;
};

// Sets up every QP of the streams with connect_cm; fails naming the QPs that
// got no REP or RTU within `timeout_ns`. `neighbors` (one per port, or
// empty): the ports' hosts, which answer the ARP and ND that come meanwhile
// (a leaf resolving the ranks a REQ is routed to) as they do in the trial;
// their answers are sent on queue 0 with the MADs.
absl::StatusOr<std::vector<std::optional<QpSetup>>> ConnectQps(
    const std::vector<port::Port*>& ports, const std::vector<stream::CompiledStream>& streams, const TscClock& clock,
    int64_t timeout_ns, const std::vector<endpoint::PortContext>& neighbors = {});

}  // namespace fg::engine
