// CM MADs in RoCEv2 frames: the fields at their IBA offsets (worked by hand
// from IBA vol. 1, 12.6), a valid ICRC by the bit-by-bit reference, and the
// parser's round trip. (tshark decodes them as InfiniBand CM in the lab test.)
#include "proto/cm.h"

#include <gtest/gtest.h>

#include "proto/icrc.h"

namespace fg::proto::cm {
namespace {

Encap TestEncap() {
  Encap e;
  e.l3.src4 = Ipv4Addr{0xC6120001};  // 198.18.0.1
  e.l3.dst4 = Ipv4Addr{0xC6130001};  // 198.19.0.1
  e.l3.dscp = 26;
  e.udp_src = 0xC123;
  return e;
}

TEST(Cm, ReqCarriesItsFieldsAtTheIbaOffsetsInAUdSendToQp1) {
  Message m;
  m.attr = kReq;
  m.transaction_id = 0x1122334455667788ull;
  m.local_comm_id = 0x0A0B0C0D;
  m.local_qpn = 0x800123;
  m.start_psn = 0x000777;
  m.service_id = 0x0000000001060000ull + 4791;
  m.pmtu_code = MtuCode(1024);
  m.pkey = 0x8001;
  m.local_ca_guid = GuidOfMac(MacAddr{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}});
  const std::vector<uint8_t> f = BuildFrame(TestEncap(), m, 5);
  // Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + DETH 8 + MAD 256 + ICRC 4.
  ASSERT_EQ(f.size(), 14u + 20 + 8 + 12 + 8 + 256 + 4);
  const uint8_t* bth = f.data() + 42;
  EXPECT_EQ(bth[0], 0x64);                                  // UD SEND_ONLY
  EXPECT_EQ((bth[2] << 8) | bth[3], 0xFFFF);                // P_Key
  EXPECT_EQ((bth[5] << 16) | (bth[6] << 8) | bth[7], 1);    // QP 1
  EXPECT_EQ(bth[11], 5);                                    // PSN
  EXPECT_EQ(bth[12], 0x80);                                 // DETH Q_Key 0x80010000
  EXPECT_EQ(bth[13], 0x01);
  EXPECT_EQ((bth[17] << 16) | (bth[18] << 8) | bth[19], 1);  // source QP 1
  const uint8_t* mad = bth + 20;
  EXPECT_EQ(mad[0], 1);     // base version
  EXPECT_EQ(mad[1], 0x07);  // CM
  EXPECT_EQ(mad[2], 2);     // class version
  EXPECT_EQ(mad[3], 0x03);  // Send
  EXPECT_EQ(mad[8], 0x11);  // transaction id, big-endian
  EXPECT_EQ(mad[15], 0x88);
  EXPECT_EQ((mad[16] << 8) | mad[17], 0x0010);  // ConnectRequest
  const uint8_t* d = mad + 24;
  EXPECT_EQ(d[0], 0x0A);
  EXPECT_EQ(d[3], 0x0D);                                   // local communication id
  EXPECT_EQ(d[14], 0x12);                                  // service id ...0106_12B7
  EXPECT_EQ(d[15], 0xB7);
  EXPECT_EQ(d[16], 0x00);                                  // CA GUID: MAC 02:.. with the U/L bit flipped
  EXPECT_EQ(d[19], 0xFF);
  EXPECT_EQ(d[20], 0xFE);
  EXPECT_EQ((d[32] << 16) | (d[33] << 8) | d[34], 0x800123);  // local QPN
  EXPECT_EQ((d[44] << 16) | (d[45] << 8) | d[46], 0x000777);  // starting PSN
  EXPECT_EQ((d[48] << 8) | d[49], 0x8001);                    // partition key
  EXPECT_EQ(d[50] >> 4, 3);                                   // path MTU 1024
  EXPECT_EQ(d[43] & 0x06, 0);                                 // transport service type RC
  EXPECT_EQ(d[56 + 10], 0xFF);                                // local GID ::ffff:198.18.0.1
  EXPECT_EQ(d[56 + 12], 198);
  EXPECT_EQ(d[56 + 15], 1);
  EXPECT_EQ(d[72 + 13], 19);                                  // remote GID ::ffff:198.19.0.1
  EXPECT_EQ(d[92], 26 << 2);                                  // traffic class
  const IcrcLayout l{.l3_offset = 14, .ipv6 = false, .icrc_offset = static_cast<uint32_t>(f.size() - 4)};
  EXPECT_EQ(LoadIcrc(f.data() + f.size() - 4), IcrcReference(f.data(), l));
  const auto back = Parse(f);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->attr, kReq);
  EXPECT_EQ(back->transaction_id, m.transaction_id);
  EXPECT_EQ(back->local_comm_id, m.local_comm_id);
  EXPECT_EQ(back->local_qpn, m.local_qpn);
  EXPECT_EQ(back->start_psn, m.start_psn);
  EXPECT_EQ(back->service_id, m.service_id);
  EXPECT_EQ(back->pmtu_code, 3);
  EXPECT_EQ(back->pkey, 0x8001);
  EXPECT_EQ(back->local_ca_guid, m.local_ca_guid);
}

TEST(Cm, RepAndRtuNameBothCommunicationIdsAndParseBack) {
  Message rep{.attr = kRep, .transaction_id = 9, .local_comm_id = 0x20, .remote_comm_id = 0x10,
              .local_qpn = 0x000100, .start_psn = 0x42};
  std::vector<uint8_t> f = BuildFrame(TestEncap(), rep, 0);
  const uint8_t* d = f.data() + 42 + 20 + 24;
  EXPECT_EQ((f[42 + 20 + 16] << 8) | f[42 + 20 + 17], 0x0013);  // ConnectReply
  EXPECT_EQ(d[3], 0x20);                                         // local
  EXPECT_EQ(d[7], 0x10);                                         // remote
  EXPECT_EQ((d[12] << 16) | (d[13] << 8) | d[14], 0x100);        // local QPN
  EXPECT_EQ(d[22], 0x42);                                        // starting PSN
  auto back = Parse(f);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->attr, kRep);
  EXPECT_EQ(back->remote_comm_id, 0x10u);
  EXPECT_EQ(back->local_qpn, 0x100u);
  EXPECT_EQ(back->start_psn, 0x42u);
  Message rtu{.attr = kRtu, .local_comm_id = 0x10, .remote_comm_id = 0x20};
  f = BuildFrame(TestEncap(), rtu, 1);
  back = Parse(f);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->attr, kRtu);
  EXPECT_EQ(back->local_comm_id, 0x10u);
  EXPECT_EQ(back->remote_comm_id, 0x20u);
  const IcrcLayout l{.l3_offset = 14, .ipv6 = false, .icrc_offset = static_cast<uint32_t>(f.size() - 4)};
  EXPECT_EQ(LoadIcrc(f.data() + f.size() - 4), IcrcReference(f.data(), l));
  // Not a CM MAD: a UD SEND to another QP, or a truncated frame.
  f[42 + 7] = 2;
  EXPECT_FALSE(Parse(f).has_value());
  EXPECT_FALSE(Parse(std::span<const uint8_t>(f.data(), 100)).has_value());
}

}  // namespace
}  // namespace fg::proto::cm
