#!/usr/bin/env python3
"""The layers of kube-rdma's code: which folder may include which. Every top-level folder
holding C++ must be listed; a quoted include of another of our folders must be one of those its
folder may use. The build runs this (CMakeLists.txt, target `layers`), so an include that points
up a layer or sideways between programs fails the build, naming the file, the line and what the
folder may include instead.

    scripts/check-layers.py [ROOT]
"""

import os
import re
import sys

# Lowest first. The libraries of common/, one folder each: util (no RDMA), node (the device model
# and discovery), pools (pools, config, NCCL settings, CDI, the hooks' decisions), then checks and
# labels. Then what talks to the outside: kubeclient (the API server), http (the HTTP servers),
# rpc (gRPC to the kubelet), then what the node daemons share: usage (the ports' counters and who
# uses them), nri (the NRI plugin). Then the programs, each its own and none of another's.
PROTO = "proto"  # the generated protobuf and gRPC headers
UTIL, NODE, POOLS = "common/util", "common/node", "common/pools"
CHECKS, LABELS = "common/checks", "common/labels"
COMMON = {UTIL, NODE, POOLS, CHECKS, LABELS}
ALLOWED = {
    UTIL: set(),
    NODE: {UTIL},
    POOLS: {UTIL, NODE},
    CHECKS: {UTIL, NODE, POOLS},
    LABELS: {UTIL, NODE, POOLS},
    "kubeclient": {UTIL},
    "http": {UTIL},
    "rpc": {UTIL, NODE, POOLS, PROTO},
    "usage": {UTIL, NODE, POOLS, "rpc"},
    "nri": {UTIL, NODE, POOLS, PROTO},
    "plugin": COMMON | {PROTO, "kubeclient", "http", "rpc", "usage", "nri"},
    "dra": COMMON | {PROTO, "kubeclient", "http", "rpc", "usage", "nri"},
    "webhook": {UTIL, NODE, POOLS, "kubeclient", "http"},
    "rdmactl": {UTIL, NODE, POOLS, CHECKS},
    "memlock_hook": {UTIL, POOLS},
    "nccl_hook": {UTIL, NODE, POOLS},
}
# Not code of a layer: the tests may include anything; the rest holds no C++ of ours.
NOT_LAYERS = {"test", "proto", "scripts", "docs", "examples", "manifests", "build"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = (".cc", ".h")


def generated_proto_folders(root):
    """The first path component of every generated header: proto/'s subfolders."""
    proto = os.path.join(root, PROTO)
    return {d for d in os.listdir(proto) if os.path.isdir(os.path.join(proto, d))}


def layer_of(path):
    """A path's layer: its first folder, or its first two under common/ (common/util/log.h)."""
    parts = path.split("/")
    return "/".join(parts[:2]) if parts[0] == "common" and len(parts) > 2 else parts[0]


def layer_of_include(path, ours, protos):
    """The layer an include names: ours by its folder, a generated header as proto
    (`dra/v1/api.pb.h` is generated, `dra/flags.h` is the driver's), None for anything else."""
    first = path.split("/", 1)[0]
    if path.endswith((".pb.h", ".grpc.pb.h")) and first in protos:
        return PROTO
    layer = layer_of(path)
    return layer if layer in ours or first == "common" else None


def holds_code(folder, recursive=True):
    walk = os.walk(folder) if recursive else [(folder, None, os.listdir(folder))]
    return any(f.endswith(SOURCES) for _, _, files in walk for f in files)


def code_folders(root):
    """Each layer's folder: the top-level ones, and common/'s libraries one by one (common/
    itself holds no code: a file there is in no layer)."""
    for name in sorted(os.listdir(root)):
        if name.startswith(".") or name in NOT_LAYERS or name.startswith("build"):
            continue
        folder = os.path.join(root, name)
        if not os.path.isdir(folder) or not holds_code(folder):
            continue
        if name != "common":
            yield name
            continue
        if holds_code(folder, recursive=False):
            yield name
        for library in sorted(os.listdir(folder)):
            if os.path.isdir(os.path.join(folder, library)) and holds_code(
                    os.path.join(folder, library)):
                yield "common/" + library


def check(root):
    problems = []
    protos = generated_proto_folders(root)
    for folder in code_folders(root):
        if folder not in ALLOWED:
            problems.append(f"{folder}/: a folder of C++ that is in no layer: add it to ALLOWED in "
                            f"scripts/check-layers.py with the folders it may include")
            continue
        for directory, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        match = INCLUDE.match(line)
                        if not match:
                            continue
                        layer = layer_of_include(match.group(1), ALLOWED, protos)
                        if layer in (None, folder) or layer in ALLOWED[folder]:
                            continue
                        may = ", ".join(sorted(ALLOWED[folder])) or "nothing of ours"
                        problems.append(f"{os.path.relpath(path, root)}:{number}: includes "
                                        f'"{match.group(1)}", but {folder}/ may include only '
                                        f"{may} (scripts/check-layers.py)")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems = check(root)
    for problem in problems:
        print(f"layers: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
