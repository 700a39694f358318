// The platform API's routes for a branch's Postgres catalog (roles and
// databases), its restore, and the project's connection URIs.
import { branchChange, branchOf, param, type ApiContext, type ApiRoute } from "./api-routes.ts";
import { databasesOf, findDatabase, findRole, rolesOf } from "./catalog.ts";
import { connectionUri } from "./connection-uri.ts";
import { createDatabase, deleteDatabase, updateDatabase, type DatabaseChange } from "./databases.ts";
import { findProject } from "./endpoints.ts";
import type { BranchRecord } from "./model.ts";
import {
  connectionUriQuery,
  createDatabaseBody,
  createRoleBody,
  parseInput,
  restoreBranchBody,
  updateDatabaseBody,
} from "./requests.ts";
import { restoreBranch } from "./restore.ts";
import { createRole, deleteRole, resetPassword, revealPassword, type RoleChange } from "./roles.ts";
import { databaseView, operationView, roleView } from "./views.ts";

const B = "/projects/:project_id/branches/:branch_id";

function roleChange(ctx: ApiContext, status: number, branch: BranchRecord, change: RoleChange) {
  return {
    status,
    body: {
      role: roleView(branch.id, change.role, change.password),
      operations: change.operations.map((op) => operationView(op, ctx.now)),
    },
  };
}

function databaseChange(ctx: ApiContext, status: number, branch: BranchRecord, change: DatabaseChange) {
  return {
    status,
    body: {
      database: databaseView(branch.id, change.database),
      operations: change.operations.map((op) => operationView(op, ctx.now)),
    },
  };
}

export const catalogRoutes: ApiRoute[] = [
  {
    method: "GET",
    path: `${B}/roles`,
    handle(ctx) {
      const branch = branchOf(ctx);
      return { status: 200, body: { roles: rolesOf(branch).map((r) => roleView(branch.id, r)) } };
    },
  },
  {
    method: "POST",
    path: `${B}/roles`,
    handle(ctx) {
      const branch = branchOf(ctx);
      const { role } = parseInput(createRoleBody, ctx.body);
      return roleChange(ctx, 201, branch, createRole(ctx.world, branch, role, ctx.now));
    },
  },
  {
    method: "GET",
    path: `${B}/roles/:role_name`,
    handle(ctx) {
      const branch = branchOf(ctx);
      return { status: 200, body: { role: roleView(branch.id, findRole(branch, param(ctx, "role_name"))) } };
    },
  },
  {
    method: "DELETE",
    path: `${B}/roles/:role_name`,
    handle(ctx) {
      const branch = branchOf(ctx);
      const name = param(ctx, "role_name");
      // The document: 204 "if the role doesn't exist or has already been deleted".
      if (!rolesOf(branch).some((r) => r.name === name)) return { status: 204, empty: true };
      return roleChange(ctx, 200, branch, deleteRole(ctx.world, branch, name, ctx.now));
    },
  },
  {
    method: "GET",
    path: `${B}/roles/:role_name/reveal_password`,
    handle(ctx) {
      const branch = branchOf(ctx);
      const project = findProject(ctx.world, branch.projectId);
      return { status: 200, body: { password: revealPassword(project, branch, param(ctx, "role_name")) } };
    },
  },
  {
    method: "POST",
    path: `${B}/roles/:role_name/reset_password`,
    handle(ctx) {
      const branch = branchOf(ctx);
      return roleChange(ctx, 200, branch, resetPassword(ctx.world, branch, param(ctx, "role_name"), ctx.now));
    },
  },
  {
    method: "GET",
    path: `${B}/databases`,
    handle(ctx) {
      const branch = branchOf(ctx);
      return { status: 200, body: { databases: databasesOf(branch).map((d) => databaseView(branch.id, d)) } };
    },
  },
  {
    method: "POST",
    path: `${B}/databases`,
    handle(ctx) {
      const branch = branchOf(ctx);
      const { database } = parseInput(createDatabaseBody, ctx.body);
      return databaseChange(ctx, 201, branch, createDatabase(ctx.world, branch, database, ctx.now));
    },
  },
  {
    method: "GET",
    path: `${B}/databases/:database_name`,
    handle(ctx) {
      const branch = branchOf(ctx);
      const database = findDatabase(branch, param(ctx, "database_name"));
      return { status: 200, body: { database: databaseView(branch.id, database) } };
    },
  },
  {
    method: "PATCH",
    path: `${B}/databases/:database_name`,
    handle(ctx) {
      const branch = branchOf(ctx);
      const name = param(ctx, "database_name");
      findDatabase(branch, name);
      const { database } = parseInput(updateDatabaseBody, ctx.body);
      return databaseChange(ctx, 200, branch, updateDatabase(ctx.world, branch, name, database, ctx.now));
    },
  },
  {
    method: "DELETE",
    path: `${B}/databases/:database_name`,
    handle(ctx) {
      const branch = branchOf(ctx);
      const name = param(ctx, "database_name");
      // The document: 204 "if the database doesn't exist or has already been deleted".
      if (!databasesOf(branch).some((d) => d.name === name)) return { status: 204, empty: true };
      return databaseChange(ctx, 200, branch, deleteDatabase(ctx.world, branch, name, ctx.now));
    },
  },
  {
    method: "POST",
    path: `${B}/restore`,
    handle(ctx) {
      const branch = branchOf(ctx);
      const body = parseInput(restoreBranchBody, ctx.body);
      return branchChange(ctx, restoreBranch(ctx.world, branch, body, ctx.now));
    },
  },
  {
    method: "GET",
    path: "/projects/:project_id/connection_uri",
    async handle(ctx) {
      const project = findProject(ctx.world, param(ctx, "project_id"));
      const query = parseInput(connectionUriQuery, Object.fromEntries(ctx.query));
      return { status: 200, body: { uri: await connectionUri(ctx.world, project, query, ctx.postgres) } };
    },
  },
];
