// Tester limits: which observation point names which cause, with what count.
// AssessTesterLimits is plain arithmetic over a trial's counters; the
// engine test below makes a real TX lcore fall behind.
#include "engine/tester_limits.h"

#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <pthread.h>
#include <rte_lcore.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <thread>
#include <tuple>

#include "config/plan.h"
#include "dpdk_test_env.h"
#include "hog.h"
#include "host_holdups.h"
#include "engine/engine.h"
#include "methods/kinds.h"
#include "methods/latency.h"
#include "port/kernel_if.h"
#include "stream/stream.h"

namespace fg::engine {
namespace {

// One stream from port 0 to port 1, paced, that TX kept up with.
TrialResult KeptUp() {
  TrialResult r;
  r.ports.resize(2);
  r.ports[0].name = "a";
  r.ports[1].name = "b";
  StreamResult s;
  s.name = "s";
  s.tx_port = 0;
  s.rx_port = 1;
  s.tx.paced = true;
  s.tx.due = 100'000;
  s.tx.packets = 100'000 - 10;  // short by less than 0.01 %: pacing granularity, not a shortfall
  r.ports[0].hw.tx_packets = s.tx.packets;
  r.ports[1].hw.rx_packets = s.tx.packets;
  r.streams.push_back(s);
  return r;
}

const TesterLimit* Find(const std::vector<TesterLimit>& v, const std::string& kind) {
  for (const TesterLimit& l : v) {
    if (l.kind == kind) return &l;
  }
  return nullptr;
}

TEST(TesterLimits, NoneWhenTheTesterKeptUp) {
  TrialResult r = KeptUp();
  AssessTesterLimits(r);
  EXPECT_FALSE(r.tester_limited());
  EXPECT_TRUE(r.streams[0].tester_limits.empty());
}

TEST(TesterLimits, ShortfallBeyondAToleranceAndSkippedSlots) {
  TrialResult r = KeptUp();
  r.streams[0].tx.packets = 100'000 - 133;  // 133 > max(32, 0.1 % of 100,000 = 100)
  r.streams[0].tx.slots_skipped = 120;
  r.streams[0].tx.stalls = 1;
  r.streams[0].tx.stall_max_ns = 12'500'000;
  AssessTesterLimits(r);
  ASSERT_TRUE(r.tester_limited());
  const TesterLimit* s = Find(r.streams[0].tester_limits, kTxShortfall);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->count, 133u);
  EXPECT_NE(s->detail.find("sent 99,867 of the 100,000"), std::string::npos) << s->detail;
  const TesterLimit* p = Find(r.streams[0].tester_limits, kPacingStall);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->count, 120u);
  EXPECT_EQ(p->longest_ns, 12'500'000u);  // how long the lcore was away, for a figure timed across it
  EXPECT_NE(p->detail.find("1 times (longest 12.500 ms)"), std::string::npos) << p->detail;
  EXPECT_EQ(s->longest_ns, 0u);
  // A few skipped slots within the tolerance: counted (tx_slots_skipped), not a limit.
  r.streams[0].tx.packets = 100'000 - 60;
  r.streams[0].tx.slots_skipped = 60;
  AssessTesterLimits(r);
  EXPECT_FALSE(r.tester_limited()) << DescribeLimits(r.streams[0].tester_limits);
}

TEST(TesterLimits, TheToleranceIsOneBurstOrAThousandthOfTheDueCount) {
  TrialResult r = KeptUp();
  r.streams[0].tx.due = 1'000'000;
  r.streams[0].tx.packets = 1'000'000 - 1'000;  // 0.1 %: within
  r.ports[0].hw.tx_packets = r.ports[1].hw.rx_packets = r.streams[0].tx.packets;
  AssessTesterLimits(r);
  EXPECT_FALSE(r.tester_limited());
  r.streams[0].tx.packets = 1'000'000 - 1'001;
  AssessTesterLimits(r);
  ASSERT_NE(Find(r.streams[0].tester_limits, kTxShortfall), nullptr);
  EXPECT_EQ(Find(r.streams[0].tester_limits, kTxShortfall)->count, 1'001u);
}

// The device paused the port (PFC/PAUSE received): TX waited as it must, so
// its shortfall is the device's flow control, said in a warning.
TEST(TesterLimits, AShortfallUnderPauseFramesIsTheDevicesFlowControl) {
  TrialResult r = KeptUp();
  r.streams[0].tx.packets = 50'000;
  r.streams[0].tx.slots_skipped = 40'000;
  r.ports[0].xstats = {{"rx_pause_xoff_packets", 0}, {"rx_priority3_xoff_packets", 120}};
  AssessTesterLimits(r);
  EXPECT_FALSE(r.tester_limited()) << DescribeLimits(r.streams[0].tester_limits);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("received 120 PAUSE/PFC frames"), std::string::npos) << r.warnings[0];
}

