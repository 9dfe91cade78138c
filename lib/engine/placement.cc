#include "engine/placement.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace fg::engine {

std::string_view PolicyName(PlacementPolicy p) {
  switch (p) {
    case PlacementPolicy::kFlow: return "flow";
    case PlacementPolicy::kStream: return "stream";
    case PlacementPolicy::kPort: return "port";
  }
  return "?";
}

Placement Place(const std::vector<stream::CompiledStream>& streams, uint32_t workers,
                const std::vector<uint16_t>& tx_queues, PlacementPolicy policy) {
  Placement pl;
  pl.policy = policy;
  pl.workers = std::max<uint32_t>(1, workers);
  uint32_t total = 0;
  for (const auto& s : streams) total = std::max(total, s.flow_id + s.flows);
  pl.owner.assign(total, kNoOwner);
  pl.slot.assign(total, 0);
  pl.owned.assign(pl.workers, {});
  bool modulo = policy == PlacementPolicy::kFlow;
  for (const auto& s : streams) {
    const uint32_t usable =
        std::max<uint32_t>(1, std::min<uint32_t>(pl.workers, s.tx_port < tx_queues.size() ? tx_queues[s.tx_port] : 1));
    if (usable != pl.workers || s.burst_frames != 0 || !s.flow_home.empty()) modulo = false;
    if (s.read_response()) {
      // A READ's responses are sent by the owner of its requests (its
      // responder executes them): their flows go with the requests' flows.
      modulo = false;
      const stream::CompiledStream& q = streams[s.read_requests];
      for (uint32_t f = 0; f < s.flows; ++f) pl.owner[s.flow_id + f] = pl.owner[q.flow_id + f];
      continue;
    }
    for (uint32_t f = 0; f < s.flows; ++f) {
      const uint32_t g = s.flow_id + f;
      uint32_t w = 0;
      if (s.burst_frames != 0) {
        w = s.index % usable;
      } else if (!s.flow_home.empty()) {
        w = s.flow_home[f] % usable;  // a rank's QPs: with its barrier
      } else {
        switch (policy) {
          case PlacementPolicy::kFlow: w = g % usable; break;
          case PlacementPolicy::kStream: w = s.index % usable; break;
          case PlacementPolicy::kPort: w = static_cast<uint32_t>(s.tx_port) % usable; break;
        }
      }
      pl.owner[g] = w;
    }
  }
  // Flow ids no stream of this trial uses (a test running some of the
  // plan's streams) have no owner.
  for (uint32_t g = 0; g < total; ++g) {
    if (pl.owner[g] == kNoOwner) {
      modulo = false;
      continue;
    }
    pl.slot[g] = static_cast<uint32_t>(pl.owned[pl.owner[g]].size());
    pl.owned[pl.owner[g]].push_back(g);
  }
  pl.modulo = modulo;
  return pl;
}

std::string Placement::Describe(const std::vector<stream::CompiledStream>& streams,
                                const std::vector<unsigned>& lcores) const {
  std::vector<std::string> parts;
  for (const auto& s : streams) {
    std::set<unsigned> on;
    for (uint32_t f = 0; f < s.flows; ++f) on.insert(lcores[owner[s.flow_id + f]]);
    parts.push_back(absl::StrFormat("stream %s: %d flow%s on lcore%s %s", s.name, s.flows, s.flows == 1 ? "" : "s",
                                    on.size() == 1 ? "" : "s", absl::StrJoin(on, ",")));
  }
  return absl::StrFormat("placement %s over %d worker%s; %s", PolicyName(policy), workers, workers == 1 ? "" : "s",
                         absl::StrJoin(parts, "; "));
}

}  // namespace fg::engine
