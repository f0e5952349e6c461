/**
 * The client CLI, for people without etcdctl: `etcetera get|put|del|txn|watch|lease|compact|
 * member list|update|endpoint status|health|hashkv|defrag|alarm list|disarm|move-leader|snapshot
 * save|status|restore`, over gRPC (or the JSON API with
 * `--transport json`), with etcdctl's flags that matter and its simple, json and table
 * output (src/client/etcdctl-output.ts).
 *
 * Exit codes as etcdctl's: 0 ok, 1 the server refused, 2 no server answered, 128 bad usage.
 */

import {
  formatAlarms,
  formatDelete,
  formatGet,
  formatHashKv,
  formatLeaseGrant,
  formatLeases,
  formatMembers,
  formatMemberUpdate,
  formatMoveLeader,
  formatPut,
  formatRestore,
  formatSnapshotStatus,
  formatStatus,
  formatTimeToLive,
  formatTxn,
  formatWatch,
  leaseHex,
  OutputFormat,
  stringify,
  UnsupportedFormat,
} from '../client/etcdctl-output.js';
import {
  flagBool,
  flagInt,
  type ParsedArgs,
  parseFlags,
  parseTxn,
  usageError,
} from '../client/etcdctl-txn.js';
import { Client, ClientError, type Protocol } from '../client/index.js';
import { saveSnapshot } from '../client/snapshot.js';
import { snapshotStatus } from '../client/snapshot-status.js';
import type { HashKvResponse, RangeOptions, SortOrder, SortTarget } from '../client/types.js';
import { Progress } from './progress.js';

export interface ClientIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /** The whole of stdin (txn, put without a value). */
  readStdin: () => Promise<string>;
  /** Ends long-running commands (watch, lease keep-alive). Default: SIGINT. */
  signal?: AbortSignal;
  /** Whether stderr is a terminal: then `snapshot save` draws its progress there. */
  stderrIsTTY?: boolean;
}

const EXIT = {
  ok: 0,
  error: 1,
  badConnection: 2,
  badFeature: 4,
  interrupted: 5,
  badArgs: 128,
} as const;

interface Ctx {
  client: Client;
  transport: Protocol;
  args: ParsedArgs;
  format: OutputFormat;
  endpoints: string[];
  io: ClientIo;
  print: (lines: string[]) => void;
}

type Command = (ctx: Ctx) => Promise<number>;

const COMMANDS: Record<string, Command> = {
  get: cmdGet,
  put: cmdPut,
  del: cmdDel,
  txn: cmdTxn,
  watch: cmdWatch,
  compact: cmdCompact,
  lease: cmdLease,
  member: cmdMember,
  endpoint: cmdEndpoint,
  defrag: cmdDefrag,
  alarm: cmdAlarm,
  'move-leader': cmdMoveLeader,
  snapshot: cmdSnapshot,
};

export const CLIENT_COMMANDS = Object.keys(COMMANDS);

export async function runClientCommand(
  argv: string[],
  io: ClientIo = processIo(),
): Promise<number> {
  let args: ParsedArgs;
  try {
    args = parseFlags(argv);
  } catch (e) {
    io.stderr(`Error: ${(e as Error).message}\n`);
    return EXIT.badArgs;
  }
  const [name, ...rest] = args.positionals;
  const command = name === undefined ? undefined : COMMANDS[name];
  if (command === undefined) {
    io.stderr(
      `Error: unknown command ${JSON.stringify(name ?? '')}; one of ${CLIENT_COMMANDS.join(', ')}\n`,
    );
    return EXIT.badArgs;
  }
  const format = (args.flags.get('write-out') ?? args.flags.get('w') ?? 'simple') as OutputFormat;
  if (!(format in OutputFormat)) {
    io.stderr(`Error: unsupported output format ${format}\n`);
    return EXIT.badArgs;
  }
  const endpoints = (
    args.flags.get('endpoints') ??
    process.env.ETCETERA_ENDPOINTS ??
    process.env.ETCDCTL_ENDPOINTS ??
    '127.0.0.1:2379'
  ).split(',');
  const transport = args.flags.get('transport') ?? process.env.ETCETERA_TRANSPORT ?? 'grpc';
  if (transport !== 'grpc' && transport !== 'json') {
    io.stderr(`Error: unsupported transport ${transport} (grpc or json)\n`);
    return EXIT.badArgs;
  }
  const client = new Client({ endpoints, timeoutMs: 10_000, transport });
  const print = (lines: string[]) => {
    if (lines.length > 0) io.stdout(`${lines.join('\n')}\n`);
  };
  try {
    return await command({
      client,
      transport,
      args: { ...args, positionals: rest },
      format,
      endpoints,
      io,
      print,
    });
  } catch (e) {
    io.stderr(`Error: ${e instanceof Error ? e.message : String(e)}\n`);
    if (e instanceof UnsupportedFormat) return EXIT.badFeature;
    if (e instanceof ClientError && e.httpStatus === 0)
      return e.grpcCode === 3 ? EXIT.badArgs : EXIT.badConnection;
    return EXIT.error;
  } finally {
    client.close();
  }
}

