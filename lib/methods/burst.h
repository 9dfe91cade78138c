// methods/burst.h: back-to-back burst absorption, with incast.
//
// Every stream of the test sends a burst of N frames back to back at line
// rate at the same moment (N senders to one receiver when the streams share
// an RX port: incast N:1), then stays silent for `gap` so the DUT's buffer
// drains; `repetitions` bursts make one trial, and N passes when no frame of
// any of them is lost. A binary search over N between min_frames and
// max_frames finds the longest burst the path absorbs. Streams that share a
// TX port are virtual senders (their frames leave one port interleaved), and
// the report says how many there were. With `incast: [1, 2, 4]` the search
// runs once per ratio with the test's first N streams.
//
//   auto r = fg::methods::RunBurst(eal, ports, streams, plan.tests[2], opt);
//   for (const auto& p : r->points) printf("%d:1 absorbs %u frames per sender\n", p.senders, p.absorbed_frames);
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "methods/load.h"
#include "methods/test_kind.h"

namespace fg::methods {

// The search's outcome at one incast ratio.
struct BurstPoint {
  int senders = 0;                 // incast ratio senders:1
  int virtual_senders = 0;         // of them, sharing a TX port with another
  bool found = false;              // some burst length lost nothing
  uint32_t absorbed_frames = 0;    // the longest burst (per sender) no repetition lost a frame of
  uint32_t first_loss_frames = 0;  // the shortest burst that lost (0: none up to max_frames)
};

// A `burst` test's section.
struct BurstParams : config::TestParams {
  uint32_t min_frames = 1, max_frames = 10'000;
  int repetitions = 50;
  int64_t gap_ns = 100'000'000;  // after each burst, for the DUT's buffer to drain
  std::vector<int> incast;       // sender counts to sweep (the test's first N streams); empty: all at once
};

struct BurstResult : TestResult {
  int repetitions = 0;
  std::vector<BurstPoint> points;  // one per incast ratio swept (one when the test sweeps none)
};

absl::StatusOr<BurstResult> RunBurst(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                     const std::vector<stream::CompiledStream>& streams, const config::TestSpec& test,
                                     const MethodOptions& options);

const TestKind& BurstKind();

}  // namespace fg::methods
