// Reads Prometheus' text exposition format: the declared type of each family and
// each sample with its labels, so tests can check names, types and labels.
export interface Sample {
  /** The family the sample belongs to (a histogram's _bucket, _sum and _count are its family). */
  family: string;
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  types: Map<string, string>;
  samples: Sample[];
  /** Every series name a query may select: counters and gauges as named, histograms' three series. */
  seriesNames: Set<string>;
}

const suffixes = ["_bucket", "_sum", "_count"];

export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1] ?? "", type[2] ?? "");
    if (line === "" || line.startsWith("#")) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!sample) throw new Error(`not an exposition line: ${line}`);
    const name = sample[1] ?? "";
    const labels: Record<string, string> = {};
    for (const m of (sample[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[m[1] ?? ""] = (m[2] ?? "").replace(/\\(.)/g, "$1");
    const suffix = suffixes.find((s) => name.endsWith(s) && types.has(name.slice(0, -s.length)));
    const family = suffix ? name.slice(0, -suffix.length) : name;
    samples.push({ family, name, labels, value: Number(sample[3]) });
  }
  const seriesNames = new Set<string>();
  for (const [name, type] of types) {
    if (type === "histogram" || type === "summary") for (const s of suffixes) seriesNames.add(name + s);
    else seriesNames.add(name);
  }
  return { types, samples, seriesNames };
}
