// fabricgen-impair: the lab's own impairment stage, for what the kernel here
// cannot do (no netem, no RED): a fixed delay with jitter, and reordering.
//
// It sits between two veth ends in a namespace of its own (tools/lab.py puts it
// there) and copies every frame from --in to --out and back from --out to --in.
// Frames from --in are impaired; every one of them gets a line in the decision
// log, written in the order the frames leave, so the log is the truth a test
// compares fabricgen's analyzer with:
//
//   out_index,in_index,bytes,in_ns,out_ns,held_ns,action,extent,depth_bytes,ce,due_ns,flow_key
//
// in_ns is the kernel's receive time of the frame (SO_TIMESTAMPNS), out_ns the
// time just before it is sent, both CLOCK_REALTIME; held_ns = out_ns - in_ns.
// due_ns is when the stage's model said the frame should leave (its queue's
// departure plus its delay): out_ns is that plus the stage's own lateness,
// which a hold-up of the stage's CPU makes large (-1 for drops). flow_key
// names the frame's flow: the BTH destination QP of a RoCEv2 frame (UDP
// destination port 4791), else the UDP source port (the entropy), else -1.
// action is `pass` (no reordering: the frame left after its delay, in arrival
// order), `reorder` (held back until `extent` later frames had left; extent
// is how many actually did) or a drop (`drop`, `drop_red`: out_index, out_ns
// and held_ns are -1; logged when the frame arrives). Decisions come from one seeded generator, so the
// same seed and the same arrivals give the same decisions.
//
// Delay: delay_ns + a uniform draw in [-jitter_ns, +jitter_ns] (never < 0),
// in FIFO order (a frame never leaves before the one ahead of it, as on a
// link), so jitter alone does not reorder.
//
// Queue (--rate-bps): a link of that rate (frame bytes as received, no FCS,
// as tc counts them) with a FIFO of --limit-bytes; a frame that does not fit
// is dropped (action `drop`). depth_bytes is what is queued ahead of a frame
// when it arrives (the frame in transmission included). RED-style ECN
// marking by that depth (--ecn-kmin/--ecn-kmax/--ecn-pmax): probability 0
// below kmin, rising linearly to pmax at kmax, 1 from kmax on; a marked
// ECN-capable frame gets CE (ce=1, IPv4 checksum kept valid), a marked
// not-ECN-capable one is dropped (action `drop_red`), as RED does. The queue's
// wait comes before the fixed delay.
//
// PFC (--pfc-priority P with --pfc-xoff/--pfc-xon, a queue needed): the
// queue as a lossless switch queue for priority P (the frame's VLAN PCP
// when tagged, else its IP DSCP / 8). When the bytes of priority-P frames in
// it pass --pfc-xoff the stage sends a PFC frame (priority P, --pfc-quanta)
// back out of --in, toward the sender; while they stay above --pfc-xon it
// refreshes the pause when half its quanta (at --pfc-speed-bps, default the
// queue's rate) have passed; once they fall to --pfc-xon or below it sends
// X-ON (zero quanta; --pfc-xon-frames 0: none, the pause expires). Every PFC
// frame it sends is a line of LOG.pfc.csv:
//
//   index,time_ns,priority,quanta,kind,depth_bytes
//
// (kind: xoff, refresh or xon; time_ns CLOCK_REALTIME just before the send;
// depth_bytes the priority's bytes in the queue then.) MAC control frames
// that arrive from --out are not forwarded (a PAUSE is link-local); each is
// a line of the same file with kind `received` and its quanta for P.
//
// Prints "ready" on stdout once both sockets are open; on SIGTERM/SIGINT it
// sends (and logs) every frame it still holds, then exits.
//
// The log is a truth only when the stage saw every frame. A packet socket
// whose receive buffer is full drops what arrives (a hold-up of the stage's
// CPU under host noise does that), and so can the veth's backlog. At exit
// the stage writes LOG.summary.json: its packet sockets' drop counts
// (PACKET_STATISTICS tp_drops, both directions), the rx_dropped of both
// veths over the run, and `complete`: true only when all are 0. A test reads
// it before it trusts the log (test/lab/labtest.py).
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

volatile std::sig_atomic_t g_stop = 0;

