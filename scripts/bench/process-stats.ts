// CPU time and memory of a child process, read from /proc (Linux only). CPU is
// user + system time of the process itself; peak RSS is the kernel's high-water
// mark (VmHWM), so no sample can miss a spike.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

export interface ProcessSample {
  cpuSeconds: number;
  rssBytes: number;
  peakRssBytes: number;
}

export function sampleProcess(pid: number): ProcessSample | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) * 1024;
    return { cpuSeconds: (utime + stime) / clockTicks(), rssBytes: kib("VmRSS"), peakRssBytes: kib("VmHWM") };
  } catch {
    return undefined;
  }
}
