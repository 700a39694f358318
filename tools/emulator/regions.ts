// The platform's regions: which a new project may name, and the proxy host each implies.
import { badRequest } from "./errors.ts";

/** The regions `GET /regions` lists and a project create accepts (the platform's public list). */
export const regions: readonly { id: string; name: string }[] = [
  { id: "aws-us-east-1", name: "AWS US East (N. Virginia)" },
  { id: "aws-us-east-2", name: "AWS US East (Ohio)" },
  { id: "aws-us-west-2", name: "AWS US West (Oregon)" },
  { id: "aws-eu-central-1", name: "AWS Europe (Frankfurt)" },
  { id: "aws-eu-west-2", name: "AWS Europe (London)" },
  { id: "aws-ap-southeast-1", name: "AWS Asia Pacific (Singapore)" },
  { id: "aws-ap-southeast-2", name: "AWS Asia Pacific (Sydney)" },
  { id: "aws-sa-east-1", name: "AWS South America (São Paulo)" },
  { id: "azure-eastus2", name: "Azure East US 2 (Virginia)" },
  { id: "azure-westus3", name: "Azure West US 3 (Arizona)" },
  { id: "azure-gwc", name: "Azure Germany West Central (Frankfurt)" },
];

/** Where a project goes when its create names no region (the seed's default too). */
export const defaultRegionId = "aws-us-east-2";

export function checkRegion(regionId: string): void {
  if (!regions.some((r) => r.id === regionId)) {
    throw badRequest(`region_id: ${regionId} is not a supported region (GET /regions lists them)`);
  }
}

/** `aws-us-east-2` → `us-east-2.aws.neon.tech`, the platform's proxy host form. */
export function regionHost(regionId: string): { platformId: string; proxyHost: string } {
  const match = /^(aws|azure|gcp)-(.+)$/.exec(regionId);
  if (!match?.[1] || !match[2]) return { platformId: "aws", proxyHost: `${regionId}.neon.tech` };
  return { platformId: match[1], proxyHost: `${match[2]}.${match[1]}.neon.tech` };
}

/** `GET /regions`: `ActiveRegionsResponse` (coordinates unknown: empty, as the document allows). */
export function regionsView(): Record<string, unknown> {
  return {
    regions: regions.map((r) => ({
      region_id: r.id,
      name: r.name,
      default: r.id === defaultRegionId,
      geo_lat: "",
      geo_long: "",
    })),
  };
}
