// The platform API's routes for anonymized branches: create one, read and replace its masking
// rules, start a run, read its state.
import { branchOf, createdBranch, param, type ApiRoute } from "./api-routes.ts";
import {
  anonymizationOf,
  createAnonymizedBranch,
  startAnonymization,
  updateMaskingRules,
} from "./anonymized.ts";
import { findProject } from "./endpoints.ts";
import { createAnonymizedBranchBody, parseInput, updateMaskingRulesBody } from "./requests.ts";
import { anonymizedStatusView } from "./views.ts";

const B = "/projects/:project_id/branches/:branch_id";

export const anonymizedRoutes: ApiRoute[] = [
  {
    method: "POST",
    path: "/projects/:project_id/branch_anonymized",
    async handle(ctx) {
      const projectId = param(ctx, "project_id");
      const project = findProject(ctx.world, projectId);
      const body = parseInput(createAnonymizedBranchBody, ctx.body);
      return createdBranch(ctx, project, await createAnonymizedBranch(ctx.world, projectId, body, ctx.now));
    },
  },
  {
    method: "GET",
    path: `${B}/masking_rules`,
    handle: (ctx) => ({ status: 200, body: { masking_rules: anonymizationOf(branchOf(ctx)).rules } }),
  },
  {
    method: "PATCH",
    path: `${B}/masking_rules`,
    async handle(ctx) {
      const branch = branchOf(ctx);
      const { masking_rules } = parseInput(updateMaskingRulesBody, ctx.body);
      const rules = await updateMaskingRules(ctx.world, branch, masking_rules, ctx.now);
      return { status: 200, body: { masking_rules: rules } };
    },
  },
  {
    method: "GET",
    path: `${B}/anonymized_status`,
    handle(ctx) {
      const branch = branchOf(ctx);
      return { status: 200, body: anonymizedStatusView(branch, anonymizationOf(branch)) };
    },
  },
  {
    method: "POST",
    path: `${B}/anonymize`,
    handle(ctx) {
      const branch = branchOf(ctx);
      const anonymization = startAnonymization(ctx.world, branch, ctx.account, ctx.now);
      return { status: 200, body: anonymizedStatusView(branch, anonymization) };
    },
  },
];