function processIo(): ClientIo {
  return {
    stdout: (s) => process.stdout.write(s),
    stderr: (s) => process.stderr.write(s),
    stderrIsTTY: process.stderr.isTTY === true,
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
  };
}

// --- kv -------------------------------------------------------------------------------------

function keyArgs(ctx: Ctx, command: string): { key: string; rangeEnd: string | undefined } {
  const [key, rangeEnd, extra] = ctx.args.positionals;
  if (key === undefined || extra !== undefined) {
    throw usageError(
      `${command} command needs one argument as key and an optional argument as range_end`,
    );
  }
  return { key, rangeEnd };
}

const SORT_TARGETS: Record<string, SortTarget> = {
  KEY: 'KEY',
  VERSION: 'VERSION',
  CREATE: 'CREATE',
  MODIFY: 'MOD',
  VALUE: 'VALUE',
};

function rangeOptions(ctx: Ctx, rangeEnd: string | undefined): RangeOptions {
  const a = ctx.args;
  const sortBy = a.flags.get('sort-by')?.toUpperCase();
  const order = a.flags.get('order')?.toUpperCase();
  if (sortBy !== undefined && !(sortBy in SORT_TARGETS))
    throw usageError(`bad sort target ${sortBy}`);
  if (order !== undefined && order !== 'ASCEND' && order !== 'DESCEND')
    throw usageError(`bad sort order ${order}`);
  const consistency = a.flags.get('consistency') ?? 'l';
  if (consistency !== 'l' && consistency !== 's')
    throw usageError(`unknown consistency flag ${consistency}`);
  return {
    rangeEnd,
    prefix: flagBool(a, 'prefix') || undefined,
    fromKey: flagBool(a, 'from-key') || undefined,
    limit: flagInt(a, 'limit'),
    revision: flagInt(a, 'rev'),
    keysOnly: flagBool(a, 'keys-only') || undefined,
    countOnly: flagBool(a, 'count-only') || undefined,
    serializable: consistency === 's' || undefined,
    sortTarget: sortBy === undefined ? undefined : SORT_TARGETS[sortBy],
    sortOrder: (order as SortOrder | undefined) ?? (sortBy === undefined ? undefined : 'ASCEND'),
  };
}

async function cmdGet(ctx: Ctx): Promise<number> {
  const { key, rangeEnd } = keyArgs(ctx, 'get');
  const r = await ctx.client.get(key, rangeOptions(ctx, rangeEnd));
  if (flagBool(ctx.args, 'count-only') && ctx.format === 'simple') ctx.print([String(r.count)]);
  else ctx.print(formatGet(r, ctx.format, flagBool(ctx.args, 'print-value-only')));
  return EXIT.ok;
}

async function cmdPut(ctx: Ctx): Promise<number> {
  const [key, given, extra] = ctx.args.positionals;
  if (key === undefined || extra !== undefined)
    throw usageError('put command needs 1 argument and input from stdin or 2 arguments');
  const value = given ?? (await ctx.io.readStdin()).replace(/\r?\n$/, '');
  const lease = ctx.args.flags.get('lease');
  const r = await ctx.client.put(key, value, {
    lease: lease === undefined ? undefined : BigInt(`0x${lease}`),
    prevKv: flagBool(ctx.args, 'prev-kv') || undefined,
    ignoreValue: flagBool(ctx.args, 'ignore-value') || undefined,
    ignoreLease: flagBool(ctx.args, 'ignore-lease') || undefined,
  });
  ctx.print(formatPut(r, ctx.format));
  return EXIT.ok;
}

async function cmdDel(ctx: Ctx): Promise<number> {
  const { key, rangeEnd } = keyArgs(ctx, 'del');
  const r = await ctx.client.delete(key, {
    rangeEnd,
    prefix: flagBool(ctx.args, 'prefix') || undefined,
    fromKey: flagBool(ctx.args, 'from-key') || undefined,
    prevKv: flagBool(ctx.args, 'prev-kv') || undefined,
  });
  ctx.print(formatDelete(r, ctx.format));
  return EXIT.ok;
}

