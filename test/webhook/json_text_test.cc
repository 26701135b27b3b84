// appendJsonText against nlohmann's dump(), the text it stands in for: edge cases, then random
// bytes and random values (fixed seed, so a failure reproduces).
#include <gtest/gtest.h>

#include <random>

#include "webhook/json_text.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

// "ok:<text>" when the value has a text, "throws:<id>" when dump() refuses it.
std::string outcome(const json& value, bool ours) {
  try {
    std::string text;
    if (ours) {
      appendJsonText(value, text);
    } else {
      text = value.dump();
    }
    return "ok:" + text;
  } catch (const json::exception& e) {
    return "throws:" + std::to_string(e.id);
  }
}

void expectSameAsDump(const json& value) {
  EXPECT_EQ(outcome(value, true), outcome(value, false))
      << value.dump(-1, ' ', true, json::error_handler_t::replace);
}

TEST(JsonText, EscapesExactlyAsDump) {
  std::string every_ascii;
  for (int c = 0; c < 0x80; ++c) {
    every_ascii += static_cast<char>(c);
  }
  for (const std::string& s :
       {std::string(), std::string("plain"), std::string("\"quoted\" \\ back"), every_ascii,
        std::string("\x7f"), std::string("caf\xc3\xa9"), std::string("\xe2\x82\xac \xef\xbf\xbf"),
        std::string("\xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"), std::string("\xdf\xbf\xe0\xa0\x80"),
        std::string("/spec/containers/0/env/-"), std::string("a~1b~0c")}) {
    expectSameAsDump(s);
    expectSameAsDump(json::object({{s, s}}));
  }
  EXPECT_EQ(outcome(json("tab\there \x01"), true), "ok:\"tab\\there \\u0001\"");
}

TEST(JsonText, RefusesWhatDumpRefuses) {
  for (const std::string& bad :
       {std::string("\x80"), std::string("\xc0\xaf"), std::string("\xc3"),
        std::string("\xe0\x80\x80"), std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"),
        std::string("\xf5\x80\x80\x80"), std::string("ok \xff"), std::string("\xe2\x82")}) {
    EXPECT_EQ(outcome(bad, true), "throws:316");
    expectSameAsDump(bad);
  }
}

TEST(JsonText, MatchesDumpOnRandomBytes) {
  std::mt19937 rng(20261201);
  // Mostly ASCII with UTF-8 lead and continuation bytes mixed in, so valid and invalid
  // sequences of every length turn up.
  const std::string alphabet = std::string("ab\"\\\n\x01\x1f\x7f ") +
                               "\xc2\xc3\xdf\xe0\xe2\xed\xef" +
                               "\xf0\xf4\xf5\xff\x80\x8f\x90\x9f\xa0\xbf";
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> length(0, 12);
  size_t valid = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    for (int n = length(rng); n > 0; --n) {
      s += alphabet[pick(rng)];
    }
    const std::string ours = outcome(s, true);
    ASSERT_EQ(ours, outcome(s, false)) << i;
    valid += ours.rfind("ok:", 0) == 0 ? 1 : 0;
  }
  // Both kinds of string must turn up in numbers, or the comparison says little.
  EXPECT_GT(valid, 2000u);
  EXPECT_LT(valid, 18000u);
}

json randomValue(std::mt19937& rng, int depth) {
  std::uniform_int_distribution<int> kind(0, depth > 3 ? 5 : 7);
  switch (kind(rng)) {
  case 0:
    return nullptr;
  case 1:
    return std::uniform_int_distribution<int>(0, 1)(rng) == 1;
  case 2:
    return std::uniform_int_distribution<int64_t>(INT64_MIN, INT64_MAX)(rng);
  case 3:
    return std::uniform_int_distribution<uint64_t>(0, UINT64_MAX)(rng);
  case 4:
    return std::uniform_real_distribution<double>(-1e6, 1e6)(rng);
  case 5:
    return "s" + std::to_string(rng() % 1000) + (rng() % 4 == 0 ? "\n\xc3\xa9" : "");
  case 6: {
    json array = json::array();
    for (int n = static_cast<int>(rng() % 4); n > 0; --n) {
      array.push_back(randomValue(rng, depth + 1));
    }
    return array;
  }
  default: {
    json object = json::object();
    for (int n = static_cast<int>(rng() % 4); n > 0; --n) {
      object["k" + std::to_string(rng() % 50)] = randomValue(rng, depth + 1);
    }
    return object;
  }
  }
}

TEST(JsonText, MatchesDumpOnRandomValues) {
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) {
    const json value = randomValue(rng, 0);
    ASSERT_EQ(outcome(value, true), outcome(value, false)) << i;
  }
  expectSameAsDump(json::array({0, -1, INT64_MIN, UINT64_MAX, 0.5, -0.0, 1e300, nullptr, true}));
}

} // namespace
} // namespace kube_rdma
