// port/eal.h: the DPDK environment of one fabricgen process.
//
// DPDK's EAL can be initialised once per process; Eal owns that and cleans it
// up when destroyed. Everything that needs DPDK receives the Eal (or a Port
// opened through it) instead of reaching for globals.
//
//   auto eal = fg::port::Eal::Start(decision.argv);
//   if (!eal.ok()) return 1;
//   uint64_t hz = (*eal)->tsc_hz();
//   unsigned workers = (*eal)->worker_lcores().size();
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace fg::port {

class Eal {
 public:
  // Initialises EAL with `argv` (argv[0] is the program name). With
  // `own_runtime_dir` the runtime directory (/var/run/dpdk/<file-prefix>) is
  // removed at exit: set it when the file prefix is private to this process.
  // Arguments EAL refuses (where DPDK would print its usage text) give an
  // InvalidArgument error of one line with DPDK's reason; the usage text is
  // not printed. So does a device (--vdev, -a) no driver knows: "device
  // 'NAME': no DPDK driver knows it ...". A start that fails removes the
  // runtime directory EAL made (with `own_runtime_dir`).
  static absl::StatusOr<std::unique_ptr<Eal>> Start(const std::vector<std::string>& argv, bool own_runtime_dir = false);
  ~Eal();
  Eal(const Eal&) = delete;
  Eal& operator=(const Eal&) = delete;

  uint64_t tsc_hz() const { return tsc_hz_; }
  unsigned main_lcore() const { return main_lcore_; }
  const std::vector<unsigned>& worker_lcores() const { return workers_; }
  const std::vector<std::string>& argv() const { return argv_; }
  bool no_huge() const { return no_huge_; }

 private:
  Eal() = default;
  uint64_t tsc_hz_ = 0;
  unsigned main_lcore_ = 0;
  std::vector<unsigned> workers_;
  std::vector<std::string> argv_;
  bool no_huge_ = false;
  std::string runtime_dir_;  // removed at exit when not empty
};

}  // namespace fg::port
