/**
 * Metric hooks of the platform client. The client depends on no metrics library: the runtime
 * adapts these calls to prom-client (requests by route, method and status; latency; budget wait).
 */
export interface PlatformRequestInfo {
  /** Route template, e.g. "/projects/{project_id}/endpoints" (never a concrete id). */
  route: string;
  method: string;
  /** HTTP status, or 0 when no response arrived. */
  status: number;
  durationMs: number;
}

export interface PlatformMetrics {
  /** One HTTP attempt finished (retries count as separate attempts). */
  request(info: PlatformRequestInfo): void;
  /** Time a request waited for the account's rate budget before it was sent. */
  budgetWait(ms: number, route: string): void;
}

export const noMetrics: PlatformMetrics = {
  request: () => {},
  budgetWait: () => {},
};
