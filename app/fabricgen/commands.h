// The subcommands of the fabricgen binary. Each returns the process exit
// code: 0 the command completed (whatever the DUT did), 1 a runtime failure,
// 2 invalid input (plan, arguments).
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "port/driver_registry.h"

namespace fg::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitInput = 2;

struct RunArgs {
  std::string plan;
  std::optional<std::string> out_dir;  // not given: results/<plan>-<UTC time> ("" is refused, not the default)
  std::vector<std::string> eal;
  bool quiet = false;
  bool verbose = false;  // --verbose: each tester limit with its detail on the console (else one line per stream)
  std::string metrics;  // [ADDR:]PORT of a Prometheus endpoint; empty: none
};

// `interrupt`: set by any signal that ends the run, at any time (before
// traffic too): the run stops and its report is written, marked incomplete.
int Run(const RunArgs& args, const std::atomic<bool>* interrupt);

struct CliArgs {
  std::string plan;     // optional: loaded first
  std::string script;   // run these commands instead of a terminal session ("-": stdin)
  std::string metrics;  // [ADDR:]PORT of a Prometheus endpoint; empty: none
  std::vector<std::string> eal;
};
// The command shell (lib/cli): a terminal with completion and history, or a
// script (a file, or stdin when it is not a terminal) that stops at the first
// failing command, naming its line. `interrupt` (SIGINT) ends the current
// wait or test; `end_signal` (the signal number, 0: none) ends the session.
// At the end of the script or on an ending signal, a running run ends as
// `stop` ends it (its summary printed).
int Cli(const CliArgs& args, std::atomic<bool>* interrupt, const std::atomic<int>* end_signal);

// The drivers built in, and the exit code for an error.
port::DriverRegistry Drivers();
int ExitFor(const absl::Status& s);
int Ports(const std::string& plan, const std::vector<std::string>& eal);
// Writes the frames the plan's streams would send into a pcap (no DPDK needed).
// `count`: packets per stream, 1..stream::kMaxCraftPackets, or 0 for one
// message per flow. Interrupted, it writes nothing.
int Craft(const std::string& plan, const std::string& pcap, uint64_t count, const std::atomic<bool>* interrupt);
int Version();

}  // namespace fg::app
