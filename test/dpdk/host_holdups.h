// A test on a shared host that the host would not let judge the device.
//
// When the host takes the tester's CPU for milliseconds at a time, often
// (a VM whose vCPUs the hypervisor deschedules: CI of 2026-12-03 saw 12-20 %
// steal with hold-ups every few ms), every attempt of a trial can be
// tester-limited, and the product rightly stops the search rather than judge
// the device by them. Such a test then cannot say whether the device's figure
// is right: it is skipped, naming why, but only when
//   - it stopped for exactly that reason (RunUnlimited's message),
//   - every one of its limited trials had a hold-up (pacing_stall or rx_stall),
//     or only a TX shortfall whose missing frames' time at the trial's rate
//     the kernel counted as CPU wait and steal (the host took the CPU in
//     slices under a stall's 1 ms); a TX path too slow for its rate, with no
//     time counted, still fails; and
//   - the host is seen to take the time: over those trials, the lcores' CPU
//     waits (schedstat) plus the hypervisor's steal (/proc/stat) are at least
//     half the sum of their longest hold-ups (steal is counted in 10 ms
//     ticks); or, where the kernel cannot count it (a hypervisor that
//     reports no steal: Firecracker's vCPUs read 0, and CI of 2026-12-07
//     counted 85.6 ms of 171.4), a bare loop pinned to each worker CPU right
//     after (port::ProbeHoldups, 2 s) is held up over 1 ms at least once per
//     trial duration: the host is stopping code with none of the tester in
//     it. A pacer that saw stalls neither the kernel nor the bare loop sees
//     still fails.
// The tests' DUT (a Mover thread between ring ports, ring_path.h) runs on
// the same host: when the host stops its CPU, the TX port's ring fills and
// the PMD refuses bursts, which the product rightly calls the tester's limit
// (TX short of the set rate). A caller passing the DUT's stops (UNIX ns)
// has the part of each limited trial they overlap counted as the host's
// time too, as the kernel's CPU wait is.
// tools/host_noise.py makes such an hour on demand.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "engine/tester_limits.h"
#include "methods/load.h"
#include "port/kernel_if.h"

namespace fg::testing {

// A span in which the tests' DUT thread did not run (UNIX ns).
struct DutStop {
  int64_t from_unix_ns = 0, to_unix_ns = 0;
};

// ns of `stops` within trial t (its start to its set duration's end).
inline double DutStoppedWithin(const methods::TrialRecord& t, const std::vector<DutStop>& stops) {
  const int64_t from = t.start_unix_ns, to = from + static_cast<int64_t>(t.duration_s * 1e9);
  double ns = 0;
  for (const DutStop& s : stops) ns += static_cast<double>(std::max<int64_t>(0, std::min(to, s.to_unix_ns) - std::max(from, s.from_unix_ns)));
  return ns;
}

// Whether a bare loop on each worker CPU (every CPU but 0: the main lcore's)
// is held up over 1 ms at least once per `trial_s` now; says what it saw.
inline bool BareLoopsHeldUp(double trial_s, std::string* seen) {
  constexpr double kProbeS = 2.0;
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  std::vector<port::HoldupProbe> probes(static_cast<size_t>(std::max(1L, n - 1)));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < probes.size(); ++i) {
    const int cpu = n > 1 ? static_cast<int>(i) + 1 : 0;
    threads.emplace_back([&probes, i, cpu] { probes[i] = port::ProbeHoldups(cpu, kProbeS); });
  }
  for (std::thread& t : threads) t.join();
  bool held = false;
  for (const port::HoldupProbe& p : probes) {
    if (!p.pinned) continue;
    const double per_trial = static_cast<double>(p.over_1ms) / p.seconds * trial_s;
    held = held || per_trial >= 1.0;
    *seen += absl::StrFormat("%scpu %d: %u hold-ups over 1 ms in %.0f s (%.1f per %.0f ms trial, longest %.1f ms)",
                             seen->empty() ? "" : "; ", p.cpu, p.over_1ms, p.seconds, per_trial, trial_s * 1e3,
                             static_cast<double>(p.longest_ns) / 1e6);
  }
  return held;
}

