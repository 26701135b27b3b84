// Which sanitizer the test binary (and so the programs it starts, built in the same tree) runs
// under, for the few bounds that must differ: memory figures under ASan include its shadow,
// quarantine and fake stacks.
#pragma once

namespace kube_rdma {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

} // namespace kube_rdma
