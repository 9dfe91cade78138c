#include "port/kernel_if.h"

#include <fstream>
#include <sstream>

#include <dirent.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>

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

std::vector<int64_t> ParseStealNs(std::istream& stat, long ticks_per_s) {
  if (ticks_per_s <= 0) return {};
  std::vector<int64_t> out;
  std::string line;
  while (std::getline(stat, line)) {
    // "cpuN user nice system idle iowait irq softirq steal ...": the total line ("cpu ") is skipped.
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream in(line.substr(3));
    size_t cpu = 0;
    uint64_t v[8] = {};
    if (!(in >> cpu)) return {};
    for (uint64_t& x : v) {
      if (!(in >> x)) return {};
    }
    if (cpu >= 4096) return {};
    if (out.size() <= cpu) out.resize(cpu + 1, 0);
    out[cpu] = static_cast<int64_t>(v[7] * 1'000'000'000 / static_cast<uint64_t>(ticks_per_s));
  }
  return out;
}

std::vector<int64_t> HostStealNs() {
  std::ifstream f("/proc/stat");
  if (!f) return {};
  return ParseStealNs(f, sysconf(_SC_CLK_TCK));
}

int64_t ThreadRunDelayNs(int tid) {
  if (tid <= 0) return -1;
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/schedstat");
  uint64_t run = 0, delay = 0;
  if (!(f >> run >> delay)) return -1;
  return static_cast<int64_t>(delay);
}

HoldupProbe ProbeHoldups(int cpu, double seconds) {
  HoldupProbe r;
  r.cpu = cpu;
  r.seconds = seconds;
  cpu_set_t old, set;
  const bool had = pthread_getaffinity_np(pthread_self(), sizeof old, &old) == 0;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  r.pinned = cpu >= 0 && cpu < CPU_SETSIZE && pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
  if (!r.pinned) return r;
  const int tid = static_cast<int>(gettid());
  const int64_t wait0 = ThreadRunDelayNs(tid);
  const std::vector<int64_t> steal0 = HostStealNs();
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  auto last = Clock::now();
  for (;;) {
    const auto now = Clock::now();
    const int64_t gap = std::chrono::duration_cast<std::chrono::nanoseconds>(now - last).count();
    last = now;
    if (gap > 1'000'000) {
      ++r.over_1ms;
      r.over_1ms_ns += gap;
    }
    if (gap > 4'000'000) ++r.over_4ms;
    r.longest_ns = std::max(r.longest_ns, gap);
    if (now >= end) break;
  }
  const int64_t wait1 = ThreadRunDelayNs(tid);
  if (wait0 >= 0 && wait1 >= wait0) r.wait_ns = wait1 - wait0;
  const std::vector<int64_t> steal1 = HostStealNs();
  const size_t c = static_cast<size_t>(cpu);
  if (c < steal0.size() && c < steal1.size()) r.steal_ns = steal1[c] - steal0[c];
  if (had) pthread_setaffinity_np(pthread_self(), sizeof old, &old);
  return r;
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

std::vector<int> PacketSocketsOf(const std::string& iface) {
  std::vector<int> out;
  const unsigned index = if_nametoindex(iface.c_str());
  if (index == 0) return out;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return out;
  const int self = dirfd(d);
  while (const dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == self) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    int domain = 0;
    socklen_t len = sizeof domain;
    if (getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_PACKET) continue;
    sockaddr_ll sll{};
    len = sizeof sll;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&sll), &len) != 0) continue;
    if (static_cast<unsigned>(sll.sll_ifindex) == index) out.push_back(static_cast<int>(fd));
  }
  closedir(d);
  return out;
}

int64_t ReadSocketDrops(const std::vector<int>& fds) {
  if (fds.empty()) return -1;
  int64_t drops = 0;
  for (int fd : fds) {
    // TPACKET_V3 rings answer with tpacket_stats_v3 (the same first two
    // fields), older ones with tpacket_stats: the kernel cuts its answer to
    // its own struct's size.
    tpacket_stats_v3 st{};
    socklen_t len = sizeof st;
    if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) != 0) return -1;
    drops += st.tp_drops;
  }
  return drops;
}

int KickPacketSockets(const std::vector<int>& fds) {
  int refused = 0;
  for (int fd : fds) {
    if (sendto(fd, nullptr, 0, MSG_DONTWAIT, nullptr, 0) == -1 && (errno == EAGAIN || errno == ENOBUFS)) ++refused;
  }
  return refused;
}

}  // namespace fg::port
