// The RC responder and notification point (endpoint/responder.h) against
// hand-worked sequences: which answers, with which PSN, MSN and syndrome,
// every ICRC checked by the bit-by-bit reference.
#include "endpoint/responder.h"

#include <gtest/gtest.h>

#include <vector>

#include "proto/frame.h"
#include "proto/icrc.h"
#include "proto/roce.h"

namespace fg::endpoint {
namespace {

namespace roce = proto::roce;

struct Decoded {
  uint8_t opcode = 0;
  uint32_t dest_qp = 0, psn = 0;
  bool becn = false;
  int syndrome = -1;  // -1: no AETH
  uint32_t msn = 0;
  uint32_t src_ip = 0, dst_ip = 0;
  uint8_t dscp = 0, ecn = 0;
  uint16_t udp_src = 0, udp_dst = 0;
  bool icrc_ok = false;
};

Decoded Decode(const Answer& a) {
  Decoded d;
  const uint8_t* f = a.bytes;
  const uint32_t l3 = 14;
  d.dscp = f[l3 + 1] >> 2;
  d.ecn = f[l3 + 1] & 3;
  d.src_ip = proto::Load32(f + l3 + 12);
  d.dst_ip = proto::Load32(f + l3 + 16);
  const uint32_t l4 = l3 + 20;
  d.udp_src = proto::Load16(f + l4);
  d.udp_dst = proto::Load16(f + l4 + 2);
  const uint32_t bth = l4 + 8;
  auto b = roce::ParseBth(std::span<const uint8_t>(f + bth, roce::kBthLen));
  d.opcode = b->opcode;
  d.dest_qp = b->dest_qp;
  d.psn = b->psn;
  d.becn = b->becn;
  if (b->opcode == 0x11) {
    auto ae = roce::ParseAeth(std::span<const uint8_t>(f + bth + roce::kBthLen, roce::kAethLen));
    d.syndrome = ae->syndrome;
    d.msn = ae->msn;
  }
  // Frames shorter than 60 B are padded after the IP packet: the ICRC ends the IP packet.
  const uint32_t ip_end = l3 + proto::Load16(f + l3 + 2);
  const proto::IcrcLayout layout{.l3_offset = l3, .ipv6 = false, .icrc_offset = ip_end - 4};
  d.icrc_ok = proto::IcrcReference(f, layout) == proto::LoadIcrc(f + layout.icrc_offset);
  return d;
}

config::FrameSpec Write(uint64_t message, uint32_t pmtu) {
  config::FrameSpec f;
  f.kind = config::FrameKind::kRoce;
  f.roce.op = config::RoceSpec::Op::kWrite;
  f.roce.message = message;
  f.roce.pmtu = pmtu;
  f.roce.dest_qp = 0x200;
  f.encap.udp_dst = roce::kUdpPort;
  f.encap.l3.dscp = 26;
  f.encap.l3.ecn = 2;
  return f;
}

struct Rig {
  stream::Program data;
  std::unique_ptr<stream::Answers> answers;
  AnswerQueue queue;
  std::unique_ptr<Responder> r;
  Rig(const config::FrameSpec& f, config::RespondSpec spec, uint32_t flows = 1, size_t capacity = 64,
      uint64_t ack_delay_ns = 0)
      : queue(capacity) {
    data = *stream::Program::Compile(f, 0);
    answers = *stream::Answers::Compile("s", /*first_flow_id=*/10, data, f, spec, /*port=*/1,
                                        {f.encap.dst_mac, f.encap.src_mac});
    answers->ack_delay_ns = ack_delay_ns;
    // The ACKs the tests decode (ICRC included) take the shaped stamp, but
    // for flows with addresses of their own (kVary: the generic one).
    EXPECT_EQ(answers->ack.shape() & ~stream::shape::kVary, stream::shape::kRoceAnswer);
    std::vector<Responder::Flow> owned;
    for (uint32_t i = 0; i < flows; ++i) owned.push_back({0, 10 + i});
    r = std::make_unique<Responder>(std::vector<const stream::Answers*>{answers.get()}, owned, &queue);
  }
  std::vector<Decoded> Take() {
    std::vector<Decoded> out;
    while (const Answer* a = queue.Front()) {
      EXPECT_EQ(a->port, 1);
      out.push_back(Decode(*a));
      queue.Pop();
    }
    return out;
  }
};

TEST(Responder, InOrderMessagesAreAckedOnAckReqAndCoalescedPerFlush) {
  // WRITE of 4096 B at PMTU 1024: 4 packets a message, AckReq on the last.
  Rig rig(Write(4096, 1024), config::RespondSpec{.ack_every = 16});
  for (uint32_t seq = 0; seq < 8; ++seq) rig.r->OnData(0, seq, 1000 + seq, false);
  rig.r->Flush();
  std::vector<Decoded> a = rig.Take();
  ASSERT_EQ(a.size(), 1u);  // both AckReqs in one poll: one ACK covers both messages
  EXPECT_EQ(a[0].opcode, 0x11);
  EXPECT_EQ(a[0].syndrome, roce::AckSyndrome(31));
  EXPECT_EQ(a[0].psn, 7u);
  EXPECT_EQ(a[0].msn, 2u);
  EXPECT_EQ(a[0].dest_qp, 0x200u);
  EXPECT_TRUE(a[0].icrc_ok);
  // From the data's destination back to its source; not ECN-capable.
  EXPECT_EQ(a[0].src_ip, 0xC6130001u);
  EXPECT_EQ(a[0].dst_ip, 0xC6120001u);
  EXPECT_EQ(a[0].ecn, 0);
  EXPECT_EQ(a[0].udp_dst, roce::kUdpPort);

  // One poll per packet: an ACK at each message's last packet, none between.
  Rig each(Write(4096, 1024), config::RespondSpec{.ack_every = 16});
  std::vector<Decoded> acks;
  for (uint32_t seq = 0; seq < 8; ++seq) {
    each.r->OnData(0, seq, 1000 + seq, false);
    each.r->Flush();
    for (const Decoded& d : each.Take()) acks.push_back(d);
  }
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[0].psn, 3u);
  EXPECT_EQ(acks[0].msn, 1u);
  EXPECT_EQ(acks[1].psn, 7u);
  EXPECT_EQ(acks[1].msn, 2u);
  const ResponderCounters c = each.r->counters(0);
  EXPECT_EQ(c.acks_sent, 2u);
  EXPECT_EQ(c.naks_sent + c.duplicates + c.out_of_sequence + c.ce_seen, 0u);
}

TEST(Responder, AckEveryNPacketsWithoutAckReq) {
  config::FrameSpec f = Write(1 << 20, 1024);  // 1,024 packets a message: AckReq only on the last
  Rig rig(f, config::RespondSpec{.ack_every = 3});
  std::vector<uint32_t> psns;
  for (uint32_t seq = 0; seq < 10; ++seq) {
    rig.r->OnData(0, seq, seq, false);
    rig.r->Flush();
    for (const Decoded& d : rig.Take()) psns.push_back(d.psn);
  }
  EXPECT_EQ(psns, (std::vector<uint32_t>{2, 5, 8}));
}

// With an ACK delay (a collective's QPs): a QP's packets unacknowledged
// that long are acknowledged at the end of the next burst, whatever
// ack_every says; the oldest QP first, each QP once however often it
// starts a new run of unacknowledged packets.
TEST(Responder, PacketsUnacknowledgedForTheAckDelayAreAcknowledged) {
  config::FrameSpec f = Write(1 << 20, 1024);  // 1,024 packets a message: AckReq only on the last
  Rig rig(f, config::RespondSpec{.ack_every = 64}, /*flows=*/2, 64, /*ack_delay_ns=*/1'000'000);
  auto psns = [&rig] {
    std::vector<std::pair<uint32_t, uint32_t>> out;  // (QP, PSN) of each ACK
    for (const Decoded& d : rig.Take()) out.emplace_back(d.dest_qp, d.psn);
    return out;
  };
  using V = std::vector<std::pair<uint32_t, uint32_t>>;
  // Bursts of one packet each: QP, its packet, the RX time, then the ACKs
  // (QP, PSN) the end of the burst sends.
  struct Step {
    uint32_t qp, seq;
    uint64_t ns;
    V acks;
  };
  for (uint32_t seq = 0; seq < 2; ++seq) rig.r->OnData(0, seq, 10'000 * seq, false);
  const Step steps[] = {
      {0, 2, 20'000, {}},  // QP 0 from t = 0, QP 1 from 0.5 ms: nothing due before 1 ms
      {1, 0, 500'000, {}},
      {1, 1, 999'999, {}},
      {1, 2, 1'000'000, {{0x200, 2}}},  // 1 ms after QP 0's oldest: its ACK (all three), not QP 1's
      {0, 3, 1'200'000, {}},            // QP 0 again from 1.2 ms
      {0, 4, 1'500'000, {{0x201, 2}}},  // QP 1's oldest: 0.5 ms
      {1, 3, 2'200'000, {{0x200, 4}}},  // QP 0's new run (from 1.2 ms); QP 1's from 2.2 ms
      {1, 4, 3'000'000, {}},
      {0, 5, 3'200'000, {{0x201, 4}}},
  };
  for (const Step& s : steps) {
    rig.r->OnData(s.qp, s.seq, s.ns, false);
    rig.r->SetClock(s.ns);
    rig.r->Flush();
    EXPECT_EQ(psns(), s.acks) << "at " << s.ns << " ns";
  }
  rig.r->SetClock(3'200'000);
  rig.r->Flush();
  EXPECT_EQ(psns(), V{});  // QP 0's from 3.2 ms: not yet
  EXPECT_EQ(rig.r->counters(0).acks_sent, 4u);

  // Without a delay (a plan's stream): only ack_every and AckReq.
  Rig plain(f, config::RespondSpec{.ack_every = 64}, 2);
  for (uint32_t seq = 0; seq < 3; ++seq) plain.r->OnData(0, seq, 1'000'000'000ull * seq, false);
  plain.r->SetClock(3'000'000'000ull);
  plain.r->Flush();
  EXPECT_TRUE(plain.Take().empty());
}

TEST(Responder, AGapIsNakedOnceAndLaterPacketsDroppedUntilTheRequesterGoesBack) {
  Rig rig(Write(1024, 1024), config::RespondSpec{.ack_every = 1000});  // retransmit: go_back_n (the default)
  ASSERT_TRUE(rig.answers->strict);
  std::vector<Decoded> all;
  for (uint32_t seq : {0u, 1u, 3u, 4u, 5u, 2u, 3u, 4u}) {
    rig.r->OnData(0, seq, seq, false);
    rig.r->Flush();
    for (const Decoded& d : rig.Take()) all.push_back(d);
  }
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[0].psn, 0u);
  EXPECT_EQ(all[1].psn, 1u);
  // 3 where 2 is expected: one NAK naming 2; 4 and 5 dropped without another.
  EXPECT_EQ(all[2].syndrome, roce::NakSyndrome(roce::NakCode::kPsnSequenceError));
  EXPECT_EQ(all[2].psn, 2u);
  EXPECT_EQ(all[2].msn, 2u);
  // The requester goes back: 2, 3, 4 taken and acknowledged.
  EXPECT_EQ(all[3].psn, 2u);
  EXPECT_EQ(all[5].psn, 4u);
  EXPECT_EQ(all[5].msn, 5u);
  const ResponderCounters c = rig.r->counters(0);
  EXPECT_EQ(c.naks_sent, 1u);
  EXPECT_EQ(c.out_of_sequence, 3u);
  EXPECT_EQ(c.delivered_packets, 5u);  // 0..4, each once
  EXPECT_EQ(c.delivered_bytes, 5u * 1024);
}

TEST(Responder, AGapIsNakedNamingTheExpectedPsnThenTheResponderResynchronises) {
  config::FrameSpec f = Write(1024, 1024);
  f.roce.go_back_n = false;                            // retransmit: none
  Rig rig(f, config::RespondSpec{.ack_every = 1000});  // one packet a message, AckReq on each
  std::vector<Decoded> all;
  for (uint32_t seq : {0u, 1u, 3u, 4u, 7u, 8u, 2u}) {
    rig.r->OnData(0, seq, seq, false);
    rig.r->Flush();
    for (const Decoded& d : rig.Take()) all.push_back(d);
  }
  const uint8_t ack = roce::AckSyndrome(31), nak = roce::NakSyndrome(roce::NakCode::kPsnSequenceError);
  std::vector<std::pair<int, uint32_t>> got;  // (syndrome, PSN)
  for (const Decoded& d : all) {
    got.push_back({d.syndrome, d.psn});
    EXPECT_TRUE(d.icrc_ok);
  }
  // 0, 1 acked; 3 where 2 is expected: a NAK naming 2, then 3 is taken (the
  // requester does not go back yet); 4 acked; 7: a NAK naming 5, 7 taken; 8
  // acked; 2, now behind: a duplicate, acknowledged again with the last PSN taken.
  EXPECT_EQ(got, (std::vector<std::pair<int, uint32_t>>{
                     {ack, 0}, {ack, 1}, {nak, 2}, {ack, 3}, {ack, 4}, {nak, 5}, {ack, 7}, {ack, 8}, {ack, 8}}));
  EXPECT_EQ(all[2].msn, 2u);  // the NAK carries the messages completed so far
  EXPECT_EQ(all[7].msn, 6u);  // 0, 1, 3, 4, 7, 8: six one-packet messages taken
  const ResponderCounters c = rig.r->counters(0);
  EXPECT_EQ(c.naks_sent, 2u);
  EXPECT_EQ(c.out_of_sequence, 2u);
  EXPECT_EQ(c.duplicates, 1u);
  EXPECT_EQ(c.acks_sent, 7u);
}

TEST(Responder, AGapInsideAMessageResumesAtThePacketsPlaceInItsMessage) {
  // 4 packets a message: seq 5 (second of message 1) after 2 means 3 and 4
  // were lost; the message that 5 belongs to completes at 7.
  config::FrameSpec f = Write(4096, 1024);
  f.roce.go_back_n = false;
  Rig rig(f, config::RespondSpec{.ack_every = 1000});
  std::vector<Decoded> all;
  for (uint32_t seq : {0u, 1u, 2u, 5u, 6u, 7u}) {
    rig.r->OnData(0, seq, seq, false);
    rig.r->Flush();
    for (const Decoded& d : rig.Take()) all.push_back(d);
  }
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].syndrome, roce::NakSyndrome(roce::NakCode::kPsnSequenceError));
  EXPECT_EQ(all[0].psn, 3u);
  EXPECT_EQ(all[0].msn, 0u);
  EXPECT_EQ(all[1].syndrome, roce::AckSyndrome(31));  // AckReq on 7, the last of message 1
  EXPECT_EQ(all[1].psn, 7u);
  EXPECT_EQ(all[1].msn, 1u);
}

TEST(Responder, ADuplicateIsAcknowledgedAgain) {
  Rig rig(Write(1 << 20, 1024), config::RespondSpec{.ack_every = 1000});
  for (uint32_t seq : {0u, 1u, 2u}) rig.r->OnData(0, seq, seq, false);
  rig.r->Flush();
  EXPECT_TRUE(rig.Take().empty());  // no AckReq, fewer than ack_every
  rig.r->OnData(0, 1, 9, false);
  rig.r->Flush();
  std::vector<Decoded> a = rig.Take();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].psn, 2u);  // the last PSN accepted
  EXPECT_EQ(rig.r->counters(0).duplicates, 1u);
}

TEST(Responder, PsnsWrapAt2To24) {
  config::FrameSpec f = Write(1024, 1024);
  f.roce.start_psn = 0xFFFFFE;
  f.roce.go_back_n = false;
  Rig rig(f, config::RespondSpec{});
  std::vector<uint32_t> psns;
  for (uint32_t seq : {0u, 1u, 2u, 4u}) {
    rig.r->OnData(0, seq, seq, false);
    rig.r->Flush();
    for (const Decoded& d : rig.Take()) psns.push_back(d.psn);
  }
  // 0xFFFFFE, 0xFFFFFF, 0 acknowledged; seq 4 (PSN 2) is ahead of PSN 1: a
  // NAK naming 1, then PSN 2 taken and acknowledged.
  EXPECT_EQ(psns, (std::vector<uint32_t>{0xFFFFFE, 0xFFFFFF, 0, 1, 2}));
  EXPECT_EQ(rig.r->counters(0).naks_sent, 1u);
}

TEST(Responder, CeMarksMakeAtMostOneCnpPerQpPerInterval) {
  Rig rig(Write(1 << 20, 1024), config::RespondSpec{.ack_every = 1000, .cnp_interval_ns = 2000}, /*flows=*/4);
  // Flow 3 (QP 0x203): CE at 0, 1000, 2500, 2600, 4499, 4500 ns.
  uint32_t seq = 0;
  for (uint64_t t : {0u, 1000u, 2500u, 2600u, 4499u, 4500u}) rig.r->OnData(3, seq++, t + 1'000'000, true);
  rig.r->OnData(1, 0, 1'000'000, true);  // another QP: its own interval
  std::vector<Decoded> a = rig.Take();
  ASSERT_EQ(a.size(), 4u);
  for (const Decoded& d : a) {
    EXPECT_EQ(d.opcode, roce::kOpcodeCnp);
    EXPECT_TRUE(d.becn);
    EXPECT_EQ(d.dscp, 48);
    EXPECT_EQ(d.ecn, 0);
    EXPECT_EQ(d.psn, 0u);
    EXPECT_TRUE(d.icrc_ok);
    EXPECT_EQ(d.src_ip, 0xC6130001u);
  }
  EXPECT_EQ(a[0].dest_qp, 0x203u);  // at 0
  EXPECT_EQ(a[1].dest_qp, 0x203u);  // at 2500
  EXPECT_EQ(a[2].dest_qp, 0x203u);  // at 4500
  EXPECT_EQ(a[3].dest_qp, 0x201u);
  EXPECT_EQ(a[0].udp_src, 49152 + 3);  // the flow's own source port
  const ResponderCounters c = rig.r->counters(0);
  EXPECT_EQ(c.ce_seen, 7u);
  EXPECT_EQ(c.cnp_sent, 4u);
  EXPECT_EQ(c.cnp_suppressed, 3u);
  EXPECT_EQ(c.ce_seen, c.cnp_sent + c.cnp_suppressed);
}

TEST(Responder, UnreliableTransportsGetCnpsButNoAcks) {
  config::FrameSpec f = Write(1024, 1024);
  f.roce.transport = roce::Transport::kUc;
  Rig rig(f, config::RespondSpec{.ack_every = 1});
  for (uint32_t seq : {0u, 1u, 5u}) rig.r->OnData(0, seq, seq * 10'000, seq == 5);
  rig.r->Flush();
  std::vector<Decoded> a = rig.Take();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].opcode, roce::kOpcodeCnp);
  EXPECT_EQ(rig.r->counters(0).acks_sent + rig.r->counters(0).naks_sent, 0u);
}

TEST(Responder, AFullAnswerQueueDropsAndCountsInsteadOfSending) {
  Rig rig(Write(1024, 1024), config::RespondSpec{.cnp_interval_ns = 0}, /*flows=*/4, /*capacity=*/2);
  for (uint32_t flow = 0; flow < 4; ++flow) rig.r->OnData(flow, 0, 100, true);  // 4 CNPs, room for 2
  rig.r->Flush();                                                               // 4 ACKs, no room
  EXPECT_EQ(rig.queue.size(), 2u);
  ResponderCounters c = rig.r->counters(0);
  EXPECT_EQ(c.cnp_sent, 2u);
  EXPECT_EQ(c.cnp_dropped, 2u);
  EXPECT_EQ(c.cnp_suppressed, 0u);
  EXPECT_EQ(c.acks_sent, 0u);
  EXPECT_EQ(c.answers_dropped, 6u);
  EXPECT_EQ(c.ce_seen, c.cnp_sent + c.cnp_suppressed + c.cnp_dropped);
  // The run ends with both CNPs still queued: never sent, so not counted as sent.
  rig.r->Unsent(rig.queue);
  EXPECT_TRUE(rig.queue.empty());
  c = rig.r->counters(0);
  EXPECT_EQ(c.cnp_sent, 0u);
  EXPECT_EQ(c.cnp_dropped, 4u);
  EXPECT_EQ(c.answers_dropped, 8u);
  EXPECT_EQ(c.ce_seen, c.cnp_sent + c.cnp_suppressed + c.cnp_dropped);
}

TEST(Responder, UnsentAcksAndNaksAreTakenOffTheirCounts) {
  Rig rig(Write(1024, 1024), config::RespondSpec{});
  rig.r->OnData(0, 0, 0, false);
  rig.r->OnData(0, 2, 1, false);  // a NAK
  rig.r->Flush();                 // an ACK
  EXPECT_EQ(rig.r->counters(0).acks_sent, 1u);
  EXPECT_EQ(rig.r->counters(0).naks_sent, 1u);
  rig.r->Unsent(rig.queue);
  EXPECT_EQ(rig.r->counters(0).acks_sent, 0u);
  EXPECT_EQ(rig.r->counters(0).naks_sent, 0u);
  EXPECT_EQ(rig.r->counters(0).answers_dropped, 2u);
  EXPECT_EQ(rig.r->counters(0).cnp_dropped, 0u);
}

TEST(Responder, ACeMarkBeforeTheLastCnpsTimeIsWithinTheInterval) {
  // One flow's frames on two queues: a CE frame received 1 us before the
  // last CNP's frame must not count as 2^64 ns after it.
  Rig rig(Write(1024, 1024), config::RespondSpec{.cnp_interval_ns = 2000});
  rig.r->OnData(0, 0, 10'000, true);
  rig.r->OnData(0, 1, 9'000, true);
  EXPECT_EQ(rig.r->counters(0).cnp_sent, 1u);
  EXPECT_EQ(rig.r->counters(0).cnp_suppressed, 1u);
}

TEST(Responder, ReadRequestsAndResponsesGetNoAckButTheirCeMarksGetCnps) {
  for (auto op : {config::RoceSpec::Op::kReadRequest, config::RoceSpec::Op::kReadResponse}) {
    config::FrameSpec f = Write(4096, 1024);
    f.roce.op = op;
    Rig rig(f, config::RespondSpec{.ack_every = 1});
    for (uint32_t seq = 0; seq < 4; ++seq) rig.r->OnData(0, seq, seq * 10'000, seq == 2);
    rig.r->Flush();
    std::vector<Decoded> a = rig.Take();
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].opcode, roce::kOpcodeCnp);
  }
}

TEST(Responder, CnpsCarryPsnZeroThePortsPriorityAndEachFlowsSwappedAddresses) {
  config::FrameSpec f = Write(1024, 1024);
  f.roce.start_psn = 0x123456;
  f.vary_src_ip = true;  // flow i sends from 198.18.0.1 + i: its answers go to it
  f.encap.vlan = proto::VlanTag{.id = 7, .pcp = 3, .dei = false};
  Rig rig(f, config::RespondSpec{.cnp_dscp = 46, .cnp_pcp = 5}, /*flows=*/3);
  rig.r->OnData(2, 0, 0, true);
  const Answer* a = rig.queue.Front();
  ASSERT_NE(a, nullptr);
  const uint8_t* p = a->bytes;
  EXPECT_EQ(proto::Load16(p + 12), 0x8100);
  EXPECT_EQ(p[14] >> 5, 5);                      // PCP
  EXPECT_EQ(proto::Load16(p + 14) & 0x0FFF, 7);  // VLAN id kept
  const uint8_t* ip = p + 18;
  EXPECT_EQ(ip[1] >> 2, 46);
  EXPECT_EQ(proto::Load32(ip + 12), 0xC6130001u);      // from the data's destination
  EXPECT_EQ(proto::Load32(ip + 16), 0xC6120001u + 2);  // to flow 2's source
  const uint8_t* bth = ip + 20 + 8;
  EXPECT_EQ(bth[0], roce::kOpcodeCnp);
  EXPECT_EQ(proto::Load24(bth + 5), 0x202u);
  EXPECT_EQ(proto::Load24(bth + 9), 0u);  // PSN 0, whatever the data's start
  const uint32_t ip_end = 18 + proto::Load16(ip + 2);
  const proto::IcrcLayout layout{.l3_offset = 18, .ipv6 = false, .icrc_offset = ip_end - 4};
  EXPECT_EQ(proto::IcrcReference(p, layout), proto::LoadIcrc(p + layout.icrc_offset));
}

TEST(Responder, StreamsThatAreNotRoceDataAreNotAnswered) {
  config::FrameSpec udp;
  stream::Program p = *stream::Program::Compile(udp, 0);
  EXPECT_EQ(*stream::Answers::Compile("u", 0, p, udp, config::RespondSpec{}, 0, {udp.encap.dst_mac, udp.encap.src_mac}),
            nullptr);
  config::FrameSpec cnp = Write(16, 1024);
  cnp.roce.op = config::RoceSpec::Op::kCnp;
  stream::Program pc = *stream::Program::Compile(cnp, 0);
  EXPECT_EQ(
      *stream::Answers::Compile("c", 0, pc, cnp, config::RespondSpec{}, 0, {cnp.encap.dst_mac, cnp.encap.src_mac}),
      nullptr);
}

config::FrameSpec Read(uint64_t message, uint32_t pmtu, uint32_t start_psn = 0) {
  config::FrameSpec f = Write(message, pmtu);
  f.roce.op = config::RoceSpec::Op::kReadRequest;
  f.roce.start_psn = start_psn;
  return f;
}

// What the responder asked its ReadSink to send: (slot, request sequence).
struct Reads : ReadSink {
  std::vector<std::pair<uint32_t, uint32_t>> got;
  void OnRead(uint32_t slot, uint32_t seq) override { got.emplace_back(slot, seq); }
};

// READ requests of 16 KiB at PMTU 4096 step the PSN by 4 (their response
// packets): each in-order request is executed once (its sequence: its place
// among the flow's requests), counted as a message of data delivered, and
// never acknowledged.
TEST(Responder, InOrderReadRequestsAreExecutedEachOnceAndNeverAcked) {
  Rig rig(Read(16384, 4096, 100), config::RespondSpec{}, /*flows=*/2);
  Reads reads;
  rig.r->SetReadSink(&reads);
  ASSERT_TRUE(rig.answers->read);
  EXPECT_FALSE(rig.answers->reliable);
  EXPECT_EQ(rig.answers->psn_step, 4u);
  EXPECT_EQ(rig.r->OnReadRequest(0, 100, 1000, false), 0u);
  EXPECT_EQ(rig.r->OnReadRequest(1, 100, 1000, false), 0u);
  EXPECT_EQ(rig.r->OnReadRequest(0, 104, 2000, false), 1u);
  EXPECT_EQ(rig.r->OnReadRequest(0, 108, 3000, false), 2u);
  rig.r->Flush();
  EXPECT_TRUE(rig.Take().empty());  // no ACK, no NAK
  EXPECT_EQ(reads.got, (std::vector<std::pair<uint32_t, uint32_t>>{{0, 0}, {1, 0}, {0, 1}, {0, 2}}));
  const ResponderCounters c = rig.r->counters(0);
  EXPECT_EQ(c.delivered_packets, 4u);
  EXPECT_EQ(c.delivered_bytes, 4u * 16384);
  EXPECT_EQ(c.acks_sent + c.naks_sent + c.out_of_sequence + c.duplicates, 0u);
}

// Requests skipped over: the one that skips them is executed at its own
// sequence and each skipped one is counted; one of them that comes after
// all (reordered) is executed then, late; one seen again (or one behind
// that was never skipped) is a duplicate, not executed twice. What never
// came (request 2) is never answered.
TEST(Responder, ReadsSkippedOverAreExecutedWhenTheyComeLateAndDuplicatesAreNot) {
  Rig rig(Read(4096, 1024), config::RespondSpec{});
  Reads reads;
  rig.r->SetReadSink(&reads);
  EXPECT_EQ(rig.r->OnReadRequest(0, 0, 1, false), 0u);
  EXPECT_EQ(rig.r->OnReadRequest(0, 12, 2, false), 3u);  // skips requests 1 and 2 (PSNs 4, 8)
  EXPECT_EQ(rig.r->OnReadRequest(0, 4, 3, false), 1u);   // request 1, late: executed
  EXPECT_EQ(rig.r->OnReadRequest(0, 4, 4, false), 1u);   // request 1 again: a duplicate
  EXPECT_EQ(rig.r->OnReadRequest(0, 0, 5, false), 0u);   // request 0 again: a duplicate
  EXPECT_EQ(rig.r->OnReadRequest(0, 16, 6, false), 4u);
  EXPECT_EQ(reads.got, (std::vector<std::pair<uint32_t, uint32_t>>{{0, 0}, {0, 3}, {0, 1}, {0, 4}}));
  const ResponderCounters c = rig.r->counters(0);
  EXPECT_EQ(c.delivered_packets, 4u);
  EXPECT_EQ(c.out_of_sequence, 2u);  // requests skipped over: 1 and 2
  EXPECT_EQ(c.read_late, 1u);        // of them, 1 came
  EXPECT_EQ(c.duplicates, 2u);
  EXPECT_TRUE(rig.Take().empty());
}

// The late window is the 63 requests before the newest one executed: one
// skipped 63 back still counts; one skipped further back is taken for a
// duplicate.
TEST(Responder, AReadSkippedOverIsExecutedLateWithin64Requests) {
  Rig rig(Read(1024, 1024), config::RespondSpec{});
  Reads reads;
  rig.r->SetReadSink(&reads);
  EXPECT_EQ(rig.r->OnReadRequest(0, 1, 1, false), 1u);      // skips request 0
  EXPECT_EQ(rig.r->OnReadRequest(0, 63, 2, false), 63u);    // skips 2..62: request 0 is now 63 back
  EXPECT_EQ(rig.r->OnReadRequest(0, 0, 3, false), 0u);      // 63 back: late, executed
  EXPECT_EQ(rig.r->OnReadRequest(0, 200, 4, false), 200u);  // skips 64..199
  EXPECT_EQ(rig.r->OnReadRequest(0, 2, 5, false), 2u);      // skipped, but 198 back: beyond the window
  const ResponderCounters c = rig.r->counters(0);
  EXPECT_EQ(c.out_of_sequence, 1u + 61 + 136);
  EXPECT_EQ(c.read_late, 1u);
  EXPECT_EQ(c.duplicates, 1u);
  EXPECT_EQ(reads.got.size(), 4u);
}

// The PSN is 24 bits: with 4 PSNs per request it wraps every 4,194,304
// requests, and the sequence counts on across the wrap.
TEST(Responder, ReadSequencesCountOnAcrossThePsnWrap) {
  Rig rig(Read(4096, 1024, 0xFFFFF8), config::RespondSpec{});
  EXPECT_EQ(rig.r->OnReadRequest(0, 0xFFFFF8, 1, false), 0u);
  EXPECT_EQ(rig.r->OnReadRequest(0, 0xFFFFFC, 2, false), 1u);
  EXPECT_EQ(rig.r->OnReadRequest(0, 0x000000, 3, false), 2u);
  EXPECT_EQ(rig.r->OnReadRequest(0, 0x000004, 4, false), 3u);
  EXPECT_EQ(rig.r->OnReadRequest(0, 0xFFFFFC, 5, false), 1u);  // a duplicate from before the wrap
  EXPECT_EQ(rig.r->counters(0).delivered_packets, 4u);
  EXPECT_EQ(rig.r->counters(0).duplicates, 1u);
}

// A CE-marked READ request is answered by a CNP like any data frame.
TEST(Responder, ACeMarkedReadRequestGetsACnp) {
  Rig rig(Read(4096, 1024), config::RespondSpec{});
  rig.r->OnReadRequest(0, 0, 1'000'000, true);
  const std::vector<Decoded> a = rig.Take();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].opcode, roce::kOpcodeCnp);
  EXPECT_EQ(a[0].dest_qp, 0x200u);
  EXPECT_TRUE(a[0].icrc_ok);
  EXPECT_EQ(rig.r->counters(0).cnp_sent, 1u);
}

