#include "port/eal.h"

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <filesystem>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace fg::port {

absl::StatusOr<std::unique_ptr<Eal>> Eal::Start(const std::vector<std::string>& argv, bool own_runtime_dir) {
  // rte_eal_init may permute argv: give it copies it can keep.
  std::vector<std::string> storage = argv;
  std::vector<char*> cargv;
  for (std::string& s : storage) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  int ret = rte_eal_init(static_cast<int>(storage.size()), cargv.data());
  if (ret < 0) {
    return absl::InternalError(absl::StrFormat("DPDK EAL initialisation failed (%s) with arguments: %s",
                                               rte_strerror(rte_errno), absl::StrJoin(argv, " ")));
  }
  std::unique_ptr<Eal> eal(new Eal());
  eal->argv_ = argv;
  eal->tsc_hz_ = rte_get_tsc_hz();
  eal->main_lcore_ = rte_get_main_lcore();
  unsigned lcore;
  RTE_LCORE_FOREACH_WORKER(lcore) { eal->workers_.push_back(lcore); }
  for (const std::string& a : argv) {
    if (a == "--no-huge") eal->no_huge_ = true;
  }
  if (own_runtime_dir) eal->runtime_dir_ = rte_eal_get_runtime_dir();
  return eal;
}

Eal::~Eal() {
  rte_eal_cleanup();
  if (!runtime_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(runtime_dir_, ec);  // best effort: only our private prefix
  }
}

}  // namespace fg::port
