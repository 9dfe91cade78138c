#include "port/kernel_if.h"

#include <fstream>
#include <sstream>

namespace fg::port {
namespace {

bool ReadCounter(const std::string& iface, const char* name, uint64_t& out) {
  std::ifstream f("/sys/class/net/" + iface + "/statistics/" + name);
  return static_cast<bool>(f >> out);
}

}  // namespace

KernelCounters ReadKernelCounters(const std::string& iface) {
  KernelCounters c;
  if (iface.empty() || iface.find('/') != std::string::npos) return c;
  c.valid = ReadCounter(iface, "rx_packets", c.rx_packets) && ReadCounter(iface, "tx_packets", c.tx_packets) &&
            ReadCounter(iface, "rx_dropped", c.rx_dropped) && ReadCounter(iface, "tx_dropped", c.tx_dropped);
  return c;
}

int64_t HostBacklogDrops() {
  std::ifstream f("/proc/net/softnet_stat");
  if (!f) return -1;
  int64_t total = 0;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string processed, dropped;
    if (!(in >> processed >> dropped)) return -1;
    total += static_cast<int64_t>(std::stoull(dropped, nullptr, 16));
  }
  return total;
}

std::string KernelInterfaceOf(const std::string& device) {
  if (device.rfind("net_af_packet", 0) != 0 && device.rfind("net_pcap", 0) != 0 &&
      device.rfind("eth_af_packet", 0) != 0) {
    return "";
  }
  size_t pos = 0;
  while ((pos = device.find(',', pos)) != std::string::npos) {
    ++pos;
    if (device.compare(pos, 6, "iface=") == 0) {
      const size_t end = device.find(',', pos);
      return device.substr(pos + 6, end == std::string::npos ? std::string::npos : end - pos - 6);
    }
  }
  return "";
}

}  // namespace fg::port
