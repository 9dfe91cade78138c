// proto/neighbor: ARP, ND and echo against frames scapy built (the
// vectors below: /usr/bin/python3 with scapy 2.5, Ether()/ARP(), IPv6()/
// ICMPv6ND_NS(), ICMPv6EchoRequest() ..., padded to 60 bytes as on the wire).
#include "proto/neighbor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fg::proto {
namespace {

std::vector<uint8_t> Hex(const std::string& h) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

const std::vector<uint8_t> kArpReq = Hex(
    "ffffffffffff02aa000000fe0806000108000604000102aa000000fec61200fe000000000000c6120001000000000000"
    "000000000000000000000000");
const std::vector<uint8_t> kArpRep = Hex(
    "02aa000000fe02000000000108060001080006040002020000000001c612000102aa000000fec61200fe000000000000"
    "000000000000000000000000");
const std::vector<uint8_t> kNs = Hex(
    "3333ff00000102aa000000fe86dd6000000000203aff20010db80000000000000000000000feff020000000000000000"
    "0001ff000001870019850000000020010db8000000000000000000000001010102aa000000fe");
const std::vector<uint8_t> kNa = Hex(
    "02aa000000fe02000000000186dd6000000000203aff20010db800000000000000000000000120010db8000000000000"
    "0000000000fe880089776000000020010db80000000000000000000000010201020000000001");
const std::vector<uint8_t> kEcho4 = Hex(
    "02000000000102aa000000fe0800450000541234400040019b51c61200fec6120001080000e500070001000102030405"
    "060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435"
    "3637");
const std::vector<uint8_t> kEcho4Rep = Hex(
    "02aa000000fe020000000001080045000054123400004001db51c6120001c61200fe000008e500070001000102030405"
    "060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435"
    "3637");
const std::vector<uint8_t> kEcho6 = Hex(
    "02000000000102aa000000fe86dd6000000000403a4020010db80000000000000000000000fe20010db8000000000000"
    "00000000000180002bf900070001000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2021"
    "22232425262728292a2b2c2d2e2f3031323334353637");
const std::vector<uint8_t> kEcho6Rep = Hex(
    "02aa000000fe02000000000186dd6000000000403a4020010db800000000000000000000000120010db8000000000000"
    "0000000000fe81002af900070001000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2021"
    "22232425262728292a2b2c2d2e2f3031323334353637");
const std::vector<uint8_t> kOurArp = Hex(
    "ffffffffffff02000000000108060001080006040001020000000001c6120001000000000000c61200fe000000000000"
    "000000000000000000000000");
const std::vector<uint8_t> kOurNs = Hex(
    "3333ff0000fe02000000000186dd6000000000203aff20010db8000000000000000000000001ff020000000000000000"
    "0001ff0000fe87001a2f0000000020010db80000000000000000000000fe0101020000000001");
const std::vector<uint8_t> kGwNa = Hex(
    "02000000000102aa000000fe86dd6000000000203aff20010db80000000000000000000000fe20010db8000000000000"
    "000000000001880006d3e000000020010db80000000000000000000000fe020102aa000000fe");
const std::vector<uint8_t> kArpReqVlan = Hex(
    "ffffffffffff02aa000000fe810060640806000108000604000102aa000000fec61200fe000000000000c61200010000"
    "000000000000000000000000");
const std::vector<uint8_t> kArpRepVlan = Hex(
    "02aa000000fe0200000000018100606408060001080006040002020000000001c612000102aa000000fec61200fe0000"
    "000000000000000000000000");

const MacAddr kHost{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}};
const MacAddr kKernel{{0x02, 0xaa, 0x00, 0x00, 0x00, 0xfe}};
const Ipv4Addr kHost4{0xC6120001};    // 198.18.0.1
const Ipv4Addr kKernel4{0xC61200FE};  // 198.18.0.254
Ipv6Addr V6(uint8_t last) {
  return Ipv6Addr{{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last}};
}

std::vector<uint8_t> Answer(size_t (*write)(const NeighborFrame&, const MacAddr&, uint8_t*, size_t),
                            const std::vector<uint8_t>& request, size_t cap = 184) {
  std::vector<uint8_t> out(cap);
  const NeighborFrame f = ParseNeighbor(request);
  out.resize(write(f, kHost, out.data(), out.size()));
  return out;
}

TEST(Neighbor, AnArpRequestIsAnsweredWithTheHostsMac) {
  const NeighborFrame f = ParseNeighbor(kArpReq);
  EXPECT_EQ(f.kind, NeighborFrame::Kind::kArpRequest);
  EXPECT_EQ(f.dst4, kHost4);
  EXPECT_EQ(f.src4, kKernel4);
  EXPECT_EQ(f.lladdr, kKernel);
  EXPECT_EQ(Answer(WriteArpReply, kArpReq), kArpRep);
}

TEST(Neighbor, ATaggedArpRequestIsAnsweredWithItsTag) {
  const NeighborFrame f = ParseNeighbor(kArpReqVlan);
  ASSERT_EQ(f.kind, NeighborFrame::Kind::kArpRequest);
  ASSERT_TRUE(f.eth.vlan.has_value());
  EXPECT_EQ(f.eth.vlan->id, 100);
  EXPECT_EQ(Answer(WriteArpReply, kArpReqVlan), kArpRepVlan);
}

