#include "methods/matrix.h"

#include "absl/strings/str_format.h"

namespace fg::methods {

std::vector<MatrixCell> ExpandMatrix(const config::Plan& plan, const config::TestSpec& test) {
  const std::vector<uint64_t> sizes = test.message_sizes.empty() ? std::vector<uint64_t>{0} : test.message_sizes;
  const std::vector<uint32_t> qps = test.qps.empty() ? std::vector<uint32_t>{0} : test.qps;
  const std::vector<bool> dirs = test.bidirectional.empty() ? std::vector<bool>{false} : test.bidirectional;
  std::vector<MatrixCell> cells;
  for (uint64_t size : sizes) {
    for (uint32_t q : qps) {
      for (bool bi : dirs) {
        MatrixCell c;
        c.message_size = size;
        c.qps = q;
        c.bidirectional = bi;
        c.plan = plan;
        c.test = test;
        for (size_t i : test.streams) {
          config::StreamSpec& s = c.plan.streams[i];
          if (size != 0) {
            switch (s.frame.kind) {
              case config::FrameKind::kRoce: s.frame.roce.message = size; break;
              case config::FrameKind::kUet: s.frame.uet.message = size; break;
              default: s.frame.size = static_cast<uint32_t>(size); break;
            }
          }
          if (q != 0) s.flows = q;
          if (bi && s.rx_port != s.port) {
            config::StreamSpec back = s;
            back.name = s.name + "-reverse";
            std::swap(back.port, back.rx_port);
            c.plan.streams.push_back(back);
            c.test.streams.push_back(c.plan.streams.size() - 1);
          }
        }
        std::vector<std::string> parts;
        if (size != 0) parts.push_back(absl::StrFormat("msg=%d B", size));
        if (q != 0) parts.push_back(absl::StrFormat("qps=%d", q));
        if (!test.bidirectional.empty()) parts.push_back(bi ? "bi" : "uni");
        for (const std::string& p : parts) c.label += (c.label.empty() ? "" : ", ") + p;
        cells.push_back(std::move(c));
      }
    }
  }
  return cells;
}

}  // namespace fg::methods
