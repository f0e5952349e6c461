/**
 * Reads a V8 .cpuprofile (what `node --cpu-prof` writes) and names where the time went: self
 * time per function (name, file, line), largest first, as a share of all non-idle samples.
 * Enough to say which functions limit a server without opening a profiler.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
}

export interface HotFunction {
  /** `name (file:line)`, file relative to the working directory when it is below it. */
  where: string;
  selfPct: number;
  selfMs: number;
}

/** The newest .cpuprofile in `dir` written at or after `sinceMs`, if any. */
export function newestProfile(dir: string, sinceMs: number): string | undefined {
  let best: { path: string; mtime: number } | undefined;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  for (const name of names) {
    if (!name.endsWith('.cpuprofile')) continue;
    const path = join(dir, name);
    const mtime = statSync(path).mtimeMs;
    if (mtime >= sinceMs && (best === undefined || mtime > best.mtime)) best = { path, mtime };
  }
  return best?.path;
}

function label(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName || '(anonymous)';
  if (!url) return name;
  const file = url.startsWith('file://') ? relative(process.cwd(), new URL(url).pathname) : url;
  return `${name} (${file}:${lineNumber + 1})`;
}

/** The `top` functions by self time; idle time is left out of the total. */
export function hotFunctions(
  path: string,
  top = 15,
): { totalMs: number; functions: HotFunction[] } {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<string, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  let totalUs = 0;
  // Sample i's time is the delta to the next sample (the last one has none).
  for (let i = 0; i < samples.length; i++) {
    const node = byId.get(samples[i]!);
    if (node === undefined || node.callFrame.functionName === '(idle)') continue;
    const us = deltas[i + 1] ?? 0;
    const key = label(node);
    selfUs.set(key, (selfUs.get(key) ?? 0) + us);
    totalUs += us;
  }
  const functions = [...selfUs.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([where, us]) => ({
      where,
      selfMs: Math.round(us / 1000),
      selfPct: totalUs > 0 ? (100 * us) / totalUs : 0,
    }));
  return { totalMs: Math.round(totalUs / 1000), functions };
}
