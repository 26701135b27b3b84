// parseFiltered: what a filter keeps and drops, and that limits hold inside dropped parts.
#include <gtest/gtest.h>

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
  for (const std::string text : {R"({"a":1,"b":[1,}})", R"({"a":1,"b":"\x"})",
                                 "{\"a\":1,\"b\":\"\xff\"}", R"({"a":1} trailing)", "", "{"}) {
    EXPECT_EQ(parsedOrError(text, filter), json({{"error", "not JSON"}})) << text;
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
