# Included by scripts/tsan-grpc.sh right after gRPC 1.51.1's project() (CMAKE_PROJECT_INCLUDE):
# the sources its unity build must compile on their own. A unity build compiles gRPC's core in a
# quarter of the CPU time (most of it is parsing the same headers again per file); these sources
# define file-local names that another source of their batch also defines, and upb's generated C
# files all do.
file(GLOB_RECURSE kube_rdma_upb_c_sources
     "${CMAKE_CURRENT_SOURCE_DIR}/src/core/ext/upb-generated/*.c"
     "${CMAKE_CURRENT_SOURCE_DIR}/src/core/ext/upbdefs-generated/*.c"
     "${CMAKE_CURRENT_SOURCE_DIR}/third_party/upb/*.c")
set_source_files_properties(${kube_rdma_upb_c_sources} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
set_source_files_properties(
  src/core/ext/filters/client_channel/lb_policy/weighted_target/weighted_target.cc
  src/core/ext/filters/message_size/message_size_filter.cc
  src/core/ext/transport/chttp2/transport/bin_encoder.cc
  src/core/lib/event_engine/posix_engine/ev_poll_posix.cc
  src/core/lib/iomgr/ev_poll_posix.cc
  src/core/lib/iomgr/ev_posix.cc
  src/core/lib/security/credentials/alts/grpc_alts_credentials_server_options.cc
  src/core/tsi/local_transport_security.cc
  src/cpp/client/client_context.cc
  src/cpp/client/credentials_cc.cc
  src/cpp/common/alarm.cc
  src/cpp/common/completion_queue_cc.cc
  src/cpp/server/server_context.cc
  src/cpp/server/server_credentials.cc
  src/cpp/util/byte_buffer_cc.cc
  PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
