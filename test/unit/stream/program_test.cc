#include "stream/program.h"

#include <gtest/gtest.h>

#include <set>

#include "config/plan.h"
#include "proto/checksum.h"
#include "proto/headers.h"
#include "proto/icrc.h"
#include "proto/roce.h"
#include "proto/uet.h"
#include "stream/stream.h"

namespace fg::stream {

// The generic Stamp as it was before stamp shapes (issue 13), testing each
// field's offset per frame: the reference the shaped ones must match.
struct ProgramPeer {
  static void ReferenceStamp(const Program& p, uint8_t* dst, const PacketKind& k, Cursor& c, const StampTime& t,
                             const FlowVars& v) {
  const uint64_t tx_ns = t.ns;
  if (k.t.signature_offset >= 0) {
    proto::Store24(dst + k.t.signature_offset + 3, v.flow_id);
    proto::StampSignature(dst + k.t.signature_offset, c.seq, tx_ns);
  }
  if (k.vary_addresses) [[unlikely]] {
    if (k.src_ip_off >= 0) proto::Store32(dst + k.src_ip_off, v.src_ip);
    if (k.dst_ip_off >= 0) proto::Store32(dst + k.dst_ip_off, v.dst_ip);
    if (k.ip_csum_off >= 0) proto::Store16(dst + k.ip_csum_off, v.ip_csum[k.index]);
  }
  if (k.key_off >= 0) {
    if (k.key_len == 3) {
      proto::Store24(dst + k.key_off, v.key & 0xFFFFFF);
    } else {
      proto::Store16(dst + k.key_off, static_cast<uint16_t>(v.key));
    }
  }
  if (k.psn_off >= 0) {
    if (k.psn_len == 3) {
      proto::Store24(dst + k.psn_off, c.psn);
    } else {
      proto::Store32(dst + k.psn_off, c.psn);
    }
  }
  if (k.msn_off >= 0) proto::Store24(dst + k.msn_off, static_cast<uint32_t>(c.message) & 0xFFFFFF);
  if (k.msg_id_off >= 0) proto::Store16(dst + k.msg_id_off, static_cast<uint16_t>(c.message));
  if (k.msg_offset_off >= 0) proto::Store32(dst + k.msg_offset_off, c.pos * p.msg_offset_unit_);
  if (k.syn_off >= 0) {
    proto::Store16(dst + k.syn_off, static_cast<uint16_t>(k.syn_high | ((c.psn - p.psn_start_) & 0x0FFF)));
  }
  uint16_t entropy = 0;
  if (k.entropy_off >= 0) {
    uint32_t e = c.entropy;
    if (p.entropy_random_) {  // xorshift32, scaled to K by a multiply: no division
      c.rng ^= c.rng << 13;
      c.rng ^= c.rng >> 17;
      c.rng ^= c.rng << 5;
      e = static_cast<uint32_t>((uint64_t{c.rng} * p.entropy_count_) >> 32);
    } else if (p.flowlet_gap_ns_ != 0) {  // a new value after a pause longer than the gap
      if (c.last_ns != 0 && tx_ns - c.last_ns > p.flowlet_gap_ns_ && ++c.flowlet == p.entropy_count_) c.flowlet = 0;
      c.last_ns = tx_ns;
      e = c.flowlet;
    }
    entropy = static_cast<uint16_t>(v.entropy_base + e);
    proto::Store16(dst + k.entropy_off, entropy);
  }
  if (k.icrc_on) {
    // The ICRC from the values just written (no read-back of the frame).
    uint32_t x = k.icrc.base() ^ v.icrc[k.index] ^ t.icrc[k.index] ^ k.icrc_xor;
    if (k.icrc_seq >= 0) x ^= k.icrc.Field<4>(k.icrc_seq, c.seq);
    if (k.icrc_psn >= 0) x ^= k.icrc.Field<3>(k.icrc_psn, c.psn);
    if (k.icrc_msn >= 0) x ^= k.icrc.Field<3>(k.icrc_msn, c.message & 0xFFFFFF);
    if (k.icrc_entropy >= 0) x ^= k.icrc.Field<2>(k.icrc_entropy, entropy);
    proto::StoreIcrc(dst + k.t.icrc_offset, x);
  }
  if (p.udp_checksum_) proto::UpdateUdpChecksum(dst, k.t);
  // Advance: no division, no modulo.
  ++c.seq;
  c.psn = (c.psn + p.psn_step_) & p.psn_mask_;
  if (++c.entropy == p.entropy_count_) c.entropy = 0;
  if (++c.pos == p.msg_packets_) {
    c.pos = 0;
    ++c.message;
  }
  }
};

namespace {

config::FrameSpec Frame(const std::string& yaml_frame) {
  auto plan = config::ParsePlan("t.yaml",
                                "ports: [{name: p, mtu: 9000}]\nstreams:\n  - name: s\n    rate: 1 kpps\n"
                                "    frame: " +
                                    yaml_frame + "\n");
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan->streams[0].frame;
}

uint32_t FullIcrc(const std::vector<uint8_t>& f, const PacketKind& k) {
  return proto::IcrcFull(f.data(), proto::IcrcLayout{k.t.l3_offset, k.t.ipv6, static_cast<uint32_t>(k.t.icrc_offset)});
}

TEST(Program, RoceWriteOfOneMegabyteCyclesFirstMiddleLastWithValidIcrc) {
  auto p = Program::Compile(Frame("{entropy: {mode: round_robin, values: 4}, roce: {op: WRITE, message: 1 MiB, "
                                  "pmtu: 4096, dest_qp: 0x12, psn: 0xFFFFFE}}"),
                            /*flow_id=*/7);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->packets_per_message(), 256u);
  Cursor c = p->Start();
  std::vector<uint8_t> f(p->buffer_len());
  for (uint32_t i = 0; i < 258; ++i) {
    const uint32_t len = p->Emit(f.data(), c, /*tx_ns=*/1000 + i);
    const PacketKind& k = p->kinds()[i % 256 == 0 ? 0 : (i % 256 == 255 ? 2 : 1)];
    ASSERT_EQ(len, k.t.bytes.size());
    auto bth = proto::roce::ParseBth(std::span(f).subspan(k.t.transport_offset));
    ASSERT_TRUE(bth);
    const uint8_t want_op = i % 256 == 0 ? 0x06 : (i % 256 == 255 ? 0x08 : 0x07);
    EXPECT_EQ(bth->opcode, want_op) << i;
    EXPECT_EQ(bth->psn, (0xFFFFFEu + i) & 0xFFFFFF) << i;  // wraps modulo 2^24
    EXPECT_EQ(bth->dest_qp, 0x12u);
    EXPECT_EQ(bth->ack_req, i % 256 == 255);
    EXPECT_EQ(proto::LoadIcrc(&f[k.t.icrc_offset]), FullIcrc(f, k)) << i;
    const int sig = proto::FindSignatureOffset(f.data(), len);
    ASSERT_EQ(sig, k.t.signature_offset);
    const proto::Signature s = proto::ReadSignature(&f[sig]);
    EXPECT_EQ(s.flow_id, 7u);
    EXPECT_EQ(s.seq, i);
    EXPECT_EQ(s.tx_ns, 1000u + i);
    EXPECT_EQ(proto::Load16(&f[k.t.l4_offset]), 49152 + i % 4);  // entropy round-robin
  }
  EXPECT_EQ(c.message, 1u);
  EXPECT_NEAR(p->mean_frame_size(), 14 + 20 + 8 + 12 + 4096 + 4 + 4 + 16.0 / 256, 1e-9);
}

// Go-back-N resends from a sequence: Seek must put the cursor exactly where
// sending in order would have, PSN wrap, message place and round-robin
// entropy included; BytesOfFirst counts those packets' frame bytes.
TEST(Program, SeekLandsWhereSendingInOrderWouldAndBytesOfFirstCountsThePackets) {
  auto p = Program::Compile(Frame("{entropy: {mode: round_robin, values: 3}, roce: {op: WRITE, message: 5000, "
                                  "pmtu: 2048, psn: 0xFFFFFE}}"),
                            0);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->packets_per_message(), 3u);  // 2048 + 2048 + 904
  std::vector<uint8_t> in_order(p->buffer_len()), sought(p->buffer_len());
  Cursor c = p->Start();
  uint64_t bytes = 0;
  for (uint32_t n = 0; n < 11; ++n) {
    EXPECT_EQ(p->BytesOfFirst(n), bytes) << n;
    Cursor s = p->Start();
    s.seq = 999;  // anywhere: Seek sets every field that follows from the sequence
    p->Seek(s, n);
    EXPECT_EQ(s.seq, c.seq);
    EXPECT_EQ(s.psn, c.psn) << n;
    EXPECT_EQ(s.pos, c.pos) << n;
    EXPECT_EQ(s.message, c.message) << n;
    EXPECT_EQ(s.entropy, c.entropy) << n;
    const uint32_t len = p->Emit(in_order.data(), c, 1000 + n);
    ASSERT_EQ(p->Emit(sought.data(), s, 1000 + n), len);
    EXPECT_EQ(std::vector<uint8_t>(in_order.begin(), in_order.begin() + len),
              std::vector<uint8_t>(sought.begin(), sought.begin() + len))
        << n;
    bytes += len + 4;  // FCS
  }
  EXPECT_EQ(c.psn, (0xFFFFFEu + 11) & 0xFFFFFF);  // wrapped
}

