// Platform accounts, as the operator meets them through API keys. The platform's rate limit is
// per account and every key of an account spends it (platform-facts.md), so the first use of a
// key asks the platform whose it is (`GET /auth`) and its client gets that account's one budget.
// A client lives while it is used: one idle for `idleMs` (a rotated or deleted key) is closed, so
// rotations leave no connection pools, budgets or snapshots behind.
import { createHash } from "node:crypto";
import {
  ForbiddenError,
  NotFoundError,
  PlatformClient,
  RateBudget,
  type PlatformClientOptions,
} from "../platform/index.ts";

interface Entry {
  client: Promise<PlatformClient>;
  usedAt: number;
}

export interface AccountsOptions {
  baseUrl: string;
  clientOptions?: Omit<PlatformClientOptions, "apiKey" | "baseUrl" | "budget">;
  /** A client unused this long is closed (default 15 min). */
  idleMs?: number;
}

/** The key's digest: how the registry names a key without holding it as a map key. */
const digest = (apiKey: string): string => createHash("sha256").update(apiKey).digest("hex");

export class Accounts {
  private readonly options: AccountsOptions;
  private readonly idleMs: number;
  private readonly clients = new Map<string, Entry>();
  /** Rate budgets by account id: shared by the clients of every key of the account. */
  private readonly budgets = new Map<string, RateBudget>();
  /** Spends the identity requests of keys whose account is not known yet. */
  private readonly unidentified: RateBudget;
  private readonly sweeper: NodeJS.Timeout;

  constructor(options: AccountsOptions) {
    this.options = options;
    this.idleMs = options.idleMs ?? 900_000;
    this.unidentified = new RateBudget(options.clientOptions?.limits);
    this.sweeper = setInterval(() => void this.sweep(), Math.max(1_000, this.idleMs / 2));
    this.sweeper.unref();
  }

  /** The client of a key: on first use, identified and given its account's budget. */
  client(apiKey: string): Promise<PlatformClient> {
    const id = digest(apiKey);
    const entry = this.clients.get(id);
    if (entry) {
      entry.usedAt = Date.now();
      return entry.client;
    }
    const client = this.open(apiKey);
    this.clients.set(id, { client, usedAt: Date.now() });
    // A failed identification (a refused key, the platform away) is not kept: the next use asks again.
    client.catch(() => {
      if (this.clients.get(id)?.client === client) this.clients.delete(id);
    });
    return client;
  }

  /** Accounts met so far (each with its one budget). */
  get knownAccounts(): number {
    return this.budgets.size;
  }

  private async open(apiKey: string): Promise<PlatformClient> {
    const { baseUrl, clientOptions } = this.options;
    const probe = new PlatformClient({ ...clientOptions, baseUrl, apiKey, budget: this.unidentified });
    let account: string;
    try {
      account = (await probe.authDetails()).accountId;
    } catch (err) {
      // A platform that cannot tell (no such route, or not for this key): the key is its own account.
      if (!(err instanceof NotFoundError || err instanceof ForbiddenError)) throw err;
      account = `key:${digest(apiKey).slice(0, 16)}`;
    } finally {
      await probe.close();
    }
    let budget = this.budgets.get(account);
    if (!budget) {
      budget = new RateBudget(clientOptions?.limits);
      this.budgets.set(account, budget);
    }
    return new PlatformClient({ ...clientOptions, baseUrl, apiKey, budget });
  }

  /** Drops the client of a key that stopped working (revoked), closing its connections. */
  async forget(apiKey: string): Promise<void> {
    const id = digest(apiKey);
    const entry = this.clients.get(id);
    this.clients.delete(id);
    await entry?.client.then(
      (c) => c.close(),
      () => undefined,
    );
  }

  /** Closes the clients no resource used for `idleMs`. */
  async sweep(now = Date.now()): Promise<number> {
    const idle = [...this.clients].filter(([, entry]) => now - entry.usedAt >= this.idleMs);
    for (const [id] of idle) this.clients.delete(id);
    await Promise.all(
      idle.map(([, entry]) =>
        entry.client.then(
          (c) => c.close(),
          () => undefined,
        ),
      ),
    );
    return idle.length;
  }

  /** Clients open now. */
  get openClients(): number {
    return this.clients.size;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await this.sweep(Number.POSITIVE_INFINITY);
  }
}
