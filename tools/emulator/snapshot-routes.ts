// The platform API's routes for snapshots (take, list, rename, delete, restore, finalize a
// restore) and for a branch's backup schedule.
import { branchOf, param, type ApiContext, type ApiRoute } from "./api-routes.ts";
import { backupScheduleOf, setBackupSchedule } from "./backup-schedules.ts";
import { findProject } from "./endpoints.ts";
import type { SnapshotRecord } from "./model.ts";
import {
  backupScheduleBody,
  createSnapshotQuery,
  finalizeRestoreBody,
  parseInput,
  restoreSnapshotBody,
  restoreSnapshotQuery,
  updateSnapshotBody,
} from "./requests.ts";
import {
  createSnapshot,
  deleteSnapshot,
  finalizeRestore,
  findSnapshot,
  restoreSnapshot,
  snapshotsOfProject,
  updateSnapshot,
} from "./snapshots.ts";
import { branchView, endpointView, operationView, snapshotView } from "./views.ts";

const B = "/projects/:project_id/branches/:branch_id";
const S = "/projects/:project_id/snapshots/:snapshot_id";
const snapshotOf = (ctx: ApiContext): SnapshotRecord =>
  findSnapshot(ctx.world, findProject(ctx.world, param(ctx, "project_id")).id, param(ctx, "snapshot_id"));

export const snapshotRoutes: ApiRoute[] = [
  {
    method: "POST",
    path: `${B}/snapshot`,
    handle(ctx) {
      const branch = branchOf(ctx);
      const query = parseInput(createSnapshotQuery, Object.fromEntries(ctx.query));
      const { snapshot, operations } = createSnapshot(ctx.world, branch, query, ctx.now);
      return {
        status: 200,
        body: {
          snapshot: snapshotView(snapshot),
          operations: operations.map((op) => operationView(op, ctx.now)),
        },
      };
    },
  },
  {
    method: "GET",
    path: "/projects/:project_id/snapshots",
    handle(ctx) {
      const project = findProject(ctx.world, param(ctx, "project_id"));
      return {
        status: 200,
        body: { snapshots: snapshotsOfProject(ctx.world, project.id).map(snapshotView) },
      };
    },
  },
  {
    method: "PATCH",
    path: S,
    handle(ctx) {
      const snapshot = snapshotOf(ctx);
      const { snapshot: body } = parseInput(updateSnapshotBody, ctx.body);
      return {
        status: 200,
        body: { snapshot: snapshotView(updateSnapshot(ctx.world, snapshot, body, ctx.now)) },
      };
    },
  },
  {
    method: "DELETE",
    path: S,
    handle(ctx) {
      const operations = deleteSnapshot(ctx.world, snapshotOf(ctx), ctx.now);
      return { status: 202, body: { operations: operations.map((op) => operationView(op, ctx.now)) } };
    },
  },
  {
    method: "POST",
    path: `${S}/restore`,
    handle(ctx) {
      const snapshot = snapshotOf(ctx);
      const body = parseInput(restoreSnapshotBody, ctx.body);
      const { name } = parseInput(restoreSnapshotQuery, Object.fromEntries(ctx.query));
      const restored = restoreSnapshot(ctx.world, snapshot, { ...body, deprecatedName: name }, ctx.now);
      const project = findProject(ctx.world, snapshot.projectId);
      return {
        status: 200,
        body: {
          branch: branchView(restored.branch, ctx.shape),
          endpoints: restored.endpoints.map((e) =>
            endpointView(e, project, { ...ctx.shape, pendingState: true }),
          ),
          operations: restored.operations.map((op) => operationView(op, ctx.now)),
        },
      };
    },
  },
  {
    method: "POST",
    path: `${B}/finalize_restore`,
    handle(ctx) {
      const branch = branchOf(ctx);
      const body = parseInput(finalizeRestoreBody, ctx.body);
      const operations = finalizeRestore(ctx.world, branch, body, ctx.now);
      return { status: 200, body: { operations: operations.map((op) => operationView(op, ctx.now)) } };
    },
  },
  {
    method: "GET",
    path: `${B}/backup_schedule`,
    handle: (ctx) => ({ status: 200, body: { schedule: backupScheduleOf(branchOf(ctx)) } }),
  },
  {
    method: "PUT",
    path: `${B}/backup_schedule`,
    handle(ctx) {
      const branch = branchOf(ctx);
      const { schedule } = parseInput(backupScheduleBody, ctx.body);
      setBackupSchedule(ctx.world, branch, schedule, ctx.now);
      return { status: 200, body: {} };
    },
  },
];
