#!/usr/bin/python3
"""ctest plugin_metrics_prometheus_parser: starts the real rdma-device-plugin on a fixture node,
scrapes its /metrics and parses the text with the Prometheus project's own Python client
(Debian's python3-prometheus-client, prometheus_client.parser), then checks the port counters
against the fixture's counter files: one counter family per file, `_total` samples labelled
device, port and netdev, port_xmit_data/port_rcv_data as `_bytes_total` at 4x the file (sysfs
counts 4-octet words), hw_counters/lifespan left out, the saturating legacy counters saying so
in their help text, the node checks as a StateSet, and the plugin's own metrics still there.

Usage: metrics_scrape.py PLUGIN_BINARY FIXTURE_DIR (e.g. build/fixtures/a100-roce)
       metrics_scrape.py --parse FILE: the same parser's reading of an exposition in FILE, as JSON
       (one object per family: name, type, help, samples [name, labels, value]), for the C++
       tests of the other daemons (test/dra/driver_process_test.cc)
"""
import json
import os
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
    plugin, node = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for d in ("kubelet", "registry-absent", "state"):
            os.makedirs(os.path.join(tmp, d), exist_ok=True)
        port = free_port()
        log = open(os.path.join(tmp, "plugin.log"), "w+")
        child = subprocess.Popen(
            [plugin, "--sysfs-root", node + "/sys", "--proc-root", node + "/proc",
             "--dev-root", node + "/dev", "--device-plugin-dir", tmp + "/kubelet",
             "--plugin-registry-dir", tmp + "/registry-absent/x", "--state-dir", tmp + "/state",
             "--metrics-address", "127.0.0.1:%d" % port],
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
            status, text = get("http://127.0.0.1:%d/metrics" % port)
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
    ib = os.path.join(node, "sys/class/infiniband")
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
