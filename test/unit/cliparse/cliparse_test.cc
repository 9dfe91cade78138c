#include "cliparse/cliparse.h"

#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fg::cliparse {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Words(std::string_view line) {
  auto w = SplitWords(line);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? *w : std::vector<std::string>{};
}

TEST(SplitWords, SpacesTabsAndEmptyLines) {
  EXPECT_THAT(Words("  rate\tudp  20 kpps \r"), ElementsAre("rate", "udp", "20", "kpps"));
  EXPECT_TRUE(Words("").empty());
  EXPECT_TRUE(Words(" \t ").empty());
}

TEST(SplitWords, AHashInsideAWordIsKept) {
  // The issue's case: `#` in a path used to cut it.
  EXPECT_THAT(Words("save /tmp/run#2"), ElementsAre("save", "/tmp/run#2"));
  EXPECT_THAT(Words("capture loop0 10 a#b.pcap"), ElementsAre("capture", "loop0", "10", "a#b.pcap"));
}

TEST(SplitWords, AHashThatBeginsAWordStartsAComment) {
  EXPECT_TRUE(Words("# a session").empty());
  EXPECT_TRUE(Words("   #start").empty());
  EXPECT_THAT(Words("stop # the end"), ElementsAre("stop"));
  EXPECT_THAT(Words("stop #the end"), ElementsAre("stop"));
}

