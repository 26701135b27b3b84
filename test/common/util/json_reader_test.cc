#include "common/util/json_reader.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

using nlohmann::json;

json parse(const std::string& text) {
  auto doc = parseJsonDocument(text, "test");
  EXPECT_TRUE(doc.ok()) << doc.error().message;
  return doc.ok() ? *doc : json();
}

TEST(JsonReader, ReadsEveryFieldTypeWhenTheDocumentIsValid) {
  const json doc = parse(R"({"name": "rdma/hca", "count": 16, "on": true,
                             "names": ["a", "b"], "env": {"A": "1"},
                             "mode": "shared", "nested": {"x": 1}})");
  JsonErrors errors;
  auto r = ObjectReader::root(doc, errors);
  EXPECT_EQ(r.required<std::string>("name"), "rdma/hca");
  EXPECT_EQ(r.optionalInt("count", 1, 100, 1), 16);
  EXPECT_TRUE(r.optional<bool>("on", false));
  EXPECT_EQ(r.required<std::vector<std::string>>("names"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ((r.required<std::map<std::string, std::string>>("env")),
            (std::map<std::string, std::string>{{"A", "1"}}));
  EXPECT_EQ(r.requiredEnum("mode", {"shared", "exclusive"}), "shared");
  auto nested = r.object("nested");
  EXPECT_EQ(nested.optionalInt("x", 0, 5, 0), 1);
  nested.finish();
  r.finish();
  EXPECT_TRUE(errors.status().ok()) << errors.status().error().message;
}

TEST(JsonReader, AbsentOptionalsGiveTheirDefaults) {
  const json doc = json::object();
  JsonErrors errors;
  auto r = ObjectReader::root(doc, errors);
  EXPECT_EQ(r.optional<std::string>("s", "dflt"), "dflt");
  EXPECT_EQ(r.optionalInt("i", 0, 9, 7), 7);
  EXPECT_EQ(r.optionalEnum("e", {"a", "b"}, "b"), "b");
  EXPECT_FALSE(r.maybe<bool>("flag").has_value());
  EXPECT_EQ(r.raw("poly"), nullptr);
  auto absent = r.object("section");
  EXPECT_FALSE(absent.has("anything"));
  EXPECT_EQ(absent.optional<bool>("x", true), true);
  absent.finish();
  EXPECT_TRUE(r.objectArray("list").empty());
  r.finish();
  EXPECT_TRUE(errors.status().ok()) << errors.status().error().message;
}

// Each bad document must be reported with the JSON path of the offending field.
struct BadCase {
  std::string description;
  std::string document;
  std::string expected; // a substring of the error, starting with the path
};

class JsonReaderBad : public testing::TestWithParam<BadCase> {};

// A small schema standing in for a real config: pools[] of {resourceName, selector{linkLayer},
// count, names[]}.
Status readSchema(const json& doc) {
  JsonErrors errors;
  auto root = ObjectReader::root(doc, errors);
  for (auto& pool : root.objectArray("pools", true)) {
    pool.required<std::string>("resourceName");
    pool.optionalInt("count", 1, 1000, 16);
    pool.optional<std::vector<std::string>>("names", {});
    pool.optional<bool>("enabled", true);
    auto selector = pool.object("selector");
    selector.optionalEnum("linkLayer", {"InfiniBand", "Ethernet"}, "Ethernet");
    selector.finish();
    pool.finish();
  }
  root.optional<std::map<std::string, std::string>>("env", {});
  root.finish();
  return errors.status();
}

TEST_P(JsonReaderBad, ReportsThePathOfTheOffendingField) {
  const auto& c = GetParam();
  auto status = readSchema(parse(c.document));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find(c.expected), std::string::npos) << status.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Errors, JsonReaderBad,
    testing::Values(
        BadCase{
            "enum_value",
            R"({"pools":[{"resourceName":"a/b"},{"resourceName":"c/d",
                    "selector":{"linkLayer":"ib"}}]})",
            R"($.pools[1].selector.linkLayer: expected one of "InfiniBand", "Ethernet", got "ib")"},
        BadCase{"unknown_key", R"({"pools":[{"resourceName":"a/b","selecter":{}}]})",
                R"($.pools[0].selecter: unknown key (known: "count", "enabled", "names", )"},
        BadCase{"unknown_root_key", R"({"pools":[],"pool":[]})", "$.pool: unknown key"},
        BadCase{"missing_required", R"({"pools":[{}]})",
                "$.pools[0].resourceName: required key is missing"},
        BadCase{"missing_required_array", R"({})", "$.pools: required key is missing"},
        BadCase{"string_for_int", R"({"pools":[{"resourceName":"a/b","count":"3"}]})",
                R"($.pools[0].count: expected an integer, got "3")"},
        BadCase{"fraction_for_int", R"({"pools":[{"resourceName":"a/b","count":1.5}]})",
                "$.pools[0].count: expected an integer, got 1.5"},
        BadCase{"bool_for_int", R"({"pools":[{"resourceName":"a/b","count":true}]})",
                "$.pools[0].count: expected an integer, got true"},
        BadCase{"out_of_range", R"({"pools":[{"resourceName":"a/b","count":0}]})",
                "$.pools[0].count: expected an integer from 1 to 1000, got 0"},
        BadCase{"huge_int", R"({"pools":[{"resourceName":"a/b","count":18446744073709551615}]})",
                "$.pools[0].count: integer 18446744073709551615 is out of range"},
        BadCase{"int_for_bool", R"({"pools":[{"resourceName":"a/b","enabled":1}]})",
                "$.pools[0].enabled: expected true or false, got 1"},
        BadCase{"array_item_type", R"({"pools":[{"resourceName":"a/b","names":["x",2]}]})",
                "$.pools[0].names[1]: expected a string, got 2"},
        BadCase{"object_for_array", R"({"pools":{}})",
                "$.pools: expected an array of objects, got an object"},
        BadCase{"not_an_object_element", R"({"pools":[3]})",
                "$.pools[0]: expected an object, got 3"},
        BadCase{"map_value_type", R"({"pools":[],"env":{"A B":1}})",
                R"($.env["A B"]: expected a string, got 1)"},
        BadCase{"root_not_object", R"([1])", "$: expected an object, got an array"}),
    [](const auto& info) { return info.param.description; });

