// Starting an emulator for a test and talking to it over real HTTP.
import { afterEach } from "vitest";
import { createManualClock, type ManualClock } from "../../tools/emulator/clock.ts";
import { startEmulator, type Emulator, type EmulatorOptions } from "../../tools/emulator/emulator.ts";

export interface Harness {
  emulator: Emulator;
  clock: ManualClock;
  /** Calls the platform API with the bootstrap key (or `key`), returning status, body and headers. */
  api(method: string, path: string, body?: unknown, options?: CallOptions): Promise<Reply>;
  /** Calls the admin API. */
  admin(method: string, path: string, body?: unknown): Promise<Reply>;
}

export interface CallOptions {
  key?: string | null;
  headers?: Record<string, string>;
  rawBody?: string;
}

export interface Reply {
  status: number;
  // Test code reads arbitrary JSON; `any` keeps scenarios readable.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  headers: Headers;
}

const running: Emulator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((e) => e.close()));
});

/** An emulator on a manual clock, rate limits off unless given, with one seeded project "demo-project". */
export async function startHarness(options: EmulatorOptions = {}): Promise<Harness> {
  const clock = createManualClock();
  const emulator = await startEmulator({
    clock,
    rateLimits: false,
    seed: {
      projects: [{ id: "demo-project", name: "demo", branches: [{ name: "dev" }, { name: "staging" }] }],
    },
    ...options,
  });
  running.push(emulator);
  const call = async (url: string, method: string, body: unknown, options: CallOptions): Promise<Reply> => {
    const headers: Record<string, string> = { accept: "application/json", ...options.headers };
    const key = options.key === undefined ? emulator.bootstrapKey : options.key;
    if (key !== null) headers["authorization"] = `Bearer ${key}`;
    const payload = options.rawBody ?? (body === undefined ? undefined : JSON.stringify(body));
    if (payload !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(url, { method, headers, ...(payload === undefined ? {} : { body: payload }) });
    const text = await res.text();
    const json: unknown = text ? JSON.parse(text) : undefined;
    return { status: res.status, body: json, headers: res.headers };
  };
  return {
    emulator,
    clock,
    api: (method, path, body, options = {}) => call(emulator.url + path, method, body, options),
    admin: (method, path, body) => call(emulator.adminUrl + path, method, body, { key: null }),
  };
}

/** The seeded project's branches by name. */
export async function branchesOf(h: Harness, projectId = "demo-project"): Promise<Record<string, string>> {
  const reply = await h.admin("GET", `/projects/${projectId}/branches`);
  const branches = (reply.body as { branches: { name: string; id: string }[] }).branches;
  return Object.fromEntries(branches.map((b) => [b.name, b.id]));
}