struct Options {
  std::string in, out, log;
  int64_t delay_ns = 0, jitter_ns = 0;
  double reorder = 0;
  int extent = 1;
  uint64_t seed = 1;
  double rate_bps = 0;  // 0: no queue
  uint64_t limit_bytes = 1 << 20;
  uint64_t kmin = 0, kmax = 0;  // ECN marking thresholds (kmax 0: no marking)
  double pmax = 0;
  int rcvbuf = 8 << 20;  // the packet sockets' receive buffer (SO_RCVBUF), bytes
  int pfc_priority = -1;  // -1: no PFC
  uint64_t pfc_xoff = 0, pfc_xon = 0;
  unsigned pfc_quanta = 0xFFFF;
  bool pfc_xon_frames = true;
  double pfc_speed_bps = 0;  // 0: the queue's rate
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "fabricgen-impair: %s\n", what.c_str());
  std::exit(2);
}

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int OpenPort(const std::string& name, int rcvbuf) {
  const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
  if (fd < 0) Die("socket(AF_PACKET): " + std::string(std::strerror(errno)) + " (needs root)");
  const unsigned index = if_nametoindex(name.c_str());
  if (index == 0) Die("no interface '" + name + "'");
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = static_cast<int>(index);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof(sll)) != 0) {
    Die("bind " + name + ": " + std::strerror(errno));
  }
  const int one = 1;
  // Our own transmissions on this device are not arrivals.
  if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) != 0) {
    Die("PACKET_IGNORE_OUTGOING: " + std::string(std::strerror(errno)));
  }
  if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) != 0) {
    Die("SO_TIMESTAMPNS: " + std::string(std::strerror(errno)));
  }
  // SO_RCVBUFFORCE passes net.core.rmem_max (root); the kernel doubles the value for its bookkeeping.
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  }
  const int sndbuf = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
  return fd;
}

struct Frame {
  std::vector<uint8_t> bytes;
  uint64_t in_index = 0;
  int64_t in_ns = 0;
  int64_t release_ns = 0;
  int wait = 0;  // reorder: later frames still to leave before this one
  int passed = 0;
  uint64_t depth = 0;
  bool ce = false;
  bool lossless = false;  // of the PFC priority
};

// The frame's priority: its VLAN PCP when tagged, else its IP DSCP / 8, else 0.
int PriorityOf(const std::vector<uint8_t>& b) {
  if (b.size() < 14) return 0;
  const unsigned type = static_cast<unsigned>(b[12] << 8 | b[13]);
  if (type == 0x8100 && b.size() >= 16) return b[14] >> 5;
  if (type == 0x0800 && b.size() >= 16) return b[15] >> 5;
  if (type == 0x86dd && b.size() >= 16) return ((b[14] & 0x0F) << 4 | b[15] >> 4) >> 5;
  return 0;
}

bool IsMacControl(const std::vector<uint8_t>& b) { return b.size() >= 14 && b[12] == 0x88 && b[13] == 0x08; }

// Sets CE in an Ethernet frame's IPv4 or IPv6 header (after up to two VLAN
// tags); false when it is not IP or not ECN-capable (ECN field 00).
bool MarkCe(std::vector<uint8_t>& b) {
  size_t off = 12;
  auto u16 = [&](size_t at) { return static_cast<unsigned>(b[at] << 8 | b[at + 1]); };
  while (b.size() >= off + 2 && (u16(off) == 0x8100 || u16(off) == 0x88a8)) off += 4;
  if (b.size() < off + 2) return false;
  const unsigned type = u16(off);
  const size_t ip = off + 2;
  if (type == 0x0800 && b.size() >= ip + 20) {
    if ((b[ip + 1] & 3) == 0) return false;
    b[ip + 1] |= 3;
    const size_t ihl = (b[ip] & 15u) * 4;
    if (b.size() < ip + ihl) return false;
    b[ip + 10] = b[ip + 11] = 0;
    uint32_t sum = 0;
    for (size_t i = 0; i < ihl; i += 2) sum += u16(ip + i);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    b[ip + 10] = static_cast<uint8_t>(~sum >> 8);
    b[ip + 11] = static_cast<uint8_t>(~sum);
    return true;
  }
  if (type == 0x86dd && b.size() >= ip + 40) {
    // Traffic class: the low 4 bits of byte 0 and the high 4 of byte 1; ECN is its low 2 bits.
    if ((b[ip + 1] & 0x30) == 0) return false;
    b[ip + 1] |= 0x30;
    return true;
  }
  return false;
}

