// Validates the rendered manifests of deploy/ (tests/deploy/check_manifests.sh renders them with `kubectl kustomize`):
//   1. every object against its schema: Kubernetes' own with the npm package kubernetes-models; ScaledObject
//      (KEDA) and ServiceMonitor (prometheus-operator) with their CRDs' schemas from @kubernetes-models/keda and
//      @kubernetes-models/prometheus-operator; KServe's ServingRuntime and InferenceService have no such package,
//      so their required fields are checked by hand (structurally) below.
//      These schemas allow unknown fields (as the API server does without strict field validation), so every field
//      the deployment relies on is asserted by name below, and a misspelt one is found missing.
//   2. what the deployment needs, against the sources it depends on: the flags in `steadyocr serve --help` and
//      `steadyocr doctor --help`, the routes and model name of src/server, the metric of the HPA, the image's uid.
//
//   node validate.cjs NODE_MODULES RENDERED_DIR REPO SERVE_HELP DOCTOR_HELP
// RENDERED_DIR holds one NAME.yaml per kustomization (base, overlays-keda, ..., kserve). Exit 1 on any failure.
"use strict";
const fs = require("fs");
const path = require("path");
const { createRequire } = require("module");

const [nodeModules, renderedDir, repo, serveHelpFile, doctorHelpFile] = process.argv.slice(2);
if (!doctorHelpFile) {
  console.error("usage: node validate.cjs NODE_MODULES RENDERED_DIR REPO SERVE_HELP DOCTOR_HELP");
  process.exit(2);
}
const req = createRequire(path.join(path.resolve(nodeModules), "noop.js"));
const YAML = req("yaml");

