// parseFiltered: what a filter keeps and drops, and that limits hold inside dropped parts.
#include <gtest/gtest.h>

#include <random>

#include "webhook/json_filter.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

const JsonFilter kAll = JsonFilter::whole();

json parsedOrError(std::string_view text, const JsonFilter& filter, size_t max_depth = 100) {
  Result<json> parsed = parseFiltered(text, filter, max_depth);
  return parsed.ok() ? *parsed : json{{"error", parsed.error().message}};
}

TEST(JsonFilter, KeepsListedMembersWholeAndDropsTheRest) {
  const JsonFilter filter = {{"a", kAll}, {"b", {{"c", kAll}}}};
  const json got = parsedOrError(
      R"({"a":{"x":[1,{"y":null}]},"b":{"c":"kept","d":{"deep":[1,2,3]}},"e":[{"f":1}],"g":2.5})",
      filter);
  EXPECT_EQ(got, json::parse(R"({"a":{"x":[1,{"y":null}]},"b":{"c":"kept"}})"));
}

TEST(JsonFilter, KeepsEveryArrayElementSoIndicesStayThoseOfTheDocument) {
  const JsonFilter filter = {{"list", {{"keep", kAll}}}};
  const json got = parsedOrError(
      R"({"list":[{"drop":1},{"keep":true,"drop":[]},7,"s",[{"keep":1,"drop":2}],null]})", filter);
  EXPECT_EQ(got, json::parse(R"({"list":[{},{"keep":true},7,"s",[{"keep":1}],null]})"));
}

TEST(JsonFilter, ScalarsAreKeptWhereTheFilterExpectsAnObject) {
  const JsonFilter filter = {{"spec", {{"containers", kAll}}}};
  EXPECT_EQ(parsedOrError(R"({"spec":"text"})", filter), json::parse(R"({"spec":"text"})"));
  EXPECT_EQ(parsedOrError("[1,2]", filter), json::parse("[1,2]"));
  EXPECT_EQ(parsedOrError("false", filter), json(false));
}

TEST(JsonFilter, AKeptMemberThatRepeatsTakesTheLastValueLikeADomParse) {
  const JsonFilter filter = {{"a", kAll}};
  const std::string text = R"({"a":{"x":1},"b":0,"a":[2]})";
  const json dom = json::parse(text);
  EXPECT_EQ(parsedOrError(text, filter), json({{"a", dom.at("a")}}));
}

TEST(JsonFilter, SyntaxErrorsInDroppedPartsStillMakeTheTextNotJson) {
  const JsonFilter filter = {{"a", kAll}};
  const struct {
    std::string text;
    std::string error;
  } cases[] = {
      {R"({"a":1,"b":[1,}})", "not JSON: unexpected byte at offset 14 of 16"},
      {R"({"a":1,"b":"\x"})", "not JSON: unexpected byte at offset "},
      {"{\"a\":1,\"b\":\"\xff\"}", "not JSON: unexpected byte at offset "},
      {R"({"a":1} trailing)", "not JSON: unexpected byte at offset 8 of 16"},
      {"", "not JSON: the text ends early (byte 0 of 0)"},
      {"{", "not JSON: the text ends early (byte 1 of 1)"},
  };
  for (const auto& c : cases) {
    const json got = parsedOrError(c.text, filter);
    ASSERT_TRUE(got.contains("error")) << c.text;
    EXPECT_EQ(got["error"].get<std::string>().rfind(c.error, 0), 0u) << got["error"];
  }
}

TEST(JsonFilter, DepthIsCountedInDroppedPartsToo) {
  const JsonFilter filter = {{"a", kAll}};
  const std::string deep = "{\"b\":" + std::string(5, '[') + std::string(5, ']') + "}";
  EXPECT_EQ(parsedOrError(deep, filter, 5), json({{"error", "nests deeper than 5 levels"}}));
  EXPECT_EQ(parsedOrError(deep, filter, 6), json::object());
  // Refused at the first level too many, without reading on.
  EXPECT_EQ(parsedOrError(std::string(1 << 20, '['), filter, 5),
            json({{"error", "nests deeper than 5 levels"}}));
}

} // namespace
} // namespace kube_rdma