TEST(SplitWords, QuotesKeepSpacesAndHashes) {
  EXPECT_THAT(Words(R"(save "/tmp/my results #2")"), ElementsAre("save", "/tmp/my results #2"));
  EXPECT_THAT(Words(R"(save "#x")"), ElementsAre("save", "#x"));
  EXPECT_THAT(Words(R"(a"b c"d)"), ElementsAre("ab cd"));  // a quoted part of a word
  EXPECT_THAT(Words(R"(load "")"), ElementsAre("load", ""));
}

TEST(SplitWords, EscapesInsideQuotes) {
  EXPECT_THAT(Words(R"("a \"q\" b")"), ElementsAre(R"(a "q" b)"));
  EXPECT_THAT(Words(R"("back\\slash")"), ElementsAre(R"(back\slash)"));
  EXPECT_THAT(Words(R"("c:\dir\n")"), ElementsAre(R"(c:\dir\n)"));    // other backslashes stay
  EXPECT_THAT(Words(R"(plain\word)"), ElementsAre(R"(plain\word)"));  // outside quotes: an ordinary character
}

TEST(SplitWords, AnUnterminatedQuoteNamesItsColumn) {
  auto w = SplitWords(R"(save "/tmp/x)");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.status().message(), R"(unterminated quote (the " at column 6 has no closing "))");
  EXPECT_FALSE(SplitWords(R"("a\")").ok());  // the escaped quote does not close it
}

TEST(Quote, RoundTrips) {
  const std::vector<std::string> words = {"plain",
                                          "",
                                          "two words",
                                          "#hash",
                                          "a#b",
                                          "q\"uote",
                                          "back\\slash",
                                          "tab\there",
                                          "new\nline",
                                          "\\\"",
                                          std::string("nul\0x", 5)};
  std::string line;
  for (const std::string& w : words) line += Quote(w) + " ";
  EXPECT_EQ(Words(line), words);
  EXPECT_EQ(Quote("plain"), "plain");
  EXPECT_EQ(Quote("a#b"), "a#b");
  EXPECT_EQ(Quote("two words"), "\"two words\"");
}

TEST(ForDisplay, EscapesControlBytesAndKeepsUtf8) {
  EXPECT_EQ(ForDisplay("stat\x1b[2J"), "stat\\x1b[2J");
  EXPECT_EQ(ForDisplay(std::string("a\0b\x7f", 4)), "a\\x00b\\x7f");
  EXPECT_EQ(ForDisplay("line\nnext\t"), "line\\x0anext\\x09");
  EXPECT_EQ(ForDisplay("line\nnext\t", /*keep_newlines=*/true), "line\nnext\t");
  EXPECT_EQ(ForDisplay("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(ForDisplay("\xc2\x9b"
                       "2J"),
            "\\xc2\\x9b2J");  // C1 CSI in UTF-8
  EXPECT_EQ(ForDisplay("\x9b"
                       "2J"),
            "\\x9b2J");                    // a lone C1 byte
  EXPECT_EQ(ForDisplay("\xc3"), "\\xc3");  // cut short
  EXPECT_EQ(ForDisplay("\xc3(x"), "\\xc3(x");
  EXPECT_EQ(ForDisplay("\xe0\x80\x80"), "\\xe0\\x80\\x80");  // overlong
  EXPECT_EQ(ForDisplay("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(ForDisplay(R"(back\slash)"), R"(back\slash)");
}

TEST(ForDisplay, FilterAcrossPieces) {
  DisplayFilter f(true);
  std::string out;
  f.Feed("a\xe2", out);
  f.Feed("\x82", out);
  EXPECT_EQ(out, "a");
  f.Feed("\xac\x1b", out);
  EXPECT_EQ(out, "a\xe2\x82\xac\\x1b");
  f.Feed("\xf0\x9f", out);
  f.Finish(out);
  EXPECT_EQ(out, "a\xe2\x82\xac\\x1b\\xf0\\x9f");
}

absl::Status ParseError(std::string_view line) {
  auto c = ParseCommand(Words(line));
  return c.ok() ? absl::OkStatus() : c.status();
}

TEST(ParseCommand, NamesAliasesAndValues) {
  auto c = ParseCommand(Words("RATE udp 1.5 Gbps L1"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->name, "rate");
  EXPECT_THAT(c->args, ElementsAre("udp", "1.5", "Gbps", "L1"));
  ASSERT_TRUE(c->rate.has_value());
  EXPECT_EQ(c->rate->kind, Rate::Kind::kBpsL1);
  EXPECT_DOUBLE_EQ(c->rate->value, 1.5e9);
  c = ParseCommand(Words(R"(rate udp "20 kpps")"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->rate->value, 20e3);
  EXPECT_EQ(ParseCommand(Words("?"))->name, "help");
  EXPECT_EQ(ParseCommand(Words("exit"))->name, "quit");
  EXPECT_EQ(ParseCommand(Words("wait 500 ms"))->duration_ns, 500'000'000);
  EXPECT_EQ(ParseCommand(Words("show flows"))->count, 10u);
  EXPECT_EQ(ParseCommand(Words("show flows 3"))->count, 3u);
  EXPECT_EQ(ParseCommand(Words("capture b 100 x.pcap"))->count, 100u);
}

TEST(ParseCommand, UserErrorsSayWhatIsAllowed) {
  EXPECT_EQ(ParseError("strat udp").message(), "unknown command 'strat' (did you mean start?); `help` lists them");
  EXPECT_EQ(ParseError("ports x").message(), "ports takes no arguments");
  EXPECT_EQ(ParseError("load a b").message(), "load: expected load PLAN.yaml (got 2 arguments); `help load` says more");
  EXPECT_EQ(ParseError("capture b 100").message(),
            "capture: expected capture PORT N FILE (got 2 arguments); `help capture` says more");
  EXPECT_EQ(ParseError("capture b 0 x.pcap").message(), "capture: N is 1..100000, got '0'");
  EXPECT_EQ(ParseError("show flows 1001").message(), "show flows: N is 1..1000, got '1001'");
  EXPECT_THAT(std::string(ParseError("rate udp fast").message()), HasSubstr("rate: expected a rate such as"));
  EXPECT_THAT(std::string(ParseError("wait forever").message()), HasSubstr("wait: "));
  for (const char* bad : {"strat", "ports x", "load", "rate udp", "rate udp fast", "wait", "capture b x f"}) {
    EXPECT_EQ(ParseError(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(ParseCommand({}).ok());
  // A long word is compared with nothing (no quadratic work on a 4 KiB word).
  EXPECT_EQ(ParseError(std::string(4000, 's')).message().substr(0, 17), "unknown command '");
}

TEST(ParseCommand, EveryCommandOfTheTableParsesWithItsFewestArguments) {
  for (const CommandHelp& h : Commands()) {
    std::vector<std::string> words = {h.name};
    const std::string name = h.name;
    if (name == "rate")
      words = {"rate", "s", "1", "kpps"};
    else if (name == "wait")
      words = {"wait", "1", "s"};
    else if (name == "capture")
      words = {"capture", "p", "1", "f"};
    else
      for (int i = 0; i < h.min_args; ++i) words.push_back("x");
    auto c = ParseCommand(words);
    EXPECT_TRUE(c.ok()) << name << ": " << c.status();
  }
  EXPECT_THAT(std::string(kHelpFooter), HasSubstr("# that begins a word"));
}

// A reader over a string, handing out at most `chunk` bytes per read.
LineReader Over(const std::string& text, size_t chunk, size_t* served) {
  return LineReader([text, chunk, served, at = size_t{0}](char* buf, size_t size) mutable -> ssize_t {
    const size_t n = std::min({chunk, size, text.size() - at});
    std::memcpy(buf, text.data() + at, n);
    at += n;
    if (served != nullptr) *served = at;
    return static_cast<ssize_t>(n);
  });
}

TEST(LineReader, LinesCrLfAndALastLineWithoutNewline) {
  for (size_t chunk : {1, 3, 4096}) {
    LineReader r = Over("start\r\n\nwait 1 s\nstop", chunk, nullptr);
    std::string line;
    std::vector<std::string> lines;
    while (r.Next(line) == LineReader::Result::kLine) lines.push_back(line);
    EXPECT_THAT(lines, ElementsAre("start", "", "wait 1 s", "stop")) << chunk;
  }
}

TEST(LineReader, ALongLineIsRefusedWithoutReadingItAll) {
  const std::string ok(kMaxLineBytes, 'a');
  size_t served = 0;
  LineReader r = Over(ok + "\n" + std::string(10'000'000, 'b') + "\nstop\n", 4096, &served);
  std::string line;
  ASSERT_EQ(r.Next(line), LineReader::Result::kLine);
  EXPECT_EQ(line, ok);
  EXPECT_EQ(r.Next(line), LineReader::Result::kTooLong);
  EXPECT_LE(served, 3 * kMaxLineBytes + 8192);  // a few reads, not 10 MB
  EXPECT_LE(line.size(), kMaxLineBytes + 8192);
  // Exactly at the bound at the end of the input, with and without \r\n.
  LineReader last = Over(ok + "\r\n" + ok, 7, nullptr);
  EXPECT_EQ(last.Next(line), LineReader::Result::kLine);
  EXPECT_EQ(last.Next(line), LineReader::Result::kLine);
  EXPECT_EQ(last.Next(line), LineReader::Result::kEnd);
  LineReader over = Over(ok + "x", 4096, nullptr);
  EXPECT_EQ(over.Next(line), LineReader::Result::kTooLong);
}

TEST(LineReader, AReadErrorIsReported) {
  LineReader r([](char*, size_t) -> ssize_t {
    errno = EIO;
    return -1;
  });
  std::string line;
  EXPECT_EQ(r.Next(line), LineReader::Result::kError);
  EXPECT_EQ(r.error(), EIO);
}

TEST(LineReader, FromAPipe) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(write(fds[1], "a\nb\n", 4), 4);
  close(fds[1]);
  LineReader r = LineReader::FromFd(fds[0]);
  std::string line;
  EXPECT_EQ(r.Next(line), LineReader::Result::kLine);
  EXPECT_EQ(line, "a");
  EXPECT_EQ(r.Next(line), LineReader::Result::kLine);
  EXPECT_EQ(r.Next(line), LineReader::Result::kEnd);
  close(fds[0]);
}

}  // namespace
}  // namespace fg::cliparse
