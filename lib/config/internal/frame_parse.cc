#include "config/internal/frame_parse.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "base/units.h"
#include "config/plan.h"
#include "proto/signature.h"

namespace fg::config::internal {
namespace {

using proto::roce::Transport;
using proto::uet::NextHdr;

template <typename Parse>
auto Addr(Parse parse) {
  return [parse](const Node& n) -> absl::StatusOr<std::decay_t<decltype(*parse(""))>> {
    FG_ASSIGN_OR_RETURN(std::string s, n.String());
    auto a = parse(s);
    if (!a.ok()) return n.Error(a.status().message());
    return *a;
  };
}

// Looks `text` up in a name table; the error lists every name.
template <typename E, size_t N>
absl::StatusOr<E> Named(const Node& n, const std::pair<const char*, E> (&table)[N]) {
  FG_ASSIGN_OR_RETURN(std::string s, n.String());
  std::string names;
  for (const auto& [name, value] : table) {
    if (s == name) return value;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  return n.Error(absl::StrFormat("'%s' is not allowed; expected one of: %s", s, names));
}

bool Has(const Node& n, std::string_view key) { return n.Optional(key).has_value(); }

absl::StatusOr<DcqcnSpec> DcqcnFrom(const Node& n) {
  auto preset = [](const Node& x) -> absl::StatusOr<DcqcnSpec> {
    FG_ASSIGN_OR_RETURN(std::string p, x.OneOf({"paper", "connectx"}));
    return p == "paper" ? DcqcnSpec::Paper() : DcqcnSpec::ConnectX();
  };
  if (!n.ExpectMap().ok()) return preset(n);
  FG_RETURN_IF_ERROR(n.CheckKeys({"preset", "g", "initial_alpha", "alpha_period", "timer", "byte_counter",
                                  "threshold", "rate_ai", "rate_hai", "min_rate", "rate_reduce_period",
                                  "min_dec_factor", "scale_to"}));
  DcqcnSpec d;
  if (auto p = n.Optional("preset")) {
    FG_ASSIGN_OR_RETURN(d, preset(*p));
  }
  auto number = [](double lo, double hi) { return [lo, hi](const Node& x) { return x.Number(lo, hi); }; };
  auto bit_rate = [](const Node& x) -> absl::StatusOr<double> {
    FG_ASSIGN_OR_RETURN(Rate r, x.RateValue());
    if (r.kind != Rate::Kind::kBpsL2) return x.Error("a DCQCN rate is an L2 bit rate (e.g. 40 Mbps)");
    return r.value;
  };
  auto duration = [](const Node& x) -> absl::StatusOr<int64_t> {
    FG_ASSIGN_OR_RETURN(int64_t ns, x.Duration());
    if (ns > 1'000'000'000) return x.Error("at most 1 s");
    return ns;
  };
  // The preset slowed to a slower link first; parameters given beside it are taken as written.
  if (auto x = n.Optional("scale_to")) {
    FG_ASSIGN_OR_RETURN(double to, bit_rate(*x));
    if (to < 1e6 || to > d.preset_link_bps) {
      return x->Error(absl::StrFormat("between 1 Mbps and the preset's link, %s", FormatBitRate(d.preset_link_bps)));
    }
    d.ScaleTo(to);
    if (d.timer_ns > 1'000'000'000 || d.alpha_period_ns > 1'000'000'000) {
      return x->Error("the preset's timers would be longer than 1 s at this rate");
    }
  }
  FG_RETURN_IF_ERROR(Opt(n, "g", d.g, number(0, 1)));
  FG_RETURN_IF_ERROR(Opt(n, "initial_alpha", d.initial_alpha, number(0, 1)));
  FG_RETURN_IF_ERROR(Opt(n, "alpha_period", d.alpha_period_ns, duration));
  FG_RETURN_IF_ERROR(Opt(n, "timer", d.timer_ns, duration));
  FG_RETURN_IF_ERROR(Opt(n, "byte_counter", d.byte_counter, BytesIn(64, uint64_t{1} << 40)));
  FG_RETURN_IF_ERROR(Opt(n, "threshold", d.threshold, IntIn(1, 1000)));
  FG_RETURN_IF_ERROR(Opt(n, "rate_ai", d.rate_ai_bps, bit_rate));
  FG_RETURN_IF_ERROR(Opt(n, "rate_hai", d.rate_hai_bps, bit_rate));
  FG_RETURN_IF_ERROR(Opt(n, "min_rate", d.min_rate_bps, bit_rate));
  if (auto x = n.Optional("rate_reduce_period")) {
    auto word = x->String();
    if (word.ok() && *word == "none") {
      d.rate_reduce_period_ns = 0;
    } else {
      FG_ASSIGN_OR_RETURN(d.rate_reduce_period_ns, duration(*x));
    }
  }
  FG_RETURN_IF_ERROR(Opt(n, "min_dec_factor", d.min_dec_factor, PercentIn(0, 100)));
  return d;
}

}  // namespace

absl::Status ParseRetransmit(const Node& rt, bool& go_back_n, int64_t& timeout_ns) {
  if (rt.ExpectMap().ok()) {
    FG_RETURN_IF_ERROR(rt.CheckKeys({"timeout"}));
    FG_RETURN_IF_ERROR(Opt(rt, "timeout", timeout_ns, DurationIn()));
    if (timeout_ns < 1'000'000 || timeout_ns > 10'000'000'000) {
      return rt.At("timeout").Error("the retransmit timeout is 1 ms .. 10 s (above the time between ACKs)");
    }
    go_back_n = true;
    return absl::OkStatus();
  }
  FG_ASSIGN_OR_RETURN(std::string v, rt.OneOf({"go_back_n", "none"}));
  go_back_n = v == "go_back_n";
  return absl::OkStatus();
}

absl::Status ParseEntropy(const Node& en, EntropySpec& e, uint16_t udp_src) {
  FG_RETURN_IF_ERROR(en.CheckKeys({"mode", "values", "gap"}));
  static constexpr std::pair<const char*, EntropySpec::Mode> kModes[] = {
      {"fixed", EntropySpec::Mode::kFixed},
      {"round_robin", EntropySpec::Mode::kRoundRobin},
      {"random", EntropySpec::Mode::kRandom},
      {"flowlet", EntropySpec::Mode::kFlowlet}};
  FG_RETURN_IF_ERROR(Opt(en, "mode", e.mode, [](const Node& x) { return Named(x, kModes); }));
  FG_RETURN_IF_ERROR(Opt(en, "values", e.values, IntIn(1, 65536)));
  FG_RETURN_IF_ERROR(Opt(en, "gap", e.gap_ns, DurationIn()));
  if (e.mode == EntropySpec::Mode::kFlowlet && e.gap_ns == 0) {
    return en.Error("flowlet entropy needs a gap, e.g. {mode: flowlet, values: 8, gap: 50 us}");
  }
  if (e.mode != EntropySpec::Mode::kFlowlet && en.Optional("gap")) {
    return en.At("gap").Error("gap applies to mode: flowlet only");
  }
  if (e.mode == EntropySpec::Mode::kFixed) e.values = 1;
  if (uint32_t{udp_src} + e.values > 65536) {
    return en.Error(absl::StrFormat("udp_src %d + %d values passes 65535", udp_src, e.values));
  }
  return absl::OkStatus();
}

namespace {

absl::Status ParseRoce(const Node& n, RoceSpec& r) {
  FG_RETURN_IF_ERROR(n.CheckKeys({"op", "transport", "message", "pmtu", "dest_qp", "psn", "pkey", "va", "rkey", "imm",
                                  "qkey", "src_qp", "nak_code", "ack_credits", "ack_req", "icrc", "dcqcn",
                                  "retransmit", "connect"}));
  using Op = RoceSpec::Op;
  static constexpr std::pair<const char*, Op> kOps[] = {{"WRITE", Op::kWrite},
                                                        {"WRITE_IMM", Op::kWriteImm},
                                                        {"SEND", Op::kSend},
                                                        {"SEND_IMM", Op::kSendImm},
                                                        {"READ_RESPONSE", Op::kReadResponse},
                                                        {"READ_REQUEST", Op::kReadRequest},
                                                        {"CNP", Op::kCnp},
                                                        {"ACK", Op::kAck},
                                                        {"NAK", Op::kNak}};
  static constexpr std::pair<const char*, Transport> kTransports[] = {
      {"RC", Transport::kRc}, {"UC", Transport::kUc}, {"UD", Transport::kUd}};
  static constexpr std::pair<const char*, RoceSpec::AckReq> kAckReq[] = {
      {"last", RoceSpec::AckReq::kLast}, {"every", RoceSpec::AckReq::kEvery}, {"never", RoceSpec::AckReq::kNever}};
  static constexpr std::pair<const char*, proto::roce::NakCode> kNak[] = {
      {"PSN_SEQUENCE_ERROR", proto::roce::NakCode::kPsnSequenceError},
      {"INVALID_REQUEST", proto::roce::NakCode::kInvalidRequest},
      {"REMOTE_ACCESS_ERROR", proto::roce::NakCode::kRemoteAccessError},
      {"REMOTE_OPERATIONAL_ERROR", proto::roce::NakCode::kRemoteOperationalError},
      {"INVALID_RD_REQUEST", proto::roce::NakCode::kInvalidRdRequest}};
  static constexpr std::pair<const char*, bool> kIcrc[] = {{"valid", false}, {"bad", true}};
  FG_RETURN_IF_ERROR(Opt(n, "op", r.op, [](const Node& x) { return Named(x, kOps); }));
  FG_RETURN_IF_ERROR(Opt(n, "transport", r.transport, [](const Node& x) { return Named(x, kTransports); }));
  FG_RETURN_IF_ERROR(Opt(n, "message", r.message, BytesIn(1, 0xFFFFFFFFull)));
  FG_RETURN_IF_ERROR(Opt(n, "pmtu", r.pmtu, IntIn(256, 4096)));
  if ((r.pmtu & (r.pmtu - 1)) != 0) {
    return n.At("pmtu").Error(absl::StrFormat("%d is not a path MTU; expected 256, 512, 1024, 2048 or 4096", r.pmtu));
  }
  FG_RETURN_IF_ERROR(Opt(n, "dest_qp", r.dest_qp, IntIn(0, 0xFFFFFF)));
  FG_RETURN_IF_ERROR(Opt(n, "psn", r.start_psn, IntIn(0, 0xFFFFFF)));
  FG_RETURN_IF_ERROR(Opt(n, "pkey", r.pkey, IntIn(0, 0xFFFF)));
  FG_RETURN_IF_ERROR(Opt(n, "va", r.va, IntIn(0, INT64_MAX)));
  FG_RETURN_IF_ERROR(Opt(n, "rkey", r.rkey, IntIn(0, 0xFFFFFFFF)));
  FG_RETURN_IF_ERROR(Opt(n, "imm", r.imm, IntIn(0, 0xFFFFFFFF)));
  FG_RETURN_IF_ERROR(Opt(n, "qkey", r.qkey, IntIn(0, 0xFFFFFFFF)));
  FG_RETURN_IF_ERROR(Opt(n, "src_qp", r.src_qp, IntIn(0, 0xFFFFFF)));
  FG_RETURN_IF_ERROR(Opt(n, "nak_code", r.nak_code, [](const Node& x) { return Named(x, kNak); }));
  FG_RETURN_IF_ERROR(Opt(n, "ack_credits", r.ack_credits, IntIn(0, 31)));
  FG_RETURN_IF_ERROR(Opt(n, "ack_req", r.ack_req, [](const Node& x) { return Named(x, kAckReq); }));
  FG_RETURN_IF_ERROR(Opt(n, "icrc", r.bad_icrc, [](const Node& x) { return Named(x, kIcrc); }));
  // Data operations: the message is checked with the whole frame (FindFault).
  const bool data = r.op == Op::kWrite || r.op == Op::kWriteImm || r.op == Op::kSend || r.op == Op::kSendImm ||
                    r.op == Op::kReadResponse;
  if (!data && r.transport != Transport::kRc && r.op != Op::kCnp) {
    return n.At("transport").Error("READ_REQUEST, ACK and NAK are RC operations");
  }
  if (auto rt = n.Optional("retransmit")) {
    FG_RETURN_IF_ERROR(ParseRetransmit(*rt, r.go_back_n, r.retransmit_timeout_ns));
    // Go-back-N is what an RC requester of WRITEs and SENDs does on its
    // responder's ACKs and NAKs; on anything else it would be ignored in silence.
    const bool requester = r.transport == Transport::kRc &&
                           (r.op == Op::kWrite || r.op == Op::kWriteImm || r.op == Op::kSend || r.op == Op::kSendImm);
    if (r.go_back_n && !requester) {
      auto name = [](const auto& table, auto value) -> std::string {
        for (const auto& [key, v] : table) {
          if (v == value) return key;
        }
        return "?";
      };
      return rt->Error(absl::StrFormat(
          "retransmit %s is go-back-N, what an RC requester of WRITEs or SENDs does on its responder's ACKs and "
          "NAKs; this stream is %s %s: remove retransmit (or give retransmit: none)",
          rt->text().empty() ? std::string("{...}") : "'" + rt->text() + "'", name(kTransports, r.transport),
          name(kOps, r.op)));
    }
  }
  if (auto c = n.Optional("connect")) {
    FG_ASSIGN_OR_RETURN(std::string v, c->OneOf({"cm", "none"}));
    r.connect_cm = v == "cm";
    if (r.connect_cm && (r.transport != Transport::kRc || !data || r.op == Op::kReadResponse)) {
      return c->Error("connect: cm sets up RC QPs: an RC stream of WRITEs or SENDs");
    }
  }
  if (auto d = n.Optional("dcqcn")) {
    if (!data && r.op != Op::kReadRequest) {
      return d->Error("dcqcn is the rate control of a QP that sends data: not of a stream of CNPs, ACKs or NAKs");
    }
    FG_ASSIGN_OR_RETURN(DcqcnSpec spec, DcqcnFrom(*d));
    r.dcqcn = spec;
  }
  return absl::OkStatus();
}

absl::Status ParseUet(const Node& n, UetSpec& u) {
  FG_RETURN_IF_ERROR(
      n.CheckKeys({"service", "packet", "cc", "ses", "opcode", "message", "max_payload", "spdcid", "dpdcid", "psn",
                   "job_id", "resource_index", "nack_code", "ctl_type", "native_ip", "profile"}));
  using S = UetSpec::Service;
  using P = UetSpec::Packet;
  static constexpr std::pair<const char*, S> kServices[] = {
      {"RUD", S::kRud}, {"ROD", S::kRod}, {"RUDI", S::kRudi}, {"UUD", S::kUud}};
  static constexpr std::pair<const char*, P> kPackets[] = {
      {"request", P::kRequest}, {"ack", P::kAck}, {"nack", P::kNack}, {"control", P::kControl}};
  static constexpr std::pair<const char*, NextHdr> kSes[] = {{"standard", NextHdr::kReqStd},
                                                             {"small", NextHdr::kReqSmall},
                                                             {"medium", NextHdr::kReqMedium},
                                                             {"none", NextHdr::kNone}};
  using O = proto::uet::SesOpcode;
  static constexpr std::pair<const char*, O> kOpcodes[] = {{"WRITE", O::kWrite},
                                                           {"READ", O::kRead},
                                                           {"SEND", O::kSend},
                                                           {"TAGGED_SEND", O::kTaggedSend},
                                                           {"DATAGRAM_SEND", O::kDatagramSend},
                                                           {"ATOMIC", O::kAtomic},
                                                           {"NO_OP", O::kNoOp}};
  using C = proto::uet::CtlType;
  static constexpr std::pair<const char*, C> kCtl[] = {
      {"NOOP", C::kNoop},          {"REQ_ACK", C::kReqAck}, {"CLEAR", C::kClear},
      {"REQ_CLEAR", C::kReqClear}, {"CLOSE", C::kClose},    {"REQ_CLOSE", C::kReqClose},
      {"PROBE", C::kProbe},        {"CREDIT", C::kCredit},  {"CREDIT_REQ", C::kCreditReq}};
  FG_RETURN_IF_ERROR(Opt(n, "service", u.service, [](const Node& x) { return Named(x, kServices); }));
  FG_RETURN_IF_ERROR(Opt(n, "packet", u.packet, [](const Node& x) { return Named(x, kPackets); }));
  FG_RETURN_IF_ERROR(Opt(n, "cc", u.cc, [](const Node& x) { return x.Bool(); }));
  FG_RETURN_IF_ERROR(Opt(n, "ses", u.ses, [](const Node& x) { return Named(x, kSes); }));
  FG_RETURN_IF_ERROR(Opt(n, "opcode", u.opcode, [](const Node& x) { return Named(x, kOpcodes); }));
  FG_RETURN_IF_ERROR(Opt(n, "message", u.message, BytesIn(1, 1ull << 40)));
  FG_RETURN_IF_ERROR(Opt(n, "max_payload", u.max_payload, BytesIn(1, 9000)));
  FG_RETURN_IF_ERROR(Opt(n, "spdcid", u.spdcid, IntIn(1, 0xFFFF)));
  FG_RETURN_IF_ERROR(Opt(n, "dpdcid", u.dpdcid, IntIn(0, 0xFFFF)));
  FG_RETURN_IF_ERROR(Opt(n, "psn", u.start_psn, IntIn(0, 0xFFFFFFFF)));
  FG_RETURN_IF_ERROR(Opt(n, "job_id", u.job_id, IntIn(0, 0xFFFFFF)));
  FG_RETURN_IF_ERROR(Opt(n, "resource_index", u.resource_index, IntIn(0, 0xFFF)));
  if (auto c = n.Optional("nack_code")) {
    FG_ASSIGN_OR_RETURN(int64_t code, c->Int(1, 0x1A));
    bool known = false;
    for (auto k : proto::uet::kAllNackCodes) known = known || static_cast<int64_t>(k) == code;
    if (!known) return c->Error(absl::StrFormat("0x%02x is not a UET NACK code (uet.md lists them)", code));
    u.nack_code = static_cast<proto::uet::NackCode>(code);
  }
  FG_RETURN_IF_ERROR(Opt(n, "ctl_type", u.ctl_type, [](const Node& x) { return Named(x, kCtl); }));
  FG_RETURN_IF_ERROR(Opt(n, "native_ip", u.native_ip, [](const Node& x) { return x.Bool(); }));
  if (auto p = n.Optional("profile")) {
    FG_RETURN_IF_ERROR(p->CheckKeys({"ack_ccx_len", "nack_ccx_len", "use_rsv_pdc_bit", "small_req_has_message_id",
                                     "resp_data_payload_len_bits", "udp_port", "native_ip_protocol", "dscp_trimmable",
                                     "dscp_trimmed", "dscp_trimmed_lasthop", "dscp_control", "trim_size"}));
    proto::uet::UetProfile& f = u.profile;
    FG_RETURN_IF_ERROR(Opt(*p, "ack_ccx_len", f.ack_ccx_len, IntIn(24, 64)));
    FG_RETURN_IF_ERROR(Opt(*p, "nack_ccx_len", f.nack_ccx_len, IntIn(16, 64)));
    FG_RETURN_IF_ERROR(Opt(*p, "use_rsv_pdc_bit", f.use_rsv_pdc_bit, IntIn(0, 0xFFFF)));
    FG_RETURN_IF_ERROR(
        Opt(*p, "small_req_has_message_id", f.small_req_has_message_id, [](const Node& x) { return x.Bool(); }));
    FG_RETURN_IF_ERROR(Opt(*p, "resp_data_payload_len_bits", f.resp_data_payload_len_bits, IntIn(12, 14)));
    FG_RETURN_IF_ERROR(Opt(*p, "udp_port", f.udp_port, IntIn(1, 65535)));
    FG_RETURN_IF_ERROR(Opt(*p, "native_ip_protocol", f.native_ip_protocol, IntIn(0, 255)));
    FG_RETURN_IF_ERROR(Opt(*p, "dscp_trimmable", f.dscp_trimmable, IntIn(0, 63)));
    FG_RETURN_IF_ERROR(Opt(*p, "dscp_trimmed", f.dscp_trimmed, IntIn(0, 63)));
    FG_RETURN_IF_ERROR(Opt(*p, "dscp_trimmed_lasthop", f.dscp_trimmed_lasthop, IntIn(0, 63)));
    FG_RETURN_IF_ERROR(Opt(*p, "dscp_control", f.dscp_control, IntIn(0, 63)));
    FG_RETURN_IF_ERROR(Opt(*p, "trim_size", f.trim_size, IntIn(1, 9000)));
  }
  if (u.service == S::kUud && u.packet != P::kRequest) {
    return n.At("packet").Error("UUD is unreliable: it has requests only (no ack, nack or control)");
  }
  if (u.cc && u.service != S::kRud && u.service != S::kRod) {
    return n.At("cc").Error("CC request headers exist for RUD and ROD only");
  }
  return absl::OkStatus();
}

absl::Status ParsePfc(const Node& n, PfcSpec& p) {
  FG_RETURN_IF_ERROR(n.CheckKeys({"priorities", "quanta"}));
  FG_ASSIGN_OR_RETURN(Node pri, n.Required("priorities"));
  FG_ASSIGN_OR_RETURN(std::vector<Node> items, pri.Items());
  uint16_t quanta = 0xFFFF;
  FG_RETURN_IF_ERROR(Opt(n, "quanta", quanta, IntIn(0, 0xFFFF)));
  for (const Node& i : items) {
    FG_ASSIGN_OR_RETURN(int64_t prio, i.Int(0, 7));
    p.class_enable |= static_cast<uint16_t>(1u << prio);
    p.quanta[prio] = quanta;
  }
  return absl::OkStatus();
}

absl::Status ParseLbn(const Node& n, LbnSpec& l) {
  FG_RETURN_IF_ERROR(n.CheckKeys({"ethertype", "opcode", "type", "msg", "dev_range", "levels"}));
  FG_RETURN_IF_ERROR(Opt(n, "ethertype", l.settings.ethertype, IntIn(0x0600, 0xFFFF)));
  FG_RETURN_IF_ERROR(Opt(n, "opcode", l.settings.opcode, IntIn(0, 255)));
  FG_RETURN_IF_ERROR(Opt(n, "type", l.settings.type, IntIn(0, 255)));
  FG_RETURN_IF_ERROR(Opt(n, "msg", l.msg, IntIn(0, 3)));
  FG_RETURN_IF_ERROR(Opt(n, "dev_range", l.dev_range, IntIn(0, 63)));
  FG_ASSIGN_OR_RETURN(Node levels, n.Required("levels"));
  FG_ASSIGN_OR_RETURN(std::string bits, levels.String());
  if (bits.empty() || bits.size() % 3 != 0 || bits.size() > 768 || bits.find_first_not_of("01") != std::string::npos) {
    return levels.Error("expected 3 bits per leaf in Leaf-ID order, e.g. '111000000000' (at most 256 leaves)");
  }
  for (size_t i = 0; i < bits.size() / 3; ++i) {
    l.bitmap.Set(static_cast<int>(i), static_cast<uint8_t>((bits[3 * i] - '0') << 2 | (bits[3 * i + 1] - '0') << 1 |
                                                           (bits[3 * i + 2] - '0')));
  }
  return absl::OkStatus();
}

// IP packet bytes of the largest frame, to check against the port MTU.
uint32_t LargestIpPacket(const FrameSpec& f) {
  const uint32_t l3 = f.encap.l3.ipv6 ? 40 : 20;
  switch (f.kind) {
    case FrameKind::kUdp: return f.size - 4 - 14 - (f.encap.vlan ? 4 : 0);
    case FrameKind::kRoce: {
      // BTH + the largest extensions (RETH + ImmDt) + payload + ICRC.
      const uint64_t payload = std::min<uint64_t>(f.roce.message, f.roce.pmtu);
      return static_cast<uint32_t>(l3 + 8 + 12 + 20 + payload + 3 + 4);
    }
    case FrameKind::kUet: {
      const uint32_t pds = 16, ses = 44;
      const uint64_t payload = std::min<uint64_t>(f.uet.message, f.uet.max_payload);
      return static_cast<uint32_t>(l3 + (f.uet.native_ip ? 4 : 8) + pds + ses + payload);
    }
    default: return 0;
  }
}

// The checks PlanMessage would make of a RoCE data message.
absl::Status CheckRoceMessage(const RoceSpec& r) {
  using Op = RoceSpec::Op;
  proto::roce::Verb verb;
  switch (r.op) {
    case Op::kWrite: verb = proto::roce::Verb::kWrite; break;
    case Op::kWriteImm: verb = proto::roce::Verb::kWriteImm; break;
    case Op::kSend: verb = proto::roce::Verb::kSend; break;
    case Op::kSendImm: verb = proto::roce::Verb::kSendImm; break;
    case Op::kReadResponse: verb = proto::roce::Verb::kReadResponse; break;
    default: return absl::OkStatus();  // one packet, no message to plan
  }
  auto m = proto::roce::PlanMessage(verb, r.transport, r.message, r.pmtu);
  return m.ok() ? absl::OkStatus() : m.status();
}

// "1030 B", or "'1 KiB' (1024 B)" when the plan wrote it otherwise.
std::string Shown(const std::string& text, uint64_t bytes) {
  const std::string plain = absl::StrFormat("%d", bytes);
  if (text.empty() || text == plain || text == plain + " B" || text == plain + "B") return plain + " B";
  return absl::StrFormat("'%s' (%d B)", text, bytes);
}

// Every packet of a message carries the test signature at the start of its
// payload (proto::kSignatureLen, 16 B): without it RX cannot count the packet
// for its flow (no sequence, no TX time), and the flow's figures would be
// wrong. A message of `message` bytes in packets of at most `unit` bytes
// (`unit_name`: "pmtu", "max_payload") has a short packet when it is shorter
// than the signature (its only packet) or its last packet is. `each`: what
// must carry it ("each packet of a message", "each READ response packet").
std::optional<std::string> ShortPacket(uint64_t message, uint64_t unit, const std::string& text,
                                       const char* unit_name, const char* each) {
  constexpr uint64_t kSig = proto::kSignatureLen;
  if (unit == 0 || message == 0) return std::nullopt;  // refused elsewhere (no packet at all)
  const uint64_t packets = (message + unit - 1) / unit;
  const uint64_t tail = message - (packets - 1) * unit;
  if (packets == 1 && message < kSig) {
    return absl::StrFormat("%s is one packet with %d B of payload: %s must carry at least the %d B test signature; "
                           "the smallest message that works is %d B",
                           Shown(text, message), message, each, kSig, kSig);
  }
  if (packets > 1 && tail < kSig) {
    const uint64_t whole = (packets - 1) * unit;
    return absl::StrFormat(
        "%s at %s %d is %d packets, the last (packet %d) with %d B of payload: %s must carry at least the %d B test "
        "signature; the smallest message from %d B up that works is %d B (or %d B: %d whole packet%s)",
        Shown(text, message), unit_name, unit, packets, packets, tail, each, kSig, message, whole + kSig, whole,
        packets - 1, packets == 2 ? "" : "s");
  }
  return std::nullopt;
}

}  // namespace

std::optional<FrameFault> FindFault(const FrameSpec& f, uint32_t port_mtu, const std::string& port_name,
                                    const FrameText& text) {
  if (f.kind == FrameKind::kRoce) {
    if (auto s = CheckRoceMessage(f.roce); !s.ok()) return FrameFault{"roce", std::string(s.message())};
    using Op = RoceSpec::Op;
    const Op op = f.roce.op;
    const bool data = op == Op::kWrite || op == Op::kWriteImm || op == Op::kSend || op == Op::kSendImm ||
                      op == Op::kReadResponse;
    // A READ's data travels in its responses, at the path MTU, each signed.
    if (data || op == Op::kReadRequest) {
      if (auto m = ShortPacket(f.roce.message, f.roce.pmtu, text.roce_message, "pmtu",
                               data ? "each packet of a message" : "each READ response packet")) {
        return FrameFault{"roce.message", *m};
      }
    }
  }
  if (f.kind == FrameKind::kUet && f.uet.packet == UetSpec::Packet::kRequest) {
    const uint64_t sig = proto::kSignatureLen;
    if (f.uet.max_payload < sig && f.uet.message > f.uet.max_payload) {
      return FrameFault{"uet.max_payload",
                        absl::StrFormat("%s gives each packet of a %d B message at most %d B of payload: each packet "
                                        "must carry at least the %d B test signature; the smallest max_payload that "
                                        "works is %d B",
                                        Shown(text.uet_max_payload, f.uet.max_payload), f.uet.message,
                                        f.uet.max_payload, sig, sig)};
    }
    if (auto m = ShortPacket(f.uet.message, f.uet.max_payload, text.uet_message, "max_payload",
                             "each packet of a message")) {
      return FrameFault{"uet.message", *m};
    }
  }
  if (f.kind == FrameKind::kUdp) {
    const uint32_t min = proto::EncapLen(f.encap) + proto::kSignatureLen + kEthFcsLen;
    if (f.size < min) {
      return FrameFault{"size", absl::StrFormat("%s is too small: headers and the %d B test signature need at "
                                                "least %d B (FCS included)",
                                                Shown(text.size, f.size), proto::kSignatureLen, min)};
    }
    if (f.size > kMaxFrameSize) {
      return FrameFault{"size", absl::StrFormat("%s is out of range; expected %d B to %d B", Shown(text.size, f.size),
                                                min, kMaxFrameSize)};
    }
  }
  const bool ip = f.kind == FrameKind::kUdp || f.kind == FrameKind::kRoce || f.kind == FrameKind::kUet;
  const uint32_t ip_bytes = LargestIpPacket(f);
  if (ip && ip_bytes > port_mtu) {
    const char* key = f.kind == FrameKind::kRoce ? "roce" : f.kind == FrameKind::kUet ? "uet" : "size";
    return FrameFault{
        key, absl::StrFormat("the largest frame carries %d B of IP packet, more than port '%s' MTU of %d B; raise "
                             "ports[].mtu or lower %s",
                             ip_bytes, port_name, port_mtu,
                             f.kind == FrameKind::kRoce  ? "roce.pmtu"
                             : f.kind == FrameKind::kUet ? "uet.max_payload"
                                                         : "the size")};
  }
  return std::nullopt;
}

absl::StatusOr<FrameSpec> ParseFrame(const Node& n, uint32_t port_mtu, const std::string& port_name) {
  FG_RETURN_IF_ERROR(n.CheckKeys({"size",         "l3",      "src_mac", "dst_mac",    "vlan",  "src_ip",  "dst_ip",
                                  "dscp",         "ecn",     "ttl",     "flow_label", "ip_id", "udp_src", "udp_dst",
                                  "udp_checksum", "entropy", "roce",    "uet",        "pfc",   "pause",   "lbn"}));
  FrameSpec f;
  proto::Encap& e = f.encap;
  int kinds = 0;
  for (auto [key, kind] :
       {std::pair{"roce", FrameKind::kRoce}, std::pair{"uet", FrameKind::kUet}, std::pair{"pfc", FrameKind::kPfc},
        std::pair{"pause", FrameKind::kPause}, std::pair{"lbn", FrameKind::kLbn}}) {
    if (Has(n, key)) {
      f.kind = kind;
      ++kinds;
    }
  }
  if (kinds > 1) return n.Error("a frame is one of roce, uet, pfc, pause or lbn, not several");
  const bool ip = f.kind == FrameKind::kUdp || f.kind == FrameKind::kRoce || f.kind == FrameKind::kUet;
  if (!ip) {
    for (const char* key : {"l3", "src_ip", "dst_ip", "dscp", "ecn", "ttl", "flow_label", "ip_id", "udp_src", "udp_dst",
                            "udp_checksum", "entropy", "vlan"}) {
      if (auto k = n.Optional(key)) {
        return k->Error(
            absl::StrFormat("'%s' does not apply to %s frames (they are not IP)", key, FrameKindName(f.kind)));
      }
    }
  }
  if (f.kind != FrameKind::kUdp && Has(n, "size")) {
    return n.At("size").Error(
        absl::StrFormat("the size of %s frames follows from their message and MTU; 'size' is for plain UDP frames",
                        FrameKindName(f.kind)));
  }

  static constexpr std::pair<const char*, bool> kL3[] = {{"ipv4", false}, {"ipv6", true}};
  FG_RETURN_IF_ERROR(Opt(n, "l3", e.l3.ipv6, [](const Node& x) { return Named(x, kL3); }));
  FG_RETURN_IF_ERROR(Opt(n, "src_mac", e.src_mac, Addr(ParseMac)));
  FG_RETURN_IF_ERROR(Opt(n, "dst_mac", e.dst_mac, Addr(ParseMac)));
  if (auto v = n.Optional("vlan")) {
    FG_RETURN_IF_ERROR(v->CheckKeys({"id", "pcp", "dei"}));
    proto::VlanTag tag;
    FG_ASSIGN_OR_RETURN(Node id, v->Required("id"));
    FG_ASSIGN_OR_RETURN(int64_t vid, id.Int(0, 4095));
    tag.id = static_cast<uint16_t>(vid);
    FG_RETURN_IF_ERROR(Opt(*v, "pcp", tag.pcp, IntIn(0, 7)));
    FG_RETURN_IF_ERROR(Opt(*v, "dei", tag.dei, [](const Node& d) { return d.Bool(); }));
    e.vlan = tag;
  }
  if (e.l3.ipv6) {
    FG_RETURN_IF_ERROR(Opt(n, "src_ip", e.l3.src6, Addr(ParseIpv6)));
    FG_RETURN_IF_ERROR(Opt(n, "dst_ip", e.l3.dst6, Addr(ParseIpv6)));
  } else {
    FG_RETURN_IF_ERROR(Opt(n, "src_ip", e.l3.src4, Addr(ParseIpv4)));
    FG_RETURN_IF_ERROR(Opt(n, "dst_ip", e.l3.dst4, Addr(ParseIpv4)));
    if (auto fl = n.Optional("flow_label")) return fl->Error("flow_label is an IPv6 field; set l3: ipv6");
  }
  // Per-kind defaults first, so explicit keys override them.
  if (f.kind == FrameKind::kRoce) {
    FG_RETURN_IF_ERROR(ParseRoce(*n.Optional("roce"), f.roce));
    e.udp_dst = proto::roce::kUdpPort;
    const bool cnp = f.roce.op == RoceSpec::Op::kCnp;
    e.l3.dscp = cnp ? 48 : 26;  // methodology draft: AF31 + ECT(0) for data; CNPs at high priority
    e.l3.ecn = cnp ? 0 : 2;
  } else if (f.kind == FrameKind::kUet) {
    FG_RETURN_IF_ERROR(ParseUet(*n.Optional("uet"), f.uet));
    e.udp_dst = f.uet.profile.udp_port;
    e.l3.dscp = f.uet.packet == UetSpec::Packet::kRequest ? f.uet.profile.dscp_trimmable : f.uet.profile.dscp_control;
    e.udp = !f.uet.native_ip;
    e.ip_protocol = f.uet.profile.native_ip_protocol;
    e.udp_checksum = f.uet.profile.udp_checksum;
  } else if (f.kind == FrameKind::kPfc) {
    FG_RETURN_IF_ERROR(ParsePfc(*n.Optional("pfc"), f.pfc));
  } else if (f.kind == FrameKind::kPause) {
    const Node p = *n.Optional("pause");
    FG_RETURN_IF_ERROR(p.CheckKeys({"quanta"}));
    f.pfc.quanta[0] = 0xFFFF;
    FG_RETURN_IF_ERROR(Opt(p, "quanta", f.pfc.quanta[0], IntIn(0, 0xFFFF)));
  } else if (f.kind == FrameKind::kLbn) {
    FG_RETURN_IF_ERROR(ParseLbn(*n.Optional("lbn"), f.lbn));
  }
  FG_RETURN_IF_ERROR(Opt(n, "dscp", e.l3.dscp, IntIn(0, 63)));
  FG_RETURN_IF_ERROR(Opt(n, "ecn", e.l3.ecn, IntIn(0, 3)));
  FG_RETURN_IF_ERROR(Opt(n, "ttl", e.l3.ttl, IntIn(1, 255)));
  FG_RETURN_IF_ERROR(Opt(n, "flow_label", e.l3.flow_label, IntIn(0, 0xFFFFF)));
  FG_RETURN_IF_ERROR(Opt(n, "ip_id", e.l3.ip_id, IntIn(0, 0xFFFF)));
  FG_RETURN_IF_ERROR(Opt(n, "udp_src", e.udp_src, IntIn(0, 65535)));
  FG_RETURN_IF_ERROR(Opt(n, "udp_dst", e.udp_dst, IntIn(0, 65535)));
  if (auto c = n.Optional("udp_checksum")) {
    static constexpr std::pair<const char*, bool> kCsum[] = {{"zero", false}, {"computed", true}};
    FG_ASSIGN_OR_RETURN(e.udp_checksum, Named(*c, kCsum));
    if (e.udp_checksum && f.kind == FrameKind::kRoce) {
      return c->Error("RoCEv2 frames carry a zero UDP checksum (the ICRC protects them)");
    }
  }
  if (auto en = n.Optional("entropy")) {
    FG_RETURN_IF_ERROR(ParseEntropy(*en, f.entropy, e.udp_src));
  }

  if (f.kind == FrameKind::kUdp) FG_RETURN_IF_ERROR(Opt(n, "size", f.size, BytesIn(1, kMaxFrameSize)));
  // A fault names the value's own place (roce.message) or, for a default,
  // the nearest one written (roce, else the frame), and quotes its text.
  auto under = [&n](const char* key) -> Node {
    const std::string k(key);
    const size_t dot = k.find('.');
    const Node first = n.At(k.substr(0, dot));
    return dot == std::string::npos ? first : first.At(k.substr(dot + 1));
  };
  FrameText text;
  text.size = under("size").text();
  if (auto r = n.Optional("roce")) text.roce_message = r->At("message").text();
  if (auto u = n.Optional("uet")) {
    text.uet_message = u->At("message").text();
    text.uet_max_payload = u->At("max_payload").text();
  }
  if (auto fault = FindFault(f, port_mtu, port_name, text)) return under(fault->key).Error(fault->message);
  return f;
}

}  // namespace fg::config::internal

namespace fg::config {

void DcqcnSpec::ScaleTo(double bps) {
  const double k = bps / preset_link_bps;
  scale_to_bps = bps;
  rate_ai_bps *= k;
  rate_hai_bps *= k;
  min_rate_bps *= k;
  auto slower = [k](int64_t ns) { return static_cast<int64_t>(std::llround(static_cast<double>(ns) / k)); };
  alpha_period_ns = slower(alpha_period_ns);
  timer_ns = slower(timer_ns);
  rate_reduce_period_ns = slower(rate_reduce_period_ns);
}

absl::Status CheckFrame(const FrameSpec& frame, uint32_t port_mtu, const std::string& port_name) {
  if (auto fault = internal::FindFault(frame, port_mtu, port_name)) {
    return absl::InvalidArgumentError(absl::StrFormat("frame.%s: %s", fault->key, fault->message));
  }
  return absl::OkStatus();
}

void SetMessageSize(FrameSpec& frame, uint64_t bytes) {
  switch (frame.kind) {
    case FrameKind::kRoce: frame.roce.message = bytes; break;
    case FrameKind::kUet: frame.uet.message = bytes; break;
    default: frame.size = static_cast<uint32_t>(std::min<uint64_t>(bytes, UINT32_MAX)); break;
  }
}

const char* FrameKindName(FrameKind k) {
  switch (k) {
    case FrameKind::kUdp: return "UDP";
    case FrameKind::kRoce: return "RoCEv2";
    case FrameKind::kUet: return "UET";
    case FrameKind::kPfc: return "PFC";
    case FrameKind::kPause: return "PAUSE";
    case FrameKind::kLbn: return "LBN";
  }
  return "?";
}

absl::StatusOr<DcqcnSpec> ParseDcqcn(const Node& n) { return internal::DcqcnFrom(n); }

}  // namespace fg::config
