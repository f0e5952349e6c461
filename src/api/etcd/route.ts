/**
 * What a route of etcd's v3 JSON API is: a function from a parsed body to a JSON answer,
 * given the member it serves. Routes throw EtceteraError for every refusal; the app turns
 * it into etcd's error body. `stream` routes answer as a gateway stream of one message
 * (`{"result": ...}` and a newline), as etcd does for lease keepalive.
 */
import type { IncomingMessage } from 'node:http';
import { EtceteraError } from '../../errors.js';
import { clientCertCommonName } from '../../server/tls.js';
import type { Credentials, MemberApi, ResponseHeader } from '../../server/types.js';
import type { Command, CommandResult } from '../../store/types.js';
import { commandSize } from '../../store/validate.js';
import { utf8ToBytes } from '../../wire/bytes.js';
import type { Json } from './encode.js';

type ResultOf<Op extends Command['op']> = Extract<CommandResult, { op: Op }>['result'];

export interface RouteContext {
  readonly member: MemberApi;
  /** --max-request-bytes: the bound on a decoded write request. */
  readonly maxRequestBytes: number;
}

export interface Route {
  readonly handle: (body: unknown, ctx: RouteContext) => Promise<Json>;
  readonly stream?: boolean;
}

export type RouteTable = Readonly<Record<string, Route>>;

/**
 * Proposes a write after the size check etcd makes on the decoded request, and narrows the
 * result to the command's own kind (the member answers each command with its kind).
 */
export async function write<Op extends Command['op']>(
  ctx: RouteContext,
  command: Extract<Command, { op: Op }>,
): Promise<{ header: ResponseHeader; result: ResultOf<Op> }> {
  if (commandSize(command) > ctx.maxRequestBytes) throw new EtceteraError('ERR_REQUEST_TOO_LARGE');
  const { header, result } = await ctx.member.write(command);
  if (result.op !== command.op) {
    // A member bug, not a request error: the app answers 500.
    throw new Error(`member answered ${result.op} to ${command.op}`);
  }
  return { header, result: result.result as ResultOf<Op> };
}

/**
 * The context of one request: the member as the request's caller may use it (etcd's auth,
 * src/server/auth.ts). Rejects with ERR_INVALID_AUTH_TOKEN for a token the member does not
 * know. A member without auth (a test double) serves the context as it is.
 */
export async function callerContext<C extends RouteContext>(
  ctx: C,
  credentials: Credentials,
): Promise<C> {
  const auth = ctx.member.auth;
  if (auth === undefined) return ctx;
  const caller = await auth.identify(credentials);
  return { ...ctx, member: auth.as(caller) };
}

/** What the caller of a view may watch (READ on the whole range); undefined: anything. */
export function watchPermits(
  member: MemberApi,
): ((r: { key: string | Uint8Array; rangeEnd?: string | Uint8Array }) => boolean) | undefined {
  const { auth, caller } = member;
  if (auth === undefined || caller === undefined) return undefined;
  const bytes = (b: string | Uint8Array) => (typeof b === 'string' ? utf8ToBytes(b) : b);
  return (r) => {
    try {
      auth.checkWatch(caller, {
        key: bytes(r.key),
        rangeEnd: r.rangeEnd === undefined ? undefined : bytes(r.rangeEnd),
      });
      return true;
    } catch {
      return false;
    }
  };
}

/** The token of an HTTP request: etcd's gateway takes the `Authorization` header as it is. */
export function httpToken(headers: { authorization?: string }): string | undefined {
  return headers.authorization;
}

/**
 * Who an HTTP request says it is: its token, and the CN of the client certificate its
 * connection verified (with --client-cert-auth the CN is the user, as in etcd; a token wins).
 */
export function httpCredentials(req: IncomingMessage): Credentials {
  return credentials(httpToken(req.headers), clientCertCommonName(req.socket));
}

/** Credentials from what a request carried: a token, a verified certificate's CN. */
export function credentials(token: string | undefined, cn: string | undefined): Credentials {
  return {
    ...(token !== undefined ? { token } : {}),
    ...(cn !== undefined && cn.length > 0 ? { certCommonName: cn } : {}),
  };
}
