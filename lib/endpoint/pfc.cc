#include "endpoint/pfc.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "proto/bytes.h"
#include "proto/headers.h"

namespace fg::endpoint {

PfcCounter::PfcCounter(double line_bps, uint64_t storm_window_ns, uint32_t storm_events)
    : ns_per_quantum_(line_bps > 0 ? 512.0 * 1e9 / line_bps : 0), storm_window_ns_(storm_window_ns) {
  for (Slot& s : slots_) s.recent.assign(size_t{std::max<uint32_t>(storm_events, 1)} + 1, 0);
}

void PfcCounter::Event(size_t slot, uint16_t quanta, uint64_t rx_ns) {
  Slot& s = slots_[slot];
  // The pause in force ends here (cut short by this frame) or ended at its expiry.
  if (s.open_end != 0) {
    s.closed_ns += std::min(rx_ns, s.open_end) - std::min(s.open_start, rx_ns);
    s.open_start = s.open_end = 0;
  }
  const size_t base = slot * kPfcCountsPerSlot;
  if (quanta == 0) {
    counts_[base + kXonFrames].Add(1);
  } else {
    counts_[base + kPauseEvents].Add(1);
    s.open_start = rx_ns;
    s.open_end = rx_ns + std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(quanta * ns_per_quantum_)));
    // Storm onset: this event and the ring's oldest (the event storm_events
    // before it: storm_events intervals) within one window.
    s.recent[s.next] = rx_ns;
    s.next = s.next + 1 == s.recent.size() ? 0 : s.next + 1;
    s.filled = std::min(s.filled + 1, s.recent.size());
    if (s.filled == s.recent.size() && counts_[base + kStormOnsetNs].Read() == 0 &&
        rx_ns - s.recent[s.next] <= storm_window_ns_) {
      counts_[base + kStormOnsetNs].Set(rx_ns);
    }
  }
  // Published in an order a reader may mix up only for a moment (relaxed):
  // the ended time only grows, and the pause in force is its two ends.
  counts_[base + kEndedPausedNs].Set(s.closed_ns);
  counts_[base + kOpenFromNs].Set(s.open_start);
  counts_[base + kOpenUntilNs].Set(s.open_end);
}

void PfcCounter::Gate(PfcGate* gate, size_t p) const {
  // Paused by PFC on p or by a link-level PAUSE: until the later of the two.
  gate->until_ns[p].store(std::max(slots_[p].open_end, slots_[kPfcLinkPause].open_end), std::memory_order_relaxed);
}

void PfcCounter::OnFrame(const proto::MacControl& m, uint64_t rx_ns, PfcGate* gate) {
  if (m.opcode == proto::kOpcodePause) {
    Event(kPfcLinkPause, m.quanta[0], rx_ns);
    if (gate != nullptr) {
      for (size_t p = 0; p < kPfcPriorities; ++p) Gate(gate, p);
    }
    return;
  }
  for (size_t p = 0; p < kPfcPriorities; ++p) {
    if ((m.class_enable >> p & 1) == 0) continue;
    Event(p, m.quanta[p], rx_ns);
    if (gate != nullptr) Gate(gate, p);
  }
}

void PfcCounter::ReadCounts(std::span<uint64_t> out) const {
  for (size_t i = 0; i < kPfcCounts && i < out.size(); ++i) out[i] = counts_[i].Read();
}

