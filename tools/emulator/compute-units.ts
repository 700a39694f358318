// Compute sizes and the rules for fixed sizes and autoscaling ranges.
import { badRequest } from "./errors.ts";

/** 0.25, 0.5, every integer 1..16, even sizes 18..56. */
export function isComputeSize(cu: number): boolean {
  if (cu === 0.25 || cu === 0.5) return true;
  if (!Number.isInteger(cu)) return false;
  return (cu >= 1 && cu <= 16) || (cu >= 18 && cu <= 56 && cu % 2 === 0);
}

/** Throws the platform's 400 when min/max is not a valid fixed size or autoscaling range. */
export function checkComputeRange(min: number, max: number): void {
  for (const cu of [min, max]) {
    if (!isComputeSize(cu)) throw badRequest(`invalid compute size ${cu}`);
  }
  if (min > max) throw badRequest("autoscaling_limit_min_cu must not exceed autoscaling_limit_max_cu");
  if (min < max) {
    if (max > 16) throw badRequest("autoscaling range must stay within 16 CU; sizes above 16 are fixed only");
    if (max - min > 8) throw badRequest("autoscaling range must not span more than 8 CU");
  }
}