// The frame's flow: the BTH destination QP of a RoCEv2 frame (UDP port 4791),
// else its UDP source port, else -1 (after up to two VLAN tags; IPv4 options
// skipped; IPv6 without extension headers).
long long FlowKey(const std::vector<uint8_t>& b) {
  size_t off = 12;
  auto u16 = [&](size_t at) { return static_cast<unsigned>(b[at] << 8 | b[at + 1]); };
  while (b.size() >= off + 2 && (u16(off) == 0x8100 || u16(off) == 0x88a8)) off += 4;
  if (b.size() < off + 2) return -1;
  const unsigned type = u16(off);
  size_t l4 = 0;
  const size_t ip = off + 2;
  if (type == 0x0800 && b.size() >= ip + 20 && b[ip + 9] == 17) {
    l4 = ip + (b[ip] & 15u) * 4;
  } else if (type == 0x86dd && b.size() >= ip + 40 && b[ip + 6] == 17) {
    l4 = ip + 40;
  } else {
    return -1;
  }
  if (b.size() < l4 + 8) return -1;
  // BTH after the UDP header: its destination QP is bytes 5..7.
  if (u16(l4 + 2) == 4791 && b.size() >= l4 + 8 + 12) {
    return static_cast<long long>(b[l4 + 13]) << 16 | b[l4 + 14] << 8 | b[l4 + 15];
  }
  return u16(l4);
}

// Receives one frame; false when none is waiting.
bool Receive(int fd, std::vector<uint8_t>& buf, Frame& f) {
  iovec iov{buf.data(), buf.size()};
  alignas(cmsghdr) char control[256];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_TRUNC);
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return false;
    Die(std::string("recvmsg: ") + std::strerror(errno));
  }
  if (static_cast<size_t>(n) > buf.size()) Die("a frame of " + std::to_string(n) + " B is larger than 64 KiB");
  f.bytes.assign(buf.begin(), buf.begin() + n);
  f.in_ns = NowNs();
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
      timespec ts;
      std::memcpy(&ts, CMSG_DATA(c), sizeof(ts));
      f.in_ns = int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
    }
  }
  return true;
}

void Send(int fd, const std::vector<uint8_t>& bytes) {
  for (;;) {
    if (send(fd, bytes.data(), bytes.size(), 0) >= 0) return;
    if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR) continue;  // the veth is busy: wait, never drop
    Die(std::string("send: ") + std::strerror(errno));
  }
}

class Stage {
 public:
  Stage(const Options& o, int in_fd, int out_fd, FILE* log, FILE* pfc_log)
      : o_(o), in_(in_fd), out_(out_fd), log_(log), pfc_log_(pfc_log), rng_(o.seed) {
    std::fprintf(log_, "out_index,in_index,bytes,in_ns,out_ns,held_ns,action,extent,depth_bytes,ce,due_ns,flow_key\n");
    if (pfc_log_ != nullptr) std::fprintf(pfc_log_, "index,time_ns,priority,quanta,kind,depth_bytes\n");
    const double speed = o.pfc_speed_bps > 0 ? o.pfc_speed_bps : o.rate_bps;
    refresh_ns_ = speed > 0 ? static_cast<int64_t>(o.pfc_quanta * 512.0 / speed * 1e9 / 2) : 0;
  }

  // PFC: sends XOFF, a refresh or X-ON as the lossless bytes in the queue
  // now call for; returns when it next needs a look (-1: not before a frame).
  int64_t Pfc(int64_t now) {
    if (o_.pfc_priority < 0) return -1;
    // The lossless bytes still in the queue now (frames are taken off it as
    // later ones arrive, at their receive times: the ECN depths stay those).
    uint64_t depth = lossless_depth_;
    int64_t next = -1;  // the next departure after now
    for (const Queued& q : queue_) {
      if (q.leaves_at > now) {
        next = q.leaves_at;
        break;
      }
      if (q.lossless) depth -= q.bytes;
    }
    if (!xoff_) {
      if (depth > o_.pfc_xoff) {
        xoff_ = true;
        SendPfc(static_cast<uint16_t>(o_.pfc_quanta), "xoff", depth);
      }
    } else if (depth <= o_.pfc_xon) {
      xoff_ = false;
      if (o_.pfc_xon_frames) SendPfc(0, "xon", depth);
    } else if (now - last_pfc_ns_ >= refresh_ns_) {
      SendPfc(static_cast<uint16_t>(o_.pfc_quanta), "refresh", depth);
    }
    if (xoff_ && (next < 0 || last_pfc_ns_ + refresh_ns_ < next)) next = last_pfc_ns_ + refresh_ns_;
    return next;
  }

