// drivers/registry.h: registers every NIC driver this build enabled.
//
//   fg::port::DriverRegistry registry;
//   fg::drivers::RegisterAll(registry);
//   // then pass `registry` to session::Session::Open
#pragma once

#include "port/driver_registry.h"

namespace fg::drivers {

// Defined in the registry.cc that drivers/meson.build generates.
void RegisterAll(port::DriverRegistry& registry);

}  // namespace fg::drivers
