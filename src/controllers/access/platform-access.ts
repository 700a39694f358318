// What a key connects to: one platform client per key (src/platform/accounts.ts), so resources that
// share a key share its connection pool, and keys of one account share its rate budget.
import type { Logger } from "pino";
import { Accounts, type PlatformClient, type PlatformClientOptions } from "../../platform/index.ts";
import { Access, type DefaultCredentials } from "../managed/credentials.ts";

export class PlatformAccess extends Access<PlatformClient> {
  readonly accounts: Accounts;

  constructor(options: {
    baseUrl: string;
    defaultCredentials?: DefaultCredentials | undefined;
    clientOptions?: Omit<PlatformClientOptions, "apiKey" | "baseUrl" | "budget">;
    logger?: Logger;
    /** A key's client unused this long is closed (default 15 min). */
    idleMs?: number;
  }) {
    const accounts = new Accounts({
      baseUrl: options.baseUrl,
      clientOptions: { ...options.clientOptions, ...(options.logger ? { logger: options.logger } : {}) },
      ...(options.idleMs !== undefined ? { idleMs: options.idleMs } : {}),
    });
    super(options.defaultCredentials, (apiKey) => accounts.client(apiKey));
    this.accounts = accounts;
  }

  close(): Promise<void> {
    return this.accounts.close();
  }
}
