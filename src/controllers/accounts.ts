// Platform accounts, as the operator meets them through API keys. The platform's rate limit is
// per account and every key of an account spends it (platform-facts.md), so keys that may share
// an account are asked whose they are (`GET /auth`) and the clients of one account get its one
// budget. A lone key has nothing to share a budget with: it is asked only once a second key is in
// use, so a restart of an operator with one key costs no request before its first real one.
// A client lives while it is used: one idle for `idleMs` (a rotated or deleted key) is closed, so
// rotations leave no connection pools, budgets or snapshots behind.
import { createHash } from "node:crypto";
import {
  ForbiddenError,
  NotFoundError,
  PlatformClient,
  RateBudget,
  UnauthorizedError,
  type PlatformClientOptions,
} from "../platform/index.ts";

interface Entry {
  client: Promise<PlatformClient>;
  usedAt: number;
  /** The budget the client spends: its own until its account is known, then the account's. */
  budget: RateBudget;
  /** Whose key it is; asked for once a second key is in use (undefined: not asked, or failed). */
  account: Promise<string | undefined> | undefined;
  /** Kept to ask whose it is later; never logged. */
  apiKey: string;
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

  /** The client of a key: on first use next to other keys, identified and given its account's budget. */
  client(apiKey: string): Promise<PlatformClient> {
    const id = digest(apiKey);
    const entry = this.clients.get(id);
    if (entry) {
      entry.usedAt = Date.now();
      return entry.client;
    }
    const others = [...this.clients.values()];
    const opening = {
      usedAt: Date.now(),
      budget: new RateBudget(this.options.clientOptions?.limits),
      account: undefined,
      apiKey,
    };
    const client =
      others.length === 0
        ? Promise.resolve(this.connect(apiKey, opening.budget))
        : this.open(opening, others);
    const created: Entry = { ...opening, client };
    this.clients.set(id, created);
    // A failed identification (a refused key, the platform away) is not kept: the next use asks again.
    client.catch(() => {
      if (this.clients.get(id) === created) this.clients.delete(id);
    });
    return client;
  }

  /** Accounts met so far (each with its one budget). */
  get knownAccounts(): number {
    return this.budgets.size;
  }

  /**
   * A key next to others: they are asked whose they are first (a key opened alone was not), so
   * an account keeps the budget its opened clients already spend; then this key, which joins it.
   */
  private async open(entry: Omit<Entry, "client">, others: Entry[]): Promise<PlatformClient> {
    for (const other of others) other.account ??= this.identifyOpened(other);
    const asked = this.identify(entry.apiKey);
    entry.account = asked.catch(() => undefined);
    await Promise.all(others.map(async (other) => other.account));
    const account = await asked;
    let budget = this.budgets.get(account);
    if (!budget) {
      budget = entry.budget;
      this.budgets.set(account, budget);
    }
    entry.budget = budget;
    return this.connect(entry.apiKey, budget);
  }

  private connect(apiKey: string, budget: RateBudget): PlatformClient {
    const { baseUrl, clientOptions } = this.options;
    return new PlatformClient({ ...clientOptions, baseUrl, apiKey, budget });
  }

  /** Whose an opened key is; its budget becomes the account's if the account has none yet. */
  private identifyOpened(entry: Entry): Promise<string | undefined> {
    return this.identify(entry.apiKey).then(
      (account) => {
        if (!this.budgets.has(account)) this.budgets.set(account, entry.budget);
        return account;
      },
      (err: unknown) => {
        // A refused key (revoked since it was opened) shares nothing; the platform away: ask again
        // when the next key comes.
        if (!(err instanceof UnauthorizedError)) entry.account = undefined;
        return undefined;
      },
    );
  }

  private async identify(apiKey: string): Promise<string> {
    const { baseUrl, clientOptions } = this.options;
    const probe = new PlatformClient({ ...clientOptions, baseUrl, apiKey, budget: this.unidentified });
    try {
      return (await probe.authDetails()).accountId;
    } catch (err) {
      // A platform that cannot tell (no such route, or not for this key): the key is its own account.
      if (!(err instanceof NotFoundError || err instanceof ForbiddenError)) throw err;
      return `key:${digest(apiKey).slice(0, 16)}`;
    } finally {
      await probe.close();
    }
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
