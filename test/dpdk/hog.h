// Holding a worker lcore's CPU up on demand: what a competing process (or a
// hypervisor taking the vCPU) does to a tester, at a time a test chooses.
#pragma once

#include <pthread.h>
#include <rte_lcore.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace fg::testing {

// False when this process may not use SCHED_FIFO (no CAP_SYS_NICE): the hog
// would only share the CPU, and the tests that need a sure stall skip.
inline bool CanHog() {
  sched_param p{};
  p.sched_priority = 10;
  std::atomic<bool> ok{false};
  std::thread t([&] { ok = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0; });
  t.join();
  return ok;
}

// Holds the CPU of lcore `lcore` for `ms` at real-time priority (returns when done).
inline void HogCpuOf(unsigned lcore, int ms) {
  std::thread hog([lcore, ms] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(rte_lcore_to_cpu_id(static_cast<int>(lcore)), &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    sched_param p{};
    p.sched_priority = 10;
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
    }
  });
  hog.join();
}

}  // namespace fg::testing
