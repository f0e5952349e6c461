/** Shared helpers of the control-plane tests: kubectl runs, waiting, Pod readings. */
import { execFile } from 'node:child_process';
import { accessSync, constants, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeObject } from '../../src/client/k8s/types.js';
import { waitFor as serverWaitFor } from '../server/helpers.js';

export function findKubectl(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const p = join(dir, 'kubectl');
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {}
  }
  return undefined;
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** kubectl with its own HOME and a kubeconfig for the given text. */
export function kubectlRunner(bin: string, dir: string, kubeconfig: string) {
  const config = join(dir, 'kubeconfig');
  writeFileSync(config, kubeconfig);
  const env = { ...process.env, KUBECONFIG: config, HOME: dir };
  return (args: string[]): Promise<Run> =>
    new Promise((resolve) => {
      execFile(bin, args, { env, cwd: dir, timeout: 120_000 }, (err, stdout, stderr) => {
        const code = err ? ((err as { code?: number }).code ?? 1) : 0;
        resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr });
      });
    });
}

/** The suite's waitFor with a control plane's pace: up to a minute, polling every 200 ms. */
export function waitFor(
  what: string,
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 60_000,
  stepMs = 200,
): Promise<void> {
  return serverWaitFor(what, cond, timeoutMs, stepMs);
}

export type Pod = KubeObject & {
  spec: { nodeName?: string; containers: { name: string; image: string }[] };
  status?: { phase?: string; podIP?: string; conditions?: { type: string; status: string }[] };
};

export const ready = (p: Pod) =>
  p.metadata.deletionTimestamp === undefined &&
  (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
