#include "port/eal_args.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"

namespace fg::port {
namespace {

bool HasArg(const std::vector<std::string>& args, std::initializer_list<const char*> names) {
  for (const std::string& a : args) {
    for (const char* n : names) {
      std::string name(n);
      if (a == name || a.rfind(name + "=", 0) == 0) return true;
    }
  }
  return false;
}

uint64_t ReadNumber(const std::string& path) {
  std::ifstream in(path);
  uint64_t v = 0;
  in >> v;
  return in ? v : 0;
}

// Room EAL, ethdev and rings need besides the mbuf pools, measured with
// net_ring/net_null under --no-huge (22.11): ~20 MB; keep a margin.
constexpr uint32_t kEalBaseMb = 48;

}  // namespace

HostMemory ProbeHost() {
  HostMemory h;
  std::ifstream mounts("/proc/mounts");
  std::string line;
  while (std::getline(mounts, line)) {
    std::istringstream f(line);
    std::string dev, dir, type;
    f >> dev >> dir >> type;
    if (type == "hugetlbfs") h.hugetlbfs_mounted = true;
  }
  const uint64_t free2m = ReadNumber("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages");
  const uint64_t free1g = ReadNumber("/sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages");
  h.free_hugepage_bytes = free2m * (2ull << 20) + free1g * (1ull << 30);
  return h;
}

uint64_t MbufFootprint(uint32_t data_room, bool no_huge) {
  // mempool object header (64) + struct rte_mbuf (128) + data room.
  const uint64_t elt = 64 + 128 + data_room;
  return no_huge ? (elt + 4095) / 4096 * 4096 : elt;
}

EalDecision DecideEalArgs(const EalRequest& req, const HostMemory& host) {
  EalDecision d;
  d.argv.push_back("fabricgen");
  const std::vector<std::string>& user = req.user_args;
  if (!HasArg(user, {"--file-prefix"})) {
    d.argv.push_back(absl::StrFormat("--file-prefix=fabricgen-%d", req.pid));
    d.private_prefix = true;
  }
  if (!HasArg(user, {"--log-level"})) {
    // Quiet by default; EAL's own warnings (e.g. "No free 1048576 kB
    // hugepages" for every unused page size) are noise for a tester's user.
    d.argv.push_back("--log-level=warning");
    d.argv.push_back("--log-level=lib.eal:error");
  }
  // DPDK telemetry is off unless asked for: our metrics come from lib/metrics.
  if (!HasArg(user, {"--telemetry", "--no-telemetry"})) d.argv.push_back("--no-telemetry");
  for (const std::string& v : req.vdevs) d.argv.push_back("--vdev=" + v);
  for (const std::string& p : req.pci) {
    d.argv.push_back("-a");
    d.argv.push_back(p);
  }
  if (req.no_pci && req.pci.empty() && !HasArg(user, {"--no-pci", "-a", "--allow", "-b", "--block"})) {
    d.argv.push_back("--no-pci");
  }

  const bool user_memory = HasArg(user, {"--no-huge", "-m", "--socket-mem", "--in-memory", "--huge-dir"});
  const uint64_t need = req.pool_bytes + (uint64_t{kEalBaseMb} << 20);
  if (user_memory) {
    d.no_huge = HasArg(user, {"--no-huge"});
    d.memory_note = "as given by the EAL arguments";
  } else if (host.hugetlbfs_mounted && host.free_hugepage_bytes >= need) {
    // --in-memory: no hugepage files or shared config left behind after exit.
    d.argv.push_back("--in-memory");
    d.memory_note = absl::StrFormat("hugepages, --in-memory (%d MiB free, ~%d MiB needed)",
                                    host.free_hugepage_bytes >> 20, need >> 20);
  } else {
    d.no_huge = true;
    d.memory_mb = static_cast<uint32_t>((need + (1 << 20) - 1) >> 20);
    d.argv.push_back("--no-huge");
    d.argv.push_back("--no-shconf");
    d.argv.push_back("-m");
    d.argv.push_back(absl::StrFormat("%d", d.memory_mb));
    d.memory_note = absl::StrFormat(
        "--no-huge -m %d (%s); tools/setup.sh reserves hugepages for full speed", d.memory_mb,
        !host.hugetlbfs_mounted
            ? "no hugetlbfs mounted"
            : absl::StrFormat("%d MiB of hugepages free, ~%d MiB needed", host.free_hugepage_bytes >> 20, need >> 20));
  }
  d.argv.insert(d.argv.end(), user.begin(), user.end());
  return d;
}

}  // namespace fg::port
