#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "common/util/result.h"

// The pod annotation `kube-rdma.io/rdma`: "N", "N(ib)", "N(roce)", also with full-width brackets
// "N（roce）" (U+FF08/U+FF09). Surrounding whitespace is tolerated, the type is case-insensitive.
// Every malformed value is an error that names the problem, never a silent 0 (CubeStudio's
// get_rdma swallows errors and returns 0).
//
// "0" is an error ("must be at least 1"): a pod that wants no RDMA leaves the annotation out, and
// a 0 written by a template bug should be visible instead of quietly giving the pod nothing.
namespace kube_rdma {

// The largest count accepted; no node has more RDMA devices than this.
constexpr uint32_t kMaxShorthandCount = 1024;

struct Shorthand {
  uint32_t count = 0;
  std::string type; // lower-case type between the brackets; empty for plain "N"
};

// Which resource each shorthand type asks for.
struct ShorthandMap {
  std::map<std::string, std::string> by_type; // lower-case type -> resource name
  std::string untyped;                        // resource for plain "N"
};

// ib -> rdma/hca, roce -> rdma/shared, plain N -> rdma/hca (DESIGN.md).
ShorthandMap defaultShorthandMap();

struct ShorthandRequest {
  uint32_t count = 0;
  std::string resource; // "rdma/shared"
};

// Syntax only: the count and the (lower-cased) type.
Result<Shorthand> parseShorthand(std::string_view text);

// Syntax plus the type -> resource map; an unknown type is an error naming the known ones.
Result<ShorthandRequest> resolveShorthand(std::string_view text, const ShorthandMap& map);

} // namespace kube_rdma