async function cmdTxn(ctx: Ctx): Promise<number> {
  const request = parseTxn(await ctx.io.readStdin());
  ctx.print(formatTxn(await ctx.client.txn(request), ctx.format));
  return EXIT.ok;
}

async function cmdCompact(ctx: Ctx): Promise<number> {
  const rev = Number(ctx.args.positionals[0]);
  if (!Number.isSafeInteger(rev)) throw usageError('compact command needs 1 argument (a revision)');
  const header = await ctx.client.compact(rev, { physical: flagBool(ctx.args, 'physical') });
  ctx.print(
    ctx.format === 'json'
      ? [stringify({ header: { revision: header.revision } })]
      : [`compacted revision ${rev}`],
  );
  return EXIT.ok;
}

// --- watch ----------------------------------------------------------------------------------

async function cmdWatch(ctx: Ctx): Promise<number> {
  const { key, rangeEnd } = keyArgs(ctx, 'watch');
  const withPrev = flagBool(ctx.args, 'prev-kv');
  const signal = ctx.io.signal ?? sigint();
  return new Promise<number>((resolve) => {
    const watch = ctx.client.watch(
      key,
      {
        rangeEnd,
        prefix: flagBool(ctx.args, 'prefix') || undefined,
        startRevision: flagInt(ctx.args, 'rev'),
        prevKv: withPrev || undefined,
        progressNotify: flagBool(ctx.args, 'progress-notify') || undefined,
      },
      (batch) => ctx.print(formatWatch(batch, ctx.format, withPrev)),
      {
        onError: (err) => {
          ctx.io.stderr(`Error: ${err.message}\n`);
          resolve(EXIT.error);
        },
      },
    );
    const stop = () => void watch.close().then(() => resolve(EXIT.ok));
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
  });
}

function sigint(): AbortSignal {
  const ac = new AbortController();
  process.once('SIGINT', () => ac.abort());
  return ac.signal;
}

// --- lease ----------------------------------------------------------------------------------

function leaseArg(ctx: Ctx, sub: string): bigint {
  const id = ctx.args.positionals[1];
  if (id === undefined || !/^[0-9a-fA-F]+$/.test(id))
    throw usageError(`lease ${sub} command needs a lease ID (hex)`);
  return BigInt(`0x${id}`);
}

async function cmdLease(ctx: Ctx): Promise<number> {
  const sub = ctx.args.positionals[0];
  const c = ctx.client;
  switch (sub) {
    case 'grant': {
      const ttl = Number(ctx.args.positionals[1]);
      if (!Number.isSafeInteger(ttl)) throw usageError('lease grant command needs TTL argument');
      const r = await c.leaseGrant(ttl);
      ctx.print(formatLeaseGrant(r, ctx.format));
      return EXIT.ok;
    }
    case 'revoke': {
      const id = leaseArg(ctx, sub);
      try {
        await c.leaseRevoke(id);
      } catch (e) {
        throw new Error(`failed to revoke lease (${(e as Error).message})`);
      }
      ctx.print([`lease ${leaseHex(id.toString())} revoked`]);
      return EXIT.ok;
    }
    case 'timetolive': {
      const keys = flagBool(ctx.args, 'keys');
      ctx.print(
        formatTimeToLive(await c.leaseTimeToLive(leaseArg(ctx, sub), { keys }), ctx.format, keys),
      );
      return EXIT.ok;
    }
    case 'list': {
      const r = await c.leases();
      ctx.print(formatLeases(r.header, r.leases, ctx.format));
      return EXIT.ok;
    }
    case 'keep-alive':
      return keepAlive(ctx, leaseArg(ctx, sub));
    default:
      throw usageError('lease command needs grant, revoke, timetolive, list or keep-alive');
  }
}

async function keepAlive(ctx: Ctx, id: bigint): Promise<number> {
  const hex = leaseHex(id.toString());
  const line = (ttl: number) => `lease ${hex} keepalived with TTL(${ttl})`;
  if (flagBool(ctx.args, 'once')) {
    const r = await ctx.client.leaseKeepAliveOnce(id);
    if (r.ttl <= 0) throw new Error(`lease ${hex} expired or revoked.`);
    ctx.print([line(r.ttl)]);
    return EXIT.ok;
  }
  const signal = ctx.io.signal ?? sigint();
  return new Promise<number>((resolve) => {
    const keeper = ctx.client.leaseKeepAlive(id, {
      onRenew: (r) => ctx.print([line(r.ttl)]),
      onLost: () => {
        ctx.print([`lease ${hex} expired or revoked.`]);
        resolve(EXIT.ok);
      },
    });
    const stop = () => {
      keeper.stop();
      resolve(EXIT.ok);
    };
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
  });
}