TEST(TesterLimits, FramesReceivedInErrorAreTheLinksNotTheTesters) {
  TrialResult r = KeptUp();
  r.ports[1].hw.rx_errors = 9;
  AssessTesterLimits(r);
  EXPECT_FALSE(r.tester_limited());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("9 frames in error"), std::string::npos) << r.warnings[0];
}

TEST(TesterLimits, AVethsPeerRefusingFramesIsNotATxError) {
  TrialResult r = KeptUp();
  r.ports[0].kernel_iface = "fga";
  // The PMD took them all; the interface sent all but 5, which its peer's input backlog refused.
  r.ports[0].kernel = port::KernelCounters{true, 0, r.ports[0].hw.tx_packets - 5, 0, 5};
  r.ports[0].kernel_read_pmd_tx = r.ports[0].hw.tx_packets;
  AssessTesterLimits(r);
  EXPECT_EQ(Find(r.ports[0].tester_limits, kTxError), nullptr);
  r.ports[0].kernel.tx_dropped = 4;  // one neither sent nor refused
  AssessTesterLimits(r);
  const TesterLimit* t = Find(r.ports[0].tester_limits, kTxError);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->count, 1u);
}

// The drain's last millisecond: the kernel's counters are read, then the
// lcores stop. A frame the PMD took in between (a READ's response to a late
// request) is not one the kernel failed to send: it is drain_short's.
TEST(TesterLimits, FramesTheTxSentAfterTheKernelReadingAreNotATxError) {
  TrialResult r = KeptUp();
  r.ports[0].kernel_iface = "fga";
  r.ports[0].kernel_read_pmd_tx = r.ports[0].hw.tx_packets - 331;
  r.ports[0].kernel = port::KernelCounters{true, 0, r.ports[0].kernel_read_pmd_tx, 0, 0};
  r.drain_late_frames = 331;
  r.drain_ns = 200'000'000;
  AssessTesterLimits(r);
  EXPECT_EQ(Find(r.ports[0].tester_limits, kTxError), nullptr);
  for (const StreamResult& s : r.streams) {
    const TesterLimit* d = Find(s.tester_limits, kDrainShort);
    ASSERT_NE(d, nullptr) << s.name;
    EXPECT_EQ(d->count, 331u);
    EXPECT_NE(d->detail.find("sent 331 frames"), std::string::npos) << d->detail;
    EXPECT_NE(d->detail.find("(it took 200.000 ms)"), std::string::npos) << d->detail;
  }
  r.drain_late_frames = 0;
  AssessTesterLimits(r);
  EXPECT_FALSE(r.tester_limited());
}

TEST(TesterLimits, AnRxStallMattersOnlyWithSoftwareRxTimes) {
  TrialResult r = KeptUp();
  r.ports[1].rx_stalls = 3;
  r.ports[1].rx_stall_max_ns = 4'000'000;
  r.ports[1].software_rx_stamps = false;  // the NIC stamped each frame on arrival
  AssessTesterLimits(r);
  EXPECT_FALSE(r.tester_limited());
  r.ports[1].software_rx_stamps = true;
  AssessTesterLimits(r);
  const TesterLimit* s = Find(r.streams[0].tester_limits, kRxStall);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->count, 3u);
  EXPECT_NE(s->detail.find("longest 4.000 ms"), std::string::npos) << s->detail;
  EXPECT_EQ(s->longest_ns, 4'000'000u);
}

