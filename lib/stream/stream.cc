#include "stream/stream.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status.h"

namespace fg::stream {
namespace {

// "plan.yaml:12:31: streams[0].frame.roce.retransmit": the field's own place
// when the plan writes it, else the nearest enclosing one written, else the
// stream's (config/location.h).
std::string DefaultWhere(const config::Plan& plan, size_t i, absl::string_view field) {
  const config::StreamSpec& s = plan.streams[i];
  const std::string_view f(field.data(), field.size());
  config::Location at = s.at;
  if (f == "rate" && s.rate_at.line > 0) {
    at = s.rate_at;
  } else if (const config::Written* w = s.written.Find(f)) {
    at = w->at;
  }
  return absl::StrFormat("%s: streams[%d].%s", config::FormatLocation(plan.file, at), i, field);
}

// A value as the plan writes it, quoted, when `text` still means `same`
// (a matrix cell or a test may have changed it since); else `formatted`.
template <typename Parsed, typename Same>
std::string Shown(const std::string& text, Parsed parse, Same same, std::string formatted) {
  if (text.empty()) return formatted;
  auto v = parse(text);
  return v.ok() && same(*v) ? "'" + text + "'" : formatted;
}

// The stream's rate as written ("'10 Gbps'"), or how it was set.
std::string RateShown(const config::StreamSpec& s) {
  if (s.burst.frames != 0) return absl::StrFormat("a burst of %d frames at line rate", s.burst.frames);
  const std::string text = s.written.Text("rate");
  if (text.empty() && s.written.Find("flows.rates") != nullptr) {
    return "the flows' rates (" + FormatRate(s.rate) + " together)";
  }
  return Shown(
      text, [](const std::string& t) { return ParseRate(t); },
      [&s](const Rate& r) { return r.kind == s.rate.kind && r.value == s.rate.value; }, FormatRate(s.rate));
}

absl::Status ErrorAt(const config::Plan& plan, const StreamWhere& where, size_t i, absl::string_view field,
                     absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: %s", where ? where(i, std::string_view(field.data(), field.size())) : DefaultWhere(plan, i, field),
      message));
}

// The frame checks of the parser, the Program and the flow keys of stream i.
absl::StatusOr<Program> CompileProgram(const config::Plan& plan, size_t i, uint32_t flow_id, const StreamWhere& where) {
  const config::StreamSpec& s = plan.streams[i];
  const config::PortSpec& tx = plan.ports[s.port];
  if (auto f = config::CheckFrame(s.frame, tx.mtu, tx.name); !f.ok()) {
    // The message names the key inside the frame: "frame.size: ...".
    const absl::string_view m = f.message();
    const size_t colon = m.find(": ");
    return ErrorAt(plan, where, i, m.substr(0, colon), m.substr(colon + 2));
  }
  auto program = Program::Compile(WireFrame(plan, s), flow_id);
  if (!program.ok()) return ErrorAt(plan, where, i, "frame", program.status().message());
  // Every flow needs a key of its own, inside the field and, for plain UDP,
  // clear of the RoCEv2 and UET ports (those frames would parse as such).
  if (s.flows > 1) {
    const uint64_t last = uint64_t{program->key_base()} + s.flows - 1;
    const uint64_t limit = program->key_bits() == 0 ? 0 : (uint64_t{1} << program->key_bits()) - 1;
    const char* what = s.frame.kind == config::FrameKind::kRoce  ? "destination QP"
                       : s.frame.kind == config::FrameKind::kUet ? "SPDCID"
                                                                 : "UDP destination port";
    if (limit == 0) {
      return ErrorAt(plan, where, i, "flows",
                     absl::StrFormat("%s frames have no flow key; use flows: 1", config::FrameKindName(s.frame.kind)));
    }
    if (last > limit) {
      return ErrorAt(plan, where, i, "flows",
                     absl::StrFormat("%d flows from %s %d run past %d; lower the first key or the flow count "
                                     "(RoCEv2 QPs allow 16,777,216 flows)",
                                     s.flows, what, program->key_base(), limit));
    }
    if (s.frame.kind == config::FrameKind::kUdp) {
      for (uint32_t reserved : {4791u, 4793u}) {
        if (program->key_base() <= reserved && reserved <= last) {
          return ErrorAt(plan, where, i, "flows",
                         absl::StrFormat("UDP destination ports %d..%d include %d (RoCEv2/UET): those frames would "
                                         "not be plain UDP test frames; start elsewhere (frame.udp_dst)",
                                         program->key_base(), last, reserved));
        }
      }
    }
  }
  return program;
}

