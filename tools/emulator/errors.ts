// A refusal the platform would answer with an error status and its error body
// `{code, message, request_id}`.

export class PlatformError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, message: string, code = "") {
    super(message);
    this.name = "PlatformError";
    this.status = status;
    this.code = code;
  }
}

export const notFound = (what: string): PlatformError => new PlatformError(404, `${what} not found`);

export const badRequest = (message: string): PlatformError => new PlatformError(400, message);

export const projectLocked = (): PlatformError =>
  new PlatformError(
    423,
    "project already has running conflicting operations, scheduling of new ones is prohibited",
  );
