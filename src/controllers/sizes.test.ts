// docs/controllers.md shows the size of the layer and of each kind as the code has it now.
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { controllersDoc, withSizes } from "../../scripts/controller-sizes.ts";

describe("docs/controllers.md", () => {
  it("shows the current sizes of the managed layer and each kind (npm run generate writes them)", async () => {
    const doc = await readFile(controllersDoc, "utf8");
    expect(doc).toBe(await withSizes(doc));
  });
});
