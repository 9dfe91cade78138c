// The console's tester-limited warning: one line per stream, at most 160
// characters, the detail only with --verbose.
#include "session/run_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

namespace fg::session {
namespace {

engine::TesterLimit Limit(const char* kind, uint64_t count, std::string detail, uint64_t longest_ns = 0) {
  engine::TesterLimit l;
  l.kind = kind;
  l.count = count;
  l.detail = std::move(detail);
  l.longest_ns = longest_ns;
  return l;
}

TEST(TesterLimitLines, OneLineOfAtMost160CharactersPerStreamAndTheDetailWithVerbose) {
  engine::TrialResult r;
  const std::string long_detail(600, 'x');
  for (const char* name : {"roce-write", "udp-64B"}) {
    engine::StreamResult s;
    s.name = name;
    s.tester_limits = {Limit(engine::kPacingStall, 1234, long_detail, 3'200'000),
                       Limit(engine::kTxShortfall, 40'000, long_detail), Limit(engine::kRxDrop, 7, long_detail),
                       Limit(engine::kRxStall, 12, long_detail, 1'500'000)};
    r.streams.push_back(s);
  }
  engine::StreamResult clean;
  clean.name = "clean";
  r.streams.push_back(clean);

  const std::string brief = TesterLimitLines(r);
  std::istringstream lines(brief);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    EXPECT_LE(line.size(), 160u) << line;
    EXPECT_EQ(line.find("xxx"), std::string::npos) << line;  // no detail
  }
  EXPECT_EQ(n, 3);  // the warning and one line per limited stream
  EXPECT_NE(brief.find("  stream roce-write: pacing_stall 1,234 slots, tx_shortfall 40,000 frames, rx_drop 7 frames, "
                       "rx_stall 12 frames; longest hold-up 3.200 ms\n"),
            std::string::npos)
      << brief;
  EXPECT_EQ(brief.find("clean"), std::string::npos);

  const std::string verbose = TesterLimitLines(r, /*verbose=*/true);
  EXPECT_NE(verbose.find("pacing_stall 1,234 (" + long_detail + ")"), std::string::npos);
}

TEST(TesterLimitLines, KindsBeyondTheWidthEndInHowManyMore) {
  std::vector<engine::TesterLimit> limits;
  for (int i = 0; i < 12; ++i) limits.push_back(Limit(engine::kTxError, 1'000'000 + i, "d"));
  const std::string b = BriefLimits(limits, 100);
  EXPECT_LE(b.size(), 100u) << b;
  EXPECT_NE(b.find(" more"), std::string::npos) << b;
  // The count of the ones left out is right: the shown ones plus N make 12.
  int shown = 0;
  for (size_t at = b.find("tx_error"); at != std::string::npos; at = b.find("tx_error", at + 1)) ++shown;
  const int more = std::stoi(b.substr(b.rfind('+') + 1));
  EXPECT_GT(shown, 0);
  EXPECT_EQ(shown, 12 - more) << b;
  EXPECT_EQ(TesterLimitLines(engine::TrialResult{}), "");
}

}  // namespace
}  // namespace fg::session
