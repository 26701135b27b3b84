#!/usr/bin/env python3
"""ctest chart_equals_overlays: the Helm chart renders exactly what the kustomize overlays render.

For every overlay in manifests/overlays/ and its values file manifests/helm/kube-rdma/ci/
<overlay>-values.yaml, and for the test cluster's overlays (test/cluster/overlays/device-plugin,
dra, dra-shared-ports; not mixed, both drivers side by side, which the chart does not install)
and test/cluster/chart-values/*.yaml, it renders

    kubectl kustomize <overlay>
    helm template kube-rdma manifests/helm/kube-rdma -n kube-rdma -f <values> [--set-file ...]

and requires the same objects, keyed by (apiVersion, kind, namespace, name), with the same
content. Only the overlay's Namespace object is left out (the chart leaves the namespace to the
operator, as Helm charts do), and one thing is compared without its order: a pod's `volumes`,
which the API declares a map keyed by name (listType=map) and which only names refer to.
kustomize's strategic merge patches move the volumes they touch to the front (components/cdi's,
the test overlays' sys volume); a chart reproducing that would carry a kustomize artefact.
Arguments, environment and volume mounts keep their order.

The static-certs overlay and the test overlays get throw-away certificates, made with the real
scripts/gen-webhook-certs.sh in a copy of manifests/ (as test/manifests/run.sh does), and helm
gets the same PEM files with --set-file. Then `helm lint --strict` with each values file, and
values the chart must refuse, each with a message naming the problem.

Usage: chart_equals_overlays.py [--helm PATH] [--kubectl PATH]
Without them, the helm and kubectl of scripts/cluster-build.sh (built once, cached). Prints
PASS or FAIL per case; exits 1 if any failed.
"""

import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = "manifests/helm/kube-rdma"
RELEASE = "kube-rdma"
NAMESPACE = "kube-rdma"
PLUGIN_CONFIG = "test/cluster/overlays/common/plugin-config.json"
# The test cluster's overlays (test/cluster/overlays/<name>): the chart-values file and the
# extra arguments that make the chart render the same. `common` is the component they share.
TEST_CLUSTER_CASES = {
    "device-plugin": ("test/cluster/chart-values/device-plugin.yaml", []),
    "dra": ("test/cluster/chart-values/dra.yaml", []),
    "dra-shared-ports": ("test/cluster/chart-values/dra.yaml", ["--set", "dra.sharePorts=true"]),
}
# Test overlays the chart has no counterpart of, and why.
TEST_CLUSTER_ONLY = {
    "mixed": "the device plugin and the DRA driver side by side, on nodes the test cluster labels "
             "for each; the chart installs one driver",
}

results = []  # (name, passed)


def report(name, passed, detail=""):
    results.append((name, passed))
    print(f"{'PASS' if passed else 'FAIL'} {name}")
    if detail:
        print("    " + detail.rstrip("\n").replace("\n", "\n    "))
    sys.stdout.flush()


def run(cmd, **kwargs):
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, **kwargs)


def find_tools(args):
    if args.helm and args.kubectl:
        return args.helm, args.kubectl
    built = run(["scripts/cluster-build.sh"])
    if built.returncode != 0:
        sys.exit(f"FAIL scripts/cluster-build.sh exited {built.returncode}:\n{built.stderr}")
    bin_dir = Path(built.stdout.strip().splitlines()[-1])
    return args.helm or str(bin_dir / "helm"), args.kubectl or str(bin_dir / "kubectl")


def key_of(obj):
    meta = obj.get("metadata") or {}
    return (obj.get("apiVersion", ""), obj.get("kind", ""), meta.get("namespace", ""),
            meta.get("name", ""))


def normalise(obj):
    """Sorts a pod template's volumes by name; refuses two volumes of one name."""
    pod = (((obj.get("spec") or {}).get("template") or {}).get("spec")) or {}
    volumes = pod.get("volumes")
    if isinstance(volumes, list):
        names = [v.get("name") for v in volumes]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"{key_of(obj)}: volumes named twice: {duplicates}")
        pod["volumes"] = sorted(volumes, key=lambda v: v.get("name"))
    return obj


def objects(text, source, drop_namespace):
    """The documents of a render, keyed; the Namespace object left out when asked."""
    found = {}
    dropped = 0
    for doc in yaml.safe_load_all(text):
        if doc is None:
            continue
        if drop_namespace and doc.get("kind") == "Namespace" and doc.get("apiVersion") == "v1":
            dropped += 1
            continue
        key = key_of(doc)
        if key in found:
            raise ValueError(f"{source} renders {key} twice")
        found[key] = normalise(doc)
    if drop_namespace and dropped != 1:
        raise ValueError(f"{source} renders {dropped} Namespace objects, expected 1")
    return found


