// Shared by the DPDK tests: the process's one EAL and fresh virtual devices.
#pragma once

#include <string>

#include "port/eal.h"

namespace fg::testing {

// The EAL started by dpdk_test_main.cc (--no-huge, two lcores).
port::Eal& TestEal();
// Probes a new vdev ("net_ring" -> "net_ring_t7") and returns its name.
std::string NewVdev(const std::string& driver, const std::string& args = "");

}  // namespace fg::testing
