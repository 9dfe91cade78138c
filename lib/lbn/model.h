// lbn/model.h: what a spine and a leaf compute from link-bandwidth bitmaps
// (seed 003, "Processing Procedures").
//
// A spine takes, per leaf, the minimum of the level received on a port and
// that port's own rate, then aggregates per leaf over its ports toward it.
// The seed disagrees with itself on a LAG: the procedure text sums the links
// toward one leaf, while the worked example reports a 2 x 50G LAG as 50G.
// LagRule makes that a setting; kPerMember reproduces the example bit for bit.
// Sums between levels round down (150G -> 100G), the conservative reading.
//
//   std::vector<fg::lbn::SpinePort> ports = {{.leaf = 0, .member_gbps = {100}}, ...,
//                                            {.leaf = 3, .member_gbps = {50, 50}}};
//   fg::proto::lbn::Bitmap agg = fg::lbn::SpineAggregate(ports, received, fg::lbn::LagRule::kPerMember);
//   agg.ToString(4) == "100100100011";
#pragma once

#include <vector>

#include "proto/lbn.h"

namespace fg::lbn {

enum class LagRule {
  kPerMember,  // a LAG counts at one member's rate (the seed's worked example)
  kSum,        // a LAG counts at the sum of its members (the seed's procedure text)
};
const char* LagRuleName(LagRule r);

struct SpinePort {
  int leaf = 0;                     // leaf index the port leads to (Leaf1 = 0)
  std::vector<double> member_gbps;  // one entry per link; several = a LAG
};

// A leaf's own initial message: its code 111, every other leaf 000.
proto::lbn::Bitmap LeafInitial(int leaf);

// received[i] is the bitmap that arrived on ports[i].
proto::lbn::Bitmap SpineAggregate(const std::vector<SpinePort>& ports, const std::vector<proto::lbn::Bitmap>& received,
                                  LagRule rule);

// A leaf's view of the path through one spine: min(received, own uplink).
proto::lbn::Bitmap LeafApply(const proto::lbn::Bitmap& received, double uplink_gbps, int leaves);

}  // namespace fg::lbn
