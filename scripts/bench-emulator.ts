// `npm exec -- node scripts/bench-emulator.ts [--seconds N] [--connections N]`
// Measures the emulator as a separate process on loopback (rate limits off,
// operations of zero length): reads/s listing a project with 100 endpoints,
// creates/s of endpoints, and memory while operations pile up past the cap.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { Pool } from "undici";

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "5" }, connections: { type: "string", default: "32" } },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const repo = join(import.meta.dirname, "..");

const child = spawn(
  process.execPath,
  [
    "--expose-gc",
    join(repo, "tools/emulator/main.ts"),
    "--port",
    "0",
    "--no-rate-limits",
    "--operation-duration-ms",
    "0",
  ],
  { stdio: ["ignore", "pipe", "inherit"] },
);
const [line] = (await once(createInterface({ input: child.stdout }), "line")) as [string];
const {
  url,
  admin_url: adminUrl,
  api_key: key,
} = JSON.parse(line) as { url: string; admin_url: string; api_key: string };
const origin = new URL(url).origin;
const pool = new Pool(origin, { connections, pipelining: 1 });
const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };

async function call(
  method: "GET" | "POST",
  path: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const res = await pool.request({
    method,
    path,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? JSON.parse(text) : undefined };
}

async function admin(method: "GET" | "POST", path: string, body?: unknown) {
  const res = await fetch(`${adminUrl}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return (await res.json()) as Record<string, unknown>;
}

/** Runs `op` from `workers` concurrent loops for `durationS`; returns completed calls and statuses. */
async function load(workers: number, durationS: number, op: (worker: number) => Promise<number>) {
  const deadline = performance.now() + durationS * 1000;
  const statuses = new Map<number, number>();
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      while (performance.now() < deadline) {
        const status = await op(worker);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        done++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  return { perSecond: Math.round(done / elapsed), statuses: Object.fromEntries(statuses) };
}

try {
  // A project whose primary branch carries 100 endpoints (1 read-write + 99 read replicas).
  const added = (await admin("POST", "/projects", { id: "bench-reads", name: "bench-reads" })) as {
    branches: { id: string }[];
  };
  const branch = added.branches[0]!.id;
  for (let i = 0; i < 99;) {
    const { status } = await call("POST", "/api/v2/projects/bench-reads/endpoints", {
      endpoint: { branch_id: branch, type: "read_only" },
    });
    if (status === 201) i++;
  }
  const cpuMs = async () => {
    const { cpu } = (await admin("GET", "/stats")) as { cpu: { user_ms: number; system_ms: number } };
    return cpu.user_ms + cpu.system_ms;
  };
  const readsCpuBefore = await cpuMs();
  const reads = await load(connections, seconds, async () => {
    const res = await pool.request({
      method: "GET",
      path: "/api/v2/projects/bench-reads/endpoints",
      headers,
    });
    await res.body.dump();
    return res.statusCode;
  });
  const readsCpuSeconds = ((await cpuMs()) - readsCpuBefore) / 1000;

  // Creates: one worker per project, since a project accepts one change at a time (423 otherwise).
  const projects = 16;
  const branches: string[] = [];
  for (let p = 0; p < projects; p++) {
    const project = (await admin("POST", "/projects", { id: `bench-writes-${p}`, name: `writes ${p}` })) as {
      branches: { id: string }[];
    };
    branches.push(project.branches[0]!.id);
  }
  const creates = await load(projects, seconds, async (worker) => {
    const res = await call("POST", `/api/v2/projects/bench-writes-${worker}/endpoints`, {
      endpoint: { branch_id: branches[worker], type: "read_only" },
    });
    return res.status;
  });

  // Memory while operations pile up: start/suspend cycles on one endpoint, far past the retention cap.
  const [target] = (
    (await call("GET", "/api/v2/projects/bench-reads/endpoints")).json as { endpoints: { id: string }[] }
  ).endpoints;
  const memory: { created: number; operations: number; heapMiB: number; rssMiB: number }[] = [];
  for (let round = 0; round < 8; round++) {
    await load(8, seconds / 4, async (worker) => {
      const verb = worker % 2 === 0 ? "start" : "suspend";
      return (await call("POST", `/api/v2/projects/bench-reads/endpoints/${target!.id}/${verb}`)).status;
    });
    const stats = (await admin("GET", "/stats")) as {
      operations_created: number;
      operations_retained: number;
      memory: { heap_used_bytes: number; rss_bytes: number };
    };
    memory.push({
      created: stats.operations_created,
      operations: stats.operations_retained,
      heapMiB: Math.round(stats.memory.heap_used_bytes / 2 ** 20),
      rssMiB: Math.round(stats.memory.rss_bytes / 2 ** 20),
    });
  }
  const counters = (await admin("GET", "/counters")) as { total: number };

  console.log(
    `emulator benchmark (node ${process.version}, ${connections} connections, ${seconds}s per phase)`,
  );
  const total = Object.values(reads.statuses).reduce((a, b) => a + b, 0);
  console.log(`  list 100 endpoints : ${reads.perSecond} req/s  statuses ${JSON.stringify(reads.statuses)}`);
  console.log(
    `                       ${Math.round(total / readsCpuSeconds)} req per emulator CPU-second (one core; the load generator shares the machine)`,
  );
  console.log(
    `  create endpoint    : ${creates.perSecond} req/s  statuses ${JSON.stringify(creates.statuses)}`,
  );
  console.log(`  memory as operations pile up (cap 2000 per project; requests served ${counters.total}):`);
  for (const m of memory) {
    console.log(
      `    operations created ${m.created}, retained ${m.operations}: heap after GC ${m.heapMiB} MiB, rss ${m.rssMiB} MiB`,
    );
  }
} finally {
  await pool.close();
  child.kill("SIGINT");
  await once(child, "exit");
}