TEST(TesterLimits, AnUnpacedStreamHasNoSetRateToFallShortOf) {
  TrialResult r = KeptUp();
  r.streams[0].tx.paced = false;
  r.streams[0].tx.due = r.streams[0].tx.packets * 2;
  AssessTesterLimits(r);
  EXPECT_FALSE(r.tester_limited());
}

TEST(TesterLimits, PmdDropsOnTheRxPortAreTheStreamsAndThePorts) {
  TrialResult r = KeptUp();
  r.ports[1].hw.rx_missed = 7;
  r.ports[1].hw.rx_nombuf = 3;
  r.ports[0].hw.rx_missed = 5;  // the TX port's RX side: not this stream's data
  AssessTesterLimits(r);
  ASSERT_EQ(r.ports[1].tester_limits.size(), 2u);
  EXPECT_EQ(r.ports[1].tester_limits[0].kind, kRxDrop);
  EXPECT_EQ(r.ports[1].tester_limits[0].count, 7u);
  EXPECT_EQ(r.ports[1].tester_limits[1].count, 3u);
  const auto& sl = r.streams[0].tester_limits;
  ASSERT_EQ(sl.size(), 2u);
  EXPECT_EQ(sl[0].detail.rfind("port b: ", 0), 0u) << sl[0].detail;
}

// The socket's own count unreadable (socket_drops -1): what the interface
// received and the PMD never read is all that is known, listed as rx_drop
// with a detail that says it may be the kernel's too.
TEST(TesterLimits, KernelInterfaceCountsWhatTheSocketDropped) {
  TrialResult r = KeptUp();
  r.ports[1].kernel_iface = "fgb";
  r.ports[1].kernel = port::KernelCounters{true, r.ports[1].hw.rx_packets + 82, 0, 0, 0};
  r.ports[0].kernel_iface = "fga";
  r.ports[0].kernel = port::KernelCounters{true, 0, r.ports[0].hw.tx_packets - 4, 0, 0};
  r.ports[0].kernel_read_pmd_tx = r.ports[0].hw.tx_packets;
  AssessTesterLimits(r);
  const TesterLimit* d = Find(r.ports[1].tester_limits, kRxDrop);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->count, 82u);
  EXPECT_NE(d->detail.find("interface fgb received 100,072 frames, the PMD read 99,990"), std::string::npos)
      << d->detail;
  EXPECT_NE(d->detail.find("could not be read"), std::string::npos) << d->detail;
  const TesterLimit* t = Find(r.ports[0].tester_limits, kTxError);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->count, 4u);
  // The stream carries both: its TX port's tx_error, its RX port's rx_drop.
  EXPECT_NE(Find(r.streams[0].tester_limits, kTxError), nullptr);
  EXPECT_NE(Find(r.streams[0].tester_limits, kRxDrop), nullptr);
}

// The tester's own packet socket dropped 30 frames (PACKET_STATISTICS
// tp_drops): rx_drop 30, the port's and the stream's.
TEST(TesterLimits, TheSocketsOwnDropsAreTheTesters) {
  TrialResult r = KeptUp();
  r.ports[1].kernel_iface = "fgb";
  r.ports[1].kernel = port::KernelCounters{true, r.ports[1].hw.rx_packets + 30, 0, 0, 0, 30};
  AssessTesterLimits(r);
  const TesterLimit* d = Find(r.ports[1].tester_limits, kRxDrop);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->count, 30u);
  EXPECT_NE(d->detail.find("tp_drops"), std::string::npos) << d->detail;
  EXPECT_NE(Find(r.streams[0].tester_limits, kRxDrop), nullptr);
  EXPECT_TRUE(r.warnings.empty());
}