TEST(Neighbor, ASolicitationIsAnsweredWithASolicitedAdvertisement) {
  const NeighborFrame f = ParseNeighbor(kNs);
  EXPECT_EQ(f.kind, NeighborFrame::Kind::kNeighborSolicitation);
  EXPECT_EQ(f.target6, V6(1));
  EXPECT_TRUE(f.has_lladdr);
  EXPECT_EQ(f.lladdr, kKernel);
  EXPECT_EQ(Answer(WriteNeighborAdvertisement, kNs), kNa);
}

TEST(Neighbor, EchoRequestsAreAnsweredWithTheirIdentifierSequenceAndData) {
  for (const auto& [req, rep] : {std::pair{kEcho4, kEcho4Rep}, std::pair{kEcho6, kEcho6Rep}}) {
    const NeighborFrame f = ParseNeighbor(req);
    ASSERT_EQ(f.kind, NeighborFrame::Kind::kEchoRequest);
    std::vector<uint8_t> out(184);
    out.resize(WriteEchoReply(req, f, kHost, out.data(), out.size()));
    EXPECT_EQ(out, rep) << (f.ipv6 ? "IPv6" : "IPv4");
  }
}

TEST(Neighbor, AnEchoLongerThanTheBufferIsNotWritten) {
  const NeighborFrame f = ParseNeighbor(kEcho6);
  std::vector<uint8_t> out(117);
  EXPECT_EQ(WriteEchoReply(kEcho6, f, kHost, out.data(), out.size()), 0u);
}

TEST(Neighbor, TheGatewaysRequestsAreWhatScapyBuilds) {
  std::vector<uint8_t> out(96);
  out.resize(WriteArpRequest(kHost, kHost4, kKernel4, std::nullopt, out.data()));
  EXPECT_EQ(out, kOurArp);
  out.assign(96, 0);
  out.resize(WriteNeighborSolicitation(kHost, V6(1), V6(0xfe), std::nullopt, out.data()));
  EXPECT_EQ(out, kOurNs);
}

TEST(Neighbor, AnswersResolveTheGateway) {
  // The kernel's ARP request names its sender; an advertisement its target.
  EXPECT_EQ(ResolvedBy(ParseNeighbor(kArpReq), kKernel4), kKernel);
  EXPECT_EQ(ResolvedBy(ParseNeighbor(kArpReq), kHost4), std::nullopt);
  EXPECT_EQ(ResolvedBy(ParseNeighbor(kGwNa), V6(0xfe)), kKernel);
  EXPECT_EQ(ResolvedBy(ParseNeighbor(kGwNa), V6(1)), std::nullopt);
  EXPECT_EQ(ResolvedBy(ParseNeighbor(kNs), V6(0xfe)), std::nullopt);  // a solicitation resolves nothing
}

TEST(Neighbor, MalformedFramesAreInvalidNotAnswered) {
  std::vector<uint8_t> bad = kEcho4;
  bad[14 + 20 + 2] ^= 1;  // the ICMP checksum
  EXPECT_EQ(ParseNeighbor(bad).kind, NeighborFrame::Kind::kInvalid);
  bad = kEcho4;
  bad[14 + 10] ^= 1;  // the IPv4 header checksum
  EXPECT_EQ(ParseNeighbor(bad).kind, NeighborFrame::Kind::kInvalid);
  bad = kNs;
  bad[14 + 7] = 64;  // hop limit not 255 (its checksum does not cover it)
  EXPECT_EQ(ParseNeighbor(bad).kind, NeighborFrame::Kind::kInvalid);
  bad = kNs;
  bad[14 + 40 + 24 + 1] = 0;  // an option of length 0
  bad[14 + 40 + 2] = 0;
  bad[14 + 40 + 3] = 0;
  EXPECT_EQ(ParseNeighbor(bad).kind, NeighborFrame::Kind::kInvalid);
  const std::vector<uint8_t> cut(kArpReq.begin(), kArpReq.begin() + 14 + 20);
  EXPECT_EQ(ParseNeighbor(cut).kind, NeighborFrame::Kind::kInvalid);
}

TEST(Neighbor, OtherKindsAndOtherProtocolsAreToldApart) {
  EXPECT_EQ(ParseNeighbor(kArpRep).kind, NeighborFrame::Kind::kArpReply);
  EXPECT_EQ(ParseNeighbor(kNa).kind, NeighborFrame::Kind::kNeighborAdvertisement);
  EXPECT_EQ(ParseNeighbor(kEcho4Rep).kind, NeighborFrame::Kind::kOther);  // an echo reply
  std::vector<uint8_t> udp = kEcho4;
  udp[14 + 9] = 17;  // UDP: none of these (the IP checksum is not this parser's business then)
  EXPECT_EQ(ParseNeighbor(udp).kind, NeighborFrame::Kind::kNone);
}

}  // namespace
}  // namespace fg::proto
