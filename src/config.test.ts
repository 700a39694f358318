import { describe, expect, it } from "vitest";
import { loadConfig } from "./config.ts";
import { ConfigError, parseDuration } from "./runtime/index.ts";

function problems(argv: string[], env: Record<string, string> = {}): string[] {
  try {
    loadConfig(argv, env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe("operator configuration", () => {
  it("has working defaults: all namespaces, leader election on, metrics on :8080", () => {
    const config = loadConfig([], {});
    expect(config).toMatchObject({
      namespaces: [],
      concurrency: 4,
      resyncPeriodMs: 600_000,
      platformBaseUrl: "https://console.neon.tech/api/v2",
      logLevel: "info",
      leaderElection: true,
      metricsAddress: ":8080",
      shutdownDeadlineMs: 30_000,
    });
    expect(config.defaultCredentialsSecret).toBeUndefined();
  });

  it("takes environment variables and lets flags override them", () => {
    const config = loadConfig(["--concurrency=8", "--no-leader-election", "--namespaces", "team-a, team-b"], {
      NEON_OPERATOR_CONCURRENCY: "2",
      NEON_OPERATOR_RESYNC_PERIOD: "1h30m",
      NEON_OPERATOR_DEFAULT_CREDENTIALS_SECRET: "ops/neon-api-key",
      NEON_OPERATOR_LOG_LEVEL: "debug",
    });
    expect(config.concurrency).toBe(8);
    expect(config.leaderElection).toBe(false);
    expect(config.namespaces).toEqual(["team-a", "team-b"]);
    expect(config.resyncPeriodMs).toBe(5_400_000);
    expect(config.defaultCredentialsSecret).toBe("ops/neon-api-key");
    expect(config.logLevel).toBe("debug");
  });

  it("takes a switch as --flag, --no-flag or --flag=value", () => {
    expect(loadConfig(["--leader-election=false"], {}).leaderElection).toBe(false);
    expect(loadConfig(["--no-leader-election", "--leader-election"], {}).leaderElection).toBe(true);
    expect(problems(["--leader-election=maybe"])).toEqual([
      expect.stringMatching(/^--leader-election = "maybe": expected true or false/),
    ]);
    expect(problems(["--no-concurrency"])).toEqual(['unknown argument "--no-concurrency"']);
  });

  it("names every bad value and where it came from", () => {
    const found = problems(["--concurrency=zero", "--platform-base-url=ftp://x", "--bogus"], {
      NEON_OPERATOR_RESYNC_PERIOD: "10 minutes",
      NEON_OPERATOR_NAMESPACES: "Team_A",
    });
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^--concurrency = "zero": expected a whole number/),
        expect.stringMatching(/^--platform-base-url = "ftp:\/\/x": expected an http\(s\) URL/),
        'unknown argument "--bogus"',
        expect.stringMatching(/^NEON_OPERATOR_RESYNC_PERIOD = "10 minutes": expected a duration/),
        expect.stringMatching(
          /^NEON_OPERATOR_NAMESPACES = "Team_A": each namespace must be a DNS-1123 label/,
        ),
      ]),
    );
    expect(found).toHaveLength(5);
  });

  it("parses Go-style durations and rejects the rest", () => {
    expect(parseDuration("250ms")).toBe(250);
    expect(parseDuration("2m30s")).toBe(150_000);
    expect(parseDuration("30")).toBeUndefined();
    expect(parseDuration("5 m")).toBeUndefined();
  });

  it("reads a shard's selector, its hand-over delay and its share of an account's budget", () => {
    const config = loadConfig(
      [
        "--watch-label-selector=neoncloud.dev/shard in (a, b)",
        "--shard-handover-delay=2m",
        "--account-budget-share=0.5",
      ],
      {},
    );
    expect(config.watchLabelSelector?.matches({ "neoncloud.dev/shard": "b" })).toBe(true);
    expect(config.watchLabelSelector?.matches({})).toBe(false);
    expect(config.shardHandoverMs).toBe(120_000);
    expect(config.accountBudgetShare).toBe(0.5);
    const defaults = loadConfig([], {});
    expect(defaults.watchLabelSelector).toBeUndefined();
    expect(defaults.accountBudgetShare).toBe(1);
  });

  it("refuses a selector it cannot read and a share outside (0, 1], naming the flag and the rule", () => {
    const found = problems(["--watch-label-selector=shard in (a", "--account-budget-share=1.5"]);
    expect(found.join("\n")).toContain("--watch-label-selector");
    expect(found.join("\n")).toContain("unbalanced parentheses");
    expect(found.join("\n")).toContain("--account-budget-share");
    expect(found.join("\n")).toContain("must be at most 1");
    expect(problems(["--account-budget-share=0"]).join("\n")).toContain("must be above 0");
  });
});