// Issue 26: frames the kernel dropped before the tester's packet socket
// (500 injected IPv4 fragments its defragmenter held, truncated VLAN
// headers) and the interface's rx_dropped are not the tester's: the socket
// dropped none, so no rx_drop and no tester limit, only run warnings that
// say where they went.
TEST(TesterLimits, FramesTheKernelDroppedBeforeTheSocketAreNotTheTesters) {
  TrialResult r = KeptUp();
  r.ports[1].kernel_iface = "fgb";
  r.ports[1].kernel = port::KernelCounters{true, r.ports[1].hw.rx_packets + 500, 0, 7, 0, 0};
  AssessTesterLimits(r);
  EXPECT_EQ(Find(r.ports[1].tester_limits, kRxDrop), nullptr);
  EXPECT_FALSE(r.tester_limited());
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_NE(r.warnings[0].find("interface fgb received 500 frames the tester's packet socket never saw"),
            std::string::npos)
      << r.warnings[0];
  EXPECT_NE(r.warnings[0].find("not the tester's drops"), std::string::npos) << r.warnings[0];
  EXPECT_NE(r.warnings[1].find("dropped 7 frames on receive (rx_dropped)"), std::string::npos) << r.warnings[1];
  // The socket dropped 20 of them: those 20 are the tester's, the other 480 the kernel's.
  r.warnings.clear();
  r.ports[1].kernel.socket_drops = 20;
  r.ports[1].kernel.rx_dropped = 0;
  AssessTesterLimits(r);
  const TesterLimit* d = Find(r.ports[1].tester_limits, kRxDrop);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->count, 20u);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("received 480 frames"), std::string::npos) << r.warnings[0];
}

TEST(TesterLimits, HostBacklogDropsOnlyWithAKernelBackedPort) {
  TrialResult r = KeptUp();
  r.host_backlog_drops = 12;
  AssessTesterLimits(r);
  EXPECT_FALSE(r.tester_limited());  // no kernel-backed port: a NIC never queues in the kernel
  r.ports[1].kernel = port::KernelCounters{true, r.ports[1].hw.rx_packets, 0, 0, 0};
  AssessTesterLimits(r);
  const TesterLimit* h = Find(r.streams[0].tester_limits, kHostBacklogDrop);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->count, 12u);
}

TEST(TesterLimits, AStallSaysWhereTheTimeWent) {
  TrialResult r = KeptUp();
  r.streams[0].tx.packets = 100'000 - 500;
  r.streams[0].tx.slots_skipped = 500;
  r.streams[0].tx.stalls = 2;
  r.lcores.resize(3);
  for (LcoreStats& l : r.lcores) l.guest_wait_ns = 100'000;
  r.lcores[0].cpu = 1;
  r.lcores[0].host_steal_ns = 20'000'000;
  r.lcores[1].cpu = 1;  // another lcore on the same CPU: its steal once
  r.lcores[1].host_steal_ns = 20'000'000;
  r.lcores[2].cpu = 0;
  r.lcores[2].host_steal_ns = 10'000'000;
  auto note = [&] {
    AssessTesterLimits(r);
    const TesterLimit* p = Find(r.streams[0].tester_limits, kPacingStall);
    EXPECT_NE(p, nullptr);
    // On the shortfall too, whenever on the stall: a host taking the CPU in slices under 1 ms leaves a shortfall
    // with no stall.
    EXPECT_EQ(Find(r.streams[0].tester_limits, kTxShortfall)->detail.find("schedstat") != std::string::npos,
              p != nullptr && p->detail.find("schedstat") != std::string::npos);
    return p == nullptr ? std::string() : p->detail;
  };
  EXPECT_NE(note().find("the lcores' threads waited 300.000 us for their CPUs while the kernel ran another task "
                        "there (schedstat) and the hypervisor reported 30.000 ms of steal (/proc/stat): the "
                        "hypervisor gave their CPUs to something else"),
            std::string::npos)
      << note();
  // The same figures, structured (report.json tester_limits[].cpu_wait_ns / steal_ns).
  const TesterLimit* p = Find(r.streams[0].tester_limits, kPacingStall);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->cpu_wait_ns, 300'000);
  EXPECT_EQ(p->steal_ns, 30'000'000);
  EXPECT_EQ(Find(r.streams[0].tester_limits, kTxShortfall)->steal_ns, 30'000'000);  // the trial's, as the stall's
  r.lcores[0].guest_wait_ns = 40'000'000;
  EXPECT_NE(note().find("waited 40.200 ms for their CPUs"), std::string::npos) << note();
  EXPECT_NE(note().find(": another task on the lcores' CPUs held them up"), std::string::npos) << note();
  for (LcoreStats& l : r.lcores) l.guest_wait_ns = l.host_steal_ns = 0;
  EXPECT_NE(note().find(": neither reaches 1 ms, so the CPU was taken from the whole system"), std::string::npos)
      << note();
  for (LcoreStats& l : r.lcores) l.guest_wait_ns = l.host_steal_ns = -1;
  EXPECT_EQ(note().find("schedstat"), std::string::npos) << note();
  EXPECT_EQ(Find(r.streams[0].tester_limits, kPacingStall)->cpu_wait_ns, -1);  // unreadable: unknown, not 0
}

