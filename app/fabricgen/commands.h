// The subcommands of the fabricgen binary. Each returns the process exit
// code: 0 the command completed (whatever the DUT did), 1 a runtime failure,
// 2 invalid input (plan, arguments).
#pragma once

#include <atomic>
#include <string>
#include <vector>

namespace fg::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitInput = 2;

struct RunArgs {
  std::string plan;
  std::string out_dir;  // empty: results/<plan>-<UTC time>
  std::vector<std::string> eal;
  bool quiet = false;
};

int Run(const RunArgs& args, const std::atomic<bool>* interrupt);
int Ports(const std::string& plan, const std::vector<std::string>& eal);
// Writes the frames the plan's streams would send into a pcap (no DPDK needed).
int Craft(const std::string& plan, const std::string& pcap, uint64_t count);
int Version();

}  // namespace fg::app
