/**
 * etcdctl's command-line conventions, for the client CLI: its flag syntax, its shell-like
 * splitting of a line, and the interactive txn syntax read from stdin:
 *
 *   value("k1") = "v1"        ← compares, one per line, until a blank line
 *   mod("k2") > "5"
 *
 *   put k1 "new value"       ← success ops (etcdctl put/get/del lines), until a blank line
 *   get k2 --prefix
 *
 *   del k1                   ← failure ops, until a blank line or the end
 *
 * Compare targets: ver|version, c|create, m|mod, val|value, lease; operators = != < >.
 */
import { ClientError } from './errors.js';
import type { Compare, CompareResult, TxnOp, TxnRequest } from './types.js';

export interface ParsedArgs {
  positionals: string[];
  flags: Map<string, string>;
}

/** Flags that take a value (the rest are booleans: --prefix, --prefix=false). */
const VALUE_FLAGS = new Set([
  'endpoints',
  'write-out',
  'w',
  'limit',
  'rev',
  'sort-by',
  'order',
  'consistency',
  'lease',
  'command-timeout',
  'dial-timeout',
  'peer-urls',
]);

export function usageError(message: string): ClientError {
  return new ClientError(message, 3, 0);
}

/** Splits argv into positionals and flags (`--x=v`, `--x v`, `-w v`, `--bool`); `--` ends flags. */
export function parseFlags(argv: string[]): ParsedArgs {
  const positionals: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    const m = /^--?([a-zA-Z][\w-]*)(?:=(.*))?$/s.exec(a);
    if (!m || /^-\d/.test(a)) {
      positionals.push(a);
      continue;
    }
    const name = m[1] as string;
    if (m[2] !== undefined) flags.set(name, m[2]);
    else if (VALUE_FLAGS.has(name)) {
      const v = argv[++i];
      if (v === undefined) throw usageError(`flag needs an argument: --${name}`);
      flags.set(name, v);
    } else flags.set(name, 'true');
  }
  return { positionals, flags };
}

export function flagBool(args: ParsedArgs, name: string): boolean {
  const v = args.flags.get(name);
  return v !== undefined && v !== 'false';
}

export function flagInt(args: ParsedArgs, name: string): number | undefined {
  const v = args.flags.get(name);
  if (v === undefined) return undefined;
  if (!/^-?\d+$/.test(v)) throw usageError(`invalid value "${v}" for --${name}: not an integer`);
  return Number(v);
}

/** Splits a line into words; "double" (with backslash escapes) and 'single' quotes group. */
export function argify(line: string): string[] {
  const words: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (let m = re.exec(line); m !== null; m = re.exec(line)) {
    if (m[1] !== undefined) words.push(JSON.parse(`"${m[1]}"`) as string);
    else words.push(m[2] ?? (m[3] as string));
  }
  return words;
}

const OPS: Record<string, CompareResult> = {
  '=': 'EQUAL',
  '!=': 'NOT_EQUAL',
  '<': 'LESS',
  '>': 'GREATER',
};

export function parseCompare(line: string): Compare {
  const m = /^\s*(\w+)\("((?:[^"\\]|\\.)*)"\)\s*(=|!=|<|>)\s*"((?:[^"\\]|\\.)*)"\s*$/.exec(line);
  if (!m) throw usageError(`malformed comparison: ${line}`);
  const [, target, rawKey, op, rawValue] = m as unknown as [string, string, string, string, string];
  const key = JSON.parse(`"${rawKey}"`) as string;
  const value = JSON.parse(`"${rawValue}"`) as string;
  const result = OPS[op] as CompareResult;
  const int = () => {
    if (!/^-?\d+$/.test(value)) throw usageError(`malformed comparison: ${line} (not an integer)`);
    return Number(value);
  };
  switch (target) {
    case 'ver':
    case 'version':
      return { key, result, target: 'VERSION', version: int() };
    case 'c':
    case 'create':
      return { key, result, target: 'CREATE', createRevision: int() };
    case 'm':
    case 'mod':
      return { key, result, target: 'MOD', modRevision: int() };
    case 'val':
    case 'value':
      return { key, result, target: 'VALUE', value };
    case 'lease':
      return { key, result, target: 'LEASE', lease: BigInt(`0x${value}`) };
    default:
      throw usageError(`malformed comparison: ${line} (unknown target ${target})`);
  }
}

/** One op line: an etcdctl put, get or del command. */
export function parseOp(line: string): TxnOp {
  const [command, ...rest] = argify(line);
  const args = parseFlags(rest);
  const [key, second] = args.positionals;
  if (key === undefined) throw usageError(`${command ?? 'op'} needs a key: ${line}`);
  const selector = {
    prefix: flagBool(args, 'prefix') || undefined,
    fromKey: flagBool(args, 'from-key') || undefined,
    rangeEnd: command === 'put' ? undefined : second,
  };
  switch (command) {
    case 'put': {
      if (second === undefined) throw usageError(`put needs a value: ${line}`);
      const lease = args.flags.get('lease');
      return {
        put: {
          key,
          value: second,
          lease: lease === undefined ? undefined : BigInt(`0x${lease}`),
          prevKv: flagBool(args, 'prev-kv') || undefined,
        },
      };
    }
    case 'get':
      return {
        range: {
          key,
          ...selector,
          limit: flagInt(args, 'limit'),
          revision: flagInt(args, 'rev'),
          keysOnly: flagBool(args, 'keys-only') || undefined,
        },
      };
    case 'del':
    case 'delete':
      return { delete: { key, ...selector, prevKv: flagBool(args, 'prev-kv') || undefined } };
    default:
      throw usageError(`unknown op in txn: ${line}`);
  }
}

/** Reads the three blank-line separated sections of the interactive syntax. */
export function parseTxn(input: string): TxnRequest {
  const sections: string[][] = [[]];
  for (const line of input.split(/\r?\n/)) {
    if (line.trim() === '') {
      if (sections.length < 3) sections.push([]);
      continue;
    }
    (sections[sections.length - 1] as string[]).push(line);
  }
  const [compares = [], success = [], failure = []] = sections;
  return {
    compare: compares.map(parseCompare),
    success: success.map(parseOp),
    failure: failure.map(parseOp),
  };
}
