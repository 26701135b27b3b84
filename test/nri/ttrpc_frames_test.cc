#include "nri/ttrpc_frames.h"

#include <gtest/gtest.h>

#include <string>

namespace kube_rdma {
namespace {

// Written out by hand from the two headers' layouts, not by encodeTtrpcFrame.
std::string muxFrame(uint32_t conn, const std::string& bytes) {
  std::string out;
  for (uint32_t value : {conn, static_cast<uint32_t>(bytes.size())}) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      out.push_back(static_cast<char>((value >> shift) & 0xFFU));
    }
  }
  return out + bytes;
}

const std::string kRequestHeader = std::string("\0\0\0\5\0\0\0\3\1\0", 10); // 5 bytes, stream 3

TEST(TtrpcFrames, EncodesTheHeadersBigEndian) {
  const std::string frame =
      encodeTtrpcFrame({MuxConn::kRuntimeService, 3, TtrpcType::kRequest, 0, "hello"});
  EXPECT_EQ(frame, muxFrame(2, kRequestHeader + "hello"));
}

TEST(TtrpcFrames, AMessageCutAcrossFramesAndReadsComesOutWhole) {
  const std::string stream = kRequestHeader + "hello";
  const std::string bytes = muxFrame(1, stream.substr(0, 7)) + muxFrame(1, stream.substr(7));
  TtrpcFrameDecoder decoder;
  for (char byte : bytes) {
    ASSERT_FALSE(decoder.hasMessage());
    ASSERT_TRUE(decoder.feed(std::string(1, byte)).ok());
  }
  ASSERT_TRUE(decoder.hasMessage());
  const TtrpcMessage message = decoder.takeMessage();
  EXPECT_EQ(message.conn, MuxConn::kPluginService);
  EXPECT_EQ(message.stream_id, 3u);
  EXPECT_EQ(message.type, TtrpcType::kRequest);
  EXPECT_EQ(message.payload, "hello");
  EXPECT_FALSE(decoder.hasMessage());
}

TEST(TtrpcFrames, InterleavedConnectionsKeepTheirOwnStreams) {
  const std::string plugin = kRequestHeader + "plugin";
  const std::string runtime =
      encodeTtrpcFrame({MuxConn::kRuntimeService, 1, TtrpcType::kResponse, 0, "rt"}).substr(8);
  std::string plugin_fixed = plugin;
  plugin_fixed[3] = 6; // "plugin" is 6 bytes
  TtrpcFrameDecoder decoder;
  ASSERT_TRUE(decoder
                  .feed(muxFrame(1, plugin_fixed.substr(0, 4)) + muxFrame(2, runtime) +
                        muxFrame(1, plugin_fixed.substr(4)))
                  .ok());
  ASSERT_TRUE(decoder.hasMessage());
  EXPECT_EQ(decoder.takeMessage().payload, "rt");
  ASSERT_TRUE(decoder.hasMessage());
  EXPECT_EQ(decoder.takeMessage().payload, "plugin");
}

TEST(TtrpcFrames, RefusesWhatCannotBeFramed) {
  TtrpcFrameDecoder unknown;
  EXPECT_EQ(unknown.feed(muxFrame(7, "x")).error().message,
            "NRI frame for connection 7, not the plugin's (1) or the runtime's (2)");
  TtrpcFrameDecoder too_long;
  EXPECT_EQ(too_long.feed(muxFrame(1, std::string("\1\0\0\1\0\0\0\1\1\0", 10))).error().message,
            "ttrpc message of 16777217 bytes, more than 4194304");
}

} // namespace
} // namespace kube_rdma
