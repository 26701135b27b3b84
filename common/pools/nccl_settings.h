#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/node/device_model.h"
#include "common/util/result.h"

// NCCL's own reading of NCCL_IB_HCA, NCCL_SOCKET_IFNAME and nccl.conf, reproduced exactly
// (NCCL 2.28 src/misc/utils.cc parseStringList/matchIf,
// src/transport/net_ib.cc, src/misc/socket.cc, src/misc/param.cc), and the strict rendering of
// what we hand to containers.
namespace kube_rdma {

// One RDMA port NCCL should use.
struct HcaPort {
  std::string device;
  uint32_t port = 0;
  bool operator==(const HcaPort&) const = default;
};

// NCCL keeps this many NCCL_IB_HCA entries (MAX_IB_DEVS) and this many NCCL_SOCKET_IFNAME
// entries (MAX_IFS); the rest of the list is silently ignored.
constexpr size_t kNcclIbHcaMaxEntries = 32;
constexpr size_t kNcclSocketIfnameMaxEntries = 16;
// nccl.conf names and values are truncated to this many bytes.
constexpr size_t kNcclConfMaxLength = 1023;

// "=mlx5_1:1,mlx5_2:1": always exact names and explicit ports (DESIGN.md), in the given order.
// Errors: no ports (an empty "=" list would select every device), more than 32 ports (NCCL would
// drop the rest), names NCCL cannot express (empty, or containing ',', ':' or whitespace).
Result<std::string> renderIbHca(const std::vector<HcaPort>& ports);

struct NcclListEntry {
  std::string name; // verbatim, no trimming, like NCCL
  int port = -1;    // -1: any port
  bool operator==(const NcclListEntry&) const = default;
};

// A parsed NCCL_IB_HCA / NCCL_SOCKET_IFNAME value.
struct NcclDeviceList {
  bool ignored = false; // NCCL_SOCKET_IFNAME of length <= 1: NCCL picks interfaces itself
  bool exclude = false; // leading "^"
  bool exact = false;   // "=" (after the optional "^"); "=^" is NOT an exclude list
  std::vector<NcclListEntry> entries;
  std::vector<std::string> dropped; // entries past NCCL's limit, never read by NCCL
  std::vector<std::string> notes;   // what NCCL will read differently from what was meant
};

NcclDeviceList parseNcclIbHca(std::string_view value);
NcclDeviceList parseNcclSocketIfname(std::string_view value);

// NCCL's matchIfList XOR exclude: exact compares the whole name, prefix mode compares
// strlen(entry) bytes, port -1 on either side matches any port, an empty list matches everything
// (so "^" alone excludes everything). An ignored list matches everything: NCCL's automatic choice
// is not modelled here.
bool matches(const NcclDeviceList& list, std::string_view name, int port = -1);

// What an NCCL_IB_HCA value does on one node.
struct NcclHcaSelection {
  std::vector<HcaPort> selected;      // ACTIVE IB/Ethernet ports NCCL would use, in device order
  std::vector<std::string> unmatched; // include entries that match no device of the node
  // Prefix entries that match more than one device name: entry -> the devices ("mlx5_1" ->
  // mlx5_1, mlx5_10, ...).
  std::vector<std::pair<std::string, std::vector<std::string>>> over_matches;
};
NcclHcaSelection selectHcaPorts(const NodeTopology& topology, const NcclDeviceList& list);

// Names of `candidates` (interface names) a NCCL_SOCKET_IFNAME value selects, in order.
std::vector<std::string> selectInterfaces(const NcclDeviceList& list,
                                          const std::vector<std::string>& candidates);

using NcclEnv = std::vector<std::pair<std::string, std::string>>;

// [A-Za-z_][A-Za-z0-9_]*: a name every shell, container runtime and nccl.conf reader agrees on.
bool isPortableEnvName(std::string_view name);

// nccl.conf text: one NAME=VALUE line per setting, in order, nothing else (no comments and no
// blank lines: NCCL < 2.26.2 would read "#..." lines with an '=' as variables). Errors name the
// setting: a name that is not [A-Za-z_][A-Za-z0-9_]*, a value with a newline, carriage return or
// NUL, either longer than 1023 bytes (NCCL truncates), or a name given twice (NCCL keeps the
// first).
Result<std::string> renderNcclConf(const NcclEnv& settings);

// nccl.conf read as NCCL 2.28 reads it: per line, a trailing '\n' removed, lines starting with
// '#' skipped, lines without '=' or with an empty name skipped, the name everything before the
// first '=' and the value everything after it, verbatim (no trimming, '\r' kept), each truncated
// to 1023 bytes, a NUL ends the line. Every line is returned in order: NCCL applies them with
// setenv(overwrite=0), so the first line for a name and any real environment value win.
// test/common/pools/libnccl_conf_test.cc checks this against the real library.
NcclEnv parseNcclConf(std::string_view text);

} // namespace kube_rdma
