#include "common/util/log.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace kube_rdma {
namespace {

const std::regex kTimestamp(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)");

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    out.push_back(line);
  }
  return out;
}

// What nlohmann writes for the same line: the reference the JSON format must match byte for byte.
std::string nlohmannLine(const std::string& ts, const std::string& level, const std::string& msg,
                         const std::vector<LogField>& fields) {
  nlohmann::ordered_json obj;
  obj["ts"] = ts;
  obj["level"] = level;
  obj["msg"] = msg;
  for (const auto& [key, value] : fields) {
    obj[key] = value;
  }
  return obj.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string tsOfJsonLine(const std::string& line) {
  const auto parsed = nlohmann::json::parse(line);
  return parsed.at("ts").get<std::string>();
}

TEST(Rfc3339Utc, IsUtcToTheSecond) {
  using std::chrono::system_clock;
  const system_clock::time_point expiry = system_clock::from_time_t(1796119200);
  EXPECT_EQ(rfc3339Utc(expiry + std::chrono::milliseconds(999)), "2026-12-01T10:00:00Z");
  EXPECT_EQ(rfc3339Utc(system_clock::from_time_t(0)), "1970-01-01T00:00:00Z");
}

TEST(Logger, TextLinesQuoteOnlyValuesThatNeedIt) {
  std::ostringstream sink;
  Logger log(sink);
  log.info("pool registered", {{"resource", "rdma/hca"},
                               {"devices", "8"},
                               {"empty", ""},
                               {"path", "/a b"},
                               {"quote", "say \"hi\""},
                               {"eq", "a=b"},
                               {"nl", "two\nlines"}});
  const auto got = lines(sink.str());
  ASSERT_EQ(got.size(), 1u);
  const std::string& line = got[0];
  ASSERT_GE(line.size(), 25u);
  EXPECT_TRUE(std::regex_match(line.substr(0, 24), kTimestamp)) << line;
  EXPECT_EQ(line.substr(24),
            " info \"pool registered\" resource=rdma/hca devices=8 empty=\"\" "
            "path=\"/a b\" quote=\"say \\\"hi\\\"\" eq=\"a=b\" nl=\"two\\nlines\"");
}

TEST(Logger, LevelsBelowTheMinimumAreDropped) {
  std::ostringstream sink;
  Logger log(sink, LogFormat::kText, LogLevel::kWarn);
  log.debug("d");
  log.info("i");
  log.warn("w");
  log.error("e");
  const auto got = lines(sink.str());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NE(got[0].find(" warn w"), std::string::npos) << got[0];
  EXPECT_NE(got[1].find(" error e"), std::string::npos) << got[1];
}

TEST(Logger, JsonLinesAreWhatNlohmannWritesForTheSameObject) {
  // Every byte value inside a message and a field value, alone and between plain text, plus
  // invalid UTF-8 (replaced by U+FFFD) and valid multi-byte characters.
  std::vector<std::string> texts = {"",
                                    "plain",
                                    "with space",
                                    "tab\there",
                                    "quote\"",
                                    "back\\slash",
                                    "caf\xc3\xa9",
                                    "\xe2\x82\xac euro",
                                    "bad \xff byte",
                                    "cut \xc3",
                                    "\x7f"};
  for (int b = 0; b < 256; ++b) {
    texts.push_back(std::string(1, static_cast<char>(b)));
    texts.push_back("a" + std::string(1, static_cast<char>(b)) + "z");
  }
  for (const std::string& text : texts) {
    std::ostringstream sink;
    Logger log(sink, LogFormat::kJson);
    log.warn(text, {{"value", text}, {"k" + text, "v"}});
    const auto got = lines(sink.str());
    ASSERT_EQ(got.size(), 1u) << "a line per call, whatever the text";
    const std::string ts = tsOfJsonLine(got[0]);
    EXPECT_TRUE(std::regex_match(ts, kTimestamp)) << ts;
    EXPECT_EQ(got[0], nlohmannLine(ts, "warn", text, {{"value", text}, {"k" + text, "v"}}))
        << "text of " << text.size() << " bytes, first " << (text.empty() ? -1 : int(text[0]));
  }
}

TEST(Logger, JsonRepeatedKeysKeepOneMemberWithTheLastValue) {
  std::ostringstream sink;
  Logger log(sink, LogFormat::kJson);
  log.info("m", {{"a", "1"}, {"msg", "field"}, {"a", "2"}});
  const auto got = lines(sink.str());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], nlohmannLine(tsOfJsonLine(got[0]), "info", "m",
                                 {{"a", "1"}, {"msg", "field"}, {"a", "2"}}));
  EXPECT_EQ(nlohmann::json::parse(got[0]).at("a"), "2");
}

TEST(Logger, LinesFromManyThreadsNeverInterleave) {
  std::ostringstream sink;
  Logger log(sink, LogFormat::kJson);
  {
    std::vector<std::jthread> threads;
    threads.reserve(4);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&log, t] {
        for (int i = 0; i < 200; ++i) {
          log.info("line", {{"thread", std::to_string(t)}, {"i", std::to_string(i)}});
        }
      });
    }
  }
  const auto got = lines(sink.str());
  ASSERT_EQ(got.size(), 800u);
  for (const auto& line : got) {
    EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  }
}

} // namespace
} // namespace kube_rdma