// A TX shortfall with no stall (no turn of the loop over 1 ms apart) and
// little of the kernel's counted time: the loop's turns 0.1 to 1 ms apart
// tell a CPU taken in slices from a TX path too slow for the rate.
TEST(TesterLimits, AShortfallWithoutAStallSaysWhetherTheLcoreWasAway) {
  TrialResult r = KeptUp();
  r.streams[0].tx.packets = 100'000 - 900;  // short by 0.9 %, no slot skipped
  r.lcores.resize(1);
  r.lcores[0].guest_wait_ns = 180'000;
  r.lcores[0].cpu = 1;
  r.lcores[0].host_steal_ns = 0;
  auto note = [&] {
    AssessTesterLimits(r);
    const TesterLimit* s = Find(r.streams[0].tester_limits, kTxShortfall);
    EXPECT_NE(s, nullptr);
    EXPECT_EQ(Find(r.streams[0].tester_limits, kPacingStall), nullptr);
    return s == nullptr ? std::string() : s->detail;
  };
  // (short hold-ups, their ns, what the shortfall's detail says)
  const std::tuple<uint64_t, uint64_t, std::string> cases[] = {
      {40, 17'000'000, "neither reaches 1 ms, but the lcores' loops came back over 0.1 ms late 40 times, 17.000 ms "
                       "in all"},
      {2, 300'000, "the lcores' loops were away over 0.1 ms for only 300.000 us: the TX path itself was slower "
                   "than the rate"},
  };
  for (const auto& [n, ns, says] : cases) {
    r.lcores[0].short_holdups = n;
    r.lcores[0].short_holdup_ns = ns;
    EXPECT_NE(note().find(says), std::string::npos) << note();
  }
}

TEST(HostSteal, TheStealColumnOfEachCpuInNs) {
  std::istringstream stat(
      "cpu  269423 42 22637 250229 615 0 131 3339 0 0\n"
      "cpu0 74956 22 13417 181554 81 0 18 2534 0 0\n"
      "cpu1 194466 19 9220 68675 534 0 113 805 0 0\n"
      "intr 123 4 5\n");
  EXPECT_EQ(port::ParseStealNs(stat, 100), (std::vector<int64_t>{25'340'000'000, 8'050'000'000}));
  std::istringstream bad("cpu0 1 2 3\n");
  EXPECT_TRUE(port::ParseStealNs(bad, 100).empty());
  EXPECT_FALSE(port::HostStealNs().empty());  // this machine has /proc/stat
}

TEST(KernelInterface, NamedByIfaceInTheDeviceString) {
  EXPECT_EQ(port::KernelInterfaceOf("net_af_packet0,iface=fga"), "fga");
  EXPECT_EQ(port::KernelInterfaceOf("net_af_packet1,qpairs=2,iface=veth-b,blocksz=4096"), "veth-b");
  EXPECT_EQ(port::KernelInterfaceOf("net_pcap0,iface=eth0"), "eth0");
  EXPECT_EQ(port::KernelInterfaceOf("net_ring_fg0"), "");
  EXPECT_EQ(port::KernelInterfaceOf("0000:03:00.0"), "");
  EXPECT_FALSE(port::ReadKernelCounters("no-such-if0").valid);
  EXPECT_TRUE(port::ReadKernelCounters("lo").valid);
}

