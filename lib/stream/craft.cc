#include "stream/craft.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "proto/pcap.h"

namespace fg::stream {
namespace {

// A stream as the TX lcore holds it: a cursor and the constants per flow, and
// whose turn is next.
struct Sender {
  std::vector<Cursor> cursors;
  std::vector<FlowVars> vars;
  uint32_t next_flow = 0;
};

}  // namespace

absl::StatusOr<CraftSummary> CraftPcap(const std::vector<CompiledStream>& streams, const std::string& path,
                                       uint64_t packets_per_stream, const std::atomic<bool>* interrupt) {
  if (packets_per_stream > kMaxCraftPackets) {
    return absl::InvalidArgumentError(absl::StrFormat("%d packets per stream is above the most craft writes, %d",
                                                      packets_per_stream, kMaxCraftPackets));
  }
  CraftSummary summary;
  summary.packets.assign(streams.size(), 0);
  std::vector<uint64_t> want(streams.size());
  std::vector<Sender> senders(streams.size());
  uint32_t max_len = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    const CompiledStream& s = streams[i];
    const uint64_t one_message_per_flow = uint64_t{s.program.packets_per_message()} * s.flows;
    uint64_t n = packets_per_stream != 0 ? packets_per_stream : std::min(one_message_per_flow, kMaxCraftPackets);
    if (s.count != 0) n = std::min(n, s.count);
    want[i] = n;
    // Only the flows that get a turn need a cursor.
    const uint32_t flows = static_cast<uint32_t>(std::min<uint64_t>(s.flows, std::max<uint64_t>(n, 1)));
    senders[i].cursors.assign(flows, s.program.Start());
    for (uint32_t f = 0; f < flows; ++f) senders[i].vars.push_back(s.program.Flow(s.flow_id, f));
    max_len = std::max(max_len, s.program.buffer_len());
  }
  FG_ASSIGN_OR_RETURN(proto::PcapWriter w, proto::PcapWriter::Open(path));
  std::vector<uint8_t> buf(max_len);
  auto when = [&](size_t i) {
    const CompiledStream& s = streams[i];
    const uint64_t k = summary.packets[i];
    if (s.burst_frames != 0) {  // bursts of back-to-back frames, one per period
      return static_cast<uint64_t>(k / s.burst_frames) * static_cast<uint64_t>(s.burst_period_ns) +
             static_cast<uint64_t>(std::llround(static_cast<double>(k % s.burst_frames) * s.burst_frame_ns));
    }
    return static_cast<uint64_t>(std::llround(static_cast<double>(k) * 1e9 / s.pps));
  };
  for (;;) {
    if (interrupt != nullptr && interrupt->load(std::memory_order_relaxed)) {
      return absl::CancelledError(absl::StrFormat("%s: interrupted; nothing written", path));
    }
    // The stream whose next packet is due first.
    size_t best = streams.size();
    uint64_t best_ns = 0;
    for (size_t i = 0; i < streams.size(); ++i) {
      if (summary.packets[i] >= want[i]) continue;
      const uint64_t t = when(i);
      if (best == streams.size() || t < best_ns) best = i, best_ns = t;
    }
    if (best == streams.size()) break;
    // Its flows take turns, one packet each, as lib/tx sends them.
    Sender& sender = senders[best];
    const uint32_t f = sender.next_flow;
    const uint32_t len = streams[best].program.Emit(buf.data(), sender.cursors[f], best_ns, sender.vars[f]);
    if (++sender.next_flow == sender.cursors.size()) sender.next_flow = 0;
    FG_RETURN_IF_ERROR(w.Write(std::span<const uint8_t>(buf.data(), len), best_ns));
    ++summary.packets[best];
    ++summary.total;
  }
  FG_RETURN_IF_ERROR(w.Close());
  return summary;
}

}  // namespace fg::stream