  // A MAC control frame from --out: logged, not forwarded.
  void ReceivedMacControl(const Frame& f) {
    if (pfc_log_ == nullptr) return;
    const auto u16 = [&](size_t at) { return at + 1 < f.bytes.size() ? f.bytes[at] << 8 | f.bytes[at + 1] : 0; };
    const int p = o_.pfc_priority;
    const unsigned quanta = u16(14) == 0x0101 ? u16(18 + 2 * p) : u16(14) == 0x0001 ? u16(16) : 0;
    std::fprintf(pfc_log_, "%llu,%lld,%d,%u,received,%llu\n", static_cast<unsigned long long>(pfc_index_++),
                 static_cast<long long>(f.in_ns), p, quanta, static_cast<unsigned long long>(lossless_depth_));
  }

  void Arrive(Frame f) {
    f.in_index = next_in_++;
    int64_t queued_until = f.in_ns;  // when the frame has left the queue
    if (o_.rate_bps > 0) {
      Drain(f.in_ns);
      f.depth = depth_;
      f.lossless = o_.pfc_priority >= 0 && PriorityOf(f.bytes) == o_.pfc_priority;
      if (depth_ + f.bytes.size() > o_.limit_bytes) {
        Drop(f, "drop");
        return;
      }
      if (o_.kmax > 0) {
        double p = 0;
        if (f.depth >= o_.kmax) {
          p = 1;
        } else if (f.depth >= o_.kmin) {
          p = o_.pmax * static_cast<double>(f.depth - o_.kmin) / static_cast<double>(o_.kmax - o_.kmin);
        }
        if (p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p) {
          if (!MarkCe(f.bytes)) {
            Drop(f, "drop_red");
            return;
          }
          f.ce = true;
        }
      }
      const int64_t start = std::max(f.in_ns, queue_.empty() ? f.in_ns : queue_.back().leaves_at);
      queued_until = start + static_cast<int64_t>(static_cast<double>(f.bytes.size()) * 8e9 / o_.rate_bps);
      queue_.push_back({queued_until, f.bytes.size(), f.lossless});
      depth_ += f.bytes.size();
      if (f.lossless) lossless_depth_ += f.bytes.size();
    }
    int64_t d = o_.delay_ns;
    if (o_.jitter_ns > 0) d += std::uniform_int_distribution<int64_t>(-o_.jitter_ns, o_.jitter_ns)(rng_);
    f.release_ns = std::max(queued_until + std::max<int64_t>(d, 0), last_release_);
    last_release_ = f.release_ns;
    if (o_.reorder > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < o_.reorder) {
      f.wait = o_.extent;
      held_.push_back(std::move(f));
    } else {
      fifo_.push_back(std::move(f));
    }
  }

  // Sends what is due; returns the time of the next release (or -1).
  int64_t Service(int64_t now, bool flush) {
    while (!fifo_.empty() && (flush || fifo_.front().release_ns <= now)) {
      Frame f = std::move(fifo_.front());
      fifo_.pop_front();
      Emit(f, "pass", 0);
      // Frames held back for reordering leave once `extent` later ones have.
      for (auto it = held_.begin(); it != held_.end();) {
        if (it->in_index < f.in_index && ++it->passed >= it->wait) {
          Emit(*it, "reorder", it->passed);
          it = held_.erase(it);
        } else {
          ++it;
        }
      }
    }
    // A held frame whose followers never came (the traffic stopped) leaves
    // 10 ms after its release time with the extent it reached.
    for (auto it = held_.begin(); it != held_.end();) {
      if (flush || now >= it->release_ns + 10'000'000) {
        Emit(*it, "reorder", it->passed);
        it = held_.erase(it);
      } else {
        ++it;
      }
    }
    int64_t next = -1;
    if (!fifo_.empty()) next = fifo_.front().release_ns;
    for (const Frame& f : held_) {
      const int64_t t = f.release_ns + 10'000'000;
      if (next < 0 || t < next) next = t;
    }
    return next;
  }

