#include "lbn/model.h"

#include <algorithm>
#include <numeric>

namespace fg::lbn {

using proto::lbn::Bitmap;
using proto::lbn::LevelForGbps;
using proto::lbn::LevelGbps;

const char* LagRuleName(LagRule r) { return r == LagRule::kPerMember ? "per-member" : "sum"; }

Bitmap LeafInitial(int leaf) {
  Bitmap b;
  b.Set(leaf, 7);
  return b;
}

Bitmap SpineAggregate(const std::vector<SpinePort>& ports, const std::vector<Bitmap>& received, LagRule rule) {
  // Per leaf: bandwidth summed over the ports leading to it, each port
  // limited to min(received level, port rate).
  std::vector<double> gbps(proto::lbn::kLeaves, 0.0);
  for (size_t i = 0; i < ports.size() && i < received.size(); ++i) {
    const SpinePort& port = ports[i];
    if (port.member_gbps.empty()) continue;
    const double port_gbps = rule == LagRule::kSum
                                 ? std::accumulate(port.member_gbps.begin(), port.member_gbps.end(), 0.0)
                                 : *std::min_element(port.member_gbps.begin(), port.member_gbps.end());
    const uint8_t port_level = LevelForGbps(port_gbps);
    for (int leaf = 0; leaf < proto::lbn::kLeaves; ++leaf) {
      const uint8_t level = std::min(received[i].Get(leaf), port_level);
      gbps[leaf] += LevelGbps(level);
    }
  }
  Bitmap out;
  for (int leaf = 0; leaf < proto::lbn::kLeaves; ++leaf) out.Set(leaf, LevelForGbps(gbps[leaf]));
  return out;
}

Bitmap LeafApply(const Bitmap& received, double uplink_gbps, int leaves) {
  Bitmap out;
  const uint8_t own = LevelForGbps(uplink_gbps);
  for (int leaf = 0; leaf < leaves; ++leaf) out.Set(leaf, std::min(received.Get(leaf), own));
  return out;
}

}  // namespace fg::lbn
