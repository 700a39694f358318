// The account's key list, shared by every ApiKey acting with a key of the account: the platform
// has no GET for a single key, so usage (lastUsedAt, lastUsedFromAddr) comes from one list
// request per account (account.ts), refreshed at most every `maxAgeMs`, with concurrent readers
// joining one fetch.
import type { Account } from "./account.ts";
import type { PlatformClient } from "./client.ts";
import { keyRefused } from "./errors.ts";
import type { ApiKey } from "./schemas.ts";

interface Entry {
  keys: ApiKey[] | undefined;
  fetchedAt: number;
  inFlight: { keys: Promise<ApiKey[]>; sentBy: PlatformClient } | undefined;
}

export class KeyListCache {
  private readonly entries = new WeakMap<Account, Entry>();
  private readonly maxAgeMs: number;

  constructor(options: { maxAgeMs: number }) {
    this.maxAgeMs = options.maxAgeMs;
  }

  /** The list of the client's account, from the cache while it is younger than `maxAgeMs`. */
  async get(client: PlatformClient): Promise<ApiKey[]> {
    const entry = this.entry(client);
    if (entry.keys && Date.now() - entry.fetchedAt < this.maxAgeMs) return entry.keys;
    const joined = entry.inFlight;
    if (!joined) return this.fetch(client, entry);
    // Another key's refusal (revoked, or scoped elsewhere) is that key's: this one asks with its own.
    return joined.sentBy === client
      ? joined.keys
      : joined.keys.catch((err: unknown) => {
          if (keyRefused(err)) return this.fetch(client, entry);
          throw err;
        });
  }

  /**
   * A list fetched after this call began. The crash-safe create decides on it
   * (is a key with the pending name already there?), so a cached or joined
   * answer from before the decision would not do.
   */
  fresh(client: PlatformClient): Promise<ApiKey[]> {
    return this.fetch(client, this.entry(client));
  }

  private entry(client: PlatformClient): Entry {
    let entry = this.entries.get(client.account);
    if (!entry) {
      entry = { keys: undefined, fetchedAt: 0, inFlight: undefined };
      this.entries.set(client.account, entry);
    }
    return entry;
  }

  private fetch(client: PlatformClient, entry: Entry): Promise<ApiKey[]> {
    const started = Date.now();
    const keys = client
      .listApiKeys()
      .then((keys) => {
        // A slower, older fetch must not overwrite a newer answer.
        if (started >= entry.fetchedAt) {
          entry.keys = keys;
          entry.fetchedAt = started;
        }
        return keys;
      })
      .finally(() => {
        if (entry.inFlight?.keys === keys) entry.inFlight = undefined;
      });
    entry.inFlight = { keys, sentBy: client };
    return keys;
  }
}
