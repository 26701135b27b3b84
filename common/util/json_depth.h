#pragma once

#include <string_view>

// A nesting limit checked before parsing: nlohmann builds every level it reads, so a body of a
// million '[' would cost memory and time before any check of ours could see it.
namespace kube_rdma {

// Whether arrays and objects in `text` nest deeper than `max_depth`, counting brackets outside
// strings. A text that is not JSON anyway (say, an unterminated string) is left to the parser to
// describe: the answer is then false.
bool jsonNestsDeeperThan(std::string_view text, int max_depth);

} // namespace kube_rdma
