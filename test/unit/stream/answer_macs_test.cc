// Which MACs a stream's frames carry: its data to the TX port's next hop
// (its gateway) or the destination host; a responding port's answers (ACK,
// NAK, CNP, READ responses, CM REP) from the destination host's MAC to the
// RX port's own gateway, or, without one, with the data's own MACs (the
// plan's dst_mac the next hop both ways: swapped, they went to the
// requester's MAC, which the lab's routers dropped).
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "config/plan.h"
#include "stream/answers.h"
#include "stream/program.h"
#include "stream/stream.h"

namespace fg::stream {
namespace {

// The frames' default source and destination MACs (proto::Encap).
const MacAddr kRequester{{0x02, 0, 0, 0, 0, 0x01}}, kResponder{{0x02, 0, 0, 0, 0, 0x02}};
const MacAddr kGatewayA{{0x0e, 0, 0, 0, 0xa0, 0x01}}, kGatewayB{{0x0e, 0, 0, 0, 0xb0, 0x01}};

// The (destination, source) MACs of the first frame `p` emits.
std::pair<MacAddr, MacAddr> MacsOf(const Program& p) {
  std::array<uint8_t, 9216> buf{};
  Cursor c = p.Start();
  p.Emit(buf.data(), c, 0);
  MacAddr dst, src;
  std::copy(buf.begin(), buf.begin() + 6, dst.bytes.begin());
  std::copy(buf.begin() + 6, buf.begin() + 12, src.bytes.begin());
  return {dst, src};
}

// A WRITE set up by CM and a READ, from port a to responding port b;
// `frame_extra` added to the WRITE's frame.
config::Plan PlanOf(const std::string& frame_extra = "") {
  auto plan = config::ParsePlan("m.yaml",
                                "ports: [{name: a}, {name: b, respond: true}]\n"
                                "streams:\n"
                                "  - {name: w, port: a, rx_port: b, rate: 1 kpps,\n"
                                "     frame: {roce: {op: WRITE, dest_qp: 0x80, connect: cm}" +
                                    frame_extra +
                                    "}}\n"
                                    "  - {name: rd, port: a, rx_port: b, rate: 1 Mbps,\n"
                                    "     frame: {roce: {op: READ_REQUEST, message: 4 KiB, dest_qp: 0x40}}}\n");
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : config::Plan{};
}

TEST(AnswerMacs, WithoutGatewaysAnswersCarryTheDataMacsAsWritten) {
  auto c = Compile(PlanOf(), {10e9, 10e9});
  ASSERT_TRUE(c.ok()) << c.status();
  const CompiledStream& w = (*c)[0];
  EXPECT_EQ(MacsOf(w.program), std::pair(kResponder, kRequester));
  ASSERT_NE(w.answers, nullptr);
  for (const Program* a : {&w.answers->ack, &w.answers->nak, &w.answers->cnp}) {
    EXPECT_EQ(MacsOf(*a), std::pair(kResponder, kRequester));
  }
  EXPECT_EQ(w.cm_encap.dst_mac, kResponder);
  EXPECT_EQ(w.cm_encap.src_mac, kRequester);
  EXPECT_EQ(w.cm_back_encap.dst_mac, kResponder);
  EXPECT_EQ(w.cm_back_encap.src_mac, kRequester);
  // The REP's IP addresses are the REQ's, swapped.
  EXPECT_EQ(w.cm_back_encap.l3.src4.value, w.cm_encap.l3.dst4.value);
  EXPECT_EQ(w.cm_back_encap.l3.dst4.value, w.cm_encap.l3.src4.value);
  const CompiledStream& responses = c->back();
  ASSERT_TRUE(responses.read_response());
  EXPECT_EQ(MacsOf(responses.program), std::pair(kResponder, kRequester));
}

TEST(AnswerMacs, WithGatewaysDataGoesToTheTxPortsAndAnswersToTheRxPortsNextHop) {
  config::Plan plan = PlanOf();
  plan.ports[0].next_hop_mac = kGatewayA;  // as session::ApplyGateways sets them
  plan.ports[1].next_hop_mac = kGatewayB;
  auto c = Compile(plan, {10e9, 10e9});
  ASSERT_TRUE(c.ok()) << c.status();
  const CompiledStream& w = (*c)[0];
  EXPECT_EQ(MacsOf(w.program), std::pair(kGatewayA, kRequester));
  for (const Program* a : {&w.answers->ack, &w.answers->nak, &w.answers->cnp}) {
    EXPECT_EQ(MacsOf(*a), std::pair(kGatewayB, kResponder));
  }
  EXPECT_EQ(w.cm_encap.dst_mac, kGatewayA);
  EXPECT_EQ(w.cm_back_encap.dst_mac, kGatewayB);
  EXPECT_EQ(w.cm_back_encap.src_mac, kResponder);
  EXPECT_EQ(MacsOf(c->back().program), std::pair(kGatewayB, kResponder));
  // The plan's streams keep their destination host's MAC (what port b answers ARP with).
  EXPECT_EQ(plan.streams[0].frame.encap.dst_mac, kResponder);
}

TEST(AnswerMacs, AStreamsOwnDstMacOverridesTheGateway) {
  const MacAddr written{{0x02, 0, 0, 0, 0, 0x0b}};
  config::Plan plan = PlanOf(", dst_mac: '02:00:00:00:00:0b'");
  plan.ports[0].next_hop_mac = kGatewayA;
  auto c = Compile(plan, {10e9, 10e9});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(MacsOf((*c)[0].program), std::pair(written, kRequester));
  EXPECT_EQ(MacsOf((*c)[0].answers->ack), std::pair(written, kRequester));  // b has no gateway
  EXPECT_EQ(MacsOf(c->back().program).first, kResponder);                   // the READ's own dst_mac: not the WRITE's
  EXPECT_EQ(MacsOf((*c)[1].program).first, kGatewayA);
}

}  // namespace
}  // namespace fg::stream
