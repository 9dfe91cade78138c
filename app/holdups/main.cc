// fabricgen-holdups: can this host give a worker lcore its CPU?
//
// A busy loop pinned to each CPU named (default: every CPU but 0, the worker
// lcores' CPUs when fabricgen's main lcore has CPU 0) reads the clock and
// counts the gaps between two readings: time the loop did not run. A tester
// that loses its CPU for more than 1 ms falls behind its set rate and says
// so (pacing_stall); this shows, before any test, how often the host does it
// and where the time went (the thread's run_delay: another task of this
// system ran there; /proc/stat steal: the hypervisor's; neither: the whole
// machine was descheduled). tools/isolate_cpus.sh moves the system's
// movable work away from those CPUs.
//
//   fabricgen-holdups [--seconds S] [CPU ...]
//   cpu 1: 5.000 s, gaps over 1 ms: 6 (over 4 ms: 1, longest 4.210 ms); waited for the CPU: 0.312 ms; steal: 0 ms
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "port/kernel_if.h"

namespace {

std::string Ms(int64_t ns) {
  if (ns < 0) return "unknown";
  char b[32];
  std::snprintf(b, sizeof b, "%.3f ms", static_cast<double>(ns) / 1e6);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  std::vector<int> cpus;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) {
      char* e = nullptr;
      seconds = std::strtod(argv[++i], &e);
      if (*e != '\0' || !(seconds > 0 && seconds <= 3600)) {
        std::fprintf(stderr, "fabricgen-holdups: --seconds: a number of seconds in (0, 3600], not '%s'\n", argv[i]);
        return 2;
      }
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: fabricgen-holdups [--seconds S] [CPU ...]  (default: 5 s on every CPU but 0)\n");
      return 0;
    } else {
      char* e = nullptr;
      const long c = std::strtol(a.c_str(), &e, 10);
      if (a.empty() || *e != '\0' || c < 0 || c >= CPU_SETSIZE) {
        std::fprintf(stderr, "fabricgen-holdups: '%s' is not a CPU number\n", a.c_str());
        return 2;
      }
      cpus.push_back(static_cast<int>(c));
    }
  }
  if (cpus.empty()) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (int c = 1; c < n; ++c) cpus.push_back(c);
    if (cpus.empty()) cpus.push_back(0);
  }
  std::vector<fg::port::HoldupProbe> results(cpus.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cpus.size(); ++i) {
    threads.emplace_back([&results, &cpus, i, seconds] { results[i] = fg::port::ProbeHoldups(cpus[i], seconds); });
  }
  for (auto& t : threads) t.join();
  int rc = 0;
  for (const fg::port::HoldupProbe& r : results) {
    if (!r.pinned) {
      std::fprintf(stderr, "fabricgen-holdups: cannot run on CPU %d\n", r.cpu);
      rc = 1;
      continue;
    }
    std::printf("cpu %d: %.3f s, gaps over 1 ms: %llu (over 4 ms: %llu, longest %s); waited for the CPU: %s; steal: %s\n",
                r.cpu, seconds, static_cast<unsigned long long>(r.over_1ms),
                static_cast<unsigned long long>(r.over_4ms), Ms(r.longest_ns).c_str(), Ms(r.wait_ns).c_str(),
                Ms(r.steal_ns).c_str());
  }
  return rc;
}
