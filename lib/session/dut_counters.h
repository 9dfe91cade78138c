// session/dut_counters.h: the DUT's per-link counters, read through a command
// the plan names (`dut_counters`): tools/lab.py in the namespace lab, or a
// site's own script (SNMP, gNMI, a switch CLI over ssh).
//
// The command prints one JSON object on stdout:
//   {"leaf0-spine0": {"tx_packets": 12, "tx_bytes": 3456, ...}, ...}
// (other fields are ignored) and exits 0. It runs without a shell
// (posix_spawnp: the first word is looked up on PATH), in a process group of
// its own, stdin from /dev/null. It has kDutCountersTimeoutNs to answer (to
// close its stdout): past that its process group is killed and the read
// fails (DeadlineExceeded, naming the command: the DUT's counters are
// missing).
//
//   auto c = fg::session::ReadDutCounters({"lab.py", "counters"});
//   uint64_t bytes = (*c)["leaf0-spine0"].tx_bytes;
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "methods/test_kind.h"

namespace fg::session {

// A counters read is a query (a script, SNMP, a switch CLI over ssh): 10 s
// is several times what one takes, and bounds what a hung one costs a test.
inline constexpr int64_t kDutCountersTimeoutNs = 10'000'000'000;

absl::StatusOr<std::map<std::string, methods::LinkCounters>> ReadDutCounters(
    const std::vector<std::string>& argv, int64_t timeout_ns = kDutCountersTimeoutNs);
// Parses the command's output (exposed for tests).
absl::StatusOr<std::map<std::string, methods::LinkCounters>> ParseDutCounters(const std::string& json);

}  // namespace fg::session