// --- facts from the sources the manifests must agree with
const read = (p) => fs.readFileSync(path.join(repo, p), "utf8");
const flagsOf = (text) => new Set(text.match(/--[a-z][a-z0-9-]*/g) || []);
const serveFlags = flagsOf(fs.readFileSync(serveHelpFile, "utf8"));
const doctorFlags = flagsOf(fs.readFileSync(doctorHelpFile, "utf8"));
const modelName = (read("src/server/routes_oip.cpp").match(/kModel = "([^"]+)"/) || [])[1];
const serverRoutes = new Set(
  ["src/server/routes_health.cpp", "src/server/routes_oip.cpp"].flatMap((f) =>
    [...read(f).matchAll(/http\.(?:Get|Post)\("([^"]+)"/g)].map((m) => m[1])));
const metricsSource = read("src/server/server_metrics.cpp") + read("src/server/http_server.cpp");
const buildImage = read("scripts/build_image.sh");
const imageUid = Number((buildImage.match(/^APP_UID=(\d+)/m) || [])[1]);
const imagePort = Number((buildImage.match(/^PORT=(\d+)/m) || [])[1]);
// Device memory per GPU resource, MiB: the H200 as `steadyocr doctor` reports it (docs/DOCTOR.md: 143155 MiB), the
// H100 80GB as NVML does (81559 MiB), MIG slices at their nominal size (the profile's GB). Shared GPUs: the card
// divided by the replicas of the device plugin's configuration (deploy/cluster/nvidia-device-plugin).
const CARD_MIB = { "NVIDIA-H200": 143155, "NVIDIA-H100-80GB-HBM3": 81559 };
const MIG_MIB = (res) => {
  const m = res.match(/^nvidia\.com\/mig-\d+g\.(\d+)gb$/);
  return m ? (Number(m[1]) * 1e9) / 2 ** 20 : null;
};

// --- results
let failures = 0;
let passed = 0;
function check(where, cond, message) {
  if (cond) {
    passed++;
  } else {
    failures++;
    console.log(`FAIL ${where}: ${message}`);
  }
}

// --- 1. schemas
const CORE_MODELS = {
  "v1/Namespace": "kubernetes-models/v1/Namespace",
  "v1/ServiceAccount": "kubernetes-models/v1/ServiceAccount",
  "v1/Service": "kubernetes-models/v1/Service",
  "v1/ConfigMap": "kubernetes-models/v1/ConfigMap",
  "apps/v1/Deployment": "kubernetes-models/apps/v1/Deployment",
  "batch/v1/CronJob": "kubernetes-models/batch/v1/CronJob",
  "policy/v1/PodDisruptionBudget": "kubernetes-models/policy/v1/PodDisruptionBudget",
  "autoscaling/v2/HorizontalPodAutoscaler": "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler",
  "monitoring.coreos.com/v1/ServiceMonitor": "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor",
  "keda.sh/v1alpha1/ScaledObject": "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject",
};
// KServe (no schema package): the fields its CRDs require, and the ones KServe needs to start the runtime.
const STRUCTURAL = {
  "serving.kserve.io/v1alpha1/ServingRuntime": (o, where) => {
    const s = o.spec || {};
    check(where, Array.isArray(s.containers) && s.containers.length > 0, "spec.containers is required (non-empty)");
    for (const c of s.containers || []) {
      check(where, typeof c.name === "string" && c.name, "every container needs a name");
      check(where, typeof c.image === "string" && c.image, `container ${c.name}: image is required`);
    }
    check(where, Array.isArray(s.supportedModelFormats) && s.supportedModelFormats.every((f) => typeof f.name === "string"),
      "spec.supportedModelFormats[].name is required");
    check(where, (s.protocolVersions || []).every((v) => ["v1", "v2", "grpc-v1", "grpc-v2"].includes(v)),
      `spec.protocolVersions must be v1, v2, grpc-v1 or grpc-v2: ${JSON.stringify(s.protocolVersions)}`);
  },
  "serving.kserve.io/v1beta1/InferenceService": (o, where) => {
    const p = (o.spec || {}).predictor;
    check(where, p && typeof p === "object", "spec.predictor is required");
    const m = (p || {}).model || {};
    check(where, m.modelFormat && typeof m.modelFormat.name === "string", "spec.predictor.model.modelFormat.name is required");
    check(where, ["v1", "v2", "grpc-v1", "grpc-v2"].includes(m.protocolVersion),
      `spec.predictor.model.protocolVersion must be one of KServe's: ${m.protocolVersion}`);
  },
};

function validateSchema(o, where) {
  const key = `${o.apiVersion}/${o.kind}`;
  check(where, o.metadata && typeof o.metadata.name === "string" && o.metadata.name, "metadata.name is required");
  if (CORE_MODELS[key]) {
    const Model = Object.values(req(CORE_MODELS[key]))[0];
    try {
      new Model(o).validate();
      passed++;
    } catch (e) {
      check(where, false, `schema of ${key}: ${e.message}`);
    }
  } else if (STRUCTURAL[key]) {
    STRUCTURAL[key](o, where);
  } else {
    check(where, false, `no schema known for ${key}: add it to tests/deploy/validate.cjs`);
  }
}

// --- 2. what the deployment needs
const argValue = (args, flag) => {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
};
const subset = (sel, labels) => Object.entries(sel || {}).every(([k, v]) => (labels || {})[k] === v);
const gpuResources = (res) => Object.keys((res || {}).limits || {}).filter((k) => k.startsWith("nvidia.com/"));
const cpuCores = (q) => (String(q).endsWith("m") ? Number(String(q).slice(0, -1)) / 1000 : Number(q));

function checkFlags(where, args, known, what) {
  for (const a of args.filter((x) => /^--/.test(x))) check(where, known.has(a), `${a} is not a flag of ${what}`);
}

// The GPU's memory for this resource and node selector, MiB, and how many pods share it.
function sliceMib(res, nodeSelector, sharing) {
  const card = CARD_MIB[(nodeSelector || {})["nvidia.com/gpu.product"]];
  if (res === "nvidia.com/gpu") return card;
  if (res === "nvidia.com/gpu.shared") return sharing ? card / sharing : undefined;
  return MIG_MIB(res);
}

function checkServerContainer(where, c, pod, sharing, opts = {}) {
  const args = c.args || [];
  checkFlags(where, args, serveFlags, "steadyocr serve --help");
  check(where, argValue(args, "--host") === "0.0.0.0", "--host 0.0.0.0 (else the kubelet and the Service cannot reach it)");
  const port = Number(argValue(args, "--port"));
  check(where, port === imagePort, `--port ${port} is not the image's ${imagePort} (its HEALTHCHECK)`);
  check(where, (c.ports || []).some((p) => p.containerPort === port), `no containerPort ${port}`);
  check(where, argValue(args, "--models") === "/opt/steadyocr/models", "--models /opt/steadyocr/models (in the image)");
  check(where, args.includes("--require-gpu"), "--require-gpu: a GPU deployment must not serve from the CPU silently");
  const env = Object.fromEntries((c.env || []).map((e) => [e.name, e.value]));
  check(where, env.NVIDIA_DRIVER_CAPABILITIES === "compute,utility,graphics",
    `env NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics (is ${env.NVIDIA_DRIVER_CAPABILITIES})`);
  const res = c.resources || {};
  for (const k of ["cpu", "memory"]) {
    check(where, (res.requests || {})[k] !== undefined, `resources.requests.${k} is missing`);
    check(where, (res.limits || {})[k] !== undefined, `resources.limits.${k} is missing`);
  }
  const gpus = gpuResources(res);
  check(where, gpus.length === 1, `exactly one GPU resource in limits: ${JSON.stringify(gpus)}`);
  const gpu = gpus[0];
  check(where, (res.limits || {})[gpu] === 1, `limits ${gpu}: 1 (is ${(res.limits || {})[gpu]})`);
  check(where, (res.requests || {})[gpu] === undefined || (res.requests || {})[gpu] === 1, `requests ${gpu} must equal limits`);
  const threads = Number(argValue(args, "--threads"));
  check(where, threads >= 1 && threads <= cpuCores((res.limits || {}).cpu),
    `--threads ${threads} must be set and within the CPU limit ${(res.limits || {}).cpu} (all cores would be the node's)`);
  // --gpu-mem: within the GPU share, with room for the CUDA contexts; shares' budgets fit the card together.
  const budget = Number(argValue(args, "--gpu-mem"));
  const slice = sliceMib(gpu, pod.nodeSelector, sharing);
  check(where, slice > 0, `no memory size known for ${gpu} on ${JSON.stringify(pod.nodeSelector)} (sharing ${sharing})`);
  check(where, budget > 0.5 * slice && budget <= 0.92 * slice,
    `--gpu-mem ${budget} MB should be 50-92% of the ${Math.round(slice)} MiB of ${gpu} (room for the contexts)`);
  if (gpu === "nvidia.com/gpu.shared") {
    check(where, sharing > 1, "a shared GPU resource without a device-plugin sharing configuration");
    check(where, (pod.nodeSelector || {})["nvidia.com/gpu.sharing-strategy"] !== undefined,
      "a shared GPU pod must select its sharing strategy (nodeSelector nvidia.com/gpu.sharing-strategy)");
  }
  // tolerations
  check(where, (pod.tolerations || []).some((t) => t.key === "nvidia.com/gpu" && t.operator === "Exists" && t.effect === "NoSchedule"),
    "toleration nvidia.com/gpu (Exists, NoSchedule)");
  // probes
  const sp = c.startupProbe || {};
  const cmd = (sp.exec || {}).command || [];
  check(where, /\/steadyocr$/.test(cmd[0] || "") && cmd[1] === "doctor" && argValue(cmd, "--level") === "3",
    `startupProbe must exec 'steadyocr doctor --level 3': ${JSON.stringify(cmd)}`);
  checkFlags(where, cmd.slice(2), doctorFlags, "steadyocr doctor --help");
  check(where, argValue(cmd, "--models") === "/opt/steadyocr/models", "the startup doctor checks the real models' convolutions (--models)");
  check(where, (sp.failureThreshold || 3) * (sp.periodSeconds || 10) >= 300,
    `startupProbe failureThreshold x periodSeconds = ${(sp.failureThreshold || 3) * (sp.periodSeconds || 10)} s < 300 s to load the models`);
  check(where, (sp.timeoutSeconds || 1) >= 60, `startupProbe timeoutSeconds ${sp.timeoutSeconds} < 60 (a doctor check may take 60 s)`);
  const portOk = (p) => p === port || (c.ports || []).some((x) => x.name === p && x.containerPort === port);
  const rp = (c.readinessProbe || {}).httpGet || {};
  check(where, rp.path === (opts.readyPath || "/readyz") && serverRoutes.has(rp.path) && portOk(rp.port),
    `readinessProbe httpGet ${opts.readyPath || "/readyz"} on the server's port: ${JSON.stringify(rp)}`);
  const lp = (c.livenessProbe || {}).httpGet || {};
  check(where, lp.path === (opts.livePath || "/livez") && serverRoutes.has(lp.path) && portOk(lp.port),
    `livenessProbe httpGet ${opts.livePath || "/livez"} on the server's port: ${JSON.stringify(lp)}`);
  // non-root, as the image
  const psc = pod.securityContext || {};
  const csc = c.securityContext || {};
  check(where, (csc.runAsNonRoot ?? psc.runAsNonRoot) === true, "runAsNonRoot: true");
  check(where, (csc.runAsUser ?? psc.runAsUser) === imageUid, `runAsUser ${csc.runAsUser ?? psc.runAsUser} is not the image's uid ${imageUid}`);
  check(where, csc.allowPrivilegeEscalation === false, "allowPrivilegeEscalation: false");
  check(where, csc.readOnlyRootFilesystem === true, "readOnlyRootFilesystem: true");
  check(where, ((csc.capabilities || {}).drop || []).includes("ALL"), "capabilities drop ALL");
  check(where, (c.volumeMounts || []).some((m) => m.mountPath === "/tmp"), "a writable /tmp (HOME of the image) under the read-only root");
  return { gpu, budget, args };
}

function checkAppSet(name, objs) {
  const by = (kind) => objs.filter((o) => o.kind === kind);
  const one = (kind) => {
    const l = by(kind);
    check(name, l.length === 1, `exactly one ${kind} (found ${l.length})`);
    return l[0] || {};
  };
  const dep = one("Deployment");
  const where = `${name}: Deployment/${(dep.metadata || {}).name}`;
  const pod = ((dep.spec || {}).template || {}).spec || {};
  const podLabels = (((dep.spec || {}).template || {}).metadata || {}).labels || {};
  const c = (pod.containers || [])[0] || {};
  // the sharing configuration this overlay expects (deploy/cluster/nvidia-device-plugin)
  const strategy = (pod.nodeSelector || {})["nvidia.com/gpu.sharing-strategy"];
  const sharing = strategy ? SHARING_REPLICAS[strategy] : undefined;
  const server = checkServerContainer(where, c, pod, sharing);
  for (const k of ["app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component"])
    check(where, podLabels[k] !== undefined, `pod label ${k}`);
  check(where, subset(((dep.spec || {}).selector || {}).matchLabels, podLabels), "selector matches the pod labels");
  const drain = Number(argValue(server.args, "--drain-s"));
  const preStop = ((((c.lifecycle || {}).preStop || {}).exec || {}).command || []).map(Number).find((x) => x > 0) || 0;
  check(where, pod.terminationGracePeriodSeconds >= drain + preStop + 5,
    `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} < preStop ${preStop} + --drain-s ${drain} + 5`);
  check(where, (dep.spec || {}).replicas >= 2, "at least 2 replicas (the PodDisruptionBudget lets one go)");

  for (const o of objs) {
    const w = `${name}: ${o.kind}/${(o.metadata || {}).name}`;
    const l = (o.metadata || {}).labels || {};
    check(w, l["app.kubernetes.io/part-of"] === "steadyocr", "label app.kubernetes.io/part-of: steadyocr");
    if (o.kind !== "Namespace") {
      check(w, l["app.kubernetes.io/name"] === "steadyocr", "label app.kubernetes.io/name: steadyocr");
      check(w, (o.metadata || {}).namespace === "steadyocr", `namespace steadyocr (is ${(o.metadata || {}).namespace})`);
    }
  }
  const svc = one("Service");
  check(`${name}: Service`, subset((svc.spec || {}).selector, podLabels), "the Service selects the server pods");
  check(`${name}: Service`, ((svc.spec || {}).ports || []).some((p) => p.name === "http" && (p.targetPort === "http" || p.targetPort === imagePort)),
    "port http to the container's http port");
  const pdb = one("PodDisruptionBudget");
  check(`${name}: PodDisruptionBudget`, subset(((pdb.spec || {}).selector || {}).matchLabels, podLabels), "selects the server pods");
  check(`${name}: PodDisruptionBudget`, (pdb.spec || {}).maxUnavailable === 1 || (pdb.spec || {}).minAvailable >= 1, "keeps one server");
  const sm = one("ServiceMonitor");
  check(`${name}: ServiceMonitor`, subset(((sm.spec || {}).selector || {}).matchLabels, (svc.metadata || {}).labels), "selects the Service");
  check(`${name}: ServiceMonitor`, ((sm.spec || {}).endpoints || []).some((e) => e.port === "http" && e.path === "/metrics" && serverRoutes.has(e.path)),
    "scrapes port http, path /metrics");
  // autoscaling: the HPA (base and GPU-sharing overlays) or KEDA's ScaledObject (overlays/keda), never both
  const hpas = by("HorizontalPodAutoscaler");
  const sos = by("ScaledObject");
  check(name, hpas.length + sos.length === 1, `exactly one autoscaler (HPA ${hpas.length}, ScaledObject ${sos.length})`);
  check(name, metricsSource.includes('"steadyocr_queue_depth"'), "the server exports steadyocr_queue_depth");
  for (const h of hpas) {
    const w = `${name}: HorizontalPodAutoscaler`;
    const s = h.spec || {};
    check(w, (s.scaleTargetRef || {}).kind === "Deployment" && s.scaleTargetRef.name === dep.metadata.name, "targets the Deployment");
    const m = (s.metrics || [])[0] || {};
    check(w, m.type === "Pods" && ((m.pods || {}).metric || {}).name === "steadyocr_queue_depth",
      `a Pods metric steadyocr_queue_depth: ${JSON.stringify(m)}`);
    check(w, ((m.pods || {}).target || {}).type === "AverageValue" && Number(m.pods.target.averageValue) > 0 &&
      Number(m.pods.target.averageValue) < Number(argValue(server.args, "--max-queue")), "average queue target below --max-queue");
    check(w, s.minReplicas >= 2 && s.maxReplicas > s.minReplicas, `minReplicas ${s.minReplicas} >= 2 < maxReplicas ${s.maxReplicas}`);
    check(w, ADAPTER_METRICS.has(((m.pods || {}).metric || {}).name), "prometheus-adapter serves this metric (deploy/monitoring/prometheus-adapter)");
  }
  for (const so of sos) {
    const w = `${name}: ScaledObject`;
    const s = so.spec || {};
    check(w, (s.scaleTargetRef || {}).name === dep.metadata.name, "targets the Deployment");
    const t = (s.triggers || [])[0] || {};
    check(w, t.type === "prometheus" && /steadyocr_queue_depth/.test((t.metadata || {}).query || "") && Number((t.metadata || {}).threshold) > 0,
      `a prometheus trigger on steadyocr_queue_depth with a threshold: ${JSON.stringify(t)}`);
    check(w, s.minReplicaCount >= 2, "minReplicaCount >= 2 (the PodDisruptionBudget)");
  }
  // the daily doctor
  const cj = one("CronJob");
  const w = `${name}: CronJob/${(cj.metadata || {}).name}`;
  const js = (((cj.spec || {}).jobTemplate || {}).spec || {});
  const jpod = (js.template || {}).spec || {};
  const jc = (jpod.containers || [])[0] || {};
  const f = String((cj.spec || {}).schedule || "").trim().split(/\s+/);
  check(w, f.length === 5 && /^\d+$/.test(f[0]) && /^\d+$/.test(f[1]) && f.slice(2).every((x) => x === "*"), `a daily schedule: ${cj.spec.schedule}`);
  check(w, (cj.spec || {}).concurrencyPolicy === "Forbid", "concurrencyPolicy Forbid");
  check(w, jpod.restartPolicy === "Never" && js.backoffLimit === 0, "restartPolicy Never, backoffLimit 0 (a failure is the finding)");
  const cmd = jc.command || [];
  const sep = cmd.indexOf("--");
  check(w, /doctor_metrics\.py$/.test(cmd[0] || "") && cmd.includes("--run") && sep > 0, "runs scripts/doctor_metrics.py --run -- DOCTOR");
  const doc = cmd.slice(sep + 1);
  check(w, /\/steadyocr$/.test(doc[0] || "") && doc[1] === "doctor" && Number(argValue(doc, "--level")) === 4, "the doctor at level 4");
  checkFlags(w, doc.slice(2), doctorFlags, "steadyocr doctor --help");
  check(w, fs.existsSync(path.join(repo, "scripts", path.basename(cmd[0] || "x"))), "the metrics script is the repository's (the image carries it)");
  check(w, argValue(doc, "--gpu-mem") === argValue(server.args, "--gpu-mem"), "layer 4 allocates the servers' --gpu-mem");
  const jenv = Object.fromEntries((jc.env || []).map((e) => [e.name, e]));
  check(w, ((jenv.NODE_NAME || {}).valueFrom || {}).fieldRef && jenv.NODE_NAME.valueFrom.fieldRef.fieldPath === "spec.nodeName", "NODE_NAME from spec.nodeName");
  check(w, /^https?:\/\//.test((jenv.PUSHGATEWAY_URL || {}).value || ""), "PUSHGATEWAY_URL set");
  check(w, (jenv.NVIDIA_DRIVER_CAPABILITIES || {}).value === "compute,utility,graphics", "NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics (graphics: the Vulkan ICD)");
  const jg = gpuResources(jc.resources);
  check(w, jg.length === 1 && jg[0] === server.gpu, `the same GPU resource as the servers (${server.gpu}): ${jg}`);
  check(w, JSON.stringify(jpod.nodeSelector) === JSON.stringify(pod.nodeSelector), "the servers' node selector (the same GPU)");
  check(w, (jpod.tolerations || []).some((t) => t.key === "nvidia.com/gpu"), "toleration nvidia.com/gpu");
  check(w, (jpod.securityContext || {}).runAsUser === imageUid && (jc.securityContext || {}).readOnlyRootFilesystem === true,
    "non-root (the image's uid), read-only root");
}

function checkKserve(name, objs) {
  const rt = objs.find((o) => o.kind === "ServingRuntime") || {};
  const isvc = objs.find((o) => o.kind === "InferenceService") || {};
  check(name, rt.kind && isvc.kind, "a ServingRuntime and an InferenceService");
  const w = `${name}: ServingRuntime/${(rt.metadata || {}).name}`;
  const s = rt.spec || {};
  check(w, (s.protocolVersions || []).includes("v2"), "protocolVersions has v2 (the server's /v2 routes)");
  for (const r of ["/v2/health/ready", "/v2/health/live"]) check(w, serverRoutes.has(r), `route ${r} in src/server`);
  check(w, /http\.Post\(model \+ "\/infer"/.test(read("src/server/routes_oip.cpp")), "POST /v2/models/{model}/infer in src/server");
  const c = (s.containers || [])[0] || {};
  const pod = { nodeSelector: ((isvc.spec || {}).predictor || {}).nodeSelector, tolerations: ((isvc.spec || {}).predictor || {}).tolerations,
    securityContext: {} };
  checkServerContainer(w, c, pod, undefined, { readyPath: "/v2/health/ready", livePath: "/v2/health/live" });
  const p = (isvc.spec || {}).predictor || {};
  const m = p.model || {};
  const wi = `${name}: InferenceService/${(isvc.metadata || {}).name}`;
  check(wi, m.protocolVersion === "v2", `protocolVersion v2 (is ${m.protocolVersion})`);
  check(wi, m.runtime === (rt.metadata || {}).name, `runtime ${m.runtime} is the ServingRuntime ${(rt.metadata || {}).name}`);
  check(wi, (s.supportedModelFormats || []).some((f) => f.name === (m.modelFormat || {}).name), "its modelFormat is one the runtime supports");
  check(wi, modelName && (isvc.metadata || {}).name === modelName,
    `named '${modelName}' as the server's one OIP model (src/server/routes_oip.cpp), so /v2/models/<name>/infer reaches it`);
  const g = gpuResources(m.resources);
  check(wi, g.length === 1 && m.resources.limits[g[0]] === 1, "one GPU in its resources");
  check(wi, (p.tolerations || []).some((t) => t.key === "nvidia.com/gpu"), "toleration nvidia.com/gpu");
}

// --- the cluster configurations the overlays depend on
const docs = {};
for (const f of fs.readdirSync(renderedDir).filter((f) => f.endsWith(".yaml")).sort()) {
  const text = fs.readFileSync(path.join(renderedDir, f), "utf8");
  const parsed = YAML.parseAllDocuments(text);
  const objs = [];
  for (const d of parsed) {
    if (d.errors.length) check(f, false, `YAML: ${d.errors[0].message}`);
    else if (d.contents) objs.push(d.toJS());
  }
  docs[f.replace(/\.yaml$/, "")] = objs;
}
const configMapData = (set, name) => ((docs[set] || []).find((o) => o.kind === "ConfigMap" && o.metadata.name === name) || {}).data || {};
const SHARING_REPLICAS = {};
for (const [key, text] of Object.entries(configMapData("cluster-nvidia-device-plugin", "steadyocr-gpu-sharing"))) {
  const c = YAML.parse(text);
  const where = `cluster-nvidia-device-plugin: ${key}`;
  check(where, c.version === "v1", "device-plugin config version v1");
  for (const strategy of ["timeSlicing", "mps"]) {
    const sh = ((c.sharing || {})[strategy]);
    if (!sh) continue;
    check(where, sh.renameByDefault === true, "renameByDefault: the shares are nvidia.com/gpu.shared, asked for on purpose");
    const r = (sh.resources || []).find((x) => x.name === "nvidia.com/gpu") || {};
    check(where, r.replicas > 1, "replicas > 1");
    SHARING_REPLICAS[strategy === "timeSlicing" ? "time-slicing" : "mps"] = r.replicas;
  }
}
const ADAPTER_METRICS = new Set();
{
  const cfg = configMapData("monitoring-prometheus-adapter", "prometheus-adapter")["config.yaml"];
  check("monitoring-prometheus-adapter", cfg, "ConfigMap prometheus-adapter with config.yaml");
  for (const r of (cfg ? YAML.parse(cfg).rules : []) || []) {
    const w = "monitoring-prometheus-adapter: rule";
    check(w, /steadyocr_queue_depth\{/.test(r.seriesQuery || ""), `seriesQuery of steadyocr_queue_depth: ${r.seriesQuery}`);
    const ov = (r.resources || {}).overrides || {};
    check(w, (ov.pod || {}).resource === "pod" && (ov.namespace || {}).resource === "namespace", "maps pod and namespace labels (a Pods metric)");
    check(w, /<<\.Series>>\{<<\.LabelMatchers>>\}/.test(r.metricsQuery || "") && /by \(<<\.GroupBy>>\)/.test(r.metricsQuery || ""), "metricsQuery per pod");
    ADAPTER_METRICS.add((r.name || {}).as);
  }
}

let sets = 0;
for (const [name, objs] of Object.entries(docs)) {
  for (const o of objs) validateSchema(o, `${name}: ${o.kind}/${(o.metadata || {}).name}`);
  if (name === "base" || name.startsWith("overlays-")) {
    checkAppSet(name, objs);
    sets++;
  } else if (name === "kserve") {
    checkKserve(name, objs);
    sets++;
  }
}
check("rendered", docs.base && docs.kserve && sets >= 7, `base, the overlays and kserve rendered (${Object.keys(docs).join(", ")})`);
const objects = Object.values(docs).reduce((n, l) => n + l.length, 0);
console.log(`validate: ${Object.keys(docs).length} kustomizations, ${objects} objects, ${passed} checks passed, ${failures} failed`);
process.exit(failures ? 1 : 0);
