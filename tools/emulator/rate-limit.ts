// The platform's rate limits: a budget per account per minute and bursts per
// route per second, as token buckets on real (not emulated) time, since they
// limit how fast clients may call.

export interface RateLimits {
  /** Requests per minute per account (the platform: 700). */
  perMinute: number;
  /** Requests per second per route (the platform: 40). */
  perRoutePerSecond: number;
}

export const platformRateLimits: RateLimits = { perMinute: 700, perRoutePerSecond: 40 };

/**
 * Routes with a burst of their own, lower than every route's (platform-facts.md: "Creating
 * organization API keys has its own limit of 10 per second").
 */
const ownRouteLimitsPerSecond: Readonly<Record<string, number>> = {
  "POST /organizations/:org_id/api_keys": 10,
};

class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly capacity: number;
  private readonly perMs: number;

  constructor(capacity: number, perMs: number, now: number) {
    this.capacity = capacity;
    this.perMs = perMs;
    this.tokens = capacity;
    this.last = now;
  }

  refill(now: number): void {
    this.tokens = Math.min(this.capacity, this.tokens + (now - this.last) * this.perMs);
    this.last = now;
  }

  get available(): boolean {
    return this.tokens >= 1;
  }

  take(): void {
    this.tokens -= 1;
  }
}

export class RateLimiter {
  private readonly limits: RateLimits;
  private readonly now: () => number;
  private readonly accounts = new Map<string, TokenBucket>();
  private readonly routes = new Map<string, TokenBucket>();

  constructor(limits: RateLimits, now: () => number = () => performance.now()) {
    this.limits = limits;
    this.now = now;
  }

  /** Takes one request from both budgets; false (and nothing taken) when either is spent. */
  admit(account: string, route: string): boolean {
    const now = this.now();
    const accountBucket = this.bucket(this.accounts, account, this.limits.perMinute, 60_000, now);
    const perSecond = Math.min(this.limits.perRoutePerSecond, ownRouteLimitsPerSecond[route] ?? Infinity);
    const routeBucket = this.bucket(this.routes, `${account} ${route}`, perSecond, 1000, now);
    if (!accountBucket.available || !routeBucket.available) return false;
    accountBucket.take();
    routeBucket.take();
    return true;
  }

  reset(): void {
    this.accounts.clear();
    this.routes.clear();
  }

  private bucket(
    map: Map<string, TokenBucket>,
    key: string,
    capacity: number,
    windowMs: number,
    now: number,
  ) {
    let bucket = map.get(key);
    if (!bucket) {
      bucket = new TokenBucket(capacity, capacity / windowMs, now);
      map.set(key, bucket);
    } else {
      bucket.refill(now);
    }
    return bucket;
  }
}
