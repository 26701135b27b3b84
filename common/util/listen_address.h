#pragma once

#include <string>

#include "common/util/result.h"

namespace kube_rdma {

// Where a server listens: --listen-address and --metrics-address of both daemons.
struct ListenAddress {
  std::string host; // brackets of an IPv6 literal removed; "0.0.0.0" for ":PORT"
  int port = 0;     // 0: any free port
};

// "HOST:PORT", ":PORT" (every IPv4 address) or "[V6]:PORT". Errors quote the text and say what
// is missing: no port, a port outside 0..65535 or not a number, an IPv6 host without brackets.
Result<ListenAddress> parseListenAddress(const std::string& text);

} // namespace kube_rdma
