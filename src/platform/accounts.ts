// The platform accounts the operator acts in, found through its API keys. The platform's rate
// limit is per account and its change lock per project (platform-facts.md), so keys that may
// share an account are asked whose they are (`GET /auth`) and the clients of one account's keys
// join its one Account (account.ts): one budget, one set of learned durations, one Project per
// project (its mutation gate, lists and operations). A lone key has nothing to share: it is its
// own account, asked only once a second key is in use, so a restart of an operator with one key
// costs no request before its first real one.
// A client lives while it is used: one idle for `idleMs` (a rotated or deleted key) is closed,
// and an account whose keys are all closed is forgotten, so rotations leave no connection pools,
// budgets or project state behind.
import { createHash } from "node:crypto";
import { Account } from "./account.ts";
import { PlatformClient, type PlatformClientOptions } from "./client.ts";
import { ForbiddenError, NotFoundError, UnauthorizedError } from "./errors.ts";
import { RateBudget } from "./budget.ts";

interface Entry {
  client: Promise<PlatformClient>;
  usedAt: number;
  /** Whose key it is; asked for once a second key is in use (undefined: not asked, or failed). */
  accountId: Promise<string | undefined> | undefined;
  /** Kept to ask whose it is later; never logged. */
  apiKey: string;
}

export interface AccountsOptions {
  baseUrl: string;
  /** Options of every key's client and of every account (its budget's limits, its projects'). */
  clientOptions?: Omit<PlatformClientOptions, "apiKey" | "baseUrl" | "budget" | "account">;
  /** A client unused this long is closed (default 15 min). */
  idleMs?: number;
}

/** The key's digest: how the registry names a key without holding it as a map key. */
const digest = (apiKey: string): string => createHash("sha256").update(apiKey).digest("hex");

export class Accounts {
  private readonly options: AccountsOptions;
  private readonly idleMs: number;
  private readonly clients = new Map<string, Entry>();
  /** Accounts by the platform's account id, once a key of theirs was identified. */
  private readonly accounts = new Map<string, Account>();
  /** Spends the identity requests of keys whose account is not known yet. */
  private readonly unidentified: RateBudget;
  private readonly sweeper: NodeJS.Timeout;

  constructor(options: AccountsOptions) {
    this.options = options;
    this.idleMs = options.idleMs ?? 900_000;
    this.unidentified = new RateBudget(options.clientOptions?.limits);
    // Every minute at most: stale lists go soon after no reader would take them (a resync period).
    const sweepMs = Math.max(1_000, Math.min(60_000, this.idleMs / 2));
    this.sweeper = setInterval(() => {
      void this.sweep();
      void this.forgetStaleLists();
    }, sweepMs);
    this.sweeper.unref();
  }

  /** The client of a key: on first use next to other keys, identified and joined to its account. */
  client(apiKey: string): Promise<PlatformClient> {
    const id = digest(apiKey);
    const entry = this.clients.get(id);
    if (entry) {
      entry.usedAt = Date.now();
      return entry.client;
    }
    const others = [...this.clients.values()];
    const opening = { usedAt: Date.now(), accountId: undefined, apiKey };
    const client =
      others.length === 0
        ? Promise.resolve(this.connect(apiKey, this.newAccount()))
        : this.open(opening, others);
    const created: Entry = { ...opening, client };
    this.clients.set(id, created);
    // A failed identification (a refused key, the platform away) is not kept: the next use asks again.
    client.catch(() => {
      if (this.clients.get(id) === created) this.clients.delete(id);
    });
    return client;
  }

  /** Accounts met so far, identified. */
  get knownAccounts(): number {
    return this.accounts.size;
  }

  /**
   * A key next to others: they are asked whose they are first (a key opened alone was not), so
   * an account keeps the state its opened clients already built; then this key, which joins it.
   */
  private async open(entry: Omit<Entry, "client">, others: Entry[]): Promise<PlatformClient> {
    for (const other of others) other.accountId ??= this.identifyOpened(other);
    const asked = this.identify(entry.apiKey);
    entry.accountId = asked.catch(() => undefined);
    await Promise.all(others.map(async (other) => other.accountId));
    const accountId = await asked;
    return this.connect(
      entry.apiKey,
      this.accounts.get(accountId) ?? this.register(accountId, this.newAccount()),
    );
  }

  private newAccount(): Account {
    return new Account(this.options.clientOptions);
  }

  private connect(apiKey: string, account: Account): PlatformClient {
    const { baseUrl, clientOptions } = this.options;
    return new PlatformClient({ ...clientOptions, baseUrl, apiKey, account });
  }

  private register(accountId: string, account: Account): Account {
    account.id = accountId;
    this.accounts.set(accountId, account);
    return account;
  }

  /**
   * Whose an opened key is: its account becomes that account, or, when the account was met first
   * through another key (this one could not be asked then), the client joins it.
   */
  private identifyOpened(entry: Entry): Promise<string | undefined> {
    return this.identify(entry.apiKey).then(
      async (accountId) => {
        const client = await entry.client.catch(() => undefined);
        const known = this.accounts.get(accountId);
        if (known) client?.joinAccount(known);
        else if (client) this.register(accountId, client.account);
        return accountId;
      },
      (err: unknown) => {
        // A refused key (revoked since it was opened) shares nothing; the platform away: ask again
        // when the next key comes.
        if (!(err instanceof UnauthorizedError)) entry.accountId = undefined;
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
    if (entry) await this.closeClient(entry);
  }

  /** Closes the clients no resource used for `idleMs`. */
  async sweep(now = Date.now()): Promise<number> {
    const idle = [...this.clients].filter(([, entry]) => now - entry.usedAt >= this.idleMs);
    for (const [id] of idle) this.clients.delete(id);
    await Promise.all(idle.map(([, entry]) => this.closeClient(entry)));
    return idle.length;
  }

  /**
   * Has every account forget its projects' lists that no reader would take any more: at rest, ten
   * thousand adopted projects would otherwise each hold the branch and endpoint lists of their
   * adoption for the life of the process (docs/scale.md).
   */
  async forgetStaleLists(): Promise<void> {
    const clients = await Promise.all([...this.clients.values()].map((e) => e.client.catch(() => undefined)));
    const accounts = new Set(clients.map((client) => client?.account));
    for (const account of accounts) account?.forgetStaleLists();
  }

  /** Closes a key's client; an account left without keys is forgotten with its projects. */
  private async closeClient(entry: Entry): Promise<void> {
    const client = await entry.client.catch(() => undefined);
    if (!client) return;
    const account = client.account;
    await client.close();
    if (account.clients.size === 0 && account.id !== undefined && this.accounts.get(account.id) === account) {
      this.accounts.delete(account.id);
    }
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
