#include "webhook/json_patch_writer.h"

#include <gtest/gtest.h>

#include "test/webhook/admission_test_support.h"

namespace kube_rdma {
namespace {

using nlohmann::json;
using test_support::ParsedJson;

// The operations writePatch appends for `additions` on `base`, as JSON; the error when it fails.
Result<json> patchFor(const json& base, const Addition& additions, const std::string& path) {
  const ParsedJson parsed(base);
  std::string patch;
  if (Status s = writePatch(parsed.root(), additions, path, patch); !s.ok()) {
    return s.error();
  }
  return patch.empty() ? json::array() : json::parse(patch + "]");
}

Addition envAddition() {
  Addition additions;
  additions.append(
      "env", Addition::object({{"name", Addition::string("A")}, {"value", Addition::string("1")}}));
  return additions;
}

TEST(WritePatch, AddsWhatIsAbsentWholeAndAppendsToArrays) {
  Result<json> absent = patchFor(json::object(), envAddition(), "/c");
  ASSERT_TRUE(absent.ok()) << absent.error().message;
  EXPECT_EQ(*absent, json::parse(R"([{"op":"add","path":"/c/env",
                                      "value":[{"name":"A","value":"1"}]}])"));

  Result<json> appended = patchFor({{"env", json::array()}}, envAddition(), "/c");
  ASSERT_TRUE(appended.ok()) << appended.error().message;
  EXPECT_EQ(*appended, json::parse(R"([{"op":"add","path":"/c/env/-",
                                        "value":{"name":"A","value":"1"}}])"));
}

TEST(WritePatch, EscapesMemberNamesAndSkipsEqualStrings) {
  Addition additions;
  additions.at("annotations").set("example.com/a~b", "x");
  additions.at("annotations").set("same", "y");
  Result<json> patch =
      patchFor({{"annotations", {{"same", "y"}, {"other", "z"}}}}, additions, "/metadata");
  ASSERT_TRUE(patch.ok()) << patch.error().message;
  EXPECT_EQ(*patch, json::parse(R"([{"op":"add","path":"/metadata/annotations/example.com~1a~0b",
                                     "value":"x"}])"));
}

TEST(WritePatch, NamesTheMemberOfAnotherShape) {
  Result<json> not_array = patchFor({{"env", "A=1"}}, envAddition(), "/c");
  ASSERT_FALSE(not_array.ok());
  EXPECT_EQ(not_array.error().message, "/c/env is not an array");

  Addition capability;
  capability.at("securityContext").at("capabilities").append("add", Addition::string("IPC_LOCK"));
  Result<json> not_object =
      patchFor({{"securityContext", {{"capabilities", 7}}}}, capability, "/c");
  ASSERT_FALSE(not_object.ok());
  EXPECT_EQ(not_object.error().message, "/c/securityContext/capabilities is not an object");
}

TEST(MergeRecord, KeepsWhatThePreviousPassRecorded) {
  Addition record;
  record.at("containers").append("a", Addition::string("shm"));
  record.set("volume", "kube-rdma-shm");
  mergeRecord(R"({"containers":{"a":["env:X","shm",3],"b":["ipc-lock"]},)"
              R"("profile":"h100","volume":"old"})",
              record);
  std::string text;
  appendJson(text, record);
  EXPECT_EQ(json::parse(text), json::parse(R"({"containers":{"a":["shm","env:X"],"b":["ipc-lock"]},
                                               "volume":"kube-rdma-shm","profile":"h100"})"));
}

TEST(MergeRecord, IgnoresAPreviousRecordOfAnotherShape) {
  for (const char* previous : {"", "not json", "[]", R"({"containers":[]})"}) {
    Addition record;
    record.at("containers").append("a", Addition::string("shm"));
    mergeRecord(previous, record);
    std::string text;
    appendJson(text, record);
    EXPECT_EQ(text, R"({"containers":{"a":["shm"]}})") << previous;
  }
}

} // namespace
} // namespace kube_rdma