// --- cluster --------------------------------------------------------------------------------

async function cmdMember(ctx: Ctx): Promise<number> {
  const [sub, ...args] = ctx.args.positionals;
  if (sub === 'list') {
    const r = await ctx.client.memberList();
    ctx.print(formatMembers(r.header, r.members, ctx.format));
    return EXIT.ok;
  }
  if (sub === 'update') return memberUpdate(ctx, args);
  throw usageError('member command supports: list, update');
}

/** `member update <hex ID> --peer-urls=u1,u2`, with etcdctl's checks and messages. */
async function memberUpdate(ctx: Ctx, args: string[]): Promise<number> {
  const [hex, extra] = args;
  if (hex === undefined || extra !== undefined) throw usageError('member ID is not provided');
  if (!/^[0-9a-fA-F]{1,16}$/.test(hex))
    throw usageError(
      `bad member ID arg (strconv.ParseUint: parsing ${JSON.stringify(hex)}: invalid syntax), expecting ID in Hex`,
    );
  const urls = ctx.args.flags.get('peer-urls') ?? '';
  if (urls === '') throw usageError('member peer urls not provided');
  const id = BigInt(`0x${hex}`).toString();
  const r = await ctx.client.memberUpdate(id, urls.split(','));
  ctx.print(formatMemberUpdate(id, r.header, r.members, ctx.format));
  return EXIT.ok;
}

async function cmdEndpoint(ctx: Ctx): Promise<number> {
  const sub = ctx.args.positionals[0];
  if (sub === 'status') {
    const all = [];
    for (const endpoint of ctx.endpoints) {
      const one = new Client({ endpoints: [endpoint], timeoutMs: 5000, transport: ctx.transport });
      try {
        all.push({ endpoint, status: await one.status() });
      } finally {
        one.close();
      }
    }
    ctx.print(formatStatus(all, ctx.format));
    return EXIT.ok;
  }
  if (sub === 'health') {
    let code: number = EXIT.ok;
    for (const endpoint of ctx.endpoints) {
      const one = new Client({ endpoints: [endpoint], timeoutMs: 5000, transport: ctx.transport });
      const started = Date.now();
      try {
        const h = await one.health();
        const took = `${Date.now() - started}ms`;
        if (h.health)
          ctx.print([`${endpoint} is healthy: successfully committed proposal: took = ${took}`]);
        else {
          ctx.io.stderr(`${endpoint} is unhealthy: ${h.reason}\n`);
          code = EXIT.error;
        }
      } catch (e) {
        ctx.io.stderr(`${endpoint} is unhealthy: ${(e as Error).message}\n`);
        code = EXIT.error;
      } finally {
        one.close();
      }
    }
    return code;
  }
  if (sub === 'hashkv') {
    const revision = flagInt(ctx.args, 'rev') ?? 0;
    const all: Array<{ endpoint: string; hashKv: HashKvResponse }> = [];
    let failed = false;
    for (const endpoint of ctx.endpoints) {
      await withEndpoint(ctx, endpoint, async (one) => {
        try {
          all.push({ endpoint, hashKv: await one.hashKv(revision) });
        } catch (e) {
          ctx.io.stderr(
            `failed to get the hash of endpoint ${endpoint} (${(e as Error).message})\n`,
          );
          failed = true;
        }
      });
    }
    ctx.print(formatHashKv(all, ctx.format));
    return failed ? EXIT.error : EXIT.ok;
  }
  throw usageError('endpoint command supports: status, health, hashkv');
}

/** Runs `fn` with a client of its own for one endpoint (etcdctl's per-endpoint commands). */
async function withEndpoint<T>(
  ctx: Ctx,
  endpoint: string,
  fn: (client: Client) => Promise<T>,
): Promise<T> {
  const one = new Client({ endpoints: [endpoint], timeoutMs: 10_000, transport: ctx.transport });
  try {
    return await fn(one);
  } finally {
    one.close();
  }
}

// --- maintenance ----------------------------------------------------------------------------

