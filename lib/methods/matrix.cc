#include "methods/matrix.h"

#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "methods/throughput.h"
#include "stream/stream.h"

namespace fg::methods {
namespace {

// The plan of one cell: the test's streams with this message size (0: as
// planned) and flow count (0: as planned), and for `bi` each one's reverse.
MatrixCell MakeCell(const config::Plan& plan, const config::TestSpec& test, uint64_t size, uint32_t q, bool bi) {
  MatrixCell c;
  c.message_size = size;
  c.qps = q;
  c.bidirectional = bi;
  c.plan = plan;
  c.test = test;
  for (size_t i : test.streams) {
    config::StreamSpec& s = c.plan.streams[i];
    // The test sends at its load (LoadRunner sets each stream's rate), so the
    // planned rate is not held against the cell's frames: 1 Mpps planned for
    // 64 B frames is 12 Gbit/s of 1500 B ones, and would refuse the cell.
    if (s.burst.frames == 0) s.rate = Rate{Rate::Kind::kMax, 0};
    if (size != 0) config::SetMessageSize(s.frame, size);
    if (q != 0) {
      // Per-flow rates go with the flows: flow i keeps rates[i % len] (the
      // plan's `flows: {count, rates}` rule), one weight per flow of the cell.
      if (!s.flow_weights.empty()) {
        std::vector<double> w(q);
        for (uint32_t f = 0; f < q; ++f) w[f] = s.flow_weights[f % s.flow_weights.size()];
        s.flow_weights = std::move(w);
      }
      s.flows = q;
    }
    if (bi && s.rx_port != s.port) {  // the parser refuses `bi` for a stream without an rx_port of its own
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
  if (!test.As<ThroughputParams>().bidirectional.empty()) parts.push_back(bi ? "bi" : "uni");
  for (const std::string& p : parts) c.label += (c.label.empty() ? "" : ", ") + p;
  return c;
}

}  // namespace

std::vector<MatrixCell> ExpandMatrix(const config::Plan& plan, const config::TestSpec& test) {
  const ThroughputParams& t = test.As<ThroughputParams>();
  const std::vector<uint64_t> sizes = t.message_sizes.empty() ? std::vector<uint64_t>{0} : t.message_sizes;
  const std::vector<uint32_t> qps = t.qps.empty() ? std::vector<uint32_t>{0} : t.qps;
  const std::vector<bool> dirs = t.bidirectional.empty() ? std::vector<bool>{false} : t.bidirectional;
  std::vector<MatrixCell> cells;
  for (uint64_t size : sizes) {
    for (uint32_t q : qps) {
      for (bool bi : dirs) cells.push_back(MakeCell(plan, test, size, q, bi));
    }
  }
  return cells;
}

absl::Status PrecheckMatrix(const config::Plan& plan, size_t t) {
  const config::TestSpec& test = plan.tests[t];
  const ThroughputParams& tp = test.As<ThroughputParams>();
  bool any_bi = false;
  for (bool bi : tp.bidirectional) any_bi = any_bi || bi;
  // Each entry changes the streams on its own (a size their frames, a QP
  // count their flow keys, `bi` adds reverses), so checking one entry at a
  // time checks every cell and names the entry at fault. A size is checked
  // on the reverses too: they leave from the other port, with its MTU.
  auto check = [&](const char* axis, size_t k, const config::Location& at, const MatrixCell& cell) {
    std::string entry =
        absl::StrFormat("%s: tests[%d].throughput.%s[%d]", config::FormatLocation(plan.file, at), t, axis, k);
    // The entry as written when the cell's label says it otherwise ('1 KiB': msg=1024 B).
    const std::string text = test.written.Text(absl::StrFormat("%s[%d]", axis, k));
    const std::string label = cell.message_size != 0 ? absl::StrFormat("%d", cell.message_size)
                              : cell.qps != 0        ? absl::StrFormat("%d", cell.qps)
                                                     : text;
    if (!text.empty() && text != label && text != label + " B") entry += " '" + text + "'";
    return stream::CheckStreams(cell.plan, [&](size_t i, std::string_view field) {
      return absl::StrFormat("%s: in cell '%s', stream '%s' %s", entry, cell.label, cell.plan.streams[i].name, field);
    });
  };
  for (size_t k = 0; k < tp.message_sizes.size(); ++k) {
    FG_RETURN_IF_ERROR(
        check("message_sizes", k, tp.message_sizes_at[k], MakeCell(plan, test, tp.message_sizes[k], 0, any_bi)));
  }
  for (size_t k = 0; k < tp.qps.size(); ++k) {
    FG_RETURN_IF_ERROR(check("qps", k, tp.qps_at[k], MakeCell(plan, test, 0, tp.qps[k], false)));
  }
  for (size_t k = 0; k < tp.bidirectional.size(); ++k) {
    if (tp.bidirectional[k]) {
      FG_RETURN_IF_ERROR(check("directions", k, tp.directions_at[k], MakeCell(plan, test, 0, 0, true)));
    }
  }
  return absl::OkStatus();
}

}  // namespace fg::methods