inline std::string HostHeldUpEveryAttempt(bool complete, const std::string& stopped_because,
                                          const std::vector<methods::TrialRecord>& trials,
                                          const std::vector<DutStop>& dut_stops = {}) {
  constexpr char kStop[] = "the tester itself was the limit in ";
  if (complete || !absl::StartsWith(stopped_because, kStop)) return "";
  // As many limited attempts as the product says it made (a retry loop that
  // gave up early is the product's bug, not the host's).
  const int attempts = std::atoi(stopped_because.c_str() + sizeof kStop - 1);
  int limited = 0;
  double longest = 0, counted = 0, longest_trial_s = 0;
  for (const methods::TrialRecord& t : trials) {
    if (t.tester_limits.empty()) continue;
    ++limited;
    longest_trial_s = std::max(longest_trial_s, t.duration_s);
    const double dut = DutStoppedWithin(t, dut_stops);
    double trial_longest = 0, trial_counted = -1;
    for (const engine::TesterLimit& l : t.tester_limits) {
      if (l.kind != engine::kPacingStall && l.kind != engine::kRxStall) continue;
      trial_longest = std::max(trial_longest, static_cast<double>(l.longest_ns));
      // Each limit of a trial carries the trial's (all lcores') figure: once.
      if (l.cpu_wait_ns >= 0 && l.steal_ns >= 0) trial_counted = static_cast<double>(l.cpu_wait_ns + l.steal_ns);
    }
    if (trial_longest == 0) {
      // No hold-up over 1 ms: only a TX shortfall (the host took the CPU in
      // shorter slices, which the pacer caught up but for the last) whose
      // missing frames' time at the trial's rate the kernel counted is the
      // host's; anything else is the tester's own slowness.
      double short_frames = 0, trial_wait = -1;
      for (const engine::TesterLimit& l : t.tester_limits) {
        if (l.kind != engine::kTxShortfall) {
          trial_wait = -2;  // another kind: not explained by the host
          break;
        }
        short_frames += static_cast<double>(l.count);
        if (l.cpu_wait_ns >= 0 && l.steal_ns >= 0) trial_wait = static_cast<double>(l.cpu_wait_ns + l.steal_ns);
      }
      const double due_fps = (static_cast<double>(t.tx_frames) + short_frames) / std::max(t.duration_s, 1e-9);
      const double short_ns = short_frames / std::max(due_fps, 1e-9) * 1e9;
      if (trial_wait == -1) trial_wait = 0;  // (unreadable: the DUT's stops may still explain it)
      if (trial_wait >= 0) trial_wait += dut;
      if (trial_wait < 0 || trial_wait < short_ns) {
        std::fprintf(stderr,
                     "not a host hold-up: trial %d was limited with no hold-up the kernel or the DUT's stops "
                     "(%.3f ms) explain: %s\n",
                     t.index, dut / 1e6, t.tester_limits.front().detail.c_str());
        return "";
      }
      longest += short_ns;
      counted += trial_wait;
      continue;
    }
    longest += trial_longest;
    counted += std::max(0.0, trial_counted) + dut;
  }
  std::string bare;
  if (limited < attempts || limited == 0 ||
      (counted < longest / 2 && !BareLoopsHeldUp(longest_trial_s, &bare))) {
    std::fprintf(stderr, "not a host hold-up: %d limited trials of %d attempts; hold-ups %.1f ms, counted %.1f ms%s%s\n",
                 limited, attempts, longest / 1e6, counted / 1e6, bare.empty() ? "" : "; a bare loop after: ",
                 bare.c_str());
    return "";
  }
  return absl::StrFormat(
      "the host held the tester up in every attempt (%d limited trials; longest hold-ups %.1f ms in all, the kernel "
      "counted %.1f ms of CPU wait and steal, with the DUT's own stops%s%s): the device cannot be judged in this "
      "hour: %s",
      limited, longest / 1e6, counted / 1e6, bare.empty() ? "" : "; a bare loop after: ", bare, stopped_because);
}

}  // namespace fg::testing

// Skips the running test (GTEST_SKIP, with the reason) when HostHeldUpEveryAttempt says so.
// (switch: a statement an `else` after it cannot bind into, as gtest's own macros.)
#define FG_SKIP_IF_HOST_HELD_UP(complete, stopped_because, trials, ...)                                    \
  switch (0)                                                                                               \
  case 0:                                                                                                  \
  default:                                                                                                 \
    if (const std::string fg_held_up = ::fg::testing::HostHeldUpEveryAttempt(complete, stopped_because, trials __VA_OPT__(,) __VA_ARGS__); \
        fg_held_up.empty()) {                                                                              \
    } else                                                                                                 \
      GTEST_SKIP() << fg_held_up