// A paced rate below kMinPps would overflow the TX pacer's interval.
absl::Status CheckMinRate(const config::Plan& plan, const StreamWhere& where, size_t i, double pps, double frame_size) {
  const config::StreamSpec& s = plan.streams[i];
  if (s.burst.frames != 0 || s.rate.kind == Rate::Kind::kMax || !(pps < kMinPps)) return absl::OkStatus();
  return ErrorAt(plan, where, i, "rate",
                 absl::StrFormat("%s sends %.1f B frames at %g pps, below the minimum of %g pps", RateShown(s),
                                 frame_size, pps, kMinPps));
}

}  // namespace

absl::Status CheckStreams(const config::Plan& plan, const StreamWhere& where) {
  uint32_t next_flow = 0;
  for (size_t i = 0; i < plan.streams.size(); ++i) {
    const config::StreamSpec& s = plan.streams[i];
    auto program = CompileProgram(plan, i, next_flow, where);
    if (!program.ok()) return program.status();
    next_flow += s.flows;
    const int64_t duration = s.duration_ns > 0 ? s.duration_ns : plan.duration_ns;
    if (s.start_ns >= duration) {
      return ErrorAt(plan, where, i, "start",
                     absl::StrFormat("the stream starts at %s and ends at its duration, %s: it would send nothing",
                                     FormatDuration(s.start_ns), FormatDuration(duration)));
    }
    if (s.rate.kind != Rate::Kind::kPercentLine) {
      const double size = program->mean_frame_size();
      if (auto m = CheckMinRate(plan, where, i, s.rate.ToPps(size, 0), size); !m.ok()) return m;
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPortLoads(const config::Plan& plan, const std::vector<CompiledStream>& streams,
                            const std::vector<double>& line_bps) {
  for (size_t p = 0; p < plan.ports.size() && p < line_bps.size(); ++p) {
    if (line_bps[p] <= 0) continue;
    double sum = 0;
    std::vector<std::string> parts;
    for (const CompiledStream& c : streams) {
      // A READ's responses load the port that sends them, at its plan stream's rate.
      const uint32_t at = c.read_response() ? streams[c.read_requests].index : c.index;
      const config::StreamSpec& s = plan.streams[at];
      if (c.tx_port != p || s.burst.frames != 0 || !std::isfinite(c.pps)) continue;
      const double l1 = c.pps * 8.0 * (c.frame_size + kEthL1Overhead);
      sum += l1;
      parts.push_back(absl::StrFormat("'%s' at %s = %s L1", c.name, RateShown(s), FormatBitRate(l1)));
      if (AboveLineRate(sum, line_bps[p])) {  // named at the stream that takes the port past its line rate
        return ErrorAt(plan, nullptr, at, "rate",
                       absl::StrFormat("the streams sent on port '%s' add up to %s at L1 (%s), above its line rate "
                                       "of %s; lower their rates (rate: max streams are not counted)",
                                       plan.ports[p].name, FormatBitRate(sum), absl::StrJoin(parts, " + "),
                                       FormatBitRate(line_bps[p])));
      }
    }
  }
  return absl::OkStatus();
}

double CompiledStream::FlowShare(const std::vector<uint32_t>& some) const {
  if (some.empty()) return 1;
  if (flow_weight.empty()) return static_cast<double>(some.size()) / flows;
  double part = 0, all = 0;
  for (uint32_t f : some) part += flow_weight[f];
  for (double r : flow_weight) all += r;
  return all > 0 ? part / all : 0;
}

namespace {

bool IsAnsweredRead(const config::Plan& plan, const config::StreamSpec& s) {
  return s.frame.kind == config::FrameKind::kRoce && s.frame.roce.op == config::RoceSpec::Op::kReadRequest &&
         plan.ports[s.rx_port].respond.has_value();
}

// The responses' stream of each answered READ (stream.h), after the plan's
// streams; the requests then go at the data's rate over the response
// packets each asks for.
absl::Status AddReadResponses(const config::Plan& plan, const std::vector<double>& line_bps, uint32_t next_flow,
                              std::vector<CompiledStream>& out) {
  const size_t planned = out.size();
  for (size_t i = 0; i < planned; ++i) {
    const config::StreamSpec& s = plan.streams[out[i].index];
    if (!IsAnsweredRead(plan, s)) continue;
    if (s.frame.roce.transport != proto::roce::Transport::kRc) {
      return ErrorAt(plan, nullptr, i, "frame.roce.transport", "READ is an RC operation; use transport: RC");
    }
    if (s.burst.frames != 0) {
      return ErrorAt(plan, nullptr, i, "burst",
                     "a READ's data is sent by the responder as its requests arrive; give it a rate, not a burst");
    }
    if (s.frame.roce.dcqcn) {
      return ErrorAt(plan, nullptr, i, "frame.roce.dcqcn",
                     "a READ's data goes from the responder, whose reaction point would pace it; fabricgen's "
                     "responder sends it as the requests come, so DCQCN on the requests would cut the wrong "
                     "direction: remove dcqcn (or use WRITE)");
    }
    config::FrameSpec rf = Answers::AnswerFrame(s.frame, config::RoceSpec::Op::kReadResponse,
                                                *plan.ports[s.rx_port].respond, AnswerMacsOf(plan, s));
    rf.encap.l3.ecn = s.frame.encap.l3.ecn;  // data: as ECN-capable as the requests
    const config::PortSpec& back = plan.ports[s.rx_port];
    if (auto f = config::CheckFrame(rf, back.mtu, back.name); !f.ok()) {
      return ErrorAt(plan, nullptr, i, "frame", absl::StrCat("its READ responses, sent back from port '", back.name,
                                                              "': ", f.message()));
    }
    CompiledStream r;
    r.index = static_cast<uint32_t>(out.size());
    r.name = s.name + ".responses";
    r.flow_id = next_flow;
    r.flows = out[i].flows;
    next_flow += r.flows;
    r.verify_payload = out[i].verify_payload;
    auto program = Program::Compile(rf, r.flow_id);
    if (!program.ok()) return ErrorAt(plan, nullptr, i, "frame", program.status().message());
    r.program = *std::move(program);
    r.frame_size = r.program.mean_frame_size();
    const uint32_t k = r.program.packets_per_message();
    if (k != out[i].program.psn_step()) {
      return absl::InternalError(absl::StrFormat("stream %s: %d READ response packets, but its requests step "
                                                 "their PSN by %d",
                                                 s.name, k, out[i].program.psn_step()));
    }
    const double line = s.rx_port < line_bps.size() ? line_bps[s.rx_port] : 0;
    if (s.rate.kind == Rate::Kind::kPercentLine && line <= 0) {
      return ErrorAt(plan, nullptr, i, "rate",
                     absl::StrFormat("%s of READ data needs the line rate of port '%s', which sends it and "
                                     "reports no link speed; give the rate in pps or bit/s",
                                     RateShown(s), back.name));
    }
    r.pps = s.rate.ToPps(r.frame_size, line);
    const double l1 = r.pps * 8.0 * (r.frame_size + kEthL1Overhead);
    if (line > 0 && std::isfinite(l1) && AboveLineRate(l1, line)) {
      return ErrorAt(plan, nullptr, i, "rate",
                     absl::StrFormat("%s of READ data in %.1f B responses is %s at L1, above the %s line rate of "
                                     "port '%s', which sends them",
                                     RateShown(s), r.frame_size, FormatBitRate(l1), FormatBitRate(line),
                                     back.name));
    }
    CompiledStream& q = out[i];
    q.pps = r.pps / k;
    FG_RETURN_IF_ERROR(CheckMinRate(plan, nullptr, i, q.pps, q.frame_size));
    r.duration_ns = q.duration_ns;
    r.start_ns = q.start_ns;
    r.tx_port = q.rx_port;
    r.rx_port = q.tx_port;
    r.read_requests = static_cast<int32_t>(i);
    q.read_responses = static_cast<int32_t>(r.index);
    q.read_packets = r.read_packets = k;
    out.push_back(std::move(r));
  }
  return absl::OkStatus();
}

// Stream i's rate in pps (with a burst schedule: its period), checked
// against its TX port's line rate.
absl::Status ResolveRate(const config::Plan& plan, size_t i, const std::vector<double>& line_bps, CompiledStream& c) {
  const config::StreamSpec& s = plan.streams[i];
  const double line = s.port < line_bps.size() ? line_bps[s.port] : 0;
  if (s.rate.kind == Rate::Kind::kPercentLine && line <= 0) {
    return ErrorAt(plan, nullptr, i, "rate",
                   absl::StrFormat("%s needs the line rate of port '%s', which reports no link speed; give the rate "
                                   "in pps or bit/s",
                                   RateShown(s), plan.ports[s.port].name));
  }
  c.pps = s.rate.ToPps(c.frame_size, line);
  FG_RETURN_IF_ERROR(CheckMinRate(plan, nullptr, i, c.pps, c.frame_size));
  if (s.burst.frames > 0) {
    if (line <= 0) {
      return ErrorAt(plan, nullptr, i, "burst",
                     absl::StrFormat("a burst is sent at line rate, and port '%s' reports no link speed",
                                     plan.ports[s.port].name));
    }
    const double burst_ns = s.burst.frames * 8.0 * (c.frame_size + kEthL1Overhead) / line * 1e9;
    c.burst_frames = s.burst.frames;
    c.burst_frame_ns = burst_ns / s.burst.frames;
    c.burst_period_ns = static_cast<int64_t>(std::llround(burst_ns)) + s.burst.gap_ns;
    c.pps = s.burst.frames * 1e9 / static_cast<double>(c.burst_period_ns);
  }
  const double l1 = c.pps * 8.0 * (c.frame_size + kEthL1Overhead);
  if (line > 0 && std::isfinite(l1) && AboveLineRate(l1, line)) {
    return ErrorAt(plan, nullptr, i, s.burst.frames > 0 ? "burst" : "rate",
                   absl::StrFormat("%s of %.1f B frames is %s at L1, above the %s line rate of port '%s'",
                                   RateShown(s), c.frame_size, FormatBitRate(l1), FormatBitRate(line),
                                   plan.ports[s.port].name));
  }
  // DCQCN never cuts a QP below min_rate: above the line, it could not be sent.
  if (const auto& d = s.frame.roce.dcqcn; s.frame.kind == config::FrameKind::kRoce && d && line > 0 &&
                                          d->min_rate_bps > line) {
    const std::string shown = Shown(
        s.written.Text("frame.roce.dcqcn.min_rate"), [](const std::string& t) { return ParseRate(t); },
        [&d](const Rate& r) { return r.kind == Rate::Kind::kBpsL2 && r.value == d->min_rate_bps; },
        FormatBitRate(d->min_rate_bps));
    return ErrorAt(plan, nullptr, i, "frame.roce.dcqcn.min_rate",
                   absl::StrFormat("min_rate %s is above the %s line rate of port '%s': a QP could never be cut "
                                   "below it; lower min_rate",
                                   shown, FormatBitRate(line), plan.ports[s.port].name));
  }
  return absl::OkStatus();
}

// A go-back-N requester whose timeout is shorter than the time a QP's
// first unacknowledged packet waits for its ACK at the plan's rate (the
// responder acknowledges every `spacing` packets: the first waits for the
// next spacing - 1) would go back before each ACK came: every QP resending
// what arrived, a figure of the tester's own making. Refused below twice
// that wait (the timer's tick, the pacing's and the path's jitter). A DCQCN
// stream's QP rates move: not checked.
absl::Status CheckAckSpacing(const config::Plan& plan, size_t i, const CompiledStream& c) {
  if (c.answers == nullptr || !c.answers->strict || c.dcqcn || !std::isfinite(c.pps) || c.pps <= 0) {
    return absl::OkStatus();
  }
  const Answers& a = *c.answers;
  using AckReq = config::RoceSpec::AckReq;
  const uint32_t every = a.spec.ack_every;
  const uint32_t spacing = a.ack_req == AckReq::kEvery  ? 1
                           : a.ack_req == AckReq::kLast ? std::min(every, a.msg_packets)
                                                        : every;
  // The slowest QP's rate (per-flow rates: the smallest share).
  double share = 1.0 / c.flows;
  if (!c.flow_weight.empty()) {
    double sum = 0, least = c.flow_weight[0];
    for (double w : c.flow_weight) sum += w, least = std::min(least, w);
    share = sum > 0 ? least / sum : share;
  }
  const double qp_pps = c.pps * share;
  const double gap_ns = (spacing - 1) / qp_pps * 1e9;
  if (static_cast<double>(c.retransmit_timeout_ns) >= 2 * gap_ns) return absl::OkStatus();
  const config::StreamSpec& s = plan.streams[i];
  const char* kTimeout = "frame.roce.retransmit.timeout";
  const std::string timeout = Shown(
      s.written.Text(kTimeout), [](const std::string& t) { return ParseDuration(t); },
      [&c](int64_t ns) { return ns == c.retransmit_timeout_ns; },
      FormatDuration(c.retransmit_timeout_ns) + (s.written.Text(kTimeout).empty() ? " (the default)" : ""));
  return ErrorAt(plan, nullptr, i, kTimeout,
                 absl::StrFormat("timeout %s is shorter than twice the %s a QP's packet waits for its ACK (one per "
                                 "%d packets at %s per QP): each QP would go back before its ACK came; raise the "
                                 "timeout (to %s or more) or the QP's rate%s",
                                 timeout,
                                 FormatDuration(static_cast<int64_t>(gap_ns)), spacing, FormatPacketRate(qp_pps),
                                 FormatDuration(static_cast<int64_t>(std::ceil(2 * gap_ns))),
                                 a.ack_req == AckReq::kEvery ? "" : ", or lower ports[].respond.ack_every"));
}

}  // namespace

// Feedback (ACK, NAK, CNP, UET NACK) finds its flow by its QP (or PDC) at
// the port it arrives on, as a NIC's QP numbers are its own: two streams
// whose feedback comes to one port with the same key could not be told
// apart. For a closed-loop stream (DCQCN, or go-back-N) that would act on
// the wrong QP: refused. (Open-loop streams sharing keys count such feedback
// on the first of them.)
absl::Status CheckFeedbackKeys(const config::Plan& plan, const std::vector<CompiledStream>& streams) {
  for (size_t j = 0; j < streams.size(); ++j) {
    const CompiledStream& b = streams[j];
    if (b.program.key_kind() == KeyKind::kNone) continue;
    for (size_t i = 0; i < j; ++i) {
      const CompiledStream& a = streams[i];
      if (a.program.key_kind() != b.program.key_kind()) continue;
      if (b.read_requests == static_cast<int32_t>(i)) continue;  // one READ's two halves: the same QPs
      // What acts on its feedback: a reaction point, or a go-back-N requester;
      // and a READ, whose requests the responder knows by their QP alone.
      auto acts = [](const CompiledStream& x) {
        return x.dcqcn.has_value() || (x.answers && x.answers->strict) || x.read_request();
      };
      const bool closed = acts(a) || acts(b);
      if (!closed) continue;
      size_t port = SIZE_MAX;  // a port where both streams' feedback arrives
      for (size_t p : {b.rx_port, b.tx_port}) {  // the requester's port last: it names that one
        if (p == a.tx_port || p == a.rx_port) port = p;
      }
      if (port == SIZE_MAX) continue;
      const uint64_t a0 = a.program.key_base(), a1 = a0 + a.flows, b0 = b.program.key_base(), b1 = b0 + b.flows;
      if (a1 <= b0 || b1 <= a0) continue;
      const bool qp = b.program.key_kind() == KeyKind::kRoceQp;
      // Named at the plan stream of `b` (a READ's responses: its requests').
      const size_t pj = b.read_response() ? streams[static_cast<size_t>(b.read_requests)].index : b.index;
      return ErrorAt(plan, nullptr, pj, qp ? "frame.roce.dest_qp" : "frame.uet.spdcid",
                     absl::StrFormat("stream %s's %s %#x..%#x overlap stream %s's (%#x..%#x) on port '%s': their "
                                     "feedback (%s) could not be told apart; give one of them other %s (e.g. %s: 0x%x)",
                                     b.name, qp ? "QPs" : "PDCs", b0, b1 - 1, a.name, a0, a1 - 1,
                                     plan.ports[port].name, qp ? "ACKs, NAKs, CNPs" : "ACKs, NACKs",
                                     qp ? "QPs" : "PDCs", qp ? "dest_qp" : "spdcid", a1)
                         .append(a.read_request() || b.read_request()
                                     ? " (a READ's requests are known by their QP too)"
                                     : ""));
    }
  }
  return absl::OkStatus();
}

config::FrameSpec WireFrame(const config::Plan& plan, const config::StreamSpec& s) {
  config::FrameSpec f = s.frame;
  const config::PortSpec& tx = plan.ports[s.port];
  if (tx.next_hop_mac && s.written.Text("frame.dst_mac").empty()) f.encap.dst_mac = *tx.next_hop_mac;
  return f;
}

AnswerMacs AnswerMacsOf(const config::Plan& plan, const config::StreamSpec& s) {
  if (const auto& gw = plan.ports[s.rx_port].next_hop_mac) return {s.frame.encap.dst_mac, *gw};
  return {s.frame.encap.src_mac, s.frame.encap.dst_mac};
}

absl::StatusOr<std::vector<CompiledStream>> Compile(const config::Plan& plan, const std::vector<double>& line_bps) {
  std::vector<CompiledStream> out;
  uint32_t next_flow = 0;
  for (size_t i = 0; i < plan.streams.size(); ++i) {
    const config::StreamSpec& s = plan.streams[i];
    CompiledStream c;
    c.index = static_cast<uint32_t>(i);
    c.name = s.name;
    c.flow_id = next_flow;
    c.flows = s.flows;
    c.verify_payload = s.verify_payload;
    c.bad_icrc = s.frame.kind == config::FrameKind::kRoce && s.frame.roce.bad_icrc;
    next_flow += s.flows;
    FG_ASSIGN_OR_RETURN(c.program, CompileProgram(plan, i, c.flow_id, nullptr));
    c.frame_size = c.program.mean_frame_size();
    c.flow_weight = s.flow_weights;
    c.count = s.count;
    c.duration_ns = s.duration_ns > 0 ? s.duration_ns : plan.duration_ns;
    c.start_ns = std::min(s.start_ns, c.duration_ns);
    c.tx_port = s.port;
    c.rx_port = s.rx_port;
    // A READ's rate is its data's: resolved with its responses (AddReadResponses).
    if (!IsAnsweredRead(plan, s)) FG_RETURN_IF_ERROR(ResolveRate(plan, i, line_bps, c));
    if (s.frame.kind == config::FrameKind::kRoce) {
      c.dcqcn = s.frame.roce.dcqcn;
      c.retransmit_timeout_ns = s.frame.roce.retransmit_timeout_ns;
      if (s.frame.roce.connect_cm) {
        if (!plan.ports[s.rx_port].respond) {
          return ErrorAt(plan, nullptr, i, "frame.roce.connect",
                         absl::StrFormat("cm needs its rx_port '%s' to respond (ports[].respond): that port answers "
                                         "each REQ as the QP's passive side",
                                         plan.ports[s.rx_port].name));
        }
        if (plan.ports[s.port].rx_queues == 0) {
          return ErrorAt(plan, nullptr, i, "frame.roce.connect",
                         absl::StrFormat("cm needs port '%s' to receive (rx_queues above 0): the REPs come back there",
                                         plan.ports[s.port].name));
        }
        c.connect_cm = true;
        c.cm_encap = WireFrame(plan, s).encap;
        c.cm_back_encap = Answers::AnswerFrame(s.frame, config::RoceSpec::Op::kAck, *plan.ports[s.rx_port].respond,
                                               AnswerMacsOf(plan, s))
                              .encap;
        c.pmtu = s.frame.roce.pmtu;
        c.cm_pkey = s.frame.roce.pkey;
      }
    }
    if (const auto& respond = plan.ports[s.rx_port].respond) {
      FG_ASSIGN_OR_RETURN(auto answers, Answers::Compile(s.name, c.flow_id, c.program, s.frame, *respond,
                                                         static_cast<uint16_t>(s.rx_port), AnswerMacsOf(plan, s)));
      c.answers = std::move(answers);
      FG_RETURN_IF_ERROR(CheckAckSpacing(plan, i, c));
    }
    out.push_back(std::move(c));
  }
  FG_RETURN_IF_ERROR(AddReadResponses(plan, line_bps, next_flow, out));
  FG_RETURN_IF_ERROR(CheckFeedbackKeys(plan, out));
  return out;
}

}  // namespace fg::stream
