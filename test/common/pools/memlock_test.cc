#include "common/pools/memlock.h"
#include "common/pools/oci_hook.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

TEST(ParseMemlockLimit, TakesUnlimitedOffAndByteCounts) {
  EXPECT_EQ(*parseMemlockLimit("unlimited"), MemlockLimit{});
  EXPECT_EQ(parseMemlockLimit("off")->mode, MemlockLimit::Mode::kOff);
  EXPECT_EQ(*parseMemlockLimit("65536"), (MemlockLimit{MemlockLimit::Mode::kBytes, 65536}));
  EXPECT_EQ(parseMemlockLimit("18446744073709551615")->bytes, UINT64_MAX);
}

TEST(ParseMemlockLimit, RejectsEverythingElse) {
  for (const char* text : {"", "Unlimited", "-1", "1e6", "64k", " 65536", "65536 ",
                           "18446744073709551616", "0x10000"}) {
    auto got = parseMemlockLimit(text);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_NE(got.error().message.find("expected \"unlimited\", \"off\" or a byte count"),
              std::string::npos)
        << got.error().message;
  }
  auto small = parseMemlockLimit("65535");
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.error().message, "a byte count must be at least 65536, got 65535");
}

TEST(MemlockLimitText, IsWhatParseMemlockLimitReads) {
  for (const MemlockLimit limit : {MemlockLimit{}, MemlockLimit{MemlockLimit::Mode::kOff},
                                   MemlockLimit{MemlockLimit::Mode::kBytes, 8388608}}) {
    EXPECT_EQ(*parseMemlockLimit(memlockLimitText(limit)), limit);
  }
}

TEST(ParseOciState, TakesThePidAndTheId) {
  auto state = parseOciState(
      R"({"ociVersion":"1.0.2","id":"x","status":"creating","pid":4242,"bundle":"/tmp"})");
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->pid, 4242);
  EXPECT_EQ(state->id, "x");
  auto no_id = parseOciState(R"({"pid":1,"id":7})");
  ASSERT_TRUE(no_id.ok());
  EXPECT_EQ(no_id->id, "");
}

TEST(ParseOciState, SaysWhatIsWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "the OCI state is not JSON"},
      {"not json", "the OCI state is not JSON"},
      {R"({"pid":1)", "the OCI state is not JSON"},
      {"[1]", "the OCI state is not a JSON object"},
      {R"({"pid":1,"a":[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]})",
       "the OCI state nests deeper than 16 levels"},
      {R"({"id":"x"})", "the OCI state has no pid"},
      {R"({"pid":"12"})", "the OCI state's pid is of type string, not an integer"},
      {R"({"pid":1.5})", "the OCI state's pid is of type number, not an integer"},
      {R"({"pid":0})", "the OCI state's pid 0 is not a process ID"},
      {R"({"pid":-3})", "the OCI state's pid -3 is not a process ID"},
      {R"({"pid":2147483648})", "the OCI state's pid 2147483648 is not a process ID"},
      {R"({"pid":18446744073709551615})",
       "the OCI state's pid 18446744073709551615 is not a process ID"},
  };
  for (const auto& [text, message] : cases) {
    auto got = parseOciState(text);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_EQ(got.error().message, message) << text;
  }
}

} // namespace
} // namespace kube_rdma
