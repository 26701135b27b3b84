#include "test/yaml_documents.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

using nlohmann::json;

TEST(YamlDocuments, PlainScalarsAreTypedQuotedOnesStayStrings) {
  auto documents = parseYamlDocuments("a: 4\nb: \"4\"\nc: true\nd: 'true'\ne: 1.5\nf: null\n"
                                      "g: 64Gi\nh: -3\ni: ''\nj: [x, 2]\n");
  ASSERT_TRUE(documents.ok()) << documents.error().message;
  ASSERT_EQ(documents->size(), 1u);
  EXPECT_EQ(documents->at(0), json::parse(R"({"a": 4, "b": "4", "c": true, "d": "true", "e": 1.5,
      "f": null, "g": "64Gi", "h": -3, "i": "", "j": ["x", 2]})"));
}

TEST(YamlDocuments, EveryNonEmptyDocumentInOrder) {
  auto documents = parseYamlDocuments("# comment\n---\nkind: A\n---\n---\nkind: B\n");
  ASSERT_TRUE(documents.ok()) << documents.error().message;
  EXPECT_EQ(*documents, (std::vector<json>{{{"kind", "A"}}, {{"kind", "B"}}}));
}

TEST(YamlDocuments, MalformedYamlIsAnErrorNamingIt) {
  auto documents = parseYamlDocuments("a: [1, 2\n");
  ASSERT_FALSE(documents.ok());
  EXPECT_NE(documents.error().message.find("YAML: "), std::string::npos);
}

} // namespace
} // namespace kube_rdma