// The sockets a net_af_packet port's kick asks the kernel through: this
// process's packet sockets bound to the interface, no other socket.
TEST(KernelInterface, PacketSocketsAreFoundByTheInterfaceTheyAreBoundTo) {
  const int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  if (fd < 0) GTEST_SKIP() << "no packet socket here (needs CAP_NET_RAW)";
  const int udp = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = static_cast<int>(if_nametoindex("lo"));
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll), 0);
  EXPECT_EQ(port::PacketSocketsOf("lo"), std::vector<int>{fd});
  EXPECT_TRUE(port::PacketSocketsOf("no-such-if0").empty());
  // No TX ring on this socket: the kernel has nothing to send, and refuses nothing.
  EXPECT_EQ(port::KickPacketSockets({fd}), 0);
  // Its own drops (PACKET_STATISTICS: read, and reset, from the socket; lo's
  // traffic may fill its unread buffer meanwhile), and none to read without one.
  EXPECT_GE(port::ReadSocketDrops({fd}), 0);
  EXPECT_EQ(port::ReadSocketDrops({}), -1);
  EXPECT_EQ(port::ReadSocketDrops({udp}), -1);  // not a packet socket
  close(udp);
  close(fd);
  EXPECT_TRUE(port::PacketSocketsOf("lo").empty());
}

using fg::testing::CanHog;
using fg::testing::HogCpuOf;