TEST(Program, BadIcrcStaysBadOnEveryPacket) {
  auto p = Program::Compile(Frame("{roce: {op: SEND, message: 3000, pmtu: 1024, icrc: bad}}"), 0);
  ASSERT_TRUE(p.ok()) << p.status();
  Cursor c = p->Start();
  std::vector<uint8_t> f(p->buffer_len());
  for (int i = 0; i < 6; ++i) {
    p->Emit(f.data(), c, i);
    const PacketKind& k = p->kinds()[i % 3];
    EXPECT_EQ(proto::LoadIcrc(&f[k.t.icrc_offset]), ~FullIcrc(f, k)) << i;
  }
}

TEST(Program, CnpAckNakAndReadRequest) {
  auto cnp = Program::Compile(Frame("{roce: {op: CNP, dest_qp: 0xD2}}"), 0);
  ASSERT_TRUE(cnp.ok());
  EXPECT_FALSE(cnp->signed_frames());
  EXPECT_EQ(cnp->kinds()[0].t.frame_size(), 78u);
  EXPECT_EQ(cnp->kinds()[0].t.bytes[15], 48 << 2);  // CNPs at DSCP 48

  auto nak = Program::Compile(Frame("{roce: {op: NAK, nak_code: REMOTE_ACCESS_ERROR}}"), 0);
  ASSERT_TRUE(nak.ok());
  std::vector<uint8_t> f(nak->buffer_len());
  Cursor c = nak->Start();
  nak->Emit(f.data(), c, 0);
  nak->Emit(f.data(), c, 0);
  const PacketKind& k = nak->kinds()[0];
  auto aeth = proto::roce::ParseAeth(std::span(f).subspan(k.t.transport_offset + 12));
  EXPECT_EQ(aeth->syndrome, 0x62);
  EXPECT_EQ(aeth->msn, 1u);  // second ACK/NAK: message sequence number 1
  EXPECT_EQ(proto::LoadIcrc(&f[k.t.icrc_offset]), FullIcrc(f, k));

  auto rr = Program::Compile(Frame("{roce: {op: READ_REQUEST, message: 10000, pmtu: 1024}}"), 0);
  ASSERT_TRUE(rr.ok());
  c = rr->Start();
  f.resize(rr->buffer_len());
  rr->Emit(f.data(), c, 0);
  EXPECT_EQ(c.psn, 10u);  // the response will use 10 PSNs
}

