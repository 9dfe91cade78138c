#include "proto/uet.h"

#include <gtest/gtest.h>

#include "proto/bytes.h"

namespace fg::proto::uet {
namespace {

const UetProfile kProfile;

TEST(UetGolden, PrologueExamplesOfUetMd) {
  // RUD request, next_hdr REQ_STD, flags RETX + AR -> 0x1198.
  EXPECT_EQ(Prologue(PdsType::kRudReq, static_cast<uint8_t>(NextHdr::kReqStd), kReqRetx | kReqAr), 0x1198);
  // RUD_CC request with RETX -> 0x6990.
  EXPECT_EQ(Prologue(PdsType::kRudCcReq, static_cast<uint8_t>(NextHdr::kReqStd), kReqRetx), 0x6990);
  uint8_t b[16];
  WritePds(b, PdsHeader{.type = PdsType::kRudReq, .next_hdr = NextHdr::kReqStd, .flags = kReqRetx | kReqAr}, kProfile);
  EXPECT_EQ(b[0], 0x11);
  EXPECT_EQ(b[1], 0x98);
  WritePds(b, PdsHeader{.type = PdsType::kRudCcReq, .next_hdr = NextHdr::kReqStd, .flags = kReqRetx}, kProfile);
  EXPECT_EQ(b[0], 0x69);
  EXPECT_EQ(b[1], 0x90);
}

TEST(Uet, HeaderLengthsFollowTheProfile) {
  EXPECT_EQ(PdsLen(PdsType::kRudReq, kProfile), 12u);
  EXPECT_EQ(PdsLen(PdsType::kRodCcReq, kProfile), 16u);
  EXPECT_EQ(PdsLen(PdsType::kRudiReq, kProfile), 8u);
  EXPECT_EQ(PdsLen(PdsType::kUudReq, kProfile), 4u);
  EXPECT_EQ(PdsLen(PdsType::kAck, kProfile), 12u);
  EXPECT_EQ(PdsLen(PdsType::kAckCc, kProfile), 32u);
  EXPECT_EQ(PdsLen(PdsType::kAckCcx, kProfile), 40u);
  EXPECT_EQ(PdsLen(PdsType::kNack, kProfile), 16u);
  EXPECT_EQ(PdsLen(PdsType::kNackCcx, kProfile), 32u);
  EXPECT_EQ(PdsLen(PdsType::kCp, kProfile), 16u);
  UetProfile other;
  other.ack_ccx_len = 48;
  EXPECT_EQ(PdsLen(PdsType::kAckCcx, other), 48u);
}

TEST(Uet, RequestWithSynCarriesPdcInfoAndPsnOffset) {
  uint8_t b[16];
  PdsHeader h{.type = PdsType::kRodReq,
              .next_hdr = NextHdr::kReqSmall,
              .flags = kReqSyn | kReqAr,
              .clear_psn_offset = -3,
              .psn = 1000,
              .spdcid = 77,
              .pdc_info = 0x8,
              .psn_offset = 5};
  ASSERT_EQ(WritePds(b, h, kProfile), 12u);
  EXPECT_EQ(Load16(b + 10), 0x8005);
  auto p = ParsePds(std::span(b, 12), kProfile);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->type, PdsType::kRodReq);
  EXPECT_EQ(p->next_hdr, NextHdr::kReqSmall);
  EXPECT_EQ(p->clear_psn_offset, -3);
  EXPECT_EQ(p->psn, 1000u);
  EXPECT_EQ(p->spdcid, 77);
  EXPECT_EQ(p->pdc_info, 0x8);
  EXPECT_EQ(p->psn_offset, 5);
  EXPECT_EQ(p->psn - p->psn_offset, 995u);  // Start_PSN
  EXPECT_FALSE(ParsePds(std::span(b, 11), kProfile));
}

TEST(Uet, CcRequestAckCcAndAckCcxRoundTrip) {
  uint8_t b[48];
  PdsHeader r{.type = PdsType::kRudCcReq,
              .next_hdr = NextHdr::kReqStd,
              .psn = 9,
              .spdcid = 1,
              .dpdcid = 2,
              .ccc_id = 0x42,
              .credit_target = 0xABCDEF};
  ASSERT_EQ(WritePds(b, r, kProfile), 16u);
  auto rp = ParsePds(std::span(b, 16), kProfile);
  EXPECT_EQ(rp->ccc_id, 0x42);
  EXPECT_EQ(rp->credit_target, 0xABCDEFu);
  EXPECT_EQ(rp->dpdcid, 2);

  PdsHeader a;
  a.type = PdsType::kAckCc;
  a.flags = kAckM | 0x02;  // REQ = close
  a.ack_psn_offset = 4;
  a.cack_psn = 123456;
  a.spdcid = 3;
  a.dpdcid = 4;
  a.cc_type = 0;
  a.mpr = 8;
  a.sack_psn_offset = 64;
  a.sack_bitmap = 0xF0F0F0F0F0F0F0F0ull;
  a.ack_cc_state = PackNsccState(500, true, 3, 0x123456, 7);
  ASSERT_EQ(WritePds(b, a, kProfile), 32u);
  auto ap = ParsePds(std::span(b, 32), kProfile);
  ASSERT_TRUE(ap);
  EXPECT_EQ(ap->ack_psn_offset, 4);
  EXPECT_EQ(ap->cack_psn, 123456u);
  EXPECT_EQ(ap->mpr, 8);
  EXPECT_EQ(ap->sack_bitmap, 0xF0F0F0F0F0F0F0F0ull);
  EXPECT_EQ(ap->ack_cc_state >> 48, 500u);
  EXPECT_EQ((ap->ack_cc_state >> 16) & 0xFFFFFF, 0x123456u);
  EXPECT_EQ(ap->ack_cc_state & 0xFFFF, 7u);
  EXPECT_EQ(Load16(b + 24), 500);  // service_time leads the state word
  EXPECT_EQ(PackCreditState(0x0A0B0C, 9) >> 40, 0x0A0B0Cu);

  a.type = PdsType::kAckCcx;
  for (int i = 0; i < 16; ++i) a.ack_ccx_state[i] = static_cast<uint8_t>(i + 1);
  ASSERT_EQ(WritePds(b, a, kProfile), 40u);
  auto xp = ParsePds(std::span(b, 40), kProfile);
  ASSERT_TRUE(xp);
  EXPECT_EQ(xp->ack_ccx_state[15], 16);
}

TEST(Uet, EveryNackCodeAndEveryControlTypeRoundTrips) {
  uint8_t b[32];
  for (NackCode c : kAllNackCodes) {
    PdsHeader n{.type = PdsType::kNack, .flags = kNackRetx, .spdcid = 5, .dpdcid = 6};
    n.nack_code = c;
    n.nack_psn = 0xDEADBEEF;
    n.nack_payload = 42;
    ASSERT_EQ(WritePds(b, n, kProfile), 16u);
    EXPECT_EQ(b[2], static_cast<uint8_t>(c));
    auto p = ParsePds(std::span(b, 16), kProfile);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->nack_code, c) << NackCodeName(c);
    EXPECT_EQ(p->nack_psn, 0xDEADBEEFu);
    EXPECT_EQ(p->nack_payload, 42u);
  }
  EXPECT_STREQ(NackCodeName(NackCode::kRcvrInferLoss), "RCVR_INFER_LOSS");
  for (uint8_t t = 0; t <= static_cast<uint8_t>(CtlType::kCreditReq); ++t) {
    PdsHeader cp{.type = PdsType::kCp,
                 .ctl_type = static_cast<CtlType>(t),
                 .flags = kCpAr,
                 .probe_opaque = 0x55,
                 .psn = 77,
                 .spdcid = 1,
                 .dpdcid = 2,
                 .cp_payload = 0x01020304};
    ASSERT_EQ(WritePds(b, cp, kProfile), 16u);
    EXPECT_EQ((Load16(b) >> 7) & 0x0F, t);
    auto p = ParsePds(std::span(b, 16), kProfile);
    ASSERT_TRUE(p);
    EXPECT_EQ(static_cast<uint8_t>(p->ctl_type), t);
    EXPECT_EQ(p->cp_payload, 0x01020304u);
  }
}

