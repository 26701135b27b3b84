# shellcheck shell=bash
# Sourced by scripts/setup.sh, test.sh and demo.sh: which libnccl.so.2 the libnccl tests and the
# demo hand nccl.conf files to (test/libnccl_run.h loads the file KUBE_RDMA_LIBNCCL names).
# Debian's main archive has no NCCL, so it is the one in PyPI's nvidia-nccl-cu13 wheel, at a
# pinned version, which setup.sh --tests, --all and --demo install into the project's cache. A
# KUBE_RDMA_LIBNCCL set beforehand is kept and setup.sh then downloads nothing: the path of
# another libnccl.so.2, or empty for the one in the dynamic linker's path.
nccl_version=2.28.9
nccl_dir=$HOME/.cache/kube-rdma/nccl-$nccl_version
nccl_library=$nccl_dir/nvidia/nccl/lib/libnccl.so.2
export KUBE_RDMA_LIBNCCL=${KUBE_RDMA_LIBNCCL-$nccl_library}