TEST(Program, UetRodSprayStampsPsnOffsetsAndMessageIds) {
  auto p = Program::Compile(Frame("{entropy: {mode: round_robin, values: 8}, uet: {service: ROD, message: 10000, "
                                  "max_payload: 4096, dpdcid: 5, psn: 0xFFFFFFFF}}"),
                            3);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->packets_per_message(), 3u);
  const proto::uet::UetProfile prof;
  Cursor c = p->Start();
  std::vector<uint8_t> f(p->buffer_len());
  for (uint32_t i = 0; i < 6; ++i) {
    const uint32_t len = p->Emit(f.data(), c, 0);
    const PacketKind& k = p->kinds()[i % 3];
    auto pds = proto::uet::ParsePds(std::span(f).subspan(k.t.transport_offset), prof);
    ASSERT_TRUE(pds);
    EXPECT_EQ(pds->type, proto::uet::PdsType::kRodReq);
    EXPECT_EQ(pds->psn, 0xFFFFFFFFu + i);  // 32-bit PSN wraps
    EXPECT_EQ(pds->dpdcid, 5);
    EXPECT_EQ((pds->flags & proto::uet::kReqAr) != 0, i % 3 == 2);
    auto ses = proto::uet::ParseSesRequest(std::span(f).subspan(k.t.transport_offset + 12),
                                           proto::uet::NextHdr::kReqStd, prof);
    ASSERT_TRUE(ses);
    EXPECT_EQ(ses->message_id, i / 3);
    EXPECT_EQ(ses->flags & 3, i % 3 == 0 ? 1 : (i % 3 == 2 ? 2 : 0));  // SOM, -, EOM
    if (i % 3 != 0) {
      EXPECT_EQ(ses->message_offset, (i % 3) * 4096u);
    }
    EXPECT_EQ(proto::Load16(&f[k.t.l4_offset]), 49152 + i % 8);
    EXPECT_GE(proto::FindSignatureOffset(f.data(), len), 0);
  }
}

TEST(Program, UetSynWithoutPdcCountsPsnOffset) {
  auto p = Program::Compile(Frame("{uet: {service: RUD, message: 4096, max_payload: 4096, psn: 100}}"), 0);
  ASSERT_TRUE(p.ok());
  Cursor c = p->Start();
  std::vector<uint8_t> f(p->buffer_len());
  for (uint32_t i = 0; i < 3; ++i) {
    p->Emit(f.data(), c, 0);
    auto pds = proto::uet::ParsePds(std::span(f).subspan(p->kinds()[0].t.transport_offset), proto::uet::UetProfile{});
    EXPECT_TRUE(pds->flags & proto::uet::kReqSyn);
    EXPECT_EQ(pds->psn - pds->psn_offset, 100u);  // Start_PSN stays the first PSN
  }
}

TEST(Program, ComputedUdpChecksumStaysValid) {
  auto p = Program::Compile(Frame("{l3: ipv6, size: 200, udp_checksum: computed}"), 0);
  ASSERT_TRUE(p.ok());
  Cursor c = p->Start();
  std::vector<uint8_t> f(p->buffer_len());
  for (int i = 0; i < 3; ++i) {
    const uint32_t len = p->Emit(f.data(), c, 12345 + i);
    const PacketKind& k = p->kinds()[0];
    auto ip = proto::ParseIpv6(std::span(f).subspan(k.t.l3_offset));
    std::vector<uint8_t> seg(f.begin() + k.t.l4_offset, f.begin() + len);
    const uint16_t stored = proto::Load16(&seg[6]);
    seg[6] = seg[7] = 0;
    EXPECT_EQ(proto::UdpChecksumIpv6(ip->src, ip->dst, seg), stored);
  }
}