  uint64_t received() const { return next_in_; }

 private:
  void Emit(const Frame& f, const char* action, int extent) {
    const int64_t out_ns = NowNs();
    Send(out_, f.bytes);
    Log(f, static_cast<long long>(next_out_++), out_ns, action, extent);
  }
  void Drop(const Frame& f, const char* action) { Log(f, -1, -1, action, 0); }
  // Frames that have left the queue by `t` leave its depth.
  void Drain(int64_t t) {
    while (!queue_.empty() && queue_.front().leaves_at <= t) {
      depth_ -= queue_.front().bytes;
      if (queue_.front().lossless) lossless_depth_ -= queue_.front().bytes;
      queue_.pop_front();
    }
  }
  void SendPfc(uint16_t quanta, const char* kind, uint64_t depth) {
    std::vector<uint8_t> b(60, 0);
    const uint8_t head[] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01, 0x02, 0x00,
                            0x00, 0x00, 0x00, 0x5c, 0x88, 0x08, 0x01, 0x01};
    std::memcpy(b.data(), head, sizeof head);
    const int p = o_.pfc_priority;
    b[17] = static_cast<uint8_t>(1u << p);  // class-enable vector (16 bits): priority p
    b[18 + 2 * p] = static_cast<uint8_t>(quanta >> 8);
    b[19 + 2 * p] = static_cast<uint8_t>(quanta);
    last_pfc_ns_ = NowNs();
    Send(in_, b);
    std::fprintf(pfc_log_, "%llu,%lld,%d,%u,%s,%llu\n", static_cast<unsigned long long>(pfc_index_++),
                 static_cast<long long>(last_pfc_ns_), p, static_cast<unsigned>(quanta), kind,
                 static_cast<unsigned long long>(depth));
  }
  void Log(const Frame& f, long long out_index, int64_t out_ns, const char* action, int extent) {
    std::fprintf(log_, "%lld,%llu,%zu,%lld,%lld,%lld,%s,%d,%llu,%d,%lld,%lld\n", out_index,
                 static_cast<unsigned long long>(f.in_index), f.bytes.size(), static_cast<long long>(f.in_ns),
                 static_cast<long long>(out_ns), out_ns < 0 ? -1LL : static_cast<long long>(out_ns - f.in_ns), action,
                 extent, static_cast<unsigned long long>(f.depth), f.ce ? 1 : 0,
                 out_ns < 0 ? -1LL : static_cast<long long>(f.release_ns), FlowKey(f.bytes));
  }

  const Options& o_;
  int in_, out_;
  FILE* log_;
  FILE* pfc_log_;  // null: no PFC
  std::mt19937_64 rng_;
  std::deque<Frame> fifo_;
  std::vector<Frame> held_;
  uint64_t next_in_ = 0, next_out_ = 0;
  int64_t last_release_ = 0;
  struct Queued {
    int64_t leaves_at;
    size_t bytes;
    bool lossless;
  };
  std::deque<Queued> queue_;
  uint64_t depth_ = 0, lossless_depth_ = 0;
  bool xoff_ = false;  // the sender is paused (XOFF sent, not yet X-ON)
  int64_t last_pfc_ns_ = 0, refresh_ns_ = 0;
  uint64_t pfc_index_ = 0;
};

