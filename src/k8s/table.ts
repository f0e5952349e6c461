/**
 * meta.k8s.io/v1 Tables, what kubectl asks for on `get`:
 * Name plus the kind's printer columns, cells formatted here, and each row's object as
 * PartialObjectMetadata (default), the whole object, or nothing (`includeObject`).
 */

import { defaultPrinter, NAME_COLUMN } from './printers.js';
import type { KubeObject, ResourceInfo, TableColumn } from './types.js';

export const IncludeObject = { None: 'None', Metadata: 'Metadata', Object: 'Object' } as const;
export type IncludeObject = (typeof IncludeObject)[keyof typeof IncludeObject];

export function parseIncludeObject(v: string | null): IncludeObject {
  return v === 'None' || v === 'Object' ? v : 'Metadata';
}

/** True when the Accept header asks for a Table (as=Table;g=meta.k8s.io). */
export function wantsTable(accept: string | undefined): boolean {
  if (!accept) return false;
  for (const part of accept.split(',')) {
    const params = part.split(';').map((p) => p.trim());
    if (params.includes('as=Table') && params.includes('g=meta.k8s.io')) return true;
    // The first acceptable type wins: a plain JSON before a Table means JSON.
    if (params[0] === 'application/json' && params.length === 1) return false;
  }
  return false;
}

export function tableColumns(info: ResourceInfo): TableColumn[] {
  return [NAME_COLUMN, ...(info.printer ?? defaultPrinter).columns];
}

function rowObject(obj: KubeObject, json: string, include: IncludeObject): string {
  if (include === 'None') return '';
  if (include === 'Object') return `,"object":${json}`;
  return `,"object":${JSON.stringify({
    kind: 'PartialObjectMetadata',
    apiVersion: 'meta.k8s.io/v1',
    metadata: obj.metadata,
  })}`;
}

/** What a row is made from: an object and its JSON (a list or watch cache's entry). */
export interface TableEntry {
  readonly obj: KubeObject;
  /** The object's JSON as `info`'s version serves it. */
  json(info: ResourceInfo): string;
}

/** One row's JSON. */
export function tableRow(
  info: ResourceInfo,
  entry: TableEntry,
  include: IncludeObject,
  nowMs: number,
): string {
  const printer = info.printer ?? defaultPrinter;
  const cells = [entry.obj.metadata.name ?? '', ...printer.cells(entry.obj, nowMs)];
  const object = rowObject(entry.obj, include === 'Object' ? entry.json(info) : '', include);
  return `{"cells":${JSON.stringify(cells)}${object}}`;
}

/** A whole Table's JSON from already encoded rows. */
export function tableJson(
  info: ResourceInfo,
  rows: readonly string[],
  meta: { resourceVersion: string; continue?: string; remainingItemCount?: number },
  withColumns = true,
): string {
  const columns = withColumns ? `"columnDefinitions":${JSON.stringify(tableColumns(info))},` : '';
  return `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":${JSON.stringify(meta)},${columns}"rows":[${rows.join(',')}]}`;
}
