#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/node/device_model.h"
#include "common/util/result.h"

// Parsers for single sysfs attribute texts in the kernel's formats (the kernel's
// drivers/infiniband/core/sysfs.c). Pure: the caller reads the file (readAttribute is the one
// I/O helper here). Each parser accepts the text with or without its trailing newline and
// returns an Error naming what was wrong.
namespace kube_rdma {

// Attribute files are small; a longer file is an error, not something to parse.
constexpr size_t kMaxAttributeBytes = 4096;

// Reads a small attribute file and strips one trailing newline. An attribute the kernel answers
// with an error (EINVAL for unused GID entries) fails here, with the path and the errno text.
Result<std::string> readAttribute(const std::string& path, size_t max_bytes = kMaxAttributeBytes);
// What readAttribute takes of a config or policy file.
constexpr size_t kMaxConfigFileBytes = size_t{1} << 20;

// Entry names of a directory but "." and "..", unsorted; none when it cannot be read.
std::vector<std::string> listDirectory(const std::string& dir);
// Same below an open directory (AT_FDCWD for a plain path, "." for the directory itself);
// nullopt when it cannot be opened.
std::optional<std::vector<std::string>> listDirectoryAt(int dir_fd, const char* name);

// Same, for a sysfs attribute relative to an open directory (cheaper: no path walk from the
// root; AT_FDCWD for a plain path). Reads once: sysfs returns an attribute's whole text in the
// first read, so this is not for procfs or regular files that may return short reads.
Result<std::string> readAttributeAt(int dir_fd, const char* name);

// "4: ACTIVE" -> PortState::kActive. The number must be 0..5 and name the state the kernel prints.
Result<PortState> parsePortState(std::string_view text);

struct PhysState {
  int code = 0;     // 5
  std::string name; // "LinkUp"
};
// "5: LinkUp", "3: Disabled", "0: <unknown>" (kernel: "%u: %s").
Result<PhysState> parsePhysState(std::string_view text);

// "InfiniBand", "Ethernet" or "Unknown" (the kernel's three spellings).
Result<LinkLayer> parseLinkLayer(std::string_view text);

// "200 Gb/sec (4X HDR)" -> 200; "2.5 Gb/sec (1X SDR)" -> 2 (whole Gb/s, the model's unit).
Result<uint32_t> parseRateGbps(std::string_view text);

// "0x1a" -> 26 (kernel: "0x%x"); LIDs are 16-bit.
Result<uint32_t> parseLid(std::string_view text);

// "0", "1", ... -> the node; "-1" -> nullopt (no NUMA affinity known).
Result<std::optional<int>> parseNumaNode(std::string_view text);

// "IB/RoCE v1" or "RoCE v1" -> kRoceV1, "RoCE v2" -> kRoceV2 (rdma-core reads them the same way).
Result<GidType> parseGidType(std::string_view text);

// Any IPv6 text form (the kernel's full "fe80:0000:...", compressed "fe80::1", "::ffff:1.2.3.4").
Result<Gid> parseGid(std::string_view text);

// The kernel's form: 8 groups of 4 lower-case hex digits, never compressed.
std::string toKernelText(const Gid& gid);

// All-zero: an unused table entry (the kernel prints zeros for empty entries).
bool isZero(const Gid& gid);

// fe80::/64, which NCCL never picks for RoCE v2 traffic across subnets.
bool isLinkLocal(const Gid& gid);

// The dotted quad of an IPv4-mapped GID (::ffff:a.b.c.d), else nullopt.
std::optional<std::string> ipv4Of(const Gid& gid);

} // namespace kube_rdma