Options Parse(int argc, char** argv) {
  Options o;
  auto need = [&](int& i) -> std::string_view {
    if (i + 1 >= argc) Die(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  auto number = [&](int& i) -> double {
    const std::string_view flag = argv[i];
    const std::string v(need(i));
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || d < 0) Die(std::string(flag) + ": not a non-negative number: " + v);
    return d;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--in") {
      o.in = need(i);
    } else if (a == "--out") {
      o.out = need(i);
    } else if (a == "--log") {
      o.log = need(i);
    } else if (a == "--delay-ns") {
      o.delay_ns = static_cast<int64_t>(number(i));
    } else if (a == "--jitter-ns") {
      o.jitter_ns = static_cast<int64_t>(number(i));
    } else if (a == "--reorder") {
      o.reorder = number(i);
      if (o.reorder > 1) Die("--reorder is a probability 0..1");
    } else if (a == "--extent") {
      o.extent = static_cast<int>(number(i));
      if (o.extent < 1) Die("--extent is at least 1");
    } else if (a == "--seed") {
      o.seed = static_cast<uint64_t>(number(i));
    } else if (a == "--rate-bps") {
      o.rate_bps = number(i);
    } else if (a == "--limit-bytes") {
      o.limit_bytes = static_cast<uint64_t>(number(i));
    } else if (a == "--ecn-kmin") {
      o.kmin = static_cast<uint64_t>(number(i));
    } else if (a == "--ecn-kmax") {
      o.kmax = static_cast<uint64_t>(number(i));
    } else if (a == "--rcvbuf") {
      const double v = number(i);
      if (v < 1 || v > (1 << 30)) Die("--rcvbuf is 1 B .. 1 GiB");
      o.rcvbuf = static_cast<int>(v);
    } else if (a == "--pfc-priority") {
      o.pfc_priority = static_cast<int>(number(i));
      if (o.pfc_priority > 7) Die("--pfc-priority is 0..7");
    } else if (a == "--pfc-xoff") {
      o.pfc_xoff = static_cast<uint64_t>(number(i));
    } else if (a == "--pfc-xon") {
      o.pfc_xon = static_cast<uint64_t>(number(i));
    } else if (a == "--pfc-quanta") {
      const double q = number(i);
      if (q < 1 || q > 0xFFFF) Die("--pfc-quanta is 1..65535");
      o.pfc_quanta = static_cast<unsigned>(q);
    } else if (a == "--pfc-xon-frames") {
      o.pfc_xon_frames = number(i) != 0;
    } else if (a == "--pfc-speed-bps") {
      o.pfc_speed_bps = number(i);
    } else if (a == "--ecn-pmax") {
      o.pmax = number(i);
      if (o.pmax > 1) Die("--ecn-pmax is a probability 0..1");
    } else {
      Die("unknown argument '" + std::string(a) +
          "'; usage: fabricgen-impair --in IF --out IF --log FILE [--delay-ns N] [--jitter-ns N] [--reorder P] "
          "[--extent K] [--seed S] [--rcvbuf BYTES] [--rate-bps R [--limit-bytes L] [--ecn-kmin B --ecn-kmax B "
          "--ecn-pmax P] [--pfc-priority P --pfc-xoff B --pfc-xon B [--pfc-quanta Q] "
          "[--pfc-xon-frames 0|1] [--pfc-speed-bps R]]]");
    }
  }
  if (o.in.empty() || o.out.empty() || o.log.empty()) Die("--in, --out and --log are required");
  if (o.kmax > 0 && (o.rate_bps <= 0 || o.kmin >= o.kmax)) {
    Die("ECN marking needs --rate-bps (a queue) and --ecn-kmin below --ecn-kmax");
  }
  if (o.pfc_priority >= 0 && (o.rate_bps <= 0 || o.pfc_xoff == 0 || o.pfc_xon >= o.pfc_xoff)) {
    Die("PFC needs --rate-bps (a queue) and --pfc-xon below --pfc-xoff");
  }
  return o;
}

// A device's counter from sysfs (0 when it cannot be read).
uint64_t DeviceCounter(const std::string& dev, const char* name) {
  FILE* f = std::fopen(("/sys/class/net/" + dev + "/statistics/" + name).c_str(), "r");
  if (f == nullptr) return 0;
  unsigned long long v = 0;
  if (std::fscanf(f, "%llu", &v) != 1) v = 0;
  std::fclose(f);
  return v;
}

