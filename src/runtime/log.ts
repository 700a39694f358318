// The runtime logs through pino; a component given no logger stays silent.
import { pino, type Logger } from "pino";

export type { Logger };

export const silentLogger: Logger = pino({ level: "silent" });

/**
 * The operator's logger: JSON lines on stdout. Redaction is a safety net for
 * secrets that reach a log call by mistake; code must not log them at all.
 */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: ["*.apiKey", "*.key", "*.token", "*.authorization", "*.Authorization", "*.data", "*.stringData"],
      censor: "[redacted]",
    },
  });
}
