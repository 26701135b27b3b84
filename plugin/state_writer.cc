#include "plugin/state_writer.h"

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>

namespace kube_rdma {

uint64_t fnv1a64(std::string_view data) {
  uint64_t hash = 0xcbf29ce484222325ULL; // FNV-1a offset basis and prime (64 bit)
  for (const char c : data) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string ncclConfFileName(const std::string& content) {
  static constexpr char kHex[] = "0123456789abcdef";
  const uint64_t hash = fnv1a64(content);
  std::string name = "nccl-";
  for (int shift = 60; shift >= 0; shift -= 4) {
    name += kHex[(hash >> shift) & 0xf];
  }
  return name + ".conf";
}

Status StateWriter::prepare() const {
  std::error_code ec;
  std::filesystem::create_directories(state_dir_, ec);
  if (ec) {
    return makeError("cannot create state directory " + state_dir_ + ": " + ec.message());
  }
  return Ok{};
}

Status StateWriter::writeTopology(const std::string& json) const {
  return writeFileAtomically(state_dir_ + "/topology.json", json);
}

Result<std::string> StateWriter::writeNcclConf(const std::string& content) const {
  const std::string path = state_dir_ + "/" + ncclConfFileName(content);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && static_cast<size_t>(st.st_size) == content.size()) {
    return path; // same name, same content: written before
  }
  if (auto status = writeFileAtomically(path, content); !status) {
    return status.error();
  }
  return path;
}

} // namespace kube_rdma
