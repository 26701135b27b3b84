#include "common/util/command_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

using std::chrono::milliseconds;

TEST(ParseDuration, GoUnitsAndBareSeconds) {
  const std::vector<std::pair<std::string, milliseconds>> cases = {
      {"0", milliseconds(0)},          {"5", milliseconds(5000)},
      {"500ms", milliseconds(500)},    {"5s", milliseconds(5000)},
      {"2m", milliseconds(120'000)},   {"1h", milliseconds(3'600'000)},
      {"1m30s", milliseconds(90'000)}, {"1s250ms", milliseconds(1250)},
  };
  for (const auto& [text, expected] : cases) {
    Result<milliseconds> duration = parseDuration(text);
    ASSERT_TRUE(duration.ok()) << text << ": " << duration.error().message;
    EXPECT_EQ(*duration, expected) << text;
  }
}

TEST(ParseDuration, RejectsWhatGoWouldNotReadAsWholeUnits) {
  for (const std::string text :
       {"", "s", "5x", "1.5s", "-1s", "5 s", "5s ", "1d", "10000000000h", "1m30"}) {
    Result<milliseconds> duration = parseDuration(text);
    ASSERT_FALSE(duration.ok()) << text;
    EXPECT_EQ(duration.error().message,
              "'" + text + "' is not a duration (examples: 500ms, 5s, 1m30s)");
  }
}

TEST(FormatDuration, ReadsBack) {
  for (const milliseconds d :
       {milliseconds(0), milliseconds(250), milliseconds(90'000), milliseconds(300'000),
        milliseconds(1001), milliseconds(7'200'000)}) {
    EXPECT_EQ(*parseDuration(formatDuration(d)), d) << formatDuration(d);
  }
  EXPECT_EQ(formatDuration(milliseconds(300'000)), "5m");
  EXPECT_EQ(formatDuration(milliseconds(90'000)), "90s");
  EXPECT_EQ(formatDuration(milliseconds(7'200'000)), "2h");
}

TEST(CommandLine, HelpAndVersionAreAnswersNotErrors) {
  std::string name = "x";
  auto app = makeApp("prog", "prog: a test program.");
  app->add_option("--name", name, "a name")->required();
  Result<std::string> help = parseArgs(*app, {"--help"});
  ASSERT_TRUE(help.ok()) << help.error().message;
  EXPECT_NE(help->find("Usage: prog"), std::string::npos) << *help;
  EXPECT_NE(help->find("--name"), std::string::npos) << *help;
  Result<std::string> version = parseArgs(*makeApp("prog", ""), {"--version"});
  ASSERT_TRUE(version.ok()) << version.error().message;
  EXPECT_THAT(*version, ::testing::MatchesRegex("prog [0-9]+\\.[0-9]+\\.[0-9]+\n"));
}

TEST(CommandLine, LastValueWinsAndErrorsAreReturned) {
  std::string name;
  auto app = makeApp("prog", "");
  app->add_option("--name", name, "a name");
  Result<std::string> parsed = parseArgs(*app, {"--name", "a", "--name=b"});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(*parsed, "");
  EXPECT_EQ(name, "b");
  Result<std::string> unknown = parseArgs(*makeApp("prog", ""), {"--bogus", "1"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "unexpected arguments: --bogus 1");
}

TEST(CommandLine, CheckedAndDurationOptionsNameTheFlag) {
  milliseconds stored{0};
  auto app = makeApp("prog", "");
  addDurationOption(
      *app, "--wait", milliseconds(1), milliseconds(60'000),
      [&stored](milliseconds d) {
        stored = d;
        return d == milliseconds(7) ? "seven is refused" : "";
      },
      "a wait");
  EXPECT_TRUE(parseArgs(*app, {"--wait=1m"}).ok());
  EXPECT_EQ(stored, milliseconds(60'000));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"soon", "--wait: 'soon' is not a duration (examples: 500ms, 5s, 1m30s)"},
      {"0s", "--wait: '0s' is outside 1ms..1m"},
      {"61s", "--wait: '61s' is outside 1ms..1m"},
      {"7ms", "--wait: seven is refused"},
  };
  for (const auto& [value, message] : cases) {
    Result<std::string> parsed = parseArgs(*app, {"--wait", value});
    ASSERT_FALSE(parsed.ok()) << value;
    EXPECT_EQ(parsed.error().message, message);
  }
}

} // namespace
} // namespace kube_rdma
