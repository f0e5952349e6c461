/**
 * `etcetera proxy`: the API tier as a standalone process in front of an etcetera cluster or a
 * real etcd 3.4+/3.5 cluster. The remote member (remote-member.ts) is served by the same
 * faces and client listeners as a member's (src/server/client-http.ts: gRPC and HTTP/1.1 on
 * one port; etcd's JSON API, websockets, the Kubernetes face, /metrics, /health), every
 * watch from this process's own watch cache.
 *
 * Flags, as etcd's grpc-proxy takes them: --endpoints (comma-separated upstream client
 * URLs), --listen-client-urls (where this tier listens; default http://127.0.0.1:23790),
 * --advertise-client-urls (what member lists name; default the listen URLs, port 0
 * resolved), --data-dir (optional: created when given, nothing is kept in it today, since
 * the cache is rebuilt from the upstream on every start), --log-level.
 */
import { mkdir } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { EtceteraError } from '../errors.js';
import { apiFace, ClientListeners, DEFAULT_CLIENT_LIMITS } from '../server/client-http.js';
import { createLogger, type Logger } from '../server/logger.js';
import { createRemoteMember, type RemoteMember } from './remote-member.js';

export interface ProxyConfig {
  endpoints: string[];
  listenClientUrls: URL[];
  /** Empty: the bound listen URLs. */
  advertiseClientUrls: URL[];
  dataDir?: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /** Per upstream call. */
  requestTimeoutMs?: number;
}

export const PROXY_USAGE = `Usage: etcetera proxy [flags]

The API tier in front of an etcetera or etcd cluster: etcd's gRPC and JSON APIs, websocket
watches and the Kubernetes face, every watch served from this process's watch cache, fed by
one upstream watch.

  --endpoints URL,...               upstream client URLs (required)
  --listen-client-urls URL,...      where to listen (default http://127.0.0.1:23790)
  --advertise-client-urls URL,...   client URLs member lists name (default: the listen URLs)
  --data-dir DIR                    accepted as etcd's grpc-proxy does; created, nothing kept
  --log-level LEVEL                 debug, info, warn, error (default info)
`;

const LEVELS = new Set(['debug', 'info', 'warn', 'error', 'silent']);

function urls(flag: string, text: string): URL[] {
  const out: URL[] = [];
  for (const part of text.split(',')) {
    const s = part.trim();
    if (s === '') continue;
    let u: URL;
    try {
      u = new URL(s);
    } catch {
      throw new EtceteraError('ERR_INVALID_ARGUMENT', { detail: `${flag}: ${s} is not a URL` });
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new EtceteraError('ERR_INVALID_ARGUMENT', {
        detail: `${flag}: ${s} must be http:// or https://`,
      });
    out.push(u);
  }
  return out;
}

/** The proxy's flags; throws ERR_INVALID_ARGUMENT naming the flag that is wrong. */
export function parseProxyArgs(args: string[]): ProxyConfig {
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        endpoints: { type: 'string' },
        'listen-client-urls': { type: 'string' },
        'advertise-client-urls': { type: 'string' },
        'data-dir': { type: 'string' },
        'log-level': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    throw new EtceteraError('ERR_INVALID_ARGUMENT', { detail: (e as Error).message });
  }
  const endpoints = urls('--endpoints', values.endpoints ?? '');
  if (endpoints.length === 0)
    throw new EtceteraError('ERR_INVALID_ARGUMENT', { detail: '--endpoints is required' });
  const listen = urls(
    '--listen-client-urls',
    values['listen-client-urls'] ?? 'http://127.0.0.1:23790',
  );
  if (listen.length === 0)
    throw new EtceteraError('ERR_INVALID_ARGUMENT', { detail: '--listen-client-urls is empty' });
  const https = listen.find((u) => u.protocol === 'https:');
  if (https !== undefined)
    throw new EtceteraError('ERR_INVALID_ARGUMENT', {
      detail: `--listen-client-urls: ${https.href}: the proxy serves plain http only for now`,
    });
  const level = values['log-level'] ?? 'info';
  if (!LEVELS.has(level))
    throw new EtceteraError('ERR_INVALID_ARGUMENT', { detail: `--log-level: ${level}` });
  return {
    endpoints: endpoints.map((u) => u.href.replace(/\/$/, '')),
    listenClientUrls: listen,
    advertiseClientUrls: urls('--advertise-client-urls', values['advertise-client-urls'] ?? ''),
    ...(values['data-dir'] !== undefined ? { dataDir: values['data-dir'] } : {}),
    logLevel: level as ProxyConfig['logLevel'],
  };
}

/** A running proxy: the remote member and its listeners. */
export interface RunningProxy {
  readonly member: RemoteMember;
  /** The bound client URLs (port 0 resolved). */
  readonly clientUrls: URL[];
  readonly logger: Logger;
  stop(): Promise<void>;
}

const urlString = (u: URL) => u.href.replace(/\/$/, '');

/** Connects to the upstream, fills the cache, and listens. */
export async function startProxy(
  config: ProxyConfig,
  options: { logger?: Logger } = {},
): Promise<RunningProxy> {
  const logger = options.logger ?? createLogger({ level: config.logLevel, name: 'proxy' });
  if (config.dataDir !== undefined) await mkdir(config.dataDir, { recursive: true });
  let listeners: ClientListeners | undefined;
  const advertised = (): string[] => {
    const bound = listeners?.urls ?? config.listenClientUrls;
    if (config.advertiseClientUrls.length === 0) return bound.map(urlString);
    return config.advertiseClientUrls.map((u) => {
      const i = config.listenClientUrls.findIndex((l) => l.href === u.href);
      const b = i >= 0 ? bound[i] : undefined;
      return urlString(u.port === '0' && b !== undefined ? b : u);
    });
  };
  const member = await createRemoteMember({
    endpoints: config.endpoints,
    advertiseClientUrls: advertised,
    logger,
    ...(config.requestTimeoutMs !== undefined ? { requestTimeoutMs: config.requestTimeoutMs } : {}),
  });
  const clientHosts = [...config.listenClientUrls, ...config.advertiseClientUrls].map(
    (u) => u.hostname,
  );
  const face = apiFace(member, logger, { access: { clientHosts }, kubernetes: {} });
  try {
    listeners = await ClientListeners.open(face, config.listenClientUrls, {
      ...DEFAULT_CLIENT_LIMITS,
      logger,
    });
  } catch (e) {
    await face.close?.();
    await member.close();
    throw e;
  }
  const open = listeners;
  logger.info(
    {
      endpoints: config.endpoints,
      clientURLs: open.urls.map(urlString),
      revision: member.watchSource.currentRevision,
    },
    'proxy started',
  );
  let stopping: Promise<void> | undefined;
  return {
    member,
    clientUrls: open.urls,
    logger,
    stop: () => {
      stopping ??= (async () => {
        await open.close();
        await member.close();
        logger.info('proxy stopped');
      })();
      return stopping;
    },
  };
}
