// `npm run bench:secrets`: how much memory a namespace's unrelated Secrets cost the operator.
// The operator (compiled, with the image's Node flags) watches one namespace holding a few
// ComputeEndpoints; its resident memory is sampled idle, then again after 2,000 Secrets of 50 KB
// (about 100 MB of Helm releases, certificates and other tools' keys) appear beside them.
// The target: less than 20 MB of growth. Prints a Markdown table; `--secrets N`, `--kb N`.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { secretKind } from "../src/controllers/managed/credentials.ts";
import { KubeClient } from "../src/runtime/index.ts";
import { startEmulator } from "../tools/emulator/index.ts";
import { startLab } from "./bench/lab.ts";
import { startOperatorProcess } from "./bench/operator-process.ts";

const { values } = parseArgs({
  options: { secrets: { type: "string", default: "2000" }, kb: { type: "string", default: "50" } },
});
const count = Number(values.secrets);
const kb = Number(values.kb);
const namespace = "secrets-memory";
const mb = (bytes: number) => Math.round(bytes / 1e5) / 10;

const work = await mkdtemp(join(tmpdir(), "neon-secrets-memory-"));
const lab = await startLab(work);
const emulator = await startEmulator({
  rateLimits: false,
  operationDurationMs: 200,
  seed: { projects: [{ id: "proj-mem", name: "mem", branches: [{ id: "br-a", name: "a" }] }] },
});
try {
  await lab.createNamespace(namespace);
  await lab.createCredentialsSecret(namespace, "neon-api-key", emulator.bootstrapKey);
  const operator = await startOperatorProcess({
    build: lab.operator,
    kubeconfig: lab.operatorKubeconfig,
    namespace,
    platformUrl: emulator.url,
    credentialsSecret: `${namespace}/neon-api-key`,
    logFile: join(work, "operator.log"),
  });
  await lab.kubectl(
    ["apply", "-n", namespace, "-f", "-"],
    JSON.stringify({
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "ComputeEndpoint",
      metadata: { name: "mem-a" },
      spec: { projectId: "proj-mem", branchId: "br-a" },
    }),
  );
  // Settle, then the lowest of a few samples (a collection may be under way at any one).
  const settle = async (): Promise<number> => {
    await sleep(20_000);
    const samples: number[] = [];
    for (let i = 0; i < 5; i++) {
      samples.push(operator.sample()?.rssBytes ?? Number.NaN);
      await sleep(2_000);
    }
    return Math.min(...samples);
  };
  const before = await settle();

  const kube = new KubeClient(lab.adminKubeConfig);
  const payload = Buffer.alloc(kb * 1024, "x")
    .toString("base64")
    .slice(0, kb * 1024);
  for (let i = 0; i < count; i += 25) {
    await Promise.all(
      Array.from({ length: Math.min(25, count - i) }, (_, j) =>
        kube.create(secretKind, {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: `unrelated-${i + j}`, namespace },
          data: { blob: payload },
        }),
      ),
    );
  }
  const after = await settle();
  const rows = [
    ["Secrets added", `${count} of ${kb} KB (${mb(count * kb * 1024)} MB in all)`],
    ["Operator RSS before (idle, one ComputeEndpoint)", `${mb(before)} MB`],
    ["Operator RSS after", `${mb(after)} MB`],
    ["Growth (target < 20 MB)", `${mb(after - before)} MB`],
  ];
  process.stdout.write(
    ["| Measure | Value |", "| --- | --- |", ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join("\n") + "\n",
  );
  await operator.stop();
} finally {
  await emulator.close();
  await lab.stop();
  await rm(work, { recursive: true, force: true });
}
