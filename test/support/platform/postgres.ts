// A branch's Postgres as the operator reaches it: the connection URI the platform client asks
// for, opened with pg and closed after the test.
import type pg from "pg";
import type { PlatformClient } from "../../../src/platform/client.ts";
import { connectUri } from "../../emulator/postgres.ts";

/** The owner's connection to `neondb` of the branch. */
export async function connectBranch(
  client: PlatformClient,
  projectId: string,
  branchId: string,
): Promise<pg.Client> {
  return connectUri(
    await client.connectionUri(projectId, { branchId, databaseName: "neondb", roleName: "neondb_owner" }),
  );
}