TEST(JsonReader, ReportsEveryProblemInOnePass) {
  auto status = readSchema(parse(R"({"pools":[{"count":0,"x":1}],"y":2})"));
  ASSERT_FALSE(status.ok());
  const std::string& m = status.error().message;
  EXPECT_NE(m.find("$.pools[0].resourceName: required key is missing"), std::string::npos) << m;
  EXPECT_NE(m.find("$.pools[0].count: expected an integer from 1"), std::string::npos) << m;
  EXPECT_NE(m.find("$.pools[0].x: unknown key"), std::string::npos) << m;
  EXPECT_NE(m.find("$.y: unknown key"), std::string::npos) << m;
}

TEST(JsonReader, FailRecordsValidationProblemsAtTheFieldPath) {
  const json doc = parse(R"({"a":{"name":"bad name"}})");
  JsonErrors errors;
  auto root = ObjectReader::root(doc, errors);
  auto a = root.object("a");
  a.fail("name", "must not contain spaces");
  a.failAt(jsonIndexPath(a.pathOf("list"), 2), "is incomplete");
  EXPECT_EQ(errors.status().error().message,
            "$.a.name: must not contain spaces; $.a.list[2]: is incomplete");
}

TEST(JsonReader, MissingRequiredObjectIsAnError) {
  const json doc = json::object();
  JsonErrors errors;
  auto root = ObjectReader::root(doc, errors);
  root.object("selector", true).finish();
  EXPECT_EQ(errors.status().error().message, "$.selector: required key is missing");
}

TEST(JsonReader, ParseRejectsDuplicateKeysWithTheirPath) {
  auto doc = parseJsonDocument(R"({"pools":[{"a":1},{"a":1,"b":{"c":1,"c":2}}]})", "config");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().message, R"(config: $.pools[1].b: duplicate key "c")");
  auto top = parseJsonDocument(R"({"x":1,"x":2})", "policy");
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.error().message, R"(policy: $: duplicate key "x")");
}

TEST(JsonReader, ParseReportsSyntaxErrorsWithTheirPosition) {
  auto doc = parseJsonDocument("{\"a\": [1, 2,]}", "config");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.error().message.find("config: invalid JSON at byte 13"), std::string::npos)
      << doc.error().message;
  EXPECT_FALSE(parseJsonDocument("", "config").ok());
}

// Found by fuzz_config_parsers: a number past a double's range threw out of the parser.
TEST(JsonReader, ParseReportsANumberTooLargeForADouble) {
  auto doc = parseJsonDocument(R"({"healthPollMs": 1e400})", "config");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.error().message.find("config: invalid JSON: "), std::string::npos)
      << doc.error().message;
  EXPECT_NE(doc.error().message.find("number overflow"), std::string::npos) << doc.error().message;
}

TEST(JsonReader, PathsQuoteKeysThatAreNotIdentifiers) {
  EXPECT_EQ(jsonChildPath("$", "pools"), "$.pools");
  EXPECT_EQ(jsonChildPath("$.env", "kube-rdma.io/rdma"), R"($.env["kube-rdma.io/rdma"])");
  EXPECT_EQ(jsonChildPath("$", "1a"), R"($["1a"])");
  EXPECT_EQ(jsonIndexPath("$.pools", 3), "$.pools[3]");
}

TEST(JsonReader, DescribeShortensLongValues) {
  EXPECT_EQ(describeJson(json("ib")), "\"ib\"");
  EXPECT_EQ(describeJson(json(nullptr)), "null");
  EXPECT_EQ(describeJson(json::array()), "an array");
  const std::string shown = describeJson(json(std::string(500, 'x')));
  EXPECT_LT(shown.size(), 100u);
  EXPECT_EQ(shown.substr(shown.size() - 3), "...");
}

} // namespace
} // namespace kube_rdma
