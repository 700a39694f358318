// Who may scrape /metrics, decided by the API server as controller-runtime's
// WithAuthenticationAndAuthorization filter does: the scrape's bearer token is
// checked with a TokenReview (authentication) and the user it names with a
// SubjectAccessReview for `get` on the non-resource URL /metrics
// (authorization; the neon-cloud-operator-metrics-reader ClusterRole grants it).
// Answers are cached briefly by a digest of the token, so a scrape every 15 s
// costs the API server two requests a minute at most; a token is never logged.
import { createHash } from "node:crypto";
import type { KubeClient, KubeObject, ResourceKind } from "./kube.ts";
import type { Logger } from "./log.ts";

const tokenReviewKind: ResourceKind = {
  group: "authentication.k8s.io",
  version: "v1",
  plural: "tokenreviews",
  kind: "TokenReview",
  namespaced: false,
};
const subjectAccessReviewKind: ResourceKind = {
  group: "authorization.k8s.io",
  version: "v1",
  plural: "subjectaccessreviews",
  kind: "SubjectAccessReview",
  namespaced: false,
};

interface TokenReview extends KubeObject {
  status?: {
    authenticated?: boolean;
    user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
    error?: string;
  };
}

interface SubjectAccessReview extends KubeObject {
  status?: { allowed?: boolean; denied?: boolean; reason?: string };
}

/** 200: let the scrape through; 401: no or unknown token; 403: a user without `get` on the path. */
export interface Verdict {
  status: 200 | 401 | 403;
  /** Why, for the answer's body and the debug log: never the token. */
  reason: string;
}

export interface MetricsAuthOptions {
  client: KubeClient;
  /** How long an answer is reused (controller-runtime: 1 min for authentication). */
  allowTtlMs?: number;
  /** A refusal is reused for less, so a newly granted role works soon (controller-runtime: 30 s). */
  denyTtlMs?: number;
  /** Distinct tokens remembered at most; the oldest go first. */
  maxEntries?: number;
  now?: () => number;
  log?: Logger;
}

export class MetricsAuthorizer {
  private readonly options: MetricsAuthOptions;
  private readonly cache = new Map<string, { verdict: Verdict; until: number }>();
  private readonly pending = new Map<string, Promise<Verdict>>();

  constructor(options: MetricsAuthOptions) {
    this.options = options;
  }

  /** The verdict on a request to `path` with `method` and this Authorization header. */
  async check(authorization: string | undefined, method: string, path: string): Promise<Verdict> {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
    if (!match?.[1]) return { status: 401, reason: "no bearer token" };
    const token = match[1];
    const key = createHash("sha256").update(`${method} ${path} ${token}`).digest("hex");
    const now = this.now();
    const cached = this.cache.get(key);
    if (cached && cached.until > now) return cached.verdict;
    // Scrapes that arrive together with the same token wait for one review, not one each.
    let review = this.pending.get(key);
    if (!review) {
      review = this.review(token, method, path).finally(() => this.pending.delete(key));
      this.pending.set(key, review);
    }
    const verdict = await review;
    this.remember(key, verdict);
    return verdict;
  }

  private async review(token: string, method: string, path: string): Promise<Verdict> {
    const { client } = this.options;
    const tokenReview = await client.create<TokenReview>(tokenReviewKind, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenReview",
      metadata: {},
      spec: { token },
    } as KubeObject);
    const user = tokenReview.status?.user;
    if (!tokenReview.status?.authenticated || !user?.username) {
      return { status: 401, reason: "the token was not accepted by the API server" };
    }
    const verb = method.toLowerCase();
    const access = await client.create<SubjectAccessReview>(subjectAccessReviewKind, {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      metadata: {},
      spec: {
        user: user.username,
        uid: user.uid,
        groups: user.groups,
        extra: user.extra,
        nonResourceAttributes: { path, verb },
      },
    } as KubeObject);
    if (access.status?.allowed) return { status: 200, reason: `${user.username} may ${verb} ${path}` };
    this.options.log?.debug({ user: user.username, path }, "metrics scrape refused");
    return { status: 403, reason: `${user.username} may not ${verb} ${path}` };
  }

  private remember(key: string, verdict: Verdict): void {
    const ttl =
      verdict.status === 200 ? (this.options.allowTtlMs ?? 60_000) : (this.options.denyTtlMs ?? 30_000);
    this.cache.delete(key);
    this.cache.set(key, { verdict, until: this.now() + ttl });
    const max = this.options.maxEntries ?? 1024;
    for (const oldest of this.cache.keys()) {
      if (this.cache.size <= max) break;
      this.cache.delete(oldest);
    }
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }
}
