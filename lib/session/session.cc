#include "session/session.h"

#include <unistd.h>

#include <regex>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "base/status.h"
#include "engine/memory.h"
#include "methods/kinds.h"
#include "methods/memory.h"

namespace fg::session {

DeviceRef ResolveDevice(const std::string& device, size_t index, const std::vector<std::string>& user_eal) {
  DeviceRef r;
  if (device == config::kLoopbackDevice) {
    r.kind = DeviceRef::Kind::kLoopback;
    r.dpdk_name = absl::StrFormat("net_ring_fg%d", index);
    r.eal_arg = r.dpdk_name;
    return r;
  }
  static const std::regex kPci("^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7](,.*)?$");
  const std::string name = device.substr(0, device.find(','));
  if (std::regex_match(device, kPci)) {
    r.kind = DeviceRef::Kind::kPci;
    r.eal_arg = device;  // devargs after the address are passed through
    r.dpdk_name = name;
    return r;
  }
  for (const std::string& a : user_eal) {
    if (a.find(name) != std::string::npos) {
      r.kind = DeviceRef::Kind::kProbed;  // an explicit EAL argument creates it
      r.dpdk_name = name;
      return r;
    }
  }
  r.kind = DeviceRef::Kind::kVdev;
  r.eal_arg = device;
  r.dpdk_name = name;
  return r;
}

namespace {
port::PortOptions OptionsFor(const config::PortSpec& ps, const DeviceRef& ref, unsigned lcores) {
  const std::string& dpdk_name = ref.dpdk_name;
  return port::PortOptions{
      .name = ps.name,
      .dpdk_name = dpdk_name,
      .rx_queues = ps.rx_queues,
      .tx_queues = ps.tx_queues,
      .rx_desc = ps.rx_desc,
      .tx_desc = ps.tx_desc,
      .mtu = ps.mtu,
      .mbufs = ps.mbufs,
      .link_speed_mbps = ps.link_speed_mbps,
      .lcores = lcores,
      .rx_timestamps = ps.timestamps == config::PortSpec::Timestamps::kSoftware   ? port::RxTimestamps::kSoftware
                       : ps.timestamps == config::PortSpec::Timestamps::kHardware ? port::RxTimestamps::kHardware
                                                                                  : port::RxTimestamps::kAuto,
      .tx_scheduled = ps.tx_scheduled,
      .kernel_iface = port::KernelInterfaceOf(ps.device),
      .rx_is_own_tx = ref.kind == DeviceRef::Kind::kLoopback};
}
// An argument EAL refused that the plan's eal: list gave (DPDK quotes it:
// "unrecognized option '--bogus'") is named at its place in the plan; a
// device no driver knows (port::Eal::Start: "device 'NAME': ...") at the
// port that names it.
absl::Status LocateEalError(const config::Plan& plan, const std::vector<DeviceRef>& refs, const absl::Status& s) {
  if (s.code() != absl::StatusCode::kInvalidArgument) return s;
  for (size_t i = 0; i < plan.ports.size() && i < refs.size(); ++i) {
    if (absl::StartsWith(s.message(), "device '" + refs[i].dpdk_name + "'")) {
      const config::PortSpec& ps = plan.ports[i];
      const config::Written* w = ps.written.Find("device");
      return absl::InvalidArgumentError(absl::StrFormat("%s: ports[%d].device: port '%s': %s",
                                                        config::FormatLocation(plan.file, w != nullptr ? w->at : ps.at),
                                                        i, ps.name, s.message()));
    }
  }
  for (size_t i = 0; i < plan.eal.size() && i < plan.eal_at.size(); ++i) {
    if (absl::StrContains(s.message(), "'" + plan.eal[i] + "'")) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: eal[%d]: %s", config::FormatLocation(plan.file, plan.eal_at[i]), i, s.message()));
    }
  }
  return s;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> Session::Open(const config::Plan& plan,
                                                       const std::vector<std::string>& cli_eal_args,
                                                       const port::DriverRegistry& drivers, bool scan_pci) {
  // Before EAL starts: a plan whose streams or test cells cannot compile runs nothing.
  FG_RETURN_IF_ERROR(methods::PrecheckPlan(plan));
  std::unique_ptr<Session> s(new Session());
  s->plan_ = plan;
  port::EalRequest req;
  req.user_args = plan.eal;
  req.user_args.insert(req.user_args.end(), cli_eal_args.begin(), cli_eal_args.end());
  req.pid = static_cast<int>(getpid());
  req.no_pci = !scan_pci;
  const unsigned lcores = std::max(2u, std::thread::hardware_concurrency());
  std::vector<DeviceRef> refs;
  for (size_t i = 0; i < plan.ports.size(); ++i) {
    const config::PortSpec& ps = plan.ports[i];
    DeviceRef ref = ResolveDevice(ps.device, i, req.user_args);
    if (ref.kind == DeviceRef::Kind::kPci) {
      req.pci.push_back(ref.eal_arg);
      req.no_pci = false;
    } else if (ref.kind != DeviceRef::Kind::kProbed) {
      req.vdevs.push_back(ref.eal_arg);
    }
    const port::PortOptions o = OptionsFor(ps, ref, lcores);
    const uint32_t mbufs = o.mbufs != 0 ? o.mbufs : port::MbufsNeeded(o);
    req.pool_bytes += uint64_t{mbufs} * port::MbufFootprint(port::MbufDataRoom(o.mtu), /*no_huge=*/true);
    refs.push_back(ref);
  }
  s->decision_ = port::DecideEalArgs(req, port::ProbeHost());
  // The flows' state (and, under --no-huge, the pools) come out of this
  // process's memory: a plan that cannot fit is refused before EAL starts,
  // naming the key that drives it, rather than swapping or being killed.
  const methods::MemoryEstimate need = methods::EstimateMemory(plan, lcores);
  const uint64_t pools = s->decision_.no_huge ? uint64_t{s->decision_.memory_mb} << 20 : 0;
  FG_RETURN_IF_ERROR(methods::CheckMemory(need, pools, engine::MemAvailableBytes()));
  if (need.bytes >= (uint64_t{1} << 20)) {
    s->decision_.memory_note +=
        absl::StrFormat("; flow state ~%s (%s)", methods::FormatMemory(need.bytes), need.trial);
  }
  auto eal = port::Eal::Start(s->decision_.argv, s->decision_.private_prefix);
  if (!eal.ok()) return LocateEalError(plan, refs, eal.status());
  s->eal_ = *std::move(eal);

  const unsigned used_lcores = static_cast<unsigned>(s->eal_->worker_lcores().size()) + 1;
  for (size_t i = 0; i < plan.ports.size(); ++i) {
    const config::PortSpec& ps = plan.ports[i];
    port::PortOptions o = OptionsFor(ps, refs[i], used_lcores);
    o.drivers = &drivers;
    auto p = port::Port::Open(o);
    if (!p.ok()) {
      return absl::Status(p.status().code(), absl::StrFormat("%s: ports[%d]: %s", config::FormatLocation(plan.file, ps.at),
                                                             i, p.status().message()));
    }
    FG_RETURN_IF_ERROR((*p)->Start());
    s->ports_.push_back(std::move(*p));
  }
  FG_RETURN_IF_ERROR(s->UseGateways(s->plan_));
  return s;
}

absl::Status Session::UseGateways(config::Plan& plan) {
  FG_ASSIGN_OR_RETURN(gateways_, ResolveGateways(plan, ports(), endpoint::HostsOfPlan(plan)));
  ApplyGateways(plan, gateways_);
  return absl::OkStatus();
}

Session::~Session() {
  ports_.clear();
  eal_.reset();
}

std::vector<port::Port*> Session::ports() {
  std::vector<port::Port*> out;
  for (auto& p : ports_) out.push_back(p.get());
  return out;
}

absl::StatusOr<std::vector<stream::CompiledStream>> Session::CompileStreams() {
  std::vector<double> line;
  for (auto& p : ports_) {
    p->RefreshLink();
    line.push_back(p->capabilities().line_bps());
  }
  FG_ASSIGN_OR_RETURN(std::vector<stream::CompiledStream> streams, stream::Compile(plan_, line));
  // Streams sent at their own rates must fit their ports; a plan's tests send
  // at each test's load instead (its streams' rates are not used).
  if (plan_.tests.empty()) FG_RETURN_IF_ERROR(stream::CheckPortLoads(plan_, streams, line));
  return streams;
}

absl::Status Session::Reload(const config::Plan& plan) {
  auto same = [](const config::PortSpec& a, const config::PortSpec& b) {
    return a.name == b.name && a.device == b.device && a.rx_queues == b.rx_queues && a.tx_queues == b.tx_queues &&
           a.mtu == b.mtu;
  };
  bool ok = plan.ports.size() == plan_.ports.size();
  for (size_t i = 0; ok && i < plan.ports.size(); ++i) ok = same(plan.ports[i], plan_.ports[i]);
  if (!ok) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: its ports differ from those open (%s); EAL starts once per process: start fabricgen again with this plan",
        plan.file, plan_.file));
  }
  FG_RETURN_IF_ERROR(methods::PrecheckPlan(plan));
  FG_RETURN_IF_ERROR(methods::CheckMemory(
      methods::EstimateMemory(plan, std::max(2u, std::thread::hardware_concurrency())), 0, engine::MemAvailableBytes()));
  config::Plan next = plan;
  FG_RETURN_IF_ERROR(UseGateways(next));
  plan_ = std::move(next);
  return absl::OkStatus();
}

}  // namespace fg::session