// Feedback finds its flow by QP at the port it arrives on: two closed-loop
// streams sharing QPs there are refused (naming both and a free QP); apart,
// or open loop, they compile.
TEST(Compile, ClosedLoopStreamsSharingQpsOnAPortAreRefused) {
  auto plan_with = [](const std::string& b_frame, const std::string& respond) {
    return config::ParsePlan("q.yaml", "ports: [{name: a}, {name: b" + respond + "}]\n"
                             "streams:\n"
                             "  - {name: x, port: a, rx_port: b, rate: 1 kpps, flows: 4, frame: {roce: {op: WRITE}}}\n"
                             "  - {name: y, port: a, rx_port: b, rate: 1 kpps, flows: 4, frame: " + b_frame + "}\n");
  };
  auto shared = plan_with("{roce: {dest_qp: 0x102}}", ", respond: true");
  ASSERT_TRUE(shared.ok()) << shared.status();
  auto c = Compile(*shared, {10e9, 10e9});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(std::string(c.status().message()),
            "q.yaml:4:84: streams[1].frame.roce.dest_qp: stream y's QPs 0x102..0x105 overlap stream x's (0x100..0x103) on "
            "port 'a': their feedback (ACKs, NAKs, CNPs) could not be told apart; give one of them other QPs (e.g. "
            "dest_qp: 0x104)");
  auto apart = plan_with("{roce: {dest_qp: 0x104}}", ", respond: true");
  ASSERT_TRUE(apart.ok());
  EXPECT_TRUE(Compile(*apart, {10e9, 10e9}).ok());
  auto open = plan_with("{roce: {dest_qp: 0x102}}", "");
  ASSERT_TRUE(open.ok());
  EXPECT_TRUE(Compile(*open, {10e9, 10e9}).ok());
}

// Issue 26: a check made once the line rate is known names the value's line
// and column and quotes it as the plan writes it, not as fabricgen reads it.
TEST(Compile, ErrorsAfterParsingNameTheColumnAndTheValueAsWritten) {
  auto compile = [](const std::string& yaml, std::vector<double> lines) {
    auto plan = config::ParsePlan("p.yaml", yaml);
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (!plan.ok()) return std::string();
    auto c = Compile(*plan, lines);
    return c.ok() ? std::string("ok") : std::string(c.status().message());
  };
  EXPECT_EQ(compile("streams: [{name: s, rate: 12 Gbps}]\n", {10e9}),
            "p.yaml:1:27: streams[0].rate: '12 Gbps' of 64.0 B frames is 15.750 Gbit/s at L1, above the 10.000 "
            "Gbit/s line rate of port 'loop0'");
  EXPECT_EQ(compile("ports: [{name: p}]\nstreams: [{name: s, rate: 50 %}]\n", {0.0}),
            "p.yaml:2:27: streams[0].rate: '50 %' needs the line rate of port 'p', which reports no link speed; give "
            "the rate in pps or bit/s");
  EXPECT_EQ(compile("streams: [{name: s, rate: 1 kpps, flows: 8, frame: {roce: {dest_qp: 0xFFFFFC}}}]\n", {10e9}),
            "p.yaml:1:42: streams[0].flows: 8 flows from destination QP 16777212 run past 16777215; lower the first "
            "key or the flow count (RoCEv2 QPs allow 16,777,216 flows)");
  // DCQCN's floor above the port's line: a QP could never be cut below it.
  EXPECT_EQ(compile("streams: [{name: s, rate: 1 kpps, frame: {roce: {dcqcn: {min_rate: 1.6 Tbps}}}}]\n", {10e9}),
            "p.yaml:1:68: streams[0].frame.roce.dcqcn.min_rate: min_rate '1.6 Tbps' is above the 10.000 Gbit/s "
            "line rate of port 'loop0': a QP could never be cut below it; lower min_rate");
  EXPECT_EQ(compile("streams: [{name: s, rate: 1 kpps, frame: {roce: {dcqcn: {min_rate: 1.6 Tbps}}}}]\n", {2e12}),
            "ok");
}

// connect: cm needs a far end that answers the REQs.
TEST(Compile, ConnectCmNeedsARespondingRxPort) {
  auto plan = config::ParsePlan("c.yaml", "ports: [{name: a}, {name: b}]\n"
                                "streams: [{name: s, port: a, rx_port: b, rate: 1 kpps,\n"
                                "           frame: {roce: {op: WRITE, connect: cm}}}]\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto c = Compile(*plan, {10e9, 10e9});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(std::string(c.status().message()),
            "c.yaml:3:47: streams[0].frame.roce.connect: cm needs its rx_port 'b' to respond (ports[].respond): that port "
            "answers each REQ as the QP's passive side");
}

