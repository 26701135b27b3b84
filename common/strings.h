#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kube_rdma {

// "a,b,c" from {"a", "b", "c"} with separator ","; "" for no items. For lists in messages,
// logs and environment values.
std::string joinStrings(const std::vector<std::string>& items, std::string_view separator);

// Whether `value` is one of `list`: the short lists of config keys, policy keys and netdevs.
bool listContains(const std::vector<std::string>& list, std::string_view value);

} // namespace kube_rdma