// A TX lcore held up for 40 ms: the run says the tester fell behind (slots
// skipped, frames short of the set rate) rather than report a slower device.
TEST(TesterLimitsLive, AStalledTxLcoreIsReportedNotHidden) {
  if (!CanHog()) GTEST_SKIP() << "needs SCHED_FIFO (CAP_SYS_NICE) to hold an lcore up";
  auto plan = methods::ParsePlan("stall.yaml", "streams: [{name: s, rate: 100 kpps, duration: 400 ms}]\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string dev = fg::testing::NewVdev("net_ring");
  auto port = port::Port::Open(port::PortOptions{.name = "loop", .dpdk_name = dev});
  ASSERT_TRUE(port.ok()) << port.status();
  ASSERT_TRUE((*port)->Start().ok());
  auto streams = stream::Compile(*plan, {10e9});
  ASSERT_TRUE(streams.ok()) << streams.status();
  TrialOptions opt;
  opt.drain_ns = 20'000'000;
  opt.sample_interval_ns = 0;
  auto run = LiveRun::Start(fg::testing::TestEal(), {port->get()}, *streams, opt);
  ASSERT_TRUE(run.ok()) << run.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  HogCpuOf(fg::testing::TestEal().worker_lcores().back(), 40);
  while (!(*run)->tx_done()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  TrialResult r = (*run)->Finish();
  const StreamResult& s = r.streams[0];
  // 100 kpps x 400 ms: slots, sent or not (+1 where the TSC rate rounds the interval down).
  EXPECT_NEAR(static_cast<double>(s.tx.due), 40'000, 1);
  ASSERT_TRUE(r.tester_limited());
  const TesterLimit* stall = Find(s.tester_limits, kPacingStall);
  ASSERT_NE(stall, nullptr) << DescribeLimits(s.tester_limits);
  // ~40 ms x 100 kpps = 4,000 slots missed, all but a burst of them skipped.
  EXPECT_GT(stall->count, 2'000u);
  EXPECT_GE(s.tx.stalls, 1u);
  const TesterLimit* short_by = Find(s.tester_limits, kTxShortfall);
  ASSERT_NE(short_by, nullptr);
  EXPECT_EQ(short_by->count, s.tx.due - s.tx.packets);
  // What was sent still arrived: the loss figures stay exact, the rate is flagged.
  EXPECT_EQ(s.rx.packets, s.tx.packets);
  EXPECT_EQ(s.lost(), 0);
}

}  // namespace
}  // namespace fg::engine

namespace fg::methods {
namespace {

// The plan's first test (a latency test) on a fresh loopback port, with the
// worker lcore held up for 40 ms, 100 ms after it starts.
absl::StatusOr<LatencyResult> LatencyWithAStall(const std::string& yaml) {
  struct {
    std::unique_ptr<port::Port> port;
    config::Plan plan;
    std::vector<stream::CompiledStream> streams;
  } l;
  auto plan = methods::ParsePlan("limits.yaml", yaml);
  EXPECT_TRUE(plan.ok()) << plan.status();
  l.plan = *plan;
  auto p = port::Port::Open(port::PortOptions{.name = "loop", .dpdk_name = fg::testing::NewVdev("net_ring")});
  EXPECT_TRUE(p.ok()) << p.status();
  l.port = std::move(*p);
  EXPECT_TRUE(l.port->Start().ok());
  auto s = stream::Compile(l.plan, {l.port->capabilities().line_bps()});
  EXPECT_TRUE(s.ok()) << s.status();
  l.streams = *s;
  MethodOptions opt;
  opt.trial.drain_ns = 20'000'000;
  // 100 ms into the first trial (its live run starting is the cue).
  std::thread hog;
  opt.on_live = [&](const engine::LiveRun* run) {
    if (run == nullptr || hog.joinable()) return;
    hog = std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      fg::testing::HogCpuOf(fg::testing::TestEal().worker_lcores().back(), 40);
    });
  };
  auto r = RunLatency(fg::testing::TestEal(), {l.port.get()}, l.streams, l.plan.tests[0], opt);
  if (hog.joinable()) hog.join();
  return r;
}

// The lcore is held up 100 ms into the first counted run: that run is
// recorded as not counted, naming the cause, and run again; the test's
// figures come from runs the tester kept up in.
TEST(TesterLimitsInTests, ALimitedTrialIsExcludedRetriedAndNeverCounted) {
  if (!fg::testing::CanHog()) GTEST_SKIP() << "needs SCHED_FIFO (CAP_SYS_NICE) to hold an lcore up";
  // 20 attempts, not the default 5: on a 2-vCPU VM whose hypervisor takes
  // 10 ms now and then, six limited trials in a row happen by themselves.
  auto r = LatencyWithAStall(
      "streams: [{name: s, rate: 100 kpps}]\n"
      "tests: [{latency: {load: 1 %, runs: 2, trial_duration: 300 ms, warmup: none, tester_limit_retries: 20}}]\n");
  ASSERT_TRUE(r.ok()) << r.status();
  FG_SKIP_IF_HOST_HELD_UP(r->complete, r->stopped_because, r->trials);
  ASSERT_TRUE(r->complete) << r->stopped_because;
  ASSERT_EQ(r->runs.size(), 2u);
  ASSERT_GE(r->trials.size(), 3u);  // more if the machine held the lcore up again by itself
  EXPECT_FALSE(r->trials[0].included);
  EXPECT_FALSE(r->trials[0].tester_limits.empty());
  EXPECT_EQ(r->trials[0].excluded_because.rfind("tester-limited: ", 0), 0u) << r->trials[0].excluded_because;
  EXPECT_NE(r->trials[0].excluded_because.find("pacing_stall"), std::string::npos);
  int counted = 0;
  for (const TrialRecord& t : r->trials) {
    // A trial counts exactly when the tester kept up in it.
    EXPECT_EQ(t.included, t.tester_limits.empty()) << t.excluded_because;
    counted += t.included;
  }
  EXPECT_EQ(counted, 2);
  // The runs are the counted trials.
  for (const LatencyRun& run : r->runs) EXPECT_TRUE(r->trials[static_cast<size_t>(run.trial.index)].included);
}

TEST(TesterLimitsInTests, WithoutRetriesTheTestStopsRatherThanJudge) {
  if (!fg::testing::CanHog()) GTEST_SKIP() << "needs SCHED_FIFO (CAP_SYS_NICE) to hold an lcore up";
  auto r = LatencyWithAStall(
      "streams: [{name: s, rate: 100 kpps}]\n"
      "tests: [{latency: {load: 1 %, runs: 2, trial_duration: 300 ms, warmup: none, tester_limit_retries: 0}}]\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->complete);
  EXPECT_NE(r->stopped_because.find("the tester itself was the limit in 1 attempts"), std::string::npos)
      << r->stopped_because;
  EXPECT_TRUE(r->runs.empty());
  ASSERT_EQ(r->trials.size(), 1u);
  EXPECT_FALSE(r->trials[0].included);
}

// The suite's own rule for a host that would not let a test judge the device
// (host_holdups.h): skipped only for a stop by hold-ups the kernel counted.
TEST(HostHeldUp, OnlyAStopByHoldUpsTheKernelCountedIsASkip) {
  const std::string stop = "the tester itself was the limit in 2 attempts of the same trial (last: ...)";
  const std::string stop3 = "the tester itself was the limit in 3 attempts of the same trial (last: ...)";
  auto holdup = [](uint64_t longest_ns, int64_t wait_ns, int64_t steal_ns) {
    engine::TesterLimit l{engine::kPacingStall, 100, "stream s: ...", longest_ns};
    l.cpu_wait_ns = wait_ns;
    l.steal_ns = steal_ns;
    return l;
  };
  std::vector<TrialRecord> trials(3);
  trials[0].tester_limits = {};  // kept up: counted, not one of the attempts
  trials[1].tester_limits = {holdup(8'000'000, 1'000'000, 10'000'000),
                             {engine::kTxShortfall, 100, "stream s: ...", 0}};
  trials[2].tester_limits = {holdup(6'000'000, 0, 10'000'000)};
  EXPECT_NE(fg::testing::HostHeldUpEveryAttempt(false, stop, trials).find("2 limited trials; longest hold-ups 14.0 ms "
                                                                          "in all, the kernel counted 21.0 ms"),
            std::string::npos);
  // Fewer limited trials than the attempts the product says it made: judged.
  EXPECT_EQ(fg::testing::HostHeldUpEveryAttempt(false, stop3, trials), "");
  // Complete, or stopped for another reason: judged.
  EXPECT_EQ(fg::testing::HostHeldUpEveryAttempt(true, "", trials), "");
  EXPECT_EQ(fg::testing::HostHeldUpEveryAttempt(false, "interrupted", trials), "");
  // The kernel counted under half the hold-ups: judged (a pacer seeing stalls that were not).
  trials[1].tester_limits[0] = holdup(8'000'000, 1'000'000, 0);
  trials[2].tester_limits[0] = holdup(6'000'000, 0, 0);
  EXPECT_EQ(fg::testing::HostHeldUpEveryAttempt(false, stop, trials), "");
  // Unreadable kernel figures count nothing.
  trials[1].tester_limits[0] = holdup(8'000'000, -1, -1);
  trials[2].tester_limits[0] = holdup(6'000'000, -1, -1);
  EXPECT_EQ(fg::testing::HostHeldUpEveryAttempt(false, stop, trials), "");
  // One limited trial without a hold-up (TX too slow for its rate): judged.
  trials[1].tester_limits[0] = holdup(8'000'000, 0, 30'000'000);
  trials[2].tester_limits = {{engine::kTxShortfall, 5000, "stream s: ...", 0}};
  EXPECT_EQ(fg::testing::HostHeldUpEveryAttempt(false, stop, trials), "");
  // Unless the tests' DUT (their Mover) was stopped within it for as long as
  // the missing frames' time (5,000 of 100,000 due in 1 s: 50 ms), its ring
  // full meanwhile: the host's. The same stop before the trial: judged.
  trials[2].tx_frames = 95'000;
  trials[2].duration_s = 1.0;
  trials[2].start_unix_ns = 1'000'000'000'000;
  const std::vector<fg::testing::DutStop> within = {{1'000'200'000'000, 1'000'260'000'000}};
  EXPECT_NE(fg::testing::HostHeldUpEveryAttempt(false, stop, trials, within).find("2 limited trials"), std::string::npos);
  const std::vector<fg::testing::DutStop> short_one = {{1'000'200'000'000, 1'000'240'000'000}};  // 40 ms
  EXPECT_EQ(fg::testing::HostHeldUpEveryAttempt(false, stop, trials, short_one), "");
  const std::vector<fg::testing::DutStop> before = {{999'900'000'000, 999'960'000'000}};
  EXPECT_EQ(fg::testing::HostHeldUpEveryAttempt(false, stop, trials, before), "");
}

}  // namespace
}  // namespace fg::methods