async function cmdDefrag(ctx: Ctx): Promise<number> {
  let failures = 0;
  for (const endpoint of ctx.endpoints) {
    await withEndpoint(ctx, endpoint, async (one) => {
      try {
        // etcd's Defragment answer carries no sizes: the member's status before and after.
        const before = await one.status().catch(() => undefined);
        await one.defragment();
        const after = await one.status().catch(() => undefined);
        ctx.print([`Finished defragmenting etcd member[${endpoint}]`]);
        if (before !== undefined && after !== undefined)
          ctx.print([`db size of member[${endpoint}]: ${before.dbSize} -> ${after.dbSize} bytes`]);
      } catch (e) {
        ctx.io.stderr(`Failed to defragment etcd member[${endpoint}] (${(e as Error).message})\n`);
        failures++;
      }
    });
  }
  return failures === 0 ? EXIT.ok : EXIT.error;
}

async function cmdAlarm(ctx: Ctx): Promise<number> {
  const [sub, extra] = ctx.args.positionals;
  if (sub !== 'list' && sub !== 'disarm') throw usageError('alarm command supports: list, disarm');
  if (extra !== undefined) throw usageError(`alarm ${sub} command accepts no arguments`);
  const r = sub === 'list' ? await ctx.client.alarmList() : await ctx.client.alarmDisarm();
  ctx.print(formatAlarms(r, ctx.format));
  return EXIT.ok;
}

async function cmdMoveLeader(ctx: Ctx): Promise<number> {
  const [target, extra] = ctx.args.positionals;
  if (target === undefined || extra !== undefined)
    throw usageError('move-leader command needs 1 argument');
  if (!/^[0-9a-fA-F]{1,16}$/.test(target))
    throw usageError(`strconv.ParseUint: parsing ${JSON.stringify(target)}: invalid syntax`);
  const targetId = BigInt(`0x${target}`).toString();
  // The request must go to the leader: find which endpoint is it.
  for (const endpoint of ctx.endpoints) {
    const done = await withEndpoint(ctx, endpoint, async (one) => {
      const s = await one.status();
      if (s.header.memberId !== s.leader) return false;
      const header = await one.moveLeader(targetId);
      ctx.print(formatMoveLeader(s.leader, targetId, header, ctx.format));
      return true;
    });
    if (done) return EXIT.ok;
  }
  throw usageError(`no leader endpoint given at [${ctx.endpoints.join(' ')}]`);
}

async function cmdSnapshot(ctx: Ctx): Promise<number> {
  const [sub, file, extra] = ctx.args.positionals;
  if (sub === 'status') {
    if (file === undefined || extra !== undefined)
      throw usageError('snapshot status requires exactly one argument');
    ctx.print(formatSnapshotStatus(await snapshotStatus(file), ctx.format));
    return EXIT.ok;
  }
  if (sub === 'restore') {
    if (file === undefined || extra !== undefined)
      throw usageError('snapshot restore requires exactly one argument');
    const flag = (name: string) => ctx.args.flags.get(name);
    // Loaded only for restore: the server's modules are not needed by the other commands.
    const { restoreSnapshot } = await import('../server/restore.js');
    const r = await restoreSnapshot({
      file,
      name: flag('name'),
      dataDir: flag('data-dir'),
      initialCluster: flag('initial-cluster'),
      initialAdvertisePeerUrls: flag('initial-advertise-peer-urls'),
      initialClusterToken: flag('initial-cluster-token'),
      skipHashCheck: flagBool(ctx.args, 'skip-hash-check'),
    });
    ctx.print(formatRestore(r, ctx.format));
    return EXIT.ok;
  }
  if (sub !== 'save') throw usageError('snapshot command supports: save, status, restore');
  if (file === undefined || extra !== undefined)
    throw usageError('snapshot save expects one argument');
  if (ctx.endpoints.length !== 1) {
    ctx.io.stderr(
      `Error: snapshot must be requested to one selected node, not multiple [${ctx.endpoints.join(' ')}]\n`,
    );
    return EXIT.interrupted;
  }
  const progress = new Progress({ write: ctx.io.stderr, tty: ctx.io.stderrIsTTY === true });
  try {
    await saveSnapshot(ctx.client.snapshot(), file, (n) => progress.update(n));
    progress.finish(true);
  } catch (e) {
    progress.finish(false);
    ctx.io.stderr(`Error: ${(e as Error).message}\n`);
    return EXIT.interrupted;
  }
  ctx.print([`Snapshot saved at ${file}`]);
  return EXIT.ok;
}
