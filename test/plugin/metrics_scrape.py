#!/usr/bin/python3
"""ctest plugin_metrics_prometheus_parser: starts the real rdma-device-plugin on a fixture node,
scrapes its /metrics and parses the text with the Prometheus project's own Python client
(Debian's python3-prometheus-client, prometheus_client.parser), then checks the port counters
against the fixture's counter files: one counter family per file, `_total` samples labelled
device, port and netdev, port_xmit_data/port_rcv_data as `_bytes_total` at 4x the file (sysfs
counts 4-octet words), hw_counters/lifespan left out, the saturating legacy counters saying so
in their help text, the node checks as a StateSet (judged again when the config changes, not per
scrape), and the plugin's own metrics still there.

Usage: metrics_scrape.py PLUGIN_BINARY FIXTURE_DIR (e.g. build/fixtures/a100-roce)
       metrics_scrape.py --parse FILE: the same parser's reading of an exposition in FILE, as JSON
       (one object per family: name, type, help, samples [name, labels, value]), for the C++
       tests of the other daemons (test/dra/driver_process_test.cc)
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

DEADLINE_S = 30  # to start up, not a speed check


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status, r.read().decode()
    except OSError:
        return None, ""


# Two configs the plugin reloads between: the exclusive pool on every RoCE NIC, then on four.
CONFIG = ('{"version": "v1", "pools": [{"resourceName": "example.com/hca", "mode": "exclusive", '
          '"selector": {"linkLayer": "Ethernet", "deviceNames": ["%s"]}}]}')


def publish(config_dir, version, text):
    """Writes a config as the kubelet updates a mounted ConfigMap: a new ..<version> directory,
    the ..data symlink swapped to it, config.json pointing through ..data."""
    os.makedirs(os.path.join(config_dir, "..v%d" % version))
    with open(os.path.join(config_dir, "..v%d" % version, "config.json"), "w") as f:
        f.write(text)
    os.symlink("..v%d" % version, os.path.join(config_dir, "..data_tmp"))
    os.rename(os.path.join(config_dir, "..data_tmp"), os.path.join(config_dir, "..data"))
    if not os.path.islink(os.path.join(config_dir, "config.json")):
        os.symlink("..data/config.json", os.path.join(config_dir, "config.json"))


def node_check_lines(text):
    return [l for l in text.splitlines() if l.startswith("kube_rdma_node_check{")]


def metric_name(source, name):
    if source == "hw_counters":
        return "kube_rdma_port_hw_" + name.lower() + "_total"
    data = name in ("port_xmit_data", "port_rcv_data")
    stem = name[len("port_"):] if name.startswith("port_") else name
    return "kube_rdma_port_" + stem.lower() + ("_bytes" if data else "") + "_total"


def parse_to_json(path):
    with open(path) as f:
        families = text_string_to_metric_families(f.read())
        print(json.dumps([{"name": family.name, "type": family.type, "help": family.documentation,
                           "samples": [[s.name, s.labels, s.value] for s in family.samples]}
                          for family in families]))
    return 0


def main():
    if sys.argv[1] == "--parse":
        return parse_to_json(sys.argv[2])
    plugin, fixture = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for d in ("kubelet", "registry-absent", "state", "config"):
            os.makedirs(os.path.join(tmp, d), exist_ok=True)
        # A private copy: the test changes files the node checks read.
        node = os.path.join(tmp, "node")
        shutil.copytree(fixture, node, symlinks=True)
        config_dir = os.path.join(tmp, "config")
        publish(config_dir, 1, CONFIG % "mlx5_*")
        port = free_port()
        log = open(os.path.join(tmp, "plugin.log"), "w+")
        child = subprocess.Popen(
            [plugin, "--sysfs-root", node + "/sys", "--proc-root", node + "/proc",
             "--dev-root", node + "/dev", "--device-plugin-dir", tmp + "/kubelet",
             "--plugin-registry-dir", tmp + "/registry-absent/x", "--state-dir", tmp + "/state",
             "--config", config_dir + "/config.json", "--metrics-address", "127.0.0.1:%d" % port],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            end = time.time() + DEADLINE_S
            while get("http://127.0.0.1:%d/healthz" % port)[0] != 200:
                if time.time() > end or child.poll() is not None:
                    log.seek(0)
                    print(log.read())
                    print("FAIL the plugin never answered /healthz")
                    return 1
                time.sleep(0.1)
            metrics = "http://127.0.0.1:%d/metrics" % port
            status, text = get(metrics)
            # The node checks are judged when the config or the devices change, not per scrape:
            # translating IOMMU groups (a fail with nvidia_peermem loaded) show after a reload.
            groups = os.path.join(node, "sys/kernel/iommu_groups")
            for group in os.listdir(groups):
                with open(os.path.join(groups, group, "type"), "w") as f:
                    f.write("DMA\n")
            again = node_check_lines(get(metrics)[1])
            if again != node_check_lines(text):
                failures.append("a second scrape judged the node checks again: %s" % sorted(
                    set(again) ^ set(node_check_lines(text))))
            publish(config_dir, 2, CONFIG % "mlx5_[1-4]")
            end = time.time() + DEADLINE_S
            while 'kube_rdma_node_check{check="iommu",state="fail"} 1' not in get(metrics)[1]:
                if time.time() > end or child.poll() is not None:
                    failures.append("the iommu check did not fail after a config reload")
                    break
                time.sleep(0.1)
        finally:
            child.send_signal(signal.SIGTERM)
            code = child.wait(timeout=DEADLINE_S)
        if code != 0:
            failures.append("the plugin exited %d after SIGTERM" % code)
    if status != 200:
        print("FAIL /metrics answered %s" % status)
        return 1

    families = {}
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            families[s.name] = family
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value

    checked = 0
    ib = os.path.join(fixture, "sys/class/infiniband")  # the copy is gone; its counters were these
    for device in sorted(os.listdir(ib)):
        ports = os.path.join(ib, device, "ports")
        for p in sorted(os.listdir(ports)):
            for source in ("counters", "hw_counters"):
                d = os.path.join(ports, p, source)
                for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                    metric = metric_name(source, name)
                    keys = [k for k in samples if k[0] == metric and
                            dict(k[1]).get("device") == device and dict(k[1]).get("port") == p]
                    if name == "lifespan":
                        if keys:
                            failures.append("%s: hw_counters/lifespan (a setting) exported"
                                            % device)
                        continue
                    if len(keys) != 1:
                        failures.append("%s port %s %s/%s: %d samples of %s" % (
                            device, p, source, name, len(keys), metric))
                        continue
                    if set(dict(keys[0][1])) != {"device", "port", "netdev"}:
                        failures.append("%s: labels %s" % (metric, dict(keys[0][1])))
                    family = families[metric]
                    if family.type != "counter":
                        failures.append("%s: typed %s" % (metric, family.type))
                    with open(os.path.join(d, name)) as f:
                        raw = int(f.read())
                    want = raw * 4 if metric.endswith("_bytes_total") else raw
                    if samples[keys[0]] != want:
                        failures.append("%s{device=%s,port=%s} = %r, want %d (file %d)" % (
                            metric, device, p, samples[keys[0]], want, raw))
                    checked += 1
    if "_bytes_total" not in text or checked == 0:
        failures.append("no port counter was checked")
    help_of = {f.name: f.documentation for f in text_string_to_metric_families(text)}
    for name, width in (("kube_rdma_port_symbol_error", "16-bit"),
                        ("kube_rdma_port_link_downed", "8-bit")):
        if "saturates" not in help_of.get(name, "") or width not in help_of.get(name, ""):
            failures.append("%s: help does not say it saturates: %r" % (name, help_of.get(name)))
    # The plugin's own metrics beside them (without a kubelet only the device gauge has series).
    devices = [f for f in text_string_to_metric_families(text)
               if f.name == "kube_rdma_plugin_devices"]
    if not devices or devices[0].type != "gauge" or not devices[0].samples:
        failures.append("kube_rdma_plugin_devices (gauge) missing")
    # The node checks as a StateSet: four states per check, exactly one of them 1; the healthy
    # A100 fixture fails and warns on none of them.
    checks = {}
    for f in text_string_to_metric_families(text):
        if f.name == "kube_rdma_node_check":
            if f.type != "gauge":
                failures.append("kube_rdma_node_check typed %s" % f.type)
            for s in f.samples:
                checks.setdefault(s.labels["check"], {})[s.labels["state"]] = s.value
    if "pcie-link" not in checks or "gpudirect-rdma" not in checks:
        failures.append("kube_rdma_node_check lacks pcie-link or gpudirect-rdma: %s" % sorted(checks))
    for check, states in sorted(checks.items()):
        if set(states) != {"ok", "warn", "fail", "unknown"} or sorted(states.values()) != [0, 0, 0, 1]:
            failures.append("kube_rdma_node_check{check=%s}: %s" % (check, states))
        elif states["warn"] or states["fail"]:
            failures.append("the healthy fixture: check %s is %s" % (
                check, [k for k, v in states.items() if v][0]))
    for f in failures:
        print("FAIL " + f)
    print("%d port counters checked, %d failures" % (checked, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
