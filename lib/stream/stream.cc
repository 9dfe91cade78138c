#include "stream/stream.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace fg::stream {

absl::StatusOr<std::vector<CompiledStream>> Compile(const config::Plan& plan, const std::vector<double>& line_bps) {
  std::vector<CompiledStream> out;
  std::vector<uint16_t> next_queue(plan.ports.size(), 0);
  uint32_t next_flow = 0;
  for (size_t i = 0; i < plan.streams.size(); ++i) {
    const config::StreamSpec& s = plan.streams[i];
    CompiledStream c;
    c.index = static_cast<uint32_t>(i);
    c.name = s.name;
    c.flow_id = next_flow;
    c.flows = s.flows;
    c.verify_payload = s.verify_payload;
    next_flow += s.flows;
    auto program = Program::Compile(s.frame, c.flow_id);
    if (!program.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s:%d: streams[%d].frame: %s", plan.file, s.line, i, program.status().message()));
    }
    c.program = *std::move(program);
    // Every flow needs a key of its own, inside the field and, for plain UDP,
    // clear of the RoCEv2 and UET ports (those frames would parse as such).
    if (s.flows > 1) {
      const uint64_t last = uint64_t{c.program.key_base()} + s.flows - 1;
      const uint64_t limit = c.program.key_bits() == 0 ? 0 : (uint64_t{1} << c.program.key_bits()) - 1;
      const char* what = s.frame.kind == config::FrameKind::kRoce  ? "destination QP"
                         : s.frame.kind == config::FrameKind::kUet ? "SPDCID"
                                                                   : "UDP destination port";
      if (limit == 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s:%d: streams[%d].flows: %s frames have no flow key; use flows: 1", plan.file, s.line, i,
                            config::FrameKindName(s.frame.kind)));
      }
      if (last > limit) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s:%d: streams[%d].flows: %d flows from %s %d run past %d; lower the first key or the flow count "
            "(RoCEv2 QPs allow 16,777,216 flows)",
            plan.file, s.line, i, s.flows, what, c.program.key_base(), limit));
      }
      if (s.frame.kind == config::FrameKind::kUdp) {
        for (uint32_t reserved : {4791u, 4793u}) {
          if (c.program.key_base() <= reserved && reserved <= last) {
            return absl::InvalidArgumentError(absl::StrFormat(
                "%s:%d: streams[%d].flows: UDP destination ports %d..%d include %d (RoCEv2/UET): those frames "
                "would not be plain UDP test frames; start elsewhere (frame.udp_dst)",
                plan.file, s.line, i, c.program.key_base(), last, reserved));
          }
        }
      }
    }
    c.frame_size = c.program.mean_frame_size();
    const double line = s.port < line_bps.size() ? line_bps[s.port] : 0;
    if (s.rate.kind == Rate::Kind::kPercentLine && line <= 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: streams[%d].rate: '%s' needs the line rate of port '%s', which reports no link speed; give "
          "the rate in pps or bit/s",
          plan.file, s.line, i, FormatRate(s.rate), plan.ports[s.port].name));
    }
    c.pps = s.rate.ToPps(c.frame_size, line);
    if (s.burst.frames > 0) {
      if (line <= 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s:%d: streams[%d].burst: a burst is sent at line rate, and port '%s' reports no link speed", plan.file,
            s.line, i, plan.ports[s.port].name));
      }
      const double burst_ns = s.burst.frames * 8.0 * (c.frame_size + kEthL1Overhead) / line * 1e9;
      c.burst_frames = s.burst.frames;
      c.burst_frame_ns = burst_ns / s.burst.frames;
      c.burst_period_ns = static_cast<int64_t>(std::llround(burst_ns)) + s.burst.gap_ns;
      c.pps = s.burst.frames * 1e9 / static_cast<double>(c.burst_period_ns);
    }
    const double l1 = c.pps * 8.0 * (c.frame_size + kEthL1Overhead);
    if (line > 0 && std::isfinite(l1) && l1 > line * 1.000001) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: streams[%d].rate: %s of %.1f B frames is %s at L1, above the %s line rate of port '%s'", plan.file,
          s.line, i, FormatRate(s.rate), c.frame_size, FormatBitRate(l1), FormatBitRate(line),
          plan.ports[s.port].name));
    }
    c.count = s.count;
    c.duration_ns = s.duration_ns > 0 ? s.duration_ns : plan.duration_ns;
    c.tx_port = s.port;
    c.rx_port = s.rx_port;
    // Streams of a port are spread over its TX queues in plan order.
    c.tx_queue = next_queue[s.port];
    next_queue[s.port] = static_cast<uint16_t>((next_queue[s.port] + 1) % plan.ports[s.port].tx_queues);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace fg::stream
