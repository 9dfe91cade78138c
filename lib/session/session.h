// session/session.h: the DPDK environment and ports a plan names.
//
// A Session turns the plan's ports into EAL arguments (the built-in loopback
// becomes a net_ring vdev, vdev strings become --vdev, PCI addresses become
// -a), decides hugepages or --no-huge with memory sized to the pools, starts
// EAL and opens every port. Destroying it closes the ports, then EAL.
// `fabricgen run`, `fabricgen ports` and the interactive CLI all start here.
//
//   auto plan = fg::methods::LoadPlan("configs/quickstart.yaml");
//   fg::port::DriverRegistry drivers;            // fg::drivers::RegisterAll(drivers) in the app
//   auto session = fg::session::Session::Open(*plan, /*cli_eal_args=*/{}, drivers);
//   for (fg::port::Port* p : (*session)->ports()) std::cout << p->name() << "\n";
//   auto streams = (*session)->CompileStreams();
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/plan.h"
#include "port/driver_registry.h"
#include "port/eal.h"
#include "port/eal_args.h"
#include "port/port.h"
#include "session/gateway.h"
#include "stream/stream.h"

namespace fg::session {

// How a plan's `device:` string reaches DPDK.
struct DeviceRef {
  enum class Kind { kLoopback, kVdev, kPci, kProbed };
  Kind kind = Kind::kLoopback;
  std::string eal_arg;    // what goes after --vdev= or -a (empty for kProbed)
  std::string dpdk_name;  // the ethdev name to open
};
// `index` numbers the built-in loopback ports; `user_eal` lets a name that an
// explicit --vdev already creates be opened as is.
DeviceRef ResolveDevice(const std::string& device, size_t index, const std::vector<std::string>& user_eal);

class Session {
 public:
  // `cli_eal_args` are appended after the plan's eal: list. Without
  // `scan_pci`, a plan that names no PCI device skips the PCI bus scan.
  // Before EAL starts, the plan's streams and test cells are checked
  // (methods::PrecheckPlan), as they are again by Reload.
  static absl::StatusOr<std::unique_ptr<Session>> Open(const config::Plan& plan,
                                                       const std::vector<std::string>& cli_eal_args,
                                                       const port::DriverRegistry& drivers, bool scan_pci = false);
  ~Session();

  const config::Plan& plan() const { return plan_; }
  // Takes another plan whose ports are the same (names, devices, queues,
  // MTU): EAL and ports stay open. A plan with other ports needs a new
  // process (EAL starts once).
  absl::Status Reload(const config::Plan& plan);
  port::Eal& eal() { return *eal_; }
  const port::EalDecision& eal_decision() const { return decision_; }
  std::vector<port::Port*> ports();
  // Compiles the plan's streams against the ports' link speeds. Without
  // tests, the rates set on each port must add up to at most its line rate
  // (stream::CheckPortLoads).
  absl::StatusOr<std::vector<stream::CompiledStream>> CompileStreams();
  // Per plan port: its gateway as resolved when the plan was opened or
  // reloaded (session/gateway.h; nullopt: none). The plan's streams already
  // send to it.
  const std::vector<std::optional<GatewayResolution>>& gateways() const { return gateways_; }

 private:
  Session() = default;
  config::Plan plan_;
  port::EalDecision decision_;
  std::unique_ptr<port::Eal> eal_;
  std::vector<std::unique_ptr<port::Port>> ports_;  // destroyed before eal_
  std::vector<std::optional<GatewayResolution>> gateways_;
  // Resolves `plan`'s gateways and points its streams at them.
  absl::Status UseGateways(config::Plan& plan);
};

}  // namespace fg::session