// A PSN that names no request the requester sent moves nothing and returns
// nothing: one behind its first request, one off the requests' PSN grid
// (4 PSNs a request here), one at or past what it has sent (`sent`), and a
// CE mark on such a one makes no CNP. The genuine requests around them are
// executed in order, none counted skipped (issue 26: 258 forged requests at
// PSN 0xFFFFFF made a responder skip 16,777,236 and never execute the
// genuine ones).
TEST(Responder, ReadRequestsTheRequesterNeverSentMoveNothing) {
  Rig rig(Read(4096, 1024, 100), config::RespondSpec{});
  Reads reads;
  rig.r->SetReadSink(&reads);
  ASSERT_EQ(rig.answers->psn_step, 4u);
  EXPECT_EQ(rig.r->OnReadRequest(0, 96, 1, false, 2u), std::nullopt);       // behind request 0
  EXPECT_EQ(rig.r->OnReadRequest(0, 0xFFFFFF, 1, true, 2u), std::nullopt);  // behind, off the grid; CE
  EXPECT_EQ(rig.r->OnReadRequest(0, 100, 2, false, 2u), 0u);
  EXPECT_EQ(rig.r->OnReadRequest(0, 106, 3, false, 2u), std::nullopt);  // off the grid
  EXPECT_EQ(rig.r->OnReadRequest(0, 108, 4, true, 2u), std::nullopt);   // request 2: not sent yet; CE
  for (int k = 0; k < 258; ++k) EXPECT_EQ(rig.r->OnReadRequest(0, 0xFFFFFF, 5, false, 2u), std::nullopt);
  EXPECT_EQ(rig.r->OnReadRequest(0, 104, 6, false, 2u), 1u);
  EXPECT_EQ(rig.r->OnReadRequest(0, 108, 7, false, 3u), 2u);
  EXPECT_EQ(reads.got, (std::vector<std::pair<uint32_t, uint32_t>>{{0, 0}, {0, 1}, {0, 2}}));
  const ResponderCounters c = rig.r->counters(0);
  EXPECT_EQ(c.delivered_packets, 3u);
  EXPECT_EQ(c.out_of_sequence + c.duplicates + c.read_late, 0u);
  EXPECT_EQ(c.ce_seen + c.cnp_sent, 0u);
  EXPECT_TRUE(rig.Take().empty());
}

// Data with a bad ICRC (RX found it on the responding port): dropped as a
// RoCE NIC drops it, counted, nothing answered; the next packet then is
// ahead of the expected PSN (the gap the dropped one left: a NAK).
TEST(Responder, DataWithABadIcrcIsDroppedAndCounted) {
  Rig rig(Write(1024, 1024), config::RespondSpec{.ack_every = 1});
  rig.r->OnData(0, 0, 1, false);
  rig.r->OnIcrcError(0);  // sequence 1
  rig.r->Flush();
  std::vector<Decoded> a = rig.Take();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].psn, 0u);  // only packet 0 acknowledged
  rig.r->OnData(0, 2, 3, false);
  rig.r->Flush();
  a = rig.Take();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].syndrome, 0x60);  // NAK, PSN sequence error, naming PSN 1
  EXPECT_EQ(a[0].psn, 1u);
  const ResponderCounters c = rig.r->counters(0);
  EXPECT_EQ(c.icrc_dropped, 1u);
  EXPECT_EQ(c.delivered_packets, 1u);
}

}  // namespace
}  // namespace fg::endpoint
