// The account's key list, shared by every ApiKey acting with the same
// credentials: the platform has no GET for a single key, so usage
// (lastUsedAt, lastUsedFromAddr) comes from one list request per account,
// refreshed at most every `maxAgeMs`, with concurrent readers joining one fetch.
import type { ApiKey, PlatformClient } from "../platform/index.ts";

interface Entry {
  keys: ApiKey[] | undefined;
  fetchedAt: number;
  inFlight: Promise<ApiKey[]> | undefined;
}

export class KeyListCache {
  private readonly entries = new WeakMap<PlatformClient, Entry>();
  private readonly maxAgeMs: number;

  constructor(options: { maxAgeMs: number }) {
    this.maxAgeMs = options.maxAgeMs;
  }

  /** The list, from the cache while it is younger than `maxAgeMs`. */
  async get(client: PlatformClient): Promise<ApiKey[]> {
    const entry = this.entry(client);
    if (entry.keys && Date.now() - entry.fetchedAt < this.maxAgeMs) return entry.keys;
    return entry.inFlight ?? this.fetch(client, entry);
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
    let entry = this.entries.get(client);
    if (!entry) {
      entry = { keys: undefined, fetchedAt: 0, inFlight: undefined };
      this.entries.set(client, entry);
    }
    return entry;
  }

  private fetch(client: PlatformClient, entry: Entry): Promise<ApiKey[]> {
    const started = Date.now();
    const request = client
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
        if (entry.inFlight === request) entry.inFlight = undefined;
      });
    entry.inFlight = request;
    return request;
  }
}