namespace {

constexpr std::array<CountSpec, kPfcCounts> MakeSpecs() {
  std::array<CountSpec, kPfcCounts> s{};
  constexpr std::string_view kKeys[kPfcSlots][kPfcCountsPerSlot] = {
#define FG_PFC_SLOT(P)                                                         \
  {"p" #P "_pause_events", "p" #P "_xon_frames",    "p" #P "_ended_paused_ns", \
   "p" #P "_open_from_ns", "p" #P "_open_until_ns", "p" #P "_storm_onset_ns"}
      FG_PFC_SLOT(0),
      FG_PFC_SLOT(1),
      FG_PFC_SLOT(2),
      FG_PFC_SLOT(3),
      FG_PFC_SLOT(4),
      FG_PFC_SLOT(5),
      FG_PFC_SLOT(6),
      FG_PFC_SLOT(7),
      {"pause_pause_events", "pause_xon_frames", "pause_ended_paused_ns", "pause_open_from_ns", "pause_open_until_ns",
       "pause_storm_onset_ns"},
#undef FG_PFC_SLOT
  };
  constexpr std::string_view kHelp[kPfcCountsPerSlot] = {
      "PFC pause events received (frames with non-zero quanta for the priority)",
      "PFC X-ON frames received (zero quanta on an enabled priority; not events)",
      "time the priority was paused by pauses already ended: each event's quanta x 512 bit times at the port's "
      "line rate, cut short by the next frame (ns)",
      "receive time of the pause in force (ns of the run's clock; 0: none)",
      "when the pause in force ends unless a frame cuts it short (ns of the run's clock; 0: none)",
      "receive time of the first event that made a storm (ns of the run's clock; 0: none)"};
  using M = CountSpec::Merge;
  constexpr M kMerge[kPfcCountsPerSlot] = {M::kSum, M::kSum, M::kSum, M::kLatest, M::kLatest, M::kEarliest};
  for (size_t slot = 0; slot < kPfcSlots; ++slot) {
    for (size_t c = 0; c < kPfcCountsPerSlot; ++c) {
      s[slot * kPfcCountsPerSlot + c] = {kKeys[slot][c], kHelp[c], kMerge[c]};
    }
  }
  s[kPfcOther] = {"mac_control_other", "MAC control frames of other opcodes (frames)"};
  return s;
}
constexpr std::array<CountSpec, kPfcCounts> kCountSpecs = MakeSpecs();

class PfcHandler final : public FrameHandler {
 public:
  explicit PfcHandler(const PortContext& c)
      : counter_(c.line_bps, c.pfc_storm_window_ns, c.pfc_storm_events), gate_(c.pfc_gate) {}

  Taken Take(const RxFrame& f) override {
    // EtherType at 12 (MAC control is never VLAN-tagged).
    if (f.len < 14 || proto::Load16(f.data + 12) != proto::kEtherTypeMacControl) return Taken::kNo;
    if (f.len < 16) return Taken::kInvalid;
    const auto m = proto::ParseMacControl(std::span(f.data, f.len));
    if (!m) {
      const uint16_t op = proto::Load16(f.data + 14);
      if (op == proto::kOpcodePause || op == proto::kOpcodePfc) return Taken::kInvalid;  // cut short
      counter_.OnOther();
      return Taken::kYes;
    }
    counter_.OnFrame(*m, f.rx_ns, gate_);
    return Taken::kYes;
  }
  void ReadCounts(std::span<uint64_t> out) const override { counter_.ReadCounts(out); }

 private:
  PfcCounter counter_;
  PfcGate* gate_;
};

std::unique_ptr<FrameHandler> Make(const PortContext& c) { return std::make_unique<PfcHandler>(c); }

}  // namespace

HandlerKind PfcKind() { return HandlerKind{"pfc", kCountSpecs, Make, true}; }

uint64_t PausedNs(const uint64_t* c, uint64_t until_ns) {
  const uint64_t from = c[kOpenFromNs], to = std::min(c[kOpenUntilNs], until_ns);
  return c[kEndedPausedNs] + (c[kOpenUntilNs] != 0 && to > from ? to - from : 0);
}

std::vector<PfcFigures> PfcFiguresOf(std::span<const uint64_t> counts, uint64_t start_ns, uint64_t duration_ns,
                                     uint64_t until_ns, const std::string& observation_point) {
  std::vector<PfcFigures> out;
  if (counts.size() < kPfcOther) return out;
  for (size_t slot = 0; slot < kPfcSlots; ++slot) {
    const uint64_t* c = counts.data() + slot * kPfcCountsPerSlot;
    if (c[kPauseEvents] == 0 && c[kXonFrames] == 0) continue;
    PfcFigures f;
    f.priority = slot == kPfcLinkPause ? -1 : static_cast<int>(slot);
    f.pause_events = c[kPauseEvents];
    f.xon_frames = c[kXonFrames];
    f.paused_ns = PausedNs(c, until_ns);
    f.events_per_s = duration_ns > 0 ? static_cast<double>(f.pause_events) * 1e9 / static_cast<double>(duration_ns) : 0;
    if (c[kStormOnsetNs] != 0) {
      f.storm_onset_ns = c[kStormOnsetNs] > start_ns ? static_cast<int64_t>(c[kStormOnsetNs] - start_ns) : 0;
    }
    f.observation_point = observation_point;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace fg::endpoint