// Frames the kernel dropped at the socket since the last call (the counters reset when read).
uint64_t SocketDrops(int fd) {
  tpacket_stats st{};
  socklen_t len = sizeof(st);
  if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) != 0) Die("PACKET_STATISTICS: " + std::string(std::strerror(errno)));
  return st.tp_drops;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  std::signal(SIGINT, [](int) { g_stop = 1; });
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // wake on time, not up to 50 us late
  FILE* log = std::fopen(o.log.c_str(), "w");
  if (log == nullptr) Die("cannot write " + o.log + ": " + std::strerror(errno));
  const int in = OpenPort(o.in, o.rcvbuf), out = OpenPort(o.out, o.rcvbuf);
  const uint64_t in_rx_dropped0 = DeviceCounter(o.in, "rx_dropped"), out_rx_dropped0 = DeviceCounter(o.out, "rx_dropped");
  uint64_t in_socket_drops = SocketDrops(in), out_socket_drops = SocketDrops(out);
  in_socket_drops = out_socket_drops = 0;  // what arrived before "ready" is not the run's
  FILE* pfc_log = nullptr;
  if (o.pfc_priority >= 0) {
    pfc_log = std::fopen((o.log + ".pfc.csv").c_str(), "w");
    if (pfc_log == nullptr) Die("cannot write " + o.log + ".pfc.csv: " + std::strerror(errno));
  }
  Stage stage(o, in, out, log, pfc_log);
  std::printf("ready\n");
  std::fflush(stdout);

  std::vector<uint8_t> buf(65536);
  uint64_t reverse = 0;
  int64_t next = -1;
  while (!g_stop) {
    pollfd fds[2] = {{in, POLLIN, 0}, {out, POLLIN, 0}};
    timespec timeout{1, 0};
    if (next >= 0) {
      const int64_t wait = std::max<int64_t>(next - NowNs(), 0);
      timeout = {static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
    }
    if (ppoll(fds, 2, &timeout, nullptr) < 0 && errno != EINTR) Die(std::string("ppoll: ") + std::strerror(errno));
    Frame f;
    while (Receive(in, buf, f)) stage.Arrive(std::move(f));
    while (Receive(out, buf, f)) {  // the other direction passes untouched (a PAUSE is link-local: logged)
      if (o.pfc_priority >= 0 && IsMacControl(f.bytes)) {
        stage.ReceivedMacControl(f);
        continue;
      }
      Send(in, f.bytes);
      ++reverse;
    }
    next = stage.Service(NowNs(), false);
    if (const int64_t pfc = stage.Pfc(NowNs()); pfc >= 0 && (next < 0 || pfc < next)) next = pfc;
  }
  stage.Service(NowNs(), true);
  std::fclose(log);
  if (pfc_log != nullptr) std::fclose(pfc_log);
  in_socket_drops += SocketDrops(in);
  out_socket_drops += SocketDrops(out);
  const uint64_t in_rx_dropped = DeviceCounter(o.in, "rx_dropped") - in_rx_dropped0;
  const uint64_t out_rx_dropped = DeviceCounter(o.out, "rx_dropped") - out_rx_dropped0;
  const bool complete = in_socket_drops + out_socket_drops + in_rx_dropped + out_rx_dropped == 0;
  const std::string summary_path = o.log + ".summary.json";
  FILE* summary = std::fopen(summary_path.c_str(), "w");
  if (summary == nullptr) Die("cannot write " + summary_path + ": " + std::strerror(errno));
  std::fprintf(summary,
               "{\"impaired\": %llu, \"passed_back\": %llu, \"socket_drops\": {\"in\": %llu, \"out\": %llu}, "
               "\"rx_dropped\": {\"in\": %llu, \"out\": %llu}, \"rcvbuf\": %d, \"complete\": %s}\n",
               static_cast<unsigned long long>(stage.received()), static_cast<unsigned long long>(reverse),
               static_cast<unsigned long long>(in_socket_drops), static_cast<unsigned long long>(out_socket_drops),
               static_cast<unsigned long long>(in_rx_dropped), static_cast<unsigned long long>(out_rx_dropped),
               o.rcvbuf, complete ? "true" : "false");
  std::fclose(summary);
  if (!complete) {
    std::fprintf(stderr, "fabricgen-impair: the log is incomplete: %llu + %llu frames dropped in the packet sockets, "
                 "%llu + %llu by the veths (in + out)\n", static_cast<unsigned long long>(in_socket_drops),
                 static_cast<unsigned long long>(out_socket_drops), static_cast<unsigned long long>(in_rx_dropped),
                 static_cast<unsigned long long>(out_rx_dropped));
  }
  std::fprintf(stderr, "fabricgen-impair: %llu frames impaired, %llu passed back\n",
               static_cast<unsigned long long>(stage.received()), static_cast<unsigned long long>(reverse));
  return 0;
}