def dump(obj):
    return yaml.safe_dump(obj, sort_keys=True, default_flow_style=False, width=100)


def compare(name, overlay_text, chart_text):
    try:
        want = objects(overlay_text, "the overlay", drop_namespace=True)
        got = objects(chart_text, "the chart", drop_namespace=False)
    except (ValueError, yaml.YAMLError) as e:
        report(name, False, str(e))
        return
    problems = []
    for key in sorted(set(want) | set(got)):
        label = "/".join(k for k in key if k)
        if key not in got:
            problems.append(f"only in the overlay: {label}\n{dump(want[key])}")
        elif key not in want:
            problems.append(f"only in the chart: {label}\n{dump(got[key])}")
        elif want[key] != got[key]:
            diff = difflib.unified_diff(dump(want[key]).splitlines(), dump(got[key]).splitlines(),
                                        f"overlay {label}", f"chart {label}", lineterm="")
            problems.append("\n".join(diff))
    if problems:
        report(name, False, "\n".join(problems))
    else:
        report(name, True, f"{len(want)} objects equal")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--helm")
    parser.add_argument("--kubectl")
    args = parser.parse_args()
    helm, kubectl = find_tools(args)
    for tool in (helm, kubectl):
        if not os.access(tool, os.X_OK):
            sys.exit(f"FAIL {tool} is not an executable (scripts/cluster-build.sh builds it)")

    with tempfile.TemporaryDirectory(prefix="kube-rdma-chart-test.") as tmp:
        tmp = Path(tmp)
        # Helm's own files (cache, config) away from the user's.
        for var in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
            os.environ[var] = str(tmp / "helm" / var)

        # A copy of manifests/ and the test overlays, at the same relative places (the test
        # overlays name ../../../../manifests), with throw-away certificates for static-certs:
        # never the developer's certs/.
        shutil.copytree(REPO / "manifests", tmp / "manifests", ignore=shutil.ignore_patterns("helm"))
        shutil.copytree(REPO / "test/cluster/overlays", tmp / "test/cluster/overlays")
        certs = tmp / "manifests/overlays/static-certs/certs"
        shutil.rmtree(certs, ignore_errors=True)
        made = run([str(REPO / "scripts/gen-webhook-certs.sh"), "--out", str(certs)])
        if made.returncode != 0:
            sys.exit(f"FAIL scripts/gen-webhook-certs.sh exited {made.returncode}:\n{made.stderr}")
        tls = ["--set-file", f"webhook.tls.crt={certs / 'tls.crt'}",
               "--set-file", f"webhook.tls.key={certs / 'tls.key'}",
               "--set-file", f"webhook.tls.caCrt={certs / 'ca.crt'}"]

        # (case name, overlay directory, values file, extra helm arguments)
        cases = []
        values_dir = REPO / CHART / "ci"
        overlays = sorted(p.name for p in (REPO / "manifests/overlays").iterdir() if p.is_dir())
        for overlay in overlays:
            values = f"{CHART}/ci/{overlay}-values.yaml"
            if not (REPO / values).is_file():
                report(f"overlays/{overlay}", False, f"no values file {values}")
                continue
            extra = tls if overlay == "static-certs" else []
            cases.append((f"overlays/{overlay}", tmp / "manifests/overlays" / overlay, values, extra))
        for values in sorted(values_dir.glob("*-values.yaml")):
            overlay = values.name[: -len("-values.yaml")]
            if overlay not in overlays:
                report(f"ci/{values.name}", False, f"no overlay manifests/overlays/{overlay}")
        test_overlays = sorted(p.name for p in (REPO / "test/cluster/overlays").iterdir()
                               if p.is_dir() and p.name != "common"
                               and p.name not in TEST_CLUSTER_ONLY)
        for overlay in test_overlays:
            if overlay not in TEST_CLUSTER_CASES:
                report(f"test/cluster/overlays/{overlay}", False,
                       "no chart values for it in TEST_CLUSTER_CASES")
                continue
            values, extra = TEST_CLUSTER_CASES[overlay]
            cases.append((f"test/cluster/overlays/{overlay}", tmp / "test/cluster/overlays" / overlay,
                          values, extra + tls + ["--set-file", f"config.devicePlugin={PLUGIN_CONFIG}"]))

        for name, overlay_dir, values, extra in cases:
            built = run([kubectl, "kustomize", str(overlay_dir)])
            if built.returncode != 0:
                report(f"{name} = {values}", False, f"kubectl kustomize failed:\n{built.stderr}")
                continue
            rendered = run([helm, "template", RELEASE, CHART, "-n", NAMESPACE, "-f", values] + extra)
            if rendered.returncode != 0:
                report(f"{name} = {values}", False, f"helm template failed:\n{rendered.stderr}")
                continue
            compare(f"{name} = {' '.join([values] + [a for a in extra if a.startswith('dra.')])}",
                    built.stdout, rendered.stdout)

        # monitoring.*: manifests/monitoring's PodMonitor and PrometheusRule, as the files are.
        monitoring_dir = REPO / "manifests" / "monitoring"
        shipped = "".join("---\n" + (monitoring_dir / f).read_text()
                          for f in ("podmonitor.yaml", "prometheusrule.yaml"))
        rendered = run([helm, "template", RELEASE, CHART, "-n", NAMESPACE,
                        "--set", "monitoring.podMonitor=true",
                        "--set", "monitoring.prometheusRule=true",
                        "--show-only", "templates/monitoring.yaml"])
        if rendered.returncode != 0:
            report("monitoring.* = manifests/monitoring", False, rendered.stderr)
        else:
            # compare() drops the overlay's one Namespace object: the files have none.
            namespace = "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: kube-rdma}\n"
            compare("monitoring.* = manifests/monitoring", shipped + namespace, rendered.stdout)

        # helm lint --strict: the defaults, and each values file as the cases use it.
        lints = [("the defaults", [])]
        lints += [(values, ["-f", values] + extra) for _, _, values, extra in cases
                  if not any(a.startswith("dra.sharePorts") for a in extra)]
        for label, extra in lints:
            linted = run([helm, "lint", "--strict", CHART, "-n", NAMESPACE] + extra)
            report(f"helm lint --strict {label}", linted.returncode == 0,
                   "" if linted.returncode == 0 else linted.stdout + linted.stderr)

        # Values the chart must refuse, and a word the message must hold.
        refusals = [
            ("an unknown key", ["--set", "devicePlugin.cdl=true"], "cdl"),
            ("an unknown top-level key", ["--set", "nodeSelector.a=b"], "nodeSelector"),
            ("driver gpu", ["--set", "driver=gpu"], "driver"),
            ("devicePlugin.discovery auto", ["--set", "devicePlugin.discovery=auto"], "discovery"),
            ("dra.sharePorts without driver dra", ["--set", "dra.sharePorts=true"],
             "dra.sharePorts needs driver=dra"),
            ("dra.extendedResources without driver dra", ["--set", "dra.extendedResources=true"],
             "dra.extendedResources needs driver=dra"),
            ("devicePlugin.cdi with driver dra",
             ["--set", "driver=dra", "--set", "devicePlugin.cdi=true"], "devicePlugin.cdi"),
            ("static certificates without webhook.tls",
             ["--set", "webhook.certificates=static"], "webhook.tls.caCrt is empty"),
            ("static certificates without webhook.tls.key",
             ["--set", "webhook.certificates=static"] + tls[:2] + tls[4:], "webhook.tls.key is empty"),
            ("webhook.tls.key given base64",
             ["--set", "webhook.certificates=static"] + tls[:2] + tls[4:]
             + ["--set", "webhook.tls.key=LS0tLS1CRUdJTg=="], "webhook.tls.key is not PEM"),
            ("webhook.tls with certManager", tls[:2], "webhook.tls.* is used only"),
            ("an empty config.devicePlugin", ["-f", TEST_CLUSTER_CASES["dra"][0]] + tls,
             "/config/devicePlugin"),
            ("a relative hostSysfsPath", ["--set", "hostSysfsPath=sys"], "hostSysfsPath"),
        ]
        for label, extra, expected in refusals:
            refused = run([helm, "template", RELEASE, CHART, "-n", NAMESPACE] + extra)
            if refused.returncode == 0:
                report(f"refuses {label}", False, "helm template succeeded")
            elif expected not in refused.stderr:
                report(f"refuses {label}", False,
                       f"the message does not say {expected!r}:\n{refused.stderr}")
            else:
                said = [line for line in refused.stderr.splitlines() if expected in line]
                report(f"refuses {label}", True, said[0].strip())

    failed = [name for name, passed in results if not passed]
    print(f"\nchart_equals_overlays: {len(results) - len(failed)} passed, {len(failed)} failed")
    for name in failed:
        print(f"  FAILED {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
