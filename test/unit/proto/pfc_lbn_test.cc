#include <gtest/gtest.h>

#include "lbn/model.h"
#include "proto/bytes.h"
#include "proto/lbn.h"
#include "proto/pfc.h"

namespace fg::proto {
namespace {

TEST(Pfc, PfcFrameLayoutAndRoundTrip) {
  uint8_t f[kMacControlFrameLen];
  MacControl m;
  m.class_enable = 0x0048;  // priorities 3 and 6
  m.quanta[3] = 0xFFFF;
  m.quanta[6] = 0x0100;
  const MacAddr src{{0x02, 0, 0, 0, 0, 9}};
  ASSERT_EQ(WritePfc(f, src, m), 60u);
  const uint8_t head[] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01, 0x02, 0, 0, 0, 0, 9, 0x88, 0x08, 0x01, 0x01, 0x00, 0x48};
  for (size_t i = 0; i < sizeof head; ++i) EXPECT_EQ(f[i], head[i]) << i;
  EXPECT_EQ(Load16(f + 18 + 6), 0xFFFF);  // quanta[3]
  auto p = ParseMacControl(std::span(f, 60));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->opcode, kOpcodePfc);
  EXPECT_EQ(p->class_enable, 0x48);
  EXPECT_EQ(p->quanta[6], 0x100);
  EXPECT_EQ(p->src, src);
  EXPECT_FALSE(ParseMacControl(std::span(f, 30)));
}

TEST(Pfc, PauseAndQuantaDuration) {
  uint8_t f[kMacControlFrameLen];
  WritePause(f, MacAddr{}, 1000);
  auto p = ParseMacControl(std::span(f, 60));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->opcode, kOpcodePause);
  EXPECT_EQ(p->quanta[0], 1000);
  EXPECT_NEAR(PauseQuantaNs(0xFFFF, 100e9), 335539.2, 0.01);
}

TEST(LbnGolden, SeedBitmapsReproduce) {
  using lbn::Bitmap;
  // Step 1: Leaf1 sends 111 for itself, 000 for the others.
  EXPECT_EQ(fg::lbn::LeafInitial(0).ToString(4), "111000000000");
  // Steps 2-3: 4 leaves, 2 spines, 100G links; Spine1-Leaf4 is a 2 x 50G LAG.
  std::vector<fg::lbn::SpinePort> spine1 = {{0, {100}}, {1, {100}}, {2, {100}}, {3, {50, 50}}};
  std::vector<fg::lbn::SpinePort> spine2 = {{0, {100}}, {1, {100}}, {2, {100}}, {3, {100}}};
  std::vector<Bitmap> received = {fg::lbn::LeafInitial(0), fg::lbn::LeafInitial(1), fg::lbn::LeafInitial(2),
                                  fg::lbn::LeafInitial(3)};
  const Bitmap s1 = fg::lbn::SpineAggregate(spine1, received, fg::lbn::LagRule::kPerMember);
  const Bitmap s2 = fg::lbn::SpineAggregate(spine2, received, fg::lbn::LagRule::kPerMember);
  EXPECT_EQ(s1.ToString(4), "100100100011");
  EXPECT_EQ(s2.ToString(4), "100100100100");
  // Byte-exact on the wire: 1001 0010 0011 -> 0x92 0x3_, 1001 0010 0100 -> 0x92 0x4_.
  EXPECT_EQ(s1.bytes()[0], 0x92);
  EXPECT_EQ(s1.bytes()[1], 0x30);
  EXPECT_EQ(s2.bytes()[1], 0x40);
  // The procedure text's reading (sum over the LAG) gives 100G toward Leaf4.
  EXPECT_EQ(fg::lbn::SpineAggregate(spine1, received, fg::lbn::LagRule::kSum).ToString(4), "100100100100");
  // Step 4: Leaf1 keeps both (min with its 100G uplinks).
  EXPECT_EQ(fg::lbn::LeafApply(s1, 100, 4).ToString(4), "100100100011");
}

TEST(Lbn, LevelsAndRounding) {
  EXPECT_EQ(lbn::LevelForGbps(0), 0);
  EXPECT_EQ(lbn::LevelForGbps(9.9), 0);
  EXPECT_EQ(lbn::LevelForGbps(10), 1);
  EXPECT_EQ(lbn::LevelForGbps(150), 4);  // between levels: round down
  EXPECT_EQ(lbn::LevelForGbps(1600), 7);
  EXPECT_EQ(lbn::LevelGbps(6), 400);
  lbn::Bitmap b;
  b.Set(255, 5);
  b.Set(254, 3);
  EXPECT_EQ(b.Get(255), 5);
  EXPECT_EQ(b.Get(254), 3);
  EXPECT_EQ(b.bytes()[95] & 7, 5);
}

TEST(Lbn, MessageRoundTripWithConfigurableCodepoints) {
  lbn::Settings s;
  s.ethertype = 0x88B6;
  s.opcode = 0x42;
  s.type = 0x07;
  lbn::Message m;
  m.msg = 2;
  m.dev_range = 0x3F;
  m.bitmap.Set(0, 7);
  m.bitmap.Set(100, 2);
  uint8_t f[128];
  const size_t n = lbn::WriteMessage(f, MacAddr{}, MacAddr{{1, 2, 3, 4, 5, 6}}, m, s);
  EXPECT_EQ(n, 14u + 100);
  EXPECT_EQ(Load16(f + 12), 0x88B6);
  EXPECT_EQ(f[14], 0x42);
  EXPECT_EQ(f[15], 0x07);
  EXPECT_EQ(Load16(f + 16), 2 << 13 | 0x3F << 4);
  auto back = lbn::ParseMessage(std::span(f, n), s);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->msg, 2);
  EXPECT_EQ(back->dev_range, 0x3F);
  EXPECT_EQ(back->bitmap, m.bitmap);
  lbn::Settings other = s;
  other.opcode = 0x43;
  EXPECT_FALSE(lbn::ParseMessage(std::span(f, n), other));
  EXPECT_FALSE(lbn::ParseMessage(std::span(f, n - 1), s));
}

}  // namespace
}  // namespace fg::proto