TEST(Uet, RudiAndUud) {
  uint8_t b[8];
  ASSERT_EQ(WritePds(b, PdsHeader{.type = PdsType::kRudiResp, .flags = kRudiM, .psn = 0xABCD}, kProfile), 8u);
  auto p = ParsePds(std::span(b, 8), kProfile);
  EXPECT_EQ(p->psn, 0xABCDu);  // pkt_id
  EXPECT_EQ(p->flags, kRudiM);
  ASSERT_EQ(WritePds(b, PdsHeader{.type = PdsType::kUudReq, .next_hdr = NextHdr::kReqSmall}, kProfile), 4u);
  EXPECT_EQ(Load16(b), Prologue(PdsType::kUudReq, 1, 0));
}

TEST(Uet, SesRequestsAndResponsesRoundTrip) {
  uint8_t b[64];
  SesRequest std_first{.format = NextHdr::kReqStd,
                       .opcode = SesOpcode::kWrite,
                       .flags = kSesSom | kSesRel,
                       .message_id = 0x1234,
                       .job_id = 0xABCDEF,
                       .pid_on_fep = 0xFFF,
                       .resource_index = 0x123,
                       .buffer_offset = 0x1000,
                       .initiator = 7,
                       .match_bits = 0x99,
                       .header_data = 0xAA55,
                       .request_length = 1 << 20};
  ASSERT_EQ(WriteSesRequest(b, std_first, kProfile), 44u);
  auto r = ParseSesRequest(std::span(b, 44), NextHdr::kReqStd, kProfile);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->message_id, 0x1234);
  EXPECT_EQ(r->header_data, 0xAA55u);
  EXPECT_EQ(r->job_id, 0xABCDEFu);
  EXPECT_EQ(r->pid_on_fep, 0xFFF);
  EXPECT_EQ(r->request_length, 1u << 20);
  SesRequest std_mid = std_first;
  std_mid.flags = kSesEom;
  std_mid.payload_length = 4096;
  std_mid.message_offset = 8192;
  WriteSesRequest(b, std_mid, kProfile);
  r = ParseSesRequest(std::span(b, 44), NextHdr::kReqStd, kProfile);
  EXPECT_EQ(r->payload_length, 4096);
  EXPECT_EQ(r->message_offset, 8192u);
  EXPECT_EQ(r->header_data, 0u);

  SesRequest small{
      .format = NextHdr::kReqSmall, .opcode = SesOpcode::kSend, .request_length14 = 300, .buffer_offset = 5};
  ASSERT_EQ(WriteSesRequest(b, small, kProfile), 20u);
  r = ParseSesRequest(std::span(b, 20), NextHdr::kReqSmall, kProfile);
  EXPECT_EQ(r->request_length14, 300);
  SesRequest med{.format = NextHdr::kReqMedium,
                 .opcode = SesOpcode::kTaggedSend,
                 .flags = kSesHd | 3,
                 .initiator = 3,
                 .match_bits = 4,
                 .header_data = 0xBEEF};
  ASSERT_EQ(WriteSesRequest(b, med, kProfile), 32u);
  r = ParseSesRequest(std::span(b, 32), NextHdr::kReqMedium, kProfile);
  EXPECT_EQ(r->header_data, 0xBEEFu);
  EXPECT_EQ(r->opcode, SesOpcode::kTaggedSend);

  for (NextHdr f : {NextHdr::kResponse, NextHdr::kResponseData, NextHdr::kResponseDataSmall}) {
    SesResponse resp{.format = f,
                     .opcode = SesRespOpcode::kResponseWithData,
                     .return_code = 5,
                     .message_id = 0x77,
                     .job_id = 0x10,
                     .modified_length = 999,
                     .payload_length = 4000,
                     .message_offset = 12288};
    const size_t n = WriteSesResponse(b, resp, kProfile);
    EXPECT_EQ(n, SesLen(f, kProfile));
    auto p = ParseSesResponse(std::span(b, n), f, kProfile);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->return_code, 5);
    if (f != NextHdr::kResponseDataSmall) {
      EXPECT_EQ(p->message_id, 0x77);
    }
    if (f != NextHdr::kResponse) {
      EXPECT_EQ(p->payload_length, 4000);
    }
    if (f == NextHdr::kResponseData) {
      EXPECT_EQ(p->message_offset, 12288u);
    }
  }
  UetProfile narrow;
  narrow.resp_data_payload_len_bits = 12;
  SesResponse big{.format = NextHdr::kResponseData, .payload_length = 4095 + 1};
  WriteSesResponse(b, big, narrow);
  EXPECT_EQ(ParseSesResponse(std::span(b, 20), NextHdr::kResponseData, narrow)->payload_length, 0);
}

TEST(Uet, MessageSegmentationSetsSomEomAndOffsets) {
  auto m = PlanUetMessage(10000, 4096);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->packets, 3u);
  EXPECT_EQ(m->som_eom(0), kSesSom);
  EXPECT_EQ(m->som_eom(1), 0);
  EXPECT_EQ(m->som_eom(2), kSesEom);
  EXPECT_EQ(m->payload(2), 10000u - 8192);
  EXPECT_EQ(m->offset(2), 8192u);
  auto one = PlanUetMessage(100, 4096);
  EXPECT_EQ(one->som_eom(0), kSesSom | kSesEom);
  EXPECT_FALSE(PlanUetMessage(0, 4096).ok());
}

}  // namespace
}  // namespace fg::proto::uet