// A READ received on a responding port compiles to two streams: its
// requests and, after every plan stream, their responses (back from the
// responder, signed, the same QPs, flow ids of their own). The plan's rate
// is the READ data's: 1 Gbit/s of 4-packet responses; the requests go at a
// quarter of their packet rate.
TEST(Compile, AnAnsweredReadIsItsRequestsAndTheirResponses) {
  auto plan = config::ParsePlan("r.yaml", "ports: [{name: a, mtu: 4200}, {name: b, mtu: 4200, respond: true}]\n"
                                "streams:\n"
                                "  - {name: rd, port: a, rx_port: b, rate: 1 Gbps, flows: 3,\n"
                                "     frame: {roce: {op: READ_REQUEST, message: 16 KiB, pmtu: 4096, dest_qp: 0x40}}}\n"
                                "  - {name: w, port: a, rx_port: b, rate: 1 kpps, frame: {roce: {op: WRITE, dest_qp: 0x80}}}\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto c = Compile(*plan, {10e9, 10e9});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 3u);
  const CompiledStream &q = (*c)[0], &w = (*c)[1], &r = (*c)[2];
  EXPECT_EQ(r.name, "rd.responses");
  EXPECT_EQ(r.index, 2u);
  EXPECT_EQ(q.read_responses, 2);
  EXPECT_EQ(r.read_requests, 0);
  EXPECT_FALSE(w.read_request() || w.read_response());
  EXPECT_EQ(q.read_packets, 4u);
  EXPECT_EQ(r.read_packets, 4u);
  EXPECT_EQ(r.flows, 3u);
  EXPECT_EQ(r.flow_id, 4u);  // after every plan stream's (rd 0..2, w 3)
  EXPECT_EQ(r.tx_port, 1u);
  EXPECT_EQ(r.rx_port, 0u);
  EXPECT_EQ(r.program.key_base(), 0x40u);  // the requests' QPs
  EXPECT_TRUE(r.program.signed_frames());
  EXPECT_FALSE(q.program.signed_frames());  // a READ request has no payload
  ASSERT_NE(q.answers, nullptr);
  EXPECT_TRUE(q.answers->read);
  EXPECT_EQ(q.answers->read_bytes, 16384u);
  EXPECT_EQ(r.answers, nullptr);
  ASSERT_EQ(r.program.kinds().size(), 3u);
  EXPECT_EQ(r.program.kinds()[0].t.bytes[42], 0x0D);  // READ_RESPONSE FIRST
  EXPECT_EQ(r.program.kinds()[1].t.bytes[42], 0x0E);  // MIDDLE
  EXPECT_EQ(r.program.kinds()[2].t.bytes[42], 0x0F);  // LAST
  EXPECT_DOUBLE_EQ(r.pps, 1e9 / (8 * r.frame_size));
  EXPECT_DOUBLE_EQ(q.pps, r.pps / 4);
  EXPECT_EQ(r.count, 0u);
}

TEST(Compile, AReadIsRcPacedAndItsResponsesFitTheResponderPort) {
  auto compile = [](const std::string& ports, const std::string& extra) {
    auto plan = config::ParsePlan("r.yaml", "ports: " + ports + "\n"
                                  "streams:\n"
                                  "  - {name: rd, port: a, rx_port: b, " + extra + ",\n"
                                  "     frame: {roce: {op: READ_REQUEST, message: 16 KiB, pmtu: 4096}}}\n");
    EXPECT_TRUE(plan.ok()) << plan.status();
    auto c = Compile(*plan, {10e9, 10e9});
    return c.ok() ? std::string("ok") : std::string(c.status().message());
  };
  const std::string both = "[{name: a, mtu: 4200}, {name: b, mtu: 4200, respond: true}]";
  EXPECT_EQ(compile(both, "rate: 1 Gbps"), "ok");
  EXPECT_EQ(compile(both, "burst: {frames: 8, gap: 1 ms}"),
            "r.yaml:3:44: streams[0].burst: a READ's data is sent by the responder as its requests arrive; give it a "
            "rate, not a burst");
  EXPECT_EQ(compile("[{name: a, mtu: 4200}, {name: b, respond: true}]", "rate: 1 Gbps"),
            "r.yaml:4:13: streams[0].frame: its READ responses, sent back from port 'b': frame.roce: the largest frame "
            "carries 4163 B of IP packet, more than port 'b' MTU of 1500 B; raise ports[].mtu or lower roce.pmtu");
  auto dcqcn = config::ParsePlan("d.yaml", "ports: " + both + "\n"
                                 "streams: [{name: rd, port: a, rx_port: b, rate: 1 Gbps,\n"
                                 "           frame: {roce: {op: READ_REQUEST, message: 16 KiB, dcqcn: paper}}}]\n");
  ASSERT_TRUE(dcqcn.ok()) << dcqcn.status();
  auto refused = Compile(*dcqcn, {10e9, 10e9});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(std::string(refused.status().message()).substr(0, 45), "d.yaml:3:69: streams[0].frame.roce.dcqcn: a R");
  // Not answered: plain READ requests, open loop, at the plan's rate of their own frames.
  EXPECT_EQ(compile("[{name: a, mtu: 4200}, {name: b, mtu: 4200}]", "rate: 1 Gbps"), "ok");
}

// A go-back-N timeout shorter than twice the time a QP's packet waits for
// its ACK at the plan's rate is refused: 1 kpps over 4 QPs, an ACK every 16
// packets (ack_req never): the first of 16 waits 15 / 250 pps = 60 ms;
// 100 ms is too short, 200 ms is not. An ACK per packet never waits.
TEST(Compile, AGoBackNTimeoutShorterThanTheAckSpacingIsRefused) {
  auto compile = [](const std::string& timeout) {
    auto plan = config::ParsePlan("t.yaml", "ports: [{name: a}, {name: b, respond: {ack_every: 16}}]\n"
                                  "streams:\n"
                                  "  - {name: s, port: a, rx_port: b, rate: 1 kpps, flows: 4,\n"
                                  "     frame: {roce: {op: WRITE, message: 1024, pmtu: 1024, ack_req: never,\n"
                                  "                    retransmit: {timeout: " + timeout + "}}}}\n");
    EXPECT_TRUE(plan.ok()) << plan.status();
    auto c = Compile(*plan, {10e9, 10e9});
    return c.ok() ? std::string("ok") : std::string(c.status().message());
  };
  EXPECT_EQ(compile("100 ms"),
            "t.yaml:5:43: streams[0].frame.roce.retransmit.timeout: timeout '100 ms' is shorter than twice the 60.000 ms a "
            "QP's packet waits for its ACK (one per 16 packets at 250.000 pps per QP): each QP would go back before "
            "its ACK came; raise the timeout (to 120.000 ms or more) or the QP's rate, or lower "
            "ports[].respond.ack_every");
  EXPECT_EQ(compile("200 ms"), "ok");
}

// The responder knows a READ request by its QP alone: two READs into one
// responding port with overlapping QPs are refused.
TEST(Compile, ReadsSharingQpsIntoOnePortAreRefused) {
  auto plan = config::ParsePlan("o.yaml", "ports: [{name: a}, {name: b}, {name: c, respond: true}]\n"
                                "streams:\n"
                                "  - {name: x, port: a, rx_port: c, rate: 1 Mbps, frame: {roce: {op: READ_REQUEST}}}\n"
                                "  - {name: y, port: b, rx_port: c, rate: 1 Mbps, frame: {roce: {op: READ_REQUEST}}}\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto c = Compile(*plan, {10e9, 10e9, 10e9});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(std::string(c.status().message()),
            "o.yaml:4:64: streams[1].frame.roce.dest_qp: stream y's QPs 0x100..0x100 overlap stream x's (0x100..0x100) "
            "on port 'c': their feedback (ACKs, NAKs, CNPs) could not be told apart; give one of them other QPs (e.g. "
            "dest_qp: 0x101) (a READ's requests are known by their QP too)");
}

TEST(Program, FlowsGetConsecutiveKeysAndTheirOwnEntropy) {
  auto p = Program::Compile(Frame("{roce: {op: SEND, message: 64, dest_qp: 0x100}}"), 10);
  ASSERT_TRUE(p.ok());
  std::vector<uint8_t> f(p->buffer_len());
  for (uint32_t flow : {0u, 5u, 16383u, 16384u}) {
    const FlowVars v = p->Flow(10, flow);
    Cursor c = p->Start();
    p->Emit(f.data(), c, 0, v);
    const PacketKind& k = p->kinds()[0];
    EXPECT_EQ(proto::Load24(&f[k.t.transport_offset + 5]), 0x100 + flow);          // QP
    EXPECT_EQ(proto::Load16(&f[k.t.l4_offset]), 49152 + flow % 16384);             // fixed entropy wraps
    EXPECT_EQ(proto::ReadSignature(&f[k.t.signature_offset]).flow_id, 10 + flow);  // flow id
    EXPECT_EQ(proto::LoadIcrc(&f[k.t.icrc_offset]), FullIcrc(f, k));
  }
  auto r = Program::Compile(Frame("{entropy: {mode: random, values: 8}, roce: {op: SEND, message: 64}}"), 0);
  ASSERT_TRUE(r.ok());
  Cursor c = r->Start();
  std::set<uint16_t> seen;
  for (int i = 0; i < 200; ++i) {
    r->Emit(f.data(), c, 0);
    const uint16_t sport = proto::Load16(&f[r->kinds()[0].t.l4_offset]);
    EXPECT_GE(sport, 49152);
    EXPECT_LT(sport, 49152 + 8);
    seen.insert(sport);
    EXPECT_EQ(proto::LoadIcrc(&f[r->kinds()[0].t.icrc_offset]), FullIcrc(f, r->kinds()[0]));
  }
  EXPECT_EQ(seen.size(), 8u);
}

// Address ranges (stream key `vary`): flow i takes src/dst + i; the IPv4
// header checksum and the ICRC stay valid for every flow and packet kind.
TEST(Program, AddressRangesGiveEachFlowItsOwnAddresses) {
  for (const std::string l3 : {"ipv4", "ipv6"}) {
    auto plan = config::ParsePlan("t.yaml",
                                  "ports: [{name: p, mtu: 9000}]\nstreams:\n  - name: s\n    rate: 1 kpps\n"
                                  "    flows: 300\n    vary: [src_ip, dst_ip]\n"
                                  "    frame: {l3: " +
                                      l3 + ", roce: {op: WRITE, message: 3000, pmtu: 1024}}\n");
    ASSERT_TRUE(plan.ok()) << plan.status();
    auto p = Program::Compile(plan->streams[0].frame, 0);
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_EQ(p->packets_per_message(), 3u);
    std::vector<uint8_t> f(p->buffer_len());
    for (uint32_t flow : {0u, 1u, 255u, 299u}) {
      const FlowVars v = p->Flow(0, flow);
      Cursor c = p->Start();
      for (int pkt = 0; pkt < 3; ++pkt) {  // FIRST, MIDDLE, LAST
        const PacketKind& k = p->KindAt(c);
        p->Emit(f.data(), c, 1000 + pkt, v);
        const uint8_t* ip = &f[k.t.l3_offset];
        if (l3 == "ipv4") {
          EXPECT_EQ(proto::Load32(ip + 12), 0xC6120001u + flow);  // 198.18.0.1 + flow
          EXPECT_EQ(proto::Load32(ip + 16), 0xC6130001u + flow);  // 198.19.0.1 + flow
          EXPECT_EQ(proto::InternetChecksum(ip, 20), 0) << "flow " << flow << " packet " << pkt;
        } else {
          EXPECT_EQ(proto::Load32(ip + 8 + 12), 1u + flow);  // 2001:db8::1 + flow
          EXPECT_EQ(proto::Load32(ip + 24 + 12), 2u + flow);
          EXPECT_EQ(proto::Load32(ip + 8), 0x20010db8u);  // the prefix stays
        }
        EXPECT_EQ(proto::LoadIcrc(&f[k.t.icrc_offset]), FullIcrc(f, k)) << l3 << " flow " << flow << " pkt " << pkt;
        EXPECT_EQ(proto::LoadIcrc(&f[k.t.icrc_offset]),
                  proto::IcrcReference(
                      f.data(), proto::IcrcLayout{k.t.l3_offset, k.t.ipv6, static_cast<uint32_t>(k.t.icrc_offset)}));
      }
    }
  }
  auto bad = config::ParsePlan("t.yaml", "streams:\n  - {name: s, rate: 1 kpps, vary: [src_mac]}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("streams[0].vary[0]: 'src_mac' is not allowed"), std::string::npos)
      << bad.status();
}

TEST(Program, FlowletEntropyChangesOnlyAfterAGap) {
  auto p =
      Program::Compile(Frame("{entropy: {mode: flowlet, values: 4, gap: 10 us}, roce: {op: SEND, message: 64}}"), 0);
  ASSERT_TRUE(p.ok()) << p.status();
  Cursor c = p->Start();
  std::vector<uint8_t> f(p->buffer_len());
  auto sport_at = [&](uint64_t t) {
    p->Emit(f.data(), c, t);
    EXPECT_EQ(proto::LoadIcrc(&f[p->kinds()[0].t.icrc_offset]), FullIcrc(f, p->kinds()[0]));
    return proto::Load16(&f[p->kinds()[0].t.l4_offset]);
  };
  EXPECT_EQ(sport_at(1'000'000), 49152);
  EXPECT_EQ(sport_at(1'005'000), 49152);  // 5 us later: same flowlet
  EXPECT_EQ(sport_at(1'014'000), 49152);  // 9 us later: same flowlet
  EXPECT_EQ(sport_at(1'030'000), 49153);  // 16 us pause: next value
  EXPECT_EQ(sport_at(1'031'000), 49153);
  for (uint64_t t = 1'100'000; t < 1'400'000; t += 100'000) sport_at(t);  // three more flowlets: wraps
  EXPECT_EQ(sport_at(1'500'000), 49153);                                  // 49154, 49155, 49152, then 49153
}

TEST(Program, PfcAndLbnFramesAreFixed) {
  auto pfc = Program::Compile(Frame("{pfc: {priorities: [3]}}"), 0);
  ASSERT_TRUE(pfc.ok());
  EXPECT_EQ(pfc->kinds()[0].t.frame_size(), 64u);
  EXPECT_EQ(pfc->kinds()[0].t.bytes[12], 0x88);
  auto lbn = Program::Compile(Frame("{lbn: {levels: '111000000000'}}"), 0);
  ASSERT_TRUE(lbn.ok());
  EXPECT_EQ(lbn->kinds()[0].t.bytes[18], 0xE0);  // Leaf1 = 111 leads the bitmap
}

// TX stamps through Stamp<shape> for the common shapes (tx.cc's Fill, a
// collective's GenerateCell: kRoceCell) and
// Stamp<kAnyShape> for the others: frame by frame the same bytes as the
// reference (the offset-testing Stamp of before), and the shapes expected.
TEST(Program, AFixedShapeStampsExactlyWhatTheGenericStampDoes) {
  struct Case {
    const char* frame;
    const char* stream_keys;  // more of the stream's keys (vary)
    uint32_t want_shape;      // 0: not one of the specialised shapes
  };
  const Case cases[] = {
      {"{roce: {op: SEND, message: 16, dest_qp: 1}}", "", shape::kRoceEntropy},
      {"{roce: {op: SEND, message: 16, pmtu: 4096}}", "", shape::kRoceEntropy},
      {"{roce: {op: WRITE, message: 64 KiB, pmtu: 1024, dest_qp: 9, psn: 0xFFFFF0}}", "", shape::kRoceEntropy},
      {"{entropy: {mode: round_robin, values: 8}, roce: {op: WRITE, message: 8 KiB, pmtu: 4096}}", "",
       shape::kRoceSprayed},
      {"{entropy: {mode: random, values: 16}, l3: ipv6, roce: {op: SEND, message: 100}}", "", shape::kRoceSprayed},
      {"{roce: {op: SEND, message: 16}}", ", vary: [src_ip, dst_ip]", shape::kRoceCell},
      {"{roce: {op: WRITE, message: 64 KiB, pmtu: 1024}}", ", vary: [dst_ip]", shape::kRoceCell},
      {"{l3: ipv6, roce: {op: WRITE, message: 8 KiB, pmtu: 1024}}", ", vary: [src_ip, dst_ip]", shape::kRoceCell},
      {"{entropy: {mode: round_robin, values: 8}, roce: {op: WRITE, message: 8 KiB, pmtu: 1024}}",
       ", vary: [src_ip, dst_ip]", shape::kRoceCellSprayed},
      {"{uet: {service: ROD, message: 16 KiB, max_payload: 4096}}", "", 0},
      {"{udp_checksum: computed, uet: {service: ROD, message: 100}}", "", 0},
      {"{size: 128, udp_checksum: computed}", ", vary: [dst_ip]", 0},
      {"{size: 128}", "", 0},
      {"{roce: {op: ACK, dest_qp: 7}}", "", shape::kRoceAnswer},
      {"{l3: ipv6, roce: {op: NAK, dest_qp: 7}}", "", shape::kRoceAnswer},
      {"{roce: {op: ACK, dest_qp: 7}}", ", vary: [src_ip, dst_ip]", shape::kRoceCellAnswer},
      {"{l3: ipv6, roce: {op: ACK, dest_qp: 7}}", ", vary: [dst_ip]", shape::kRoceCellAnswer},
  };
  for (const Case& cs : cases) {
    auto plan = config::ParsePlan("t.yaml", std::string("ports: [{name: p, mtu: 9000}]\nstreams:\n  - {name: s, rate: 1 kpps") +
                                                cs.stream_keys + ", frame: " + cs.frame + "}\n");
    ASSERT_TRUE(plan.ok()) << cs.frame << ": " << plan.status();
    auto p = Program::Compile(plan->streams[0].frame, /*flow_id=*/3);
    ASSERT_TRUE(p.ok()) << cs.frame << ": " << p.status();
    if (cs.want_shape != 0) {
      EXPECT_EQ(p->shape(), cs.want_shape) << cs.frame;
    } else {
      EXPECT_NE(p->shape(), shape::kRoceEntropy) << cs.frame;
      EXPECT_NE(p->shape(), shape::kRoceSprayed) << cs.frame;
      EXPECT_NE(p->shape(), shape::kRoceAnswer) << cs.frame;
      EXPECT_NE(p->shape(), shape::kRoceCell) << cs.frame;
      EXPECT_NE(p->shape(), shape::kRoceCellSprayed) << cs.frame;
      EXPECT_NE(p->shape(), shape::kRoceCellAnswer) << cs.frame;
    }
    const FlowVars v = p->Flow(3, 5);
    Cursor a = p->Start(), b = p->Start(), r = p->Start();
    std::vector<uint8_t> fa(p->buffer_len()), fb(p->buffer_len()), fr(p->buffer_len());
    for (uint32_t i = 0; i < 300; ++i) {
      const PacketKind& k = p->KindAt(r);
      for (auto* f : {&fa, &fb, &fr}) CopyTemplate(f->data(), k.copy_src.data(), static_cast<uint32_t>(k.t.bytes.size()));
      const StampTime t = p->Time(1'000'000 + 7 * i);
      ProgramPeer::ReferenceStamp(*p, fr.data(), k, r, t, v);
      p->Stamp(fa.data(), k, a, t, v);
      switch (p->shape()) {
        case shape::kRoceEntropy: p->Stamp<shape::kRoceEntropy>(fb.data(), k, b, t, v); break;
        case shape::kRoceSprayed: p->Stamp<shape::kRoceSprayed>(fb.data(), k, b, t, v); break;
        case shape::kRoceAnswer: p->Stamp<shape::kRoceAnswer>(fb.data(), k, b, t, v); break;
        case shape::kRoceCell: p->Stamp<shape::kRoceCell>(fb.data(), k, b, t, v); break;
        case shape::kRoceCellSprayed: p->Stamp<shape::kRoceCellSprayed>(fb.data(), k, b, t, v); break;
        case shape::kRoceCellAnswer: p->Stamp<shape::kRoceCellAnswer>(fb.data(), k, b, t, v); break;
        default: p->Stamp<shape::kAnyShape>(fb.data(), k, b, t, v); break;
      }
      ASSERT_EQ(fa, fr) << cs.frame << " packet " << i << " (Stamp<kAnyShape>)";
      ASSERT_EQ(fb, fr) << cs.frame << " packet " << i << " (Stamp<shape()>)";
      if (k.icrc_on) {
        ASSERT_EQ(proto::LoadIcrc(&fb[k.t.icrc_offset]), FullIcrc(fb, k)) << cs.frame << " packet " << i;
      }
      // A go-back (Seek) and a jump: the fixed shapes keep the ICRC share of
      // the sequence's and PSN's high bytes in the cursor, which must follow
      // any move of them (seq 4 bytes from 256 back, the PSN across 2^8 and 2^16).
      if (i == 150 || i == 220) {
        const uint32_t to = i == 150 ? r.seq - 40 : r.seq + 70000;
        for (Cursor* c : {&a, &b, &r}) p->Seek(*c, to);
      }
    }
    for (const Cursor* c : {&a, &b}) {
      EXPECT_EQ(c->seq, r.seq);
      EXPECT_EQ(c->psn, r.psn);
      EXPECT_EQ(c->message, r.message);
      EXPECT_EQ(c->entropy, r.entropy);
      EXPECT_EQ(c->rng, r.rng);
    }
  }
}

// The responder's ACKs go out through EmitUntimed<kRoceAnswer>: byte for
// byte what Emit writes, PSN and MSN moving, the ICRC valid on every one.
TEST(Program, EmitUntimedOfAnAnswerIsEmit) {
  for (const char* frame : {"{roce: {op: ACK, dest_qp: 0x123456, psn: 0xFFFFFA}}", "{l3: ipv6, vlan: {id: 5}, roce: {op: ACK}}"}) {
    auto p = Program::Compile(Frame(frame), 0);
    ASSERT_TRUE(p.ok()) << frame << ": " << p.status();
    ASSERT_EQ(p->shape(), shape::kRoceAnswer) << frame;
    const FlowVars v = p->Flow(0, 9);
    Cursor a = p->Start(), b = p->Start();
    std::vector<uint8_t> fa(p->buffer_len()), fb(p->buffer_len());
    for (uint32_t i = 0; i < 20; ++i) {
      a.message = b.message = 0xFFFFF0 + i;  // the MSN wraps at 2^24
      const uint32_t la = p->Emit(fa.data(), a, 12345 + i, v);
      const uint32_t lb = p->EmitUntimed<shape::kRoceAnswer>(fb.data(), b, v);
      ASSERT_EQ(la, lb);
      ASSERT_TRUE(std::equal(fa.begin(), fa.begin() + la, fb.begin())) << frame << " answer " << i;
      EXPECT_EQ(proto::LoadIcrc(&fb[p->kinds()[0].t.icrc_offset]), FullIcrc(fb, p->kinds()[0])) << frame << " answer " << i;
      EXPECT_EQ(b.psn, a.psn);
    }
  }
}

}  // namespace
}  // namespace fg::stream
