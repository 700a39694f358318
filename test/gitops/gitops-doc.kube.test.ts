// docs/gitops.md's examples as printed, against the operator as installed (its key in a namespace
// of its own, so that it serves the team's namespace only where a CredentialsGrant says so) and
// the emulator: the team's resources alone are NotGranted; with the page's grant they are Ready,
// the ApiKey's key in its Secret.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { loadConfig } from "../../src/config.ts";
import { startOperator, type RunningOperator } from "../../src/operator.ts";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { applyCredentialsSecret } from "../support/credentials.ts";
import { adminKubeConfig, createNamespace, eventually, kubectl } from "../support/kube.ts";
import { LogCapture } from "../support/operator.ts";

const repoRoot = join(import.meta.dirname, "..", "..");

interface Doc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: Record<string, unknown>;
}

/** The YAML blocks of docs/gitops.md, as the text a reader copies. */
async function yamlBlocks(): Promise<string[]> {
  const page = await readFile(join(repoRoot, "docs", "gitops.md"), "utf8");
  return [...page.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
}

/** The block whose objects include one of `kind`. */
function blockWith(blocks: string[], kind: string): string {
  const block = blocks.find((b) =>
    parseAllDocuments(b).some((d) => (d.toJSON() as Doc | null)?.kind === kind),
  );
  if (!block) throw new Error(`docs/gitops.md has no YAML block with a ${kind}`);
  return block;
}

describe("docs/gitops.md's resources and grant, as printed", () => {
  let emulator: Emulator;
  let operator: RunningOperator | undefined;
  let operatorNamespace: string;
  let resources: string;
  let grant: string;
  let team: string;
  const logs = new LogCapture();

  const ready = async (kind: string, name: string) => {
    const obj = JSON.parse(await kubectl(["get", kind, name, "-n", team, "-o", "json"])) as {
      status?: { conditions?: { type: string; status: string; reason: string }[] };
    };
    return obj.status?.conditions?.find((c) => c.type === "Ready");
  };

  beforeAll(async () => {
    const blocks = await yamlBlocks();
    resources = blockWith(blocks, "ApiKey");
    grant = blockWith(blocks, "CredentialsGrant");
    const docs = parseAllDocuments(resources).map((d) => d.toJSON() as Doc);
    team = docs[0]?.metadata.namespace ?? "";
    const endpoint = docs.find((d) => d.kind === "ComputeEndpoint")?.spec as {
      projectId: string;
      branchId: string;
    };
    // The page's project and branch, on an account of the emulator: the branch has no endpoint yet.
    emulator = await startEmulator({
      rateLimits: false,
      operationDurationMs: 150,
      seed: {
        projects: [
          {
            id: endpoint.projectId,
            name: "alpha",
            primary_branch: "production",
            branches: [{ id: endpoint.branchId, name: "main" }],
          },
        ],
      },
    });
    operatorNamespace = await createNamespace("gitops-operator", { granted: false });
    await applyCredentialsSecret(operatorNamespace, "neon-api-key", emulator.bootstrapKey);
    await kubectl(["create", "namespace", team]);
    operator = await startOperator(
      loadConfig([
        `--platform-base-url=${emulator.url}`,
        `--default-credentials-secret=${operatorNamespace}/neon-api-key`,
        "--no-leader-election",
        `--namespaces=${team}`,
        "--metrics-address=127.0.0.1:0",
        "--shutdown-deadline=2s",
      ]),
      logs.logger,
      { kubeConfig: adminKubeConfig(), pollIntervalMs: 100 },
    );
  });

  afterAll(async () => {
    if (team) {
      await kubectl(["delete", "-f", "-", "--ignore-not-found", "--timeout=60s"], { input: resources }).catch(
        () => undefined,
      );
      await kubectl(["delete", "namespace", team, "--wait=false"]).catch(() => undefined);
    }
    if (grant) await kubectl(["delete", "-f", "-", "--ignore-not-found"], { input: grant });
    await operator?.stop();
    await emulator?.close();
    if (operatorNamespace) await kubectl(["delete", "namespace", operatorNamespace, "--wait=false"]);
  });

  it("without the page's grant, the team's resources are NotGranted", async () => {
    await kubectl(["apply", "--server-side", "-f", "-"], { input: resources });
    for (const [kind, name] of [
      ["computeendpoint", "shop-db"],
      ["apikey", "shop-ci"],
    ] as const)
      await eventually(async () => ((await ready(kind, name))?.reason === "NotGranted" ? true : undefined), {
        what: `${kind}/${name} NotGranted`,
      });
  });

  it("with it, the endpoint is Ready and the ApiKey mints its key into a Secret", async () => {
    await kubectl(["apply", "-f", "-"], { input: grant });
    await kubectl([
      "wait",
      "-n",
      team,
      "--for=condition=Ready",
      "--timeout=60s",
      "computeendpoint/shop-db",
      "apikey/shop-ci",
    ]);
    const secret = await kubectl([
      "get",
      "secret",
      "-n",
      team,
      "-l",
      "neoncloud.dev/secret-type",
      "-o",
      "name",
    ]);
    expect(secret).toContain("secret/shop-ci");
    expect(logs.text()).not.toContain(emulator.bootstrapKey);
  });
});
