#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

namespace kube_rdma {

// Whole-file reads and writes for tests; a missing file reads as "" (tests assert on content).
inline std::string readTestFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void writeTestFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

// Loads or unloads nvidia_peermem on a copy of a fixture with NVIDIA GPUs, as modprobe changes
// /proc/modules and /sys/module (the GPU operator loads it after the node's daemons started).
inline void setPeermemLoaded(const std::string& node, bool loaded) {
  const std::string line = "nvidia_peermem 16384 0 - Live 0x0000000000000000 (PO)\n";
  std::string modules = readTestFile(node + "/proc/modules");
  const size_t at = modules.find(line);
  if (loaded && at == std::string::npos) {
    modules = line + modules;
  } else if (!loaded && at != std::string::npos) {
    modules.erase(at, line.size());
  }
  writeTestFile(node + "/proc/modules", modules);
  std::filesystem::remove_all(node + "/sys/module/nvidia_peermem");
  if (loaded) {
    std::filesystem::create_directories(node + "/sys/module/nvidia_peermem");
    writeTestFile(node + "/sys/module/nvidia_peermem/initstate", "live\n");
  }
}

// Polls condition every 20 ms until it holds (true) or the deadline passes (false): for files
// and log lines, which wake no waiter.
inline bool waitUntil(const std::function<bool()>& condition, std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > end) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

} // namespace kube_rdma
