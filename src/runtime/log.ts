// The runtime logs through pino; a component given no logger stays silent.
// Every line written while a reconcile runs carries the object it serves and a
// reconcile id (controller-runtime's keys), through an AsyncLocalStorage read
// by a pino mixin, so code several calls deep (the platform client's request
// logs) needs no logger handed down to say which object it works for.
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { pino, type DestinationStream, type Logger } from "pino";

export type { Logger };

export const silentLogger: Logger = pino({ level: "silent" });

/** What every log line of one reconcile says about it. */
export interface ReconcileLogContext {
  /** The object's kind, e.g. ComputeEndpoint. */
  controllerKind: string;
  namespace?: string;
  name: string;
  /** A fresh id per reconcile, to follow one pass through interleaved lines. */
  reconcileID: string;
}

const reconcileContext = new AsyncLocalStorage<ReconcileLogContext>();

/** Runs `fn` as one reconcile of the object: every line logged within carries it. */
export function inReconcile<R>(object: { kind: string; namespace?: string; name: string }, fn: () => R): R {
  const context: ReconcileLogContext = {
    controllerKind: object.kind,
    ...(object.namespace ? { namespace: object.namespace } : {}),
    name: object.name,
    reconcileID: randomUUID(),
  };
  return reconcileContext.run(context, fn);
}

/** The reconcile running in this async context, if any. */
export function currentReconcile(): ReconcileLogContext | undefined {
  return reconcileContext.getStore();
}

/** The pino mixin that adds the current reconcile's fields to a line. */
export function reconcileMixin(): object {
  return reconcileContext.getStore() ?? {};
}

/**
 * Errors in one shape, `err: { type, message, stack? }`, whether a call site logs an Error or
 * only its message. Deliberately not pino's serializer: that one copies every enumerable
 * property and the cause chain, which may hold a request or a response body.
 */
export function serializeError(err: unknown): { type: string; message: string; stack?: string } {
  if (err instanceof Error) {
    const type = err.name !== "Error" ? err.name : err.constructor.name;
    return { type, message: err.message, ...(err.stack ? { stack: err.stack } : {}) };
  }
  if (typeof err === "object" && err !== null && "message" in err) {
    const e = err as { message: unknown; type?: unknown };
    return { type: typeof e.type === "string" ? e.type : "Error", message: String(e.message) };
  }
  return { type: "Error", message: String(err) };
}

/** pino options shared by the operator's logger and any logger a test builds to see its lines. */
export function loggerOptions(level: string): pino.LoggerOptions {
  return {
    level,
    mixin: reconcileMixin,
    serializers: { err: serializeError },
    // A safety net for secrets that reach a log call by mistake; code must not log them at all.
    redact: {
      paths: ["*.apiKey", "*.key", "*.token", "*.authorization", "*.Authorization", "*.data", "*.stringData"],
      censor: "[redacted]",
    },
  };
}

/** The operator's logger: JSON lines on stdout (or `destination`). */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return destination ? pino(loggerOptions(level), destination) : pino(loggerOptions(level));
}
