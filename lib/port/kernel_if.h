// port/kernel_if.h: the kernel's own counters behind a kernel-backed port.
//
// A PMD that sends and receives through a kernel interface (net_af_packet,
// net_pcap on a live interface) cannot see frames the kernel dropped in its
// packet socket: af_packet in DPDK 22.11 leaves imissed at 0. The socket's
// own count (PACKET_STATISTICS tp_drops: frames its ring had no room for)
// is the tester's drops, read here from the PMD's sockets. The kernel's
// interface counters (/sys/class/net/IFACE/statistics) are a second
// observation point: frames the interface received that the PMD never read
// and the socket never dropped were dropped by the kernel before the socket
// (an IPv4 fragment its defragmenter held, a VLAN header cut short): not the
// tester's. The host's input backlog drops (/proc/net/softnet_stat, all
// CPUs) are a third, for a lab that shares the host with the tester.
//
//   auto before = fg::port::ReadKernelCounters("fga");
//   ...                                           // a trial
//   fg::port::KernelCounters d = fg::port::ReadKernelCounters("fga") - before;
//   int64_t drops = fg::port::ReadSocketDrops(fg::port::PacketSocketsOf("fga"));  // since the last reading
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace fg::port {

struct KernelCounters {
  bool valid = false;  // false: no such interface, or its counters cannot be read
  uint64_t rx_packets = 0, tx_packets = 0, rx_dropped = 0, tx_dropped = 0;
  // Frames the port's own packet sockets dropped, their rings full
  // (PACKET_STATISTICS tp_drops, summed over the sockets, since the port's
  // ResetStats: the kernel resets the count at each reading, so it is kept
  // as it is through a difference); -1: not read (no packet socket of ours
  // on the interface, or getsockopt refused).
  int64_t socket_drops = -1;
  KernelCounters operator-(const KernelCounters& b) const {
    if (!valid || !b.valid) return {};
    return {true, rx_packets - b.rx_packets, tx_packets - b.tx_packets, rx_dropped - b.rx_dropped,
            tx_dropped - b.tx_dropped, socket_drops};
  }
};

// The interface's counters now (in the network namespace of this process).
KernelCounters ReadKernelCounters(const std::string& iface);

// Frames the host's kernel dropped at its per-CPU input backlog, summed over
// CPUs (second column of /proc/net/softnet_stat); -1 when unreadable.
int64_t HostBacklogDrops();

// Per CPU (index = CPU id), the time the hypervisor ran something else while
// that CPU had work (the steal column of /proc/stat), in ns; empty when
// unreadable. On a virtual machine this is the tester's cores taken away:
// what an lcore's stall then says.
std::vector<int64_t> HostStealNs();
// The same from a /proc/stat text at `ticks_per_s` (USER_HZ); empty when malformed.
std::vector<int64_t> ParseStealNs(std::istream& stat, long ticks_per_s);

// How long thread `tid` of this process has waited, runnable, for the
// kernel to run it (another task had its CPU): the run_delay field of
// /proc/self/task/TID/schedstat, ns; -1 when unreadable. What it does not
// see is the CPU taken from the whole system (a hypervisor, firmware).
int64_t ThreadRunDelayNs(int tid);

// What a bare loop pinned to one CPU saw of that CPU for a while: the gaps
// between two of its clock readings are the time it did not run. Nothing of
// the tester runs in it, so a hold-up it sees is the host's (another task:
// wait_ns; the hypervisor: steal_ns when the host reports steal, else
// nothing the kernel counts). fabricgen-holdups prints it; the dpdk tests
// ask it whether a host that held every attempt up is holding bare loops up.
struct HoldupProbe {
  int cpu = 0;
  bool pinned = false;  // false: the CPU could not be had (nothing else is valid)
  double seconds = 0;
  uint64_t over_1ms = 0, over_4ms = 0;  // gaps longer than 1 and 4 ms
  int64_t longest_ns = 0, over_1ms_ns = 0;  // the longest gap; the gaps over 1 ms, summed
  int64_t wait_ns = -1, steal_ns = -1;      // run_delay and steal over the probe; -1: unreadable
};
// Runs the loop on the calling thread (pinned to `cpu` for the time, then
// put back) for `seconds`.
HoldupProbe ProbeHoldups(int cpu, double seconds);

// This process's packet sockets (AF_PACKET) bound to interface `iface`:
// net_af_packet's, one per queue. Empty when there are none.
std::vector<int> PacketSocketsOf(const std::string& iface);
// Frames the packet sockets `fds` dropped since the last reading (each
// socket's PACKET_STATISTICS, which the kernel resets as it answers: tp_drops,
// frames its ring or buffer had no room for), summed; -1 when `fds` is empty
// or a socket does not answer. A PMD that reads the same statistics (a later
// DPDK's af_packet imissed) takes the drops of its own readings: the two
// counts add up to the socket's.
int64_t ReadSocketDrops(const std::vector<int>& fds);
// Asks the kernel to send what waits in each socket's TX ring (an empty
// non-blocking send: the kernel walks the ring). net_af_packet in DPDK
// 22.11 asks only when a burst brings frames (an empty burst returns
// before it), and ignores a refusal (the socket's send buffer full), so
// the frames of a trial's last burst can wait in the ring for a burst that
// never comes. Returns the sockets the kernel refused (EAGAIN/ENOBUFS).
int KickPacketSockets(const std::vector<int>& fds);

// The kernel interface a DPDK device string names through `iface=NAME`
// (net_af_packet0,iface=veth0; net_pcap0,iface=eth0), or "".
std::string KernelInterfaceOf(const std::string& device);

}  // namespace fg::port
