#include <gtest/gtest.h>
#include <rte_dev.h>
#include <unistd.h>

#include <iostream>

#include "absl/strings/str_format.h"
#include "dpdk_test_env.h"
#include "port/eal_args.h"

namespace fg::testing {
namespace {
std::unique_ptr<port::Eal> g_eal;  // test process only
int g_vdevs = 0;
}  // namespace

port::Eal& TestEal() { return *g_eal; }

std::string NewVdev(const std::string& driver, const std::string& args) {
  std::string name = absl::StrFormat("%s_t%d", driver, g_vdevs++);
  std::string dev = args.empty() ? name : name + "," + args;
  int ret = rte_dev_probe(dev.c_str());
  EXPECT_EQ(ret, 0) << "rte_dev_probe(" << dev << ")";
  return name;
}

}  // namespace fg::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Always --no-huge here: this suite proves the no-hugepage path works.
  fg::port::EalRequest req;
#ifdef FG_TEST_LCORES
  // A binary built for more workers than this host has CPUs: lcores share them.
  req.user_args = {"--lcores", FG_TEST_LCORES, "--no-huge", "--no-shconf", "-m", "1024"};
#else
  req.user_args = {"-l", "0-1", "--no-huge", "--no-shconf", "-m", "512"};
#endif
  req.no_pci = true;
  req.pid = static_cast<int>(getpid());
  fg::port::EalDecision d = fg::port::DecideEalArgs(req, fg::port::HostMemory{});
  auto eal = fg::port::Eal::Start(d.argv, d.private_prefix);
  if (!eal.ok()) {
    std::cerr << eal.status() << "\n";
    return 1;
  }
  fg::testing::g_eal = std::move(*eal);
  int rc = RUN_ALL_TESTS();
  fg::testing::g_eal.reset();
  return rc;
}
