#include "endpoint/frame_handler.h"

#include <algorithm>

namespace fg::endpoint {

FrameHandlers::FrameHandlers(const PortContext& c) {
  const std::span<const HandlerKind> kinds = HandlerKinds();
  for (size_t k = 0; k < kinds.size(); ++k) {
    if (std::unique_ptr<FrameHandler> h = kinds[k].make(c)) list_.push_back({k, std::move(h)});
  }
}

void FrameHandlers::AddCounts(std::vector<std::vector<uint64_t>>& sums) const {
  std::vector<uint64_t> v;
  for (const Entry& e : list_) {
    v.assign(sums[e.kind].size(), 0);
    e.handler->ReadCounts(v);
    const std::span<const CountSpec> specs = HandlerKinds()[e.kind].counts;
    for (size_t i = 0; i < v.size(); ++i) {
      uint64_t& sum = sums[e.kind][i];
      switch (specs[i].merge) {
        case CountSpec::Merge::kSum: sum += v[i]; break;
        case CountSpec::Merge::kEarliest:
          if (v[i] != 0 && (sum == 0 || v[i] < sum)) sum = v[i];
          break;
        case CountSpec::Merge::kLatest: sum = std::max(sum, v[i]); break;
      }
    }
  }
}

std::vector<std::vector<uint64_t>> EmptyHandlerCounts() {
  std::vector<std::vector<uint64_t>> out;
  for (const HandlerKind& k : HandlerKinds()) out.emplace_back(k.counts.size(), 0);
  return out;
}

}  // namespace fg::endpoint
