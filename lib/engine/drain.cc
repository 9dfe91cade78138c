// engine/drain.cc: the end of a trial's traffic. LiveRun::Drain reads the
// counters `drain` after the last frame any lcore sent (or a packet
// socket's TX ring held), asking the kernel to send what waits in those
// rings; what is still sent too late is TrialResult::drain_late_frames.
#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_format.h"
#include "base/tsc.h"
#include "base/units.h"
#include "engine/engine.h"
#include "engine/worker.h"
#include "port/kernel_if.h"

namespace fg::engine {

uint64_t LiveRun::FramesSent() const {
  uint64_t n = 0;
  for (const LcoreWork& w : work_) {
    n += w.tx_packets.Read();
    for (const AnswerPort& ap : w.answer_ports) n += ap.packets.Read();
  }
  return n;
}

uint64_t LiveRun::FramesReceived() const {
  uint64_t n = 0;
  for (const LcoreWork& w : work_) n += w.rx_packets.Read();
  return n;
}

uint64_t LiveRun::UnsentInKernel(size_t pi) const {
  if (ports_[pi]->options().kernel_iface.empty()) return 0;
  const uint64_t took = ports_[pi]->stats().tx_packets;  // first (see Finish)
  const port::KernelCounters k = ports_[pi]->kernel_stats();
  return k.valid && took > k.tx_packets + k.tx_dropped ? took - k.tx_packets - k.tx_dropped : 0;
}

LiveRun::DrainEnd LiveRun::Drain() {
  // A frame sent in the drain (a READ's responses to requests the path held
  // up, an ACK, a go-back-N resend) needs the drain's time to arrive as much
  // as TX's last one: the counters are read drain_ns after the last frame
  // sent, not after TX's end (else the trial counts it lost, and a packet
  // socket's PMD took it after its interface's counters were read). Sampled
  // every 1 ms; a change counts as sent at the sample that saw it.
  //
  // Frames a packet socket's PMD took but its interface has not sent (nor
  // failed to hand on) wait in the socket's TX ring: the kernel refused the
  // PMD's one request to send them (its send buffer full of frames the
  // peer's input had not processed), and the PMD asks again only when a
  // burst brings frames. They count as not sent yet: asked here every
  // millisecond, they go out inside the trial and get the drain's time too.
  const int64_t drain = std::max<int64_t>(0, options_.drain_ns);
  // A recovery can chain (a resend's ACK, a timeout, a resend), each round
  // a timeout and a path's delay; a requester resending into a dead link
  // never ends: bounded at drain_ns + max(drain_ns, 1 s).
  const int64_t bound = drain + std::max<int64_t>(drain, 1'000'000'000);
  const uint64_t t0 = ReadTsc();
  auto since = [&] { return static_cast<int64_t>(clock_.ToNs(ReadTsc() - t0)); };
  // (ns since t0, frames sent, frames received)
  struct Seen {
    int64_t t;
    uint64_t sent, received;
  };
  std::vector<Seen> seen{{0, FramesSent(), FramesReceived()}};
  std::vector<uint64_t> waited(ports_.size(), 0);  // most frames a port's TX ring held
  // Quiet is `drain` of time the lcores ran in, not of the clock's: the host
  // can stop a worker's vCPU for ~100 ms (docs/lab.md "The host stopping
  // the lab's CPU"), and a requester that sent nothing then was stopped, not
  // done (a dead-path resend chain ended 0.68 s into its 1.1 s bound so).
  // So the time since the last frame sent counts less the longest hold-up a
  // worker noted since (LcoreMain notes a turn of its loop more than 1 ms
  // after the one before), and only once every worker turned its loop in
  // each of the last two samples: one stopped now has not noted its hold-up
  // yet; one that turned before the last sample has noted any before that.
  const size_t nw = work_.size();
  auto held_ns = [&](size_t i) { return static_cast<int64_t>(work_[i].clock.ToNs(work_[i].holdup_ticks.Read())); };
  std::vector<uint64_t> polls(nw);
  std::vector<int64_t> held_at_sent(nw);
  auto mark_sent = [&] {
    for (size_t i = 0; i < nw; ++i) held_at_sent[i] = held_ns(i);
  };
  for (size_t i = 0; i < nw; ++i) polls[i] = work_[i].polls.Read();
  mark_sent();
  int turned = 0;  // samples in a row in which every worker turned its loop
  int64_t last_sent = 0;
  bool quiet = false, in_ring = false;
  for (;;) {
    in_ring = false;
    for (size_t pi = 0; pi < ports_.size(); ++pi) {
      if (const uint64_t u = UnsentInKernel(pi); u != 0) {
        ports_[pi]->KickKernelTx();
        waited[pi] = std::max(waited[pi], u);
        in_ring = true;
      }
    }
    const int64_t now = since();
    if (in_ring) {
      last_sent = now;
      mark_sent();
    }
    int64_t held = 0;
    for (size_t i = 0; i < nw; ++i) held = std::max(held, held_ns(i) - held_at_sent[i]);
    if (now >= drain && now - last_sent - held >= drain && turned >= 2) {
      quiet = true;
      break;
    }
    if (now >= bound) break;
    const int64_t wait =
        turned < 2 ? 1'000'000 : std::min<int64_t>(1'000'000, std::max(drain, last_sent + held + drain) - now);
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::max<int64_t>(wait, 1)));
    const Seen x{since(), FramesSent(), FramesReceived()};
    bool all = true;
    for (size_t i = 0; i < nw; ++i) {
      const uint64_t p = work_[i].polls.Read();
      all = all && p != polls[i];
      polls[i] = p;
    }
    turned = all ? turned + 1 : 0;
    if (x.sent != seen.back().sent) {
      last_sent = x.t;
      mark_sent();
    }
    seen.push_back(x);
  }
  const int64_t took = since();
  for (size_t pi = 0; pi < ports_.size(); ++pi) {
    if (waited[pi] == 0) continue;
    result_.warnings.push_back(absl::StrFormat(
        "port %s: in the drain interface %s had up to %s frames its PMD took not yet sent (the kernel had not taken "
        "them from the packet socket's TX ring); the drain asked it again every millisecond and ran `drain` past "
        "their sending%s",
        ports_[pi]->name(), ports_[pi]->options().kernel_iface, FormatCount(waited[pi]),
        in_ring ? "; at its bound some were still there (they count as tx_error)" : ""));
  }
  DrainEnd end{seen.back().sent, 0};
  if (quiet) return end;
  // The bound reached with frames still going out: those of its last
  // drain_ns had less than the drain's time. When nothing arrived in that
  // time either (a requester resending into a path that loses everything)
  // the loss is the path's, not the tester's: said, not a tester limit.
  const Seen* from = &seen.front();
  for (const Seen& x : seen) {
    if (x.t <= took - drain) from = &x;
  }
  const uint64_t late = seen.back().sent - from->sent;
  // (A packet socket's TX ring still holding frames at the bound is the
  // host's doing, never the path's: those are late.)
  if (seen.back().received != from->received || in_ring) {
    end.late = late;
  } else {
    end.path_lost = true;
    result_.warnings.push_back(absl::StrFormat(
        "the drain reached its bound (%s) with frames still being sent (%s in its last %s: resends, answers; more "
        "as the lcores stopped) and none arriving in that time: the path lost them, as the trial's loss says",
        FormatDuration(took), FormatCount(late), FormatDuration(drain)));
  }
  return end;
}

}  // namespace fg::engine
