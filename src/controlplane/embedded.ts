/**
 * A control plane in one call, for tests of users' own controllers:
 *
 *   const cp = await startControlPlane({ nodes: 3 });
 *   // cp.kubeconfig for kubectl or client-go style clients, cp.client for this package's
 *   await cp.client.resource(Resources.deployments, 'default').create({...});
 *   await cp.stop();
 *
 * A single member on an ephemeral 127.0.0.1 port (its data in a temporary directory removed
 * on stop, unless `dataDir` is given) with every part of PARTS on, or those chosen.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeClient } from '../client/k8s/client.js';
import type { NodeSimulator } from '../nodes/simulator.js';
import { type MemberConfigInput, resolveConfig } from '../server/config.js';
import { createLogger } from '../server/logger.js';
import { Member } from '../server/member.js';
import {
  allParts,
  type ControlPlaneOptions,
  type RunningControlPlane,
  runControlPlane,
} from './index.js';

export interface StartControlPlaneOptions extends ControlPlaneOptions {
  /** Data directory; default a new temporary one, removed by stop(). */
  dataDir?: string;
  /** Where to write the kubeconfig too (it is always returned as text). */
  kubeconfigPath?: string;
  /** More member settings (flags by their config names). */
  member?: MemberConfigInput;
}

export interface ControlPlane {
  readonly url: string;
  /** A kubeconfig (YAML) with one context, `etcetera`, namespace default. */
  readonly kubeconfig: string;
  readonly client: KubeClient;
  readonly member: Member;
  readonly running: RunningControlPlane;
  /** The simulated nodes (when `nodes` > 0). */
  readonly nodes: NodeSimulator | undefined;
  stop(): Promise<void>;
}

export function kubeconfigFor(url: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: etcetera`,
    `  cluster: {server: "${url}"}`,
    'contexts:',
    '- name: etcetera',
    '  context: {cluster: etcetera, user: nobody, namespace: default}',
    'current-context: etcetera',
    'users:',
    '- name: nobody',
    '  user: {}',
    '',
  ].join('\n');
}

export async function startControlPlane(o: StartControlPlaneOptions = {}): Promise<ControlPlane> {
  const { dataDir, kubeconfigPath, member: memberInput, ...rest } = o;
  const parts: ControlPlaneOptions = { ...allParts(3), ...rest };
  const temp = dataDir === undefined ? await mkdtemp(join(tmpdir(), 'etcetera-cp-')) : undefined;
  const dir = dataDir ?? join(temp as string, 'data');
  const config = resolveConfig({
    name: 'cp',
    dataDir: dir,
    listenClientUrls: 'http://127.0.0.1:0',
    listenPeerUrls: 'http://127.0.0.1:0',
    initialAdvertisePeerUrls: 'http://127.0.0.1:1',
    initialCluster: 'cp=http://127.0.0.1:1',
    logLevel: 'silent',
    // A kubelet finishes a graceful deletion: on when the simulated nodes run.
    gracefulPodDeletion: typeof parts.nodes === 'number' && parts.nodes > 0,
    ...memberInput,
  });
  const member = await Member.start(config, {
    logger: createLogger({ level: config.logLevel, name: config.name }),
  });
  const url = member.advertisedClientUrls()[0] as string;
  const client = new KubeClient({ baseUrl: url });
  let running: RunningControlPlane;
  try {
    running = await runControlPlane(client, parts);
  } catch (e) {
    await member.stop();
    if (temp) await rm(temp, { recursive: true, force: true });
    throw e;
  }
  const kubeconfig = kubeconfigFor(url);
  if (kubeconfigPath) await writeFile(kubeconfigPath, kubeconfig);
  return {
    url,
    kubeconfig,
    client,
    member,
    running,
    nodes: running.nodes,
    async stop() {
      await running.stop();
      await member.stop();
      if (temp) await rm(temp, { recursive: true, force: true });
    },
  };
}
