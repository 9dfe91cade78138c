#include "stream/rate_change.h"

#include <cmath>
#include <numeric>

#include "absl/strings/str_format.h"
#include "base/units.h"

namespace fg::stream {

namespace {

double L1(double pps, const CompiledStream& s) { return pps * (s.frame_size + kEthL1Overhead) * 8; }

double Weights(const CompiledStream& s) { return std::accumulate(s.flow_weight.begin(), s.flow_weight.end(), 0.0); }

}  // namespace

absl::Status CheckRateChange(const std::vector<CompiledStream>& streams, size_t i, double pps, double line_bps,
                             std::string_view port, const CurrentRate& current) {
  if (!std::isfinite(pps)) return absl::OkStatus();  // max: unpaced, takes what the port gives
  const CompiledStream& s = streams[i];
  if (!(pps >= kMinPps)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rate: %g pps for %s is below the TX minimum of %g pps (one frame every %s)", pps, s.name,
                        kMinPps, FormatDuration(static_cast<int64_t>(1e9 / kMinPps))));
  }
  if (!(line_bps > 0)) return absl::OkStatus();  // link speed unknown: nothing to hold it to
  // As for the plan: the set rates of a port's streams, L1, within its line
  // rate. A stopped stream sends no more; `max` streams take what is left.
  double others = 0;
  for (size_t j = 0; j < streams.size(); ++j) {
    const CompiledStream& o = streams[j];
    if (j == i || o.tx_port != s.tx_port || o.burst_frames != 0) continue;
    const std::optional<double> p = current(j);
    if (p && std::isfinite(*p)) others += L1(*p, o);
  }
  const double need = others + L1(pps, s);
  if (AboveLineRate(need, line_bps)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rate: %s at %s (%s L1)%s would need %s L1 on port %s, above its line rate of %s; lower this or another "
        "stream's rate",
        s.name, FormatPacketRate(pps), FormatBitRate(L1(pps, s)),
        others > 0 ? absl::StrFormat(" with the port's other streams (%s L1)", FormatBitRate(others)) : "",
        FormatBitRate(need), port, FormatBitRate(line_bps)));
  }
  return absl::OkStatus();
}

double SetReadRate(std::vector<CompiledStream>& streams, size_t i, double data_pps) {
  CompiledStream& s = streams[i];
  s.pps = data_pps / s.read_packets;
  streams[static_cast<size_t>(s.read_responses)].pps = data_pps;
  return s.pps;
}

double FlowRate(const CompiledStream& s, size_t flow) { return s.pps * s.flow_weight[flow] / Weights(s); }

void SetFlowRate(CompiledStream& s, size_t flow, double pps) {
  const double per_weight = s.pps / Weights(s);  // what every other flow keeps
  const double was = per_weight * s.flow_weight[flow];
  s.flow_weight[flow] = pps / per_weight;
  s.pps += pps - was;
}

}  // namespace fg::stream
