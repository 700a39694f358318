// Compute sizes and the rules for fixed sizes and autoscaling ranges.
import { badRequest } from "./errors.ts";

/** 0.25, 0.5, every integer 1..16, even sizes 18..56. */
export function isComputeSize(cu: number): boolean {
  if (cu === 0.25 || cu === 0.5) return true;
  if (!Number.isInteger(cu)) return false;
  return (cu >= 1 && cu <= 16) || (cu >= 18 && cu <= 56 && cu % 2 === 0);
}

/**
 * Throws the platform's 400 when min/max is not a valid fixed size or autoscaling range, naming
 * the field (under `prefix`, e.g. `default_endpoint_settings.`).
 */
export function checkComputeRange(min: number, max: number, prefix = ""): void {
  const minField = `${prefix}autoscaling_limit_min_cu`;
  const maxField = `${prefix}autoscaling_limit_max_cu`;
  if (!isComputeSize(min)) throw badRequest(`${minField}: invalid compute size ${min}`);
  if (!isComputeSize(max)) throw badRequest(`${maxField}: invalid compute size ${max}`);
  if (min > max) throw badRequest(`${minField} must not exceed ${maxField}`);
  if (min < max) {
    if (max > 16) {
      throw badRequest(
        `${maxField}: an autoscaling range must stay within 16 CU; sizes above 16 are fixed only`,
      );
    }
    if (max - min > 8) throw badRequest(`${maxField}: an autoscaling range must not span more than 8 CU`);
  }
}
