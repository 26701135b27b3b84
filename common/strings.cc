#include "common/strings.h"

namespace kube_rdma {

std::string joinStrings(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) {
      out += separator;
    }
    out += items[i];
  }
  return out;
}

} // namespace kube_rdma
