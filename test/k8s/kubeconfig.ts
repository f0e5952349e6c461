/**
 * The kubeconfig the kubectl tests hand to kubectl: one cluster at `server`, one context
 * with namespace default, a user without credentials (tests pass tokens or certificates as
 * flags). `cluster` adds fields to the cluster entry (a CA file, insecure-skip-tls-verify).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function writeKubeconfig(
  dir: string,
  server: string,
  cluster: Record<string, string | boolean> = {},
): string {
  const fields = [`server: "${server}"`];
  for (const [k, v] of Object.entries(cluster))
    fields.push(typeof v === 'string' ? `${k}: "${v}"` : `${k}: ${v}`);
  const path = join(dir, 'kubeconfig');
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- cluster: {${fields.join(', ')}}`,
      '  name: t',
      'contexts:',
      '- context: {cluster: t, user: u, namespace: default}',
      '  name: t',
      'current-context: t',
      'users:',
      '- name: u',
      '  user: {}',
      '',
    ].join('\n'),
  );
  return path;
}
