/**
 * The audit log of the Kubernetes face (`--audit-log-path`): one JSON line per mutating
 * request (create, update, patch, delete, deletecollection), refused ones included, in
 * kube-apiserver's audit.k8s.io/v1 Event shape at level Metadata: who, what verb, which
 * object, the answer's code, when. Lines go through a write stream, so the event loop
 * never waits for the disk; a line is written when the response has finished.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream, openSync, type WriteStream } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EtceteraError } from '../../errors.js';
import type { RequestAttributes, UserInfo } from '../../k8s/rbac.js';

/** audit.k8s.io/v1 Event, the fields level Metadata carries. */
export interface AuditEvent {
  kind: 'Event';
  apiVersion: 'audit.k8s.io/v1';
  level: 'Metadata';
  auditID: string;
  stage: 'ResponseComplete';
  requestURI: string;
  verb: string;
  user: { username: string; uid?: string; groups: readonly string[] };
  /** The user the request acted as under impersonation (`user` is who asked). */
  impersonatedUser?: { username: string; uid?: string; groups: readonly string[] };
  sourceIPs: string[];
  userAgent?: string;
  objectRef?: {
    resource: string;
    namespace?: string;
    name?: string;
    apiGroup?: string;
    apiVersion: string;
    subresource?: string;
  };
  responseStatus: { metadata: Record<string, never>; code: number };
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

export interface AuditSink {
  write(event: AuditEvent): void;
  close(): Promise<void>;
}

/** Appends JSON lines to `path`; opening it fails at once (a clear start error). */
export function fileAuditSink(path: string): AuditSink {
  let fd: number;
  try {
    fd = openSync(path, 'a');
  } catch (e) {
    throw new EtceteraError('ERR_INVALID_ARGUMENT', {
      detail: `--audit-log-path: cannot open ${path}: ${(e as NodeJS.ErrnoException).code}`,
    });
  }
  const stream: WriteStream = createWriteStream('', { fd, flags: 'a' });
  stream.on('error', () => undefined);
  return {
    write: (event) => {
      stream.write(`${JSON.stringify(event)}\n`);
    },
    close: () => new Promise<void>((resolve) => stream.end(() => resolve())),
  };
}

const MUTATING = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** Names of created objects, noted by the create handler (the request carries none). */
const createdNames = new WeakMap<IncomingMessage, string>();

export function noteRequestObjectName(req: IncomingMessage, name: string | undefined): void {
  if (name !== undefined && name !== '') createdNames.set(req, name);
}

/** Records the request when its response has finished, if it is a mutating one. */
export function auditRequest(
  sink: AuditSink | undefined,
  req: IncomingMessage,
  res: ServerResponse,
  attrs: RequestAttributes,
  now: () => number,
): void {
  if (!sink || attrs.kind !== 'resource' || !MUTATING.has(attrs.verb)) return;
  const auditUser = (u: UserInfo) => ({
    username: u.username,
    ...(u.uid !== '' ? { uid: u.uid } : {}),
    groups: u.groups,
  });
  const received = new Date(now()).toISOString();
  const user = attrs.user;
  res.once('close', () => {
    const name = attrs.name !== '' ? attrs.name : createdNames.get(req);
    const ua = req.headers['user-agent'];
    sink.write({
      kind: 'Event',
      apiVersion: 'audit.k8s.io/v1',
      level: 'Metadata',
      auditID: randomUUID(),
      stage: 'ResponseComplete',
      requestURI: req.url ?? '/',
      verb: attrs.verb,
      user: auditUser(user.impersonatedBy ?? user),
      ...(user.impersonatedBy !== undefined ? { impersonatedUser: auditUser(user) } : {}),
      sourceIPs: [req.socket.remoteAddress ?? ''],
      ...(ua !== undefined ? { userAgent: ua } : {}),
      objectRef: {
        resource: attrs.resource,
        ...(attrs.namespace !== '' ? { namespace: attrs.namespace } : {}),
        ...(name !== undefined ? { name } : {}),
        ...(attrs.apiGroup !== '' ? { apiGroup: attrs.apiGroup } : {}),
        apiVersion: attrs.apiVersion,
        ...(attrs.subresource !== '' ? { subresource: attrs.subresource } : {}),
      },
      responseStatus: { metadata: {}, code: res.statusCode },
      requestReceivedTimestamp: received,
      stageTimestamp: new Date(now()).toISOString(),
    });
  });
}
