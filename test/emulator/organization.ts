// A world with an organization for the access tests: Acme owns the projects given, and Ada, a
// user, is its admin. The keys are fixed so a test can act as either.
import type { z } from "zod";
import type { seedSchema } from "../../tools/emulator/seed.ts";

type SeedInput = z.input<typeof seedSchema>;

/** The organization's own key (`api_key_org`). */
export const orgKey = "o".repeat(64);
/** Ada's personal key: an admin of the organization. */
export const adaKey = "a".repeat(64);

/** Acme (`org-acme`) owning `projects`, Ada its admin, and further `accounts`. */
export function acmeSeed(
  projects: NonNullable<SeedInput["projects"]>,
  accounts: NonNullable<SeedInput["accounts"]> = [],
): SeedInput {
  return {
    account: { kind: "organization", id: "org-acme", name: "Acme" },
    bootstrap_key: { name: "acme-ci", key: orgKey },
    projects,
    accounts: [
      {
        account: {
          name: "Ada",
          email: "ada@example.com",
          organizations: [{ id: "org-acme", name: "Acme", role: "admin" }],
        },
        bootstrap_key: { name: "ada", key: adaKey },
      },
      ...accounts,
    ],
  };
}