namespace kube_rdma {
namespace {

// The parser must accept exactly what nlohmann::json::parse accepts and build the same values.
void expectSameAsNlohmann(const std::string& text) {
  const json dom = json::parse(text, nullptr, /*allow_exceptions=*/false);
  Result<json> parsed = parseFiltered(text, kAll, 1000);
  // Dropped parts are validated by other code (nothing decoded): the same verdict.
  const JsonFilter little = {{"request", {{"uid", kAll}}}};
  EXPECT_EQ(parseFiltered(text, little, 1000).ok(), !dom.is_discarded()) << json(text).dump();
  if (dom.is_discarded()) {
    EXPECT_FALSE(parsed.ok()) << "accepted what nlohmann refuses: " << json(text).dump();
  } else {
    ASSERT_TRUE(parsed.ok()) << "refused what nlohmann accepts: " << json(text).dump();
    EXPECT_EQ(*parsed, dom) << json(text).dump();
    EXPECT_EQ(parsed->dump(), dom.dump()) << "types differ: " << json(text).dump();
  }
}

TEST(JsonFilterParser, AcceptsAndBuildsWhatNlohmannDoes) {
  for (const std::string text : {"0",
                                 "-0",
                                 "1.5",
                                 "-1.5e3",
                                 "1E+2",
                                 "2e-400",
                                 "1e400",
                                 "-1e400",
                                 "01",
                                 "1.",
                                 ".5",
                                 "-",
                                 "+1",
                                 "1e",
                                 "18446744073709551615",
                                 "18446744073709551616",
                                 "-9223372036854775808",
                                 "-9223372036854775809",
                                 "true",
                                 "false",
                                 "null",
                                 "nul",
                                 "truex",
                                 "[]",
                                 "{}",
                                 "[1,]",
                                 "{\"a\":1,}",
                                 "{\"a\" : [ 1 , 2 ]\t}\r\n",
                                 "[1 2]",
                                 "{\"a\"}",
                                 "{1:2}",
                                 "\"\"",
                                 "\"\\u0000\"",
                                 "\"\\u00e9\\u20AC\"",
                                 "\"\\ud83d\\ude00\"",
                                 "\"\\ud83d\"",
                                 "\"\\ude00\"",
                                 "\"\\ud83d\\u0041\"",
                                 "\"\\ud83dx\"",
                                 "\"\\x\"",
                                 "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
                                 "\"\\u12\"",
                                 "\"\\u12G4\"",
                                 "\"tab\there\"",
                                 "\"\x7f\"",
                                 "\"\xc3\xa9\"",
                                 "\"\xc0\xaf\"",
                                 "\"\xe0\x80\xaf\"",
                                 "\"\xed\xa0\x80\"",
                                 "\"\xf4\x90\x80\x80\"",
                                 "\"\xf0\x9f\x98\x80\"",
                                 "\"\xf5\x80\x80\x80\"",
                                 "\"\xc3\"",
                                 "\"\xe2\x82\"",
                                 "\"unterminated",
                                 "\xEF\xBB\xBF{}",
                                 "\xEF\xBB{}",
                                 " ",
                                 "",
                                 "{} {}",
                                 "{\"a\":1,\"a\":[2]}",
                                 "[\"\\u00e9\",{\"k\\\"ey\":null}]",
                                 "1 ",
                                 " 1",
                                 "\"a\" x"}) {
    expectSameAsNlohmann(text);
  }
}

// Strings are scanned eight bytes at a time: each byte value at each position of a string, kept
// and dropped, is accepted and decoded exactly when nlohmann does.
TEST(JsonFilterParser, EveryByteAtEveryPositionOfAStringAgreesWithNlohmann) {
  const JsonFilter filter = {{"kept", kAll}};
  for (const std::string member : {"kept", "dropped"}) {
    for (size_t at = 0; at < 18; ++at) {
      for (int byte = 0; byte < 256; ++byte) {
        std::string value(18, 'a');
        value[at] = static_cast<char>(byte);
        const std::string text = R"({")" + member + R"(":")" + value + R"(","n":1})";
        const json dom = json::parse(text, nullptr, false);
        const Result<json> got = parseFiltered(text, filter, 100);
        ASSERT_EQ(got.ok(), !dom.is_discarded()) << member << " byte " << byte << " at " << at;
        if (got.ok()) {
          const json expected = member == "kept" ? json{{"kept", dom.at("kept")}} : json::object();
          ASSERT_EQ(*got, expected);
        }
      }
    }
  }
}

TEST(JsonFilterParser, AgreesWithNlohmannOnMutatedReviews) {
  // Byte-level mutations of a review-shaped document (fixed seed, so a failure reproduces).
  const std::string base = json::parse(R"({"apiVersion":"admission.k8s.io/v1","request":{
      "uid":"u-1","object":{"metadata":{"annotations":{"k\/a~b":"v\u00e9\ud83d\ude00"}},
      "spec":{"containers":[{"name":"c","env":[{"name":"N","value":"1"}],"x":[1.5e3,-2,0,
      true,false,null,"s\n"]}]}}}})")
                               .dump() +
                           "\t";
  const std::string specials = "{}[]\",:\\u0123456789eE+-.tfn \t\n\xc3\xa9\xed\xa0\x80\xff";
  std::mt19937 rng(20261130);
  for (int i = 0; i < 5000; ++i) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % text.size();
      const char c = specials[rng() % specials.size()];
      switch (rng() % 3) {
      case 0:
        text[at] = c;
        break;
      case 1:
        text.insert(at, 1, c);
        break;
      default:
        text.erase(at, 1 + rng() % 4);
        break;
      }
      if (text.empty()) {
        text = "x";
      }
    }
    expectSameAsNlohmann(text);
  }
}

} // namespace
} // namespace kube_rdma
