#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "common/nccl_settings.h"

// nccl.conf read back as NCCL 2.28 reads it, for the tests: per line, a trailing '\n' removed,
// lines starting with '#' skipped, lines without '=' skipped, the name is everything before the
// first '=' and the value everything after it, verbatim (no trimming, '\r' kept), each truncated
// to 1023 bytes, a NUL ends the line. Lines with an empty name are skipped (setenv rejects them).
// NCCL applies them with setenv(overwrite=0): the first line for a name and any real environment
// value win. libnccl_conf_test checks this model against the real library.
namespace kube_rdma {

inline NcclEnv parseNcclConf(std::string_view text) {
  NcclEnv out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    line = line.substr(0, line.find('\0')); // C strings end at a NUL
    if (!line.empty() && line.front() == '#') {
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      continue;
    }
    out.emplace_back(std::string(line.substr(0, std::min(eq, kNcclConfMaxLength))),
                     std::string(line.substr(eq + 1, kNcclConfMaxLength)));
  }
  return out;
}

} // namespace kube_rdma
