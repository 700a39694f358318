-- Argo CD health of a neoncloud.dev resource (ComputeEndpoint, ApiKey, Branch, Project, Snapshot),
-- read from the standard conditions the operator writes: Ready, Reconciling,
-- Stalled. One script for every kind: deploy/argocd/argocd-cm.yaml registers it
-- under each kind's key (a test keeps them equal, and docs/gitops.md shows
-- what each phase of each kind looks like).
local hs = { status = "Progressing", message = "Waiting for the operator to report status" }

local function condition(type)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local function describe(c)
  return (c.reason or "") .. ": " .. (c.message or "")
end

local ready = condition("Ready")

if obj.metadata.deletionTimestamp ~= nil then
  hs.message = "Being deleted: the operator cleans up on the platform first"
  -- A cleanup the platform refuses (a protected Branch: DeleteRefused) says why.
  if ready ~= nil and ready.status == "False" then
    hs.message = hs.message .. " (" .. describe(ready) .. ")"
  end
  return hs
end

if ready == nil then
  return hs
end

-- Conditions written for an older spec say nothing about the current one.
local generation = obj.metadata.generation
local observed = ready.observedGeneration
if observed == nil then
  observed = obj.status.observedGeneration
end
if generation ~= nil and observed ~= nil and observed < generation then
  hs.message = "Waiting for the operator to act on generation " .. generation
  return hs
end

local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = describe(stalled)
  return hs
end

if ready.status == "True" then
  if obj.kind == "ComputeEndpoint" and obj.spec ~= nil and obj.spec.suspended == true then
    hs.status = "Suspended"
  else
    hs.status = "Healthy"
  end
  hs.message = ready.message
  return hs
end

-- Not ready, but on its way: work under way, or a wait the operator sits out by itself.
local reconciling = condition("Reconciling")
-- BranchState: a branch not usable yet (init, or a change made outside), which the platform ends.
local passing = {
  WaitingForProject = true,
  Locked = true,
  RateLimited = true,
  OutcomeUnknown = true,
  BranchState = true,
}
if (reconciling ~= nil and reconciling.status == "True") or ready.status == "Unknown" or passing[ready.reason] then
  hs.message = describe(ready)
  return hs
end

-- Not ready and nothing under way: a person must act (credentials, project, spec).
hs.status = "Degraded"
hs.message = describe(ready)
return hs
