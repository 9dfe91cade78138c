// port/eal_args.h: deciding the EAL command line, without touching DPDK.
//
// fabricgen adds what a user should not have to know: a per-process
// --file-prefix (several fabricgen processes can run at once), the devices
// the plan names (--vdev / -a), and, when the host has no usable hugepages,
// --no-huge --no-shconf -m MB with MB sized to the mbuf pools. Arguments the
// user gives (the plan's eal: list, then those after `--`) always win: a
// memory option of theirs disables the fallback, a --file-prefix of theirs
// replaces ours.
//
//   fg::port::EalRequest req;
//   req.user_args = {"-l", "0-1"};
//   req.vdevs = {"net_ring_fg0"};
//   req.pool_bytes = 64 << 20;
//   fg::port::EalDecision d = fg::port::DecideEalArgs(req, fg::port::ProbeHost());
//   // d.argv = {"fabricgen", "--file-prefix=fabricgen-1234", "--vdev=net_ring_fg0", ...}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fg::port {

struct HostMemory {
  bool hugetlbfs_mounted = false;  // a hugetlbfs mount exists (e.g. /dev/hugepages)
  uint64_t free_hugepage_bytes = 0;
};

// Reads /proc/mounts and /sys/kernel/mm/hugepages.
HostMemory ProbeHost();

struct EalRequest {
  std::vector<std::string> user_args;  // plan eal: list, then the command line after `--`
  std::vector<std::string> vdevs;      // each becomes --vdev=...
  std::vector<std::string> pci;        // each becomes -a ...; none and no vdev-only plan: --no-pci
  bool no_pci = false;                 // only virtual devices: skip the PCI scan
  uint64_t pool_bytes = 0;             // memory the mbuf pools will need (estimate)
  int pid = 0;                         // for the default --file-prefix
};

struct EalDecision {
  std::vector<std::string> argv;  // argv[0] is "fabricgen"
  bool no_huge = false;
  uint32_t memory_mb = 0;       // -m given with --no-huge (0 = not set by us)
  std::string memory_note;      // one line: which memory mode and why
  bool private_prefix = false;  // the --file-prefix is ours (not the user's)
};

EalDecision DecideEalArgs(const EalRequest& req, const HostMemory& host);

// Memory one mbuf of `data_room` bytes costs in a pool: under --no-huge every
// object is rounded up to whole 4 KiB pages (see shared/reference/dpdk.md).
uint64_t MbufFootprint(uint32_t data_room, bool no_huge);

}  // namespace fg::port
