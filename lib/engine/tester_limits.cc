#include "engine/tester_limits.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/units.h"
#include "engine/engine.h"
#include "tx/tx.h"

namespace fg::engine {

std::string DescribeLimits(const std::vector<TesterLimit>& limits) {
  return absl::StrJoin(limits, "; ", [](std::string* out, const TesterLimit& l) {
    absl::StrAppend(out, l.kind, " ", FormatCount(l.count), " (", l.detail, ")");
  });
}

bool TrialResult::tester_limited() const {
  for (const StreamResult& s : streams) {
    if (!s.tester_limits.empty()) return true;
  }
  for (const PortResult& p : ports) {
    if (!p.tester_limits.empty()) return true;
  }
  return false;
}

namespace {

// TX may end up to one poll short of the set count (the slots due between
// the last poll and the end), and a host that takes the lcore away for a
// few ms now and then costs a few skipped slots: below one burst or 0.1 %
// of what was due (a fifth of the finest search precision, 0.5 %) the
// offered load is the set one for every purpose of a test; beyond, it is not.
uint64_t ShortfallTolerance(uint64_t due) { return std::max<uint64_t>(tx::kTxBurst, due / 1'000); }

// PAUSE or PFC frames the port received over the trial: the device held
// the tester's TX back (its flow control, not the tester's limit).
uint64_t PauseReceived(const PortResult& p) {
  uint64_t n = 0;
  for (const port::Xstat& x : p.xstats) {
    const bool rx = x.name.find("rx") != std::string::npos;
    const bool pause = x.name.find("pause") != std::string::npos || x.name.find("pfc") != std::string::npos ||
                       x.name.find("xoff") != std::string::npos || x.name.find("xon") != std::string::npos;
    if (rx && pause) n += x.value;
  }
  return n;
}

void AssessPort(PortResult& p, int64_t host_backlog_drops, std::vector<std::string>& warnings) {
  std::vector<TesterLimit>& out = p.tester_limits;
  const port::Stats& hw = p.hw;
  if (hw.rx_missed != 0) {
    out.push_back({kRxDrop, hw.rx_missed, "the PMD missed frames: its RX ring was full (imissed)"});
  }
  if (hw.rx_nombuf != 0) {
    out.push_back({kRxDrop, hw.rx_nombuf, "the PMD had no mbuf for received frames (rx_nombuf)"});
  }
  if (hw.rx_errors != 0) {
    // CRC, length, runts: damaged on the link or by the device, not dropped by the tester.
    warnings.push_back(absl::StrFormat(
        "port %s: the PMD received %s frames in error (ierrors: CRC or length, from the link or the device); "
        "they count as lost",
        p.name, FormatCount(hw.rx_errors)));
  }
  if (hw.tx_errors != 0) out.push_back({kTxError, hw.tx_errors, "the PMD failed to send frames (oerrors)"});

  if (p.rx_stalls != 0 && p.software_rx_stamps) {
    out.push_back({kRxStall, p.rx_stalls,
                   absl::StrFormat("the RX lcore came back more than 1 ms after its last poll with frames waiting "
                                   "(longest %s); the %s frames that had waited are counted, their latency (the "
                                   "tester's own delay) left out of the latency figures (latency_excluded_packets); "
                                   "a loss duration they close may be long by up to the stall",
                                   FormatDuration(static_cast<int64_t>(p.rx_stall_max_ns)),
                                   FormatCount(p.rx_stall_frames)),
                   p.rx_stall_max_ns});
  }
  const port::KernelCounters& k = p.kernel;
  if (k.valid) {
    // The tester's drops are its packet socket's own (its ring full): the
    // socket counts them. Frames the interface received that the socket
    // never saw were dropped by the kernel before it (an IPv4 fragment its
    // defragmenter held for a reassembly that never came, a VLAN header cut
    // short, the input backlog: host_backlog_drop below): the device's or
    // the network's, never the tester's. Only when the socket's count cannot
    // be read is the difference all that is known, and said as such.
    if (k.socket_drops > 0) {
      out.push_back({kRxDrop, static_cast<uint64_t>(k.socket_drops),
                     absl::StrFormat("interface %s: the tester's packet socket dropped %s frames, its ring full "
                                     "(PACKET_STATISTICS tp_drops)",
                                     p.kernel_iface, FormatCount(static_cast<uint64_t>(k.socket_drops)))});
    }
    // (A PMD that reads the socket's statistics itself, net_pcap's imissed,
    // takes the drops of its readings: rx_missed above, the rest here.)
    const uint64_t socket = k.socket_drops > 0 ? static_cast<uint64_t>(k.socket_drops) : 0;
    if (k.rx_packets > hw.rx_packets + socket + hw.rx_missed) {
      const uint64_t before = k.rx_packets - hw.rx_packets - socket - hw.rx_missed;
      if (k.socket_drops >= 0) {
        warnings.push_back(absl::StrFormat(
            "port %s: interface %s received %s frames the tester's packet socket never saw (the PMD read %s, the "
            "socket dropped %s): the kernel dropped them before the socket (IPv4 fragments it held for reassembly, "
            "VLAN headers cut short, ...); not the tester's drops, and test frames among them count as lost",
            p.name, p.kernel_iface, FormatCount(before), FormatCount(hw.rx_packets),
            FormatCount(socket + hw.rx_missed)));
      } else {
        out.push_back({kRxDrop, before,
                       absl::StrFormat("interface %s received %s frames, the PMD read %s: the rest were dropped in "
                                       "the tester's packet socket or by the kernel before it (the socket's own "
                                       "count could not be read)",
                                       p.kernel_iface, FormatCount(k.rx_packets), FormatCount(hw.rx_packets))});
      }
    }
    if (k.rx_dropped != 0) {
      // The kernel's, not the socket's: its input backlog full (host_backlog_drop), no handler, a bad header.
      warnings.push_back(absl::StrFormat(
          "port %s: interface %s dropped %s frames on receive (rx_dropped) in the kernel, before the tester's "
          "packet socket: not the tester's drops",
          p.name, p.kernel_iface, FormatCount(k.rx_dropped)));
    }
    // What the interface handed on, or could not hand on to its peer (a
    // veth's tx_dropped: the peer's input backlog, the device's side, which
    // host_backlog_drop also sees); anything else the PMD took was lost in
    // the tester.
    // Both read at the end of the drain (the PMD's first); frames TX sent
    // after that reading are drain_short's.
    if (p.kernel_read_pmd_tx > k.tx_packets + k.tx_dropped) {
      out.push_back({kTxError, p.kernel_read_pmd_tx - k.tx_packets - k.tx_dropped,
                     absl::StrFormat("the PMD took %s frames, interface %s sent %s (and could not hand on %s) by the "
                                     "end of the drain",
                                     FormatCount(p.kernel_read_pmd_tx), p.kernel_iface, FormatCount(k.tx_packets),
                                     FormatCount(k.tx_dropped))});
    }
    if (host_backlog_drops > 0) {
      out.push_back({kHostBacklogDrop, static_cast<uint64_t>(host_backlog_drops),
                     "the host kernel dropped frames at its input backlog (/proc/net/softnet_stat) while this "
                     "kernel-backed port ran: on a host shared with the device they may be the tester's or the "
                     "device's"});
    }
  }
}

// The limits of the ports a stream crosses: its TX port's TX side, its RX port's RX side.
void InheritPortLimits(StreamResult& s, const std::vector<PortResult>& ports) {
  auto inherit = [&](const PortResult& p, bool tx_side) {
    for (const TesterLimit& l : p.tester_limits) {
      const bool tx_kind = l.kind == kTxError;
      if (tx_kind != tx_side) continue;
      TesterLimit c = l;
      c.detail = absl::StrFormat("port %s: %s", p.name, l.detail);
      s.tester_limits.push_back(std::move(c));
    }
  };
  inherit(ports[s.tx_port], true);
  if (s.received) inherit(ports[s.rx_port], false);  // rx_drop, rx_stall, host_backlog_drop
}

// A READ's responses: every packet its executed requests asked for is owed
// (no pacing slack): one not sent is the tester's, never the wire's, unless
// the device paused the responding port meanwhile.
void AssessReadResponses(StreamResult& s, const std::vector<PortResult>& ports, std::vector<std::string>& warnings) {
  const tx::TxCounters& t = s.tx;
  if (t.shortfall() != 0) {
    if (const uint64_t pause = PauseReceived(ports[s.tx_port]); pause != 0) {
      warnings.push_back(absl::StrFormat(
          "stream %s: the responder sent %s of the %s READ response packets asked for while port %s received %s "
          "PAUSE/PFC frames: the device's flow control held them back",
          s.name, FormatCount(t.packets), FormatCount(t.due), ports[s.tx_port].name, FormatCount(pause)));
    } else {
      s.tester_limits.push_back(
          {kTxShortfall, t.shortfall(),
           absl::StrFormat("the responder sent %s of the %s READ response packets its executed requests asked for "
                           "(the rest were still queued when the drain ended, or its queue of %s requests was full)",
                           FormatCount(t.packets), FormatCount(t.due), FormatCount(tx::kReadJobsPerShard))});
    }
  }
  if (t.alloc_failures != 0) {
    s.tester_limits.push_back(
        {kTxError, t.alloc_failures, "the mbuf pool was empty when the responder needed a burst (times)"});
  }
  // The responder sends a request's data as soon as it sees the request:
  // held up for more than 1 ms with requests waiting, it then sent their data
  // back to back, a burst the READ's rate never called for (as a TX pacer
  // that falls 1 ms behind skips rather than bursts). Whatever the port's
  // timestamps, that burst is the tester's, and a device may drop it.
  if (const PortResult& p = ports[s.tx_port]; p.rx_stalls != 0) {
    s.tester_limits.push_back(
        {kPacingStall, p.rx_stalls,
         absl::StrFormat("the responder's lcore came back more than 1 ms after its last poll of port %s with READ "
                         "requests waiting (longest %s), then sent their responses back to back",
                         p.name, FormatDuration(static_cast<int64_t>(p.rx_stall_max_ns))),
         p.rx_stall_max_ns});
  }
  InheritPortLimits(s, ports);
}

void AssessStream(StreamResult& s, const std::vector<PortResult>& ports, std::vector<std::string>& warnings) {
  if (s.read_requests >= 0) return AssessReadResponses(s, ports, warnings);
  std::vector<TesterLimit>& out = s.tester_limits;
  const tx::TxCounters& t = s.tx;
  const bool short_of_rate =
      (t.paced && t.shortfall() > ShortfallTolerance(t.due)) || t.slots_skipped != 0 || t.late_burst_frames != 0;
  if (const uint64_t pause = PauseReceived(ports[s.tx_port]); pause != 0 && short_of_rate) {
    // The device paused the port: TX waited as it must. Not the tester's limit.
    warnings.push_back(absl::StrFormat(
        "stream %s: sent %s of the %s frames its set rate called for while port %s received %s PAUSE/PFC frames: "
        "the device's flow control held TX back",
        s.name, FormatCount(t.packets), FormatCount(t.due), ports[s.tx_port].name, FormatCount(pause)));
  } else if (t.paced && t.shortfall() > ShortfallTolerance(t.due)) {
    std::string why;
    if (t.retries != 0) why += absl::StrFormat("; the PMD refused part of %s bursts", FormatCount(t.retries));
    out.push_back({kTxShortfall, t.shortfall(),
                   absl::StrFormat("sent %s of the %s frames the set rate called for (%.3f %% short)%s",
                                   FormatCount(t.packets), FormatCount(t.due),
                                   100.0 * static_cast<double>(t.shortfall()) / static_cast<double>(t.due), why)});
  }
  if (PauseReceived(ports[s.tx_port]) == 0 && t.slots_skipped > ShortfallTolerance(t.due)) {
    out.push_back({kPacingStall, t.slots_skipped,
                   absl::StrFormat("the TX lcore fell more than 1 ms (or one burst) behind the set rate %s times "
                                   "(longest %s); the slots it missed were skipped, not sent late",
                                   FormatCount(t.stalls), FormatDuration(static_cast<int64_t>(t.stall_max_ns))),
                   t.stall_max_ns});
  }
  if (PauseReceived(ports[s.tx_port]) == 0 && t.late_burst_frames != 0) {
    out.push_back({kPacingStall, t.late_burst_frames,
                   absl::StrFormat("frames of bursts the TX lcore released more than 1 ms after their start "
                                   "(longest %s late; not the back-to-back bursts at their times the schedule "
                                   "called for)",
                                   FormatDuration(static_cast<int64_t>(t.stall_max_ns))),
                   t.stall_max_ns});
  }
  if (t.alloc_failures != 0) {
    out.push_back({kTxError, t.alloc_failures, "the mbuf pool was empty when TX needed a burst (times)"});
  }
  if (s.responder.answers_dropped != 0) {
    out.push_back({kAnswerDrop, s.responder.answers_dropped,
                   absl::StrFormat("the responder on port %s did not send %s ACKs, NAKs or CNPs (%s of them CNPs): "
                                   "its answer queue was full or they were still queued when the run ended; the "
                                   "requester's counts miss them",
                                   ports[s.rx_port].name, FormatCount(s.responder.answers_dropped),
                                   FormatCount(s.responder.cnp_dropped))});
  }
  if (s.answered && ports[s.rx_port].answer_alloc_failures != 0) {
    out.push_back({kTxError, ports[s.rx_port].answer_alloc_failures,
                   absl::StrFormat("port %s: the mbuf pool was empty when the responder had answers to send "
                                   "(times; they waited)",
                                   ports[s.rx_port].name)});
  }
  InheritPortLimits(s, ports);
}

}  // namespace

namespace {

// Where the time of an lcore hold-up went, from the two places a system can
// see it: its threads' waits for their CPU while the kernel ran another task
// (schedstat), and the hypervisor's steal (/proc/stat); each known when
// readable.
struct HoldUp {
  int64_t wait_ns = 0, steal_ns = 0;
  bool wait_known = false, steal_known = false;
  std::string note;            // for a stall (the loop measured it: over 1 ms)
  std::string shortfall_note;  // for a TX shortfall, which may have no stall behind it
  bool known() const { return wait_known || steal_known; }
};

HoldUp WhereTheTimeWent(const std::vector<LcoreStats>& lcores) {
  constexpr int64_t kMs = 1'000'000;
  HoldUp h;
  std::vector<int> cpus;  // steal is per CPU: each once
  uint64_t short_n = 0, short_ns = 0;
  for (const LcoreStats& l : lcores) {
    short_n += l.short_holdups + l.holdups;
    short_ns += l.short_holdup_ns + l.holdup_ns;
    if (l.guest_wait_ns >= 0) {
      h.wait_ns += l.guest_wait_ns;
      h.wait_known = true;
    }
    if (l.cpu >= 0 && l.host_steal_ns >= 0 && std::find(cpus.begin(), cpus.end(), l.cpu) == cpus.end()) {
      cpus.push_back(l.cpu);
      h.steal_ns += l.host_steal_ns;
      h.steal_known = true;
    }
  }
  if (!h.known()) return h;
  std::string cause;
  if (h.wait_ns >= kMs && h.wait_ns >= h.steal_ns) {
    cause = "another task on the lcores' CPUs held them up (a process or kernel thread of this system: isolate "
            "the lcores' CPUs)";
  } else if (h.steal_ns >= kMs) {
    cause = "the hypervisor gave their CPUs to something else (a virtual machine's vCPUs descheduled)";
  } else {
    cause = "neither reaches 1 ms, so the CPU was taken from the whole system: a virtual machine's vCPU "
            "descheduled by a host that reports no steal, or firmware";
  }
  const std::string where = absl::StrFormat(
      "; over the trial the lcores' threads waited %s for their CPUs while the kernel ran another task there "
      "(schedstat) and the hypervisor reported %s of steal (/proc/stat): ",
      FormatDuration(h.wait_ns), FormatDuration(h.steal_ns));
  h.note = where + cause;
  // A shortfall: the loop's own turns over 0.1 ms apart (hold-ups and
  // short ones) say whether the lcore was away at all.
  std::string short_cause = cause;
  if (h.wait_ns < kMs && h.steal_ns < kMs) {
    short_cause =
        static_cast<int64_t>(short_ns) >= kMs
            ? absl::StrFormat("neither reaches 1 ms, but the lcores' loops came back over 0.1 ms late %s times, "
                              "%s in all (lcores[].holdup_ns, short_holdup_ns), so the CPU was taken from the whole system in "
                              "slices: a virtual machine's vCPU descheduled by a host that reports no steal, or "
                              "firmware",
                              FormatCount(short_n), FormatDuration(static_cast<int64_t>(short_ns)))
            : absl::StrFormat("neither reaches 1 ms and the lcores' loops were away over 0.1 ms for only %s: the "
                              "TX path itself was slower than the rate (the PMD, or the kernel behind a "
                              "kernel-backed port)",
                              FormatDuration(static_cast<int64_t>(short_ns)));
  }
  h.shortfall_note = where + short_cause;
  return h;
}

// The hold-up figures go with the stalls, and with a TX shortfall: a host
// that takes the lcore's CPU in slices shorter than a stall's 1 ms leaves a
// shortfall with no stall, and the time the kernel counted says so.
void AttachHoldUp(std::vector<TesterLimit>& limits, const HoldUp& h) {
  for (TesterLimit& l : limits) {
    if (l.kind != kPacingStall && l.kind != kRxStall && l.kind != kTxShortfall) continue;
    l.detail += l.kind == kTxShortfall ? h.shortfall_note : h.note;
    l.cpu_wait_ns = h.wait_known ? h.wait_ns : -1;
    l.steal_ns = h.steal_known ? h.steal_ns : -1;
  }
}

}  // namespace

void AssessTesterLimits(TrialResult& r) {
  for (PortResult& p : r.ports) {
    p.tester_limits.clear();
    AssessPort(p, r.host_backlog_drops, r.warnings);
  }
  for (StreamResult& s : r.streams) {
    s.tester_limits.clear();
    AssessStream(s, r.ports, r.warnings);
    if (r.drain_late_frames != 0) {
      // The whole trial's: any stream's counts may miss them.
      s.tester_limits.push_back(
          {kDrainShort, r.drain_late_frames,
           absl::StrFormat("the run's lcores sent %s frames (responses, answers or resends to frames the path "
                           "delivered late, or resends into a path that loses them all) too close to the drain's end "
                           "to arrive within it: it runs `drain` past the last frame sent, bounded at `drain` + "
                           "max(`drain`, 1 s) after TX (it took %s); they may count as lost",
                           FormatCount(r.drain_late_frames), FormatDuration(r.drain_ns))});
    }
  }
  if (const HoldUp h = WhereTheTimeWent(r.lcores); h.known()) {
    for (PortResult& p : r.ports) AttachHoldUp(p.tester_limits, h);
    for (StreamResult& s : r.streams) AttachHoldUp(s.tester_limits, h);
  }
}

}  // namespace fg::engine
