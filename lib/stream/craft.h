// stream/craft.h: write what streams would send into a pcap file.
//
// Every frame comes from Program::Emit, the code the TX lcore runs, so the
// capture shows exactly what goes on the wire (FCS aside). Timestamps are the
// scheduled send times at each stream's rate (packet i at i / pps), and the
// streams are merged in time order, as one TX queue would interleave them.
//
//   auto streams = fg::stream::Compile(plan, line_bps);
//   auto summary = fg::stream::CraftPcap(*streams, "out.pcap", /*packets_per_stream=*/0);
//   // 0: one message per stream (its packets_per_message), bounded by the stream's count
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "stream/stream.h"

namespace fg::stream {

struct CraftSummary {
  std::vector<uint64_t> packets;  // per stream
  uint64_t total = 0;
};

absl::StatusOr<CraftSummary> CraftPcap(const std::vector<CompiledStream>& streams, const std::string& path,
                                       uint64_t packets_per_stream);

}  // namespace fg::stream
