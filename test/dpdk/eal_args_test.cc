#include "port/eal_args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fg::port {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;

EalRequest Req() {
  EalRequest r;
  r.vdevs = {"net_ring_fg0"};
  r.no_pci = true;
  r.pool_bytes = 100ull << 20;
  r.pid = 42;
  return r;
}

TEST(EalArgs, NoHugepagesFallsBackToNoHugeWithSizedMemory) {
  EalDecision d = DecideEalArgs(Req(), HostMemory{.hugetlbfs_mounted = false});
  EXPECT_TRUE(d.no_huge);
  EXPECT_EQ(d.memory_mb, 148u);  // 100 MiB of pools + 48 MiB for EAL
  EXPECT_THAT(d.argv, Contains("--no-huge"));
  EXPECT_THAT(d.argv, Contains("--no-shconf"));
  EXPECT_THAT(d.argv, Contains("--file-prefix=fabricgen-42"));
  EXPECT_THAT(d.argv, Contains("--vdev=net_ring_fg0"));
  EXPECT_THAT(d.argv, Contains("--no-pci"));
  EXPECT_TRUE(d.private_prefix);
}

TEST(EalArgs, EnoughHugepagesUsesThemInMemory) {
  EalDecision d = DecideEalArgs(Req(), HostMemory{.hugetlbfs_mounted = true, .free_hugepage_bytes = 1ull << 30});
  EXPECT_FALSE(d.no_huge);
  EXPECT_THAT(d.argv, Contains("--in-memory"));
  EXPECT_THAT(d.argv, Not(Contains("--no-huge")));
}

TEST(EalArgs, TooFewHugepagesFallsBack) {
  EalDecision d = DecideEalArgs(Req(), HostMemory{.hugetlbfs_mounted = true, .free_hugepage_bytes = 64ull << 20});
  EXPECT_TRUE(d.no_huge);
  EXPECT_NE(d.memory_note.find("64 MiB of hugepages free"), std::string::npos) << d.memory_note;
}

TEST(EalArgs, UserMemoryAndPrefixWin) {
  EalRequest r = Req();
  r.user_args = {"--file-prefix=mine", "-m", "300", "--no-huge"};
  EalDecision d = DecideEalArgs(r, HostMemory{});
  EXPECT_THAT(d.argv, Not(Contains("--file-prefix=fabricgen-42")));
  EXPECT_FALSE(d.private_prefix);
  EXPECT_EQ(d.memory_mb, 0u);  // not ours
  EXPECT_EQ(std::count(d.argv.begin(), d.argv.end(), "--no-huge"), 1);
  // User arguments come last, in their order.
  EXPECT_THAT(std::vector<std::string>(d.argv.end() - 4, d.argv.end()),
              ElementsAre("--file-prefix=mine", "-m", "300", "--no-huge"));
}

TEST(EalArgs, PciDevicesAreAllowListedAndScanned) {
  EalRequest r = Req();
  r.pci = {"0000:03:00.0"};
  r.no_pci = false;
  EalDecision d = DecideEalArgs(r, HostMemory{});
  EXPECT_THAT(d.argv, Contains("0000:03:00.0"));
  EXPECT_THAT(d.argv, Not(Contains("--no-pci")));
}

TEST(EalArgs, NoHugeFootprintRoundsToPages) {
  EXPECT_EQ(MbufFootprint(2176, true), 4096u);
  EXPECT_EQ(MbufFootprint(2176, false), 2176u + 192);
  EXPECT_EQ(MbufFootprint(9216, true), 12288u);
}

}  // namespace
}  // namespace fg::port
