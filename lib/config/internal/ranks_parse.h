// config/internal/ranks_parse.h: the plan's `ranks:` section (config/ranks.h).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "config/plan.h"
#include "config/reader.h"

namespace fg::config::internal {

// `ports` are the plan's, already read: `ranks.ports` names them and each
// rank's frames must fit its port's MTU.
absl::StatusOr<RanksSpec> ParseRanks(const Node& n, const std::vector<PortSpec>& ports);

}  // namespace fg::config::internal
