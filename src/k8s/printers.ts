/**
 * Table printers: the column sets kubectl shows for `get`.
 * Cells are formatted here because kubectl prints them verbatim.
 */
import type { KubeObject, Printer, TableColumn } from './types.js';

export const NAME_COLUMN: TableColumn = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name must be unique within a namespace.',
  priority: 0,
};

export const AGE_COLUMN: TableColumn = {
  name: 'Age',
  type: 'string',
  format: '',
  description: 'The time since the object was created.',
  priority: 0,
};

function col(name: string, priority = 0, type: TableColumn['type'] = 'string'): TableColumn {
  return { name, type, format: '', description: name, priority };
}

/**
 * A short human duration as kubectl shows ages: seconds under two minutes, then minutes,
 * hours and days with a second unit while the first is small.
 */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (h < 192) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 730) return `${d}d`;
  const y = Math.floor(d / 365);
  if (y < 8) return d % 365 === 0 ? `${y}y` : `${y}y${d % 365}d`;
  return `${y}y`;
}

export function age(obj: KubeObject, nowMs: number): string {
  const t = Date.parse(obj.metadata.creationTimestamp ?? '');
  return Number.isNaN(t) ? '<unknown>' : humanDuration(nowMs - t);
}

type Rec = Record<string, unknown>;
const rec = (v: unknown): Rec =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Rec) : {};
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown, dflt = '<none>'): string =>
  typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : dflt;
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

export const podPrinter: Printer = {
  columns: [
    col('Ready'),
    col('Status'),
    col('Restarts'),
    AGE_COLUMN,
    col('IP', 1),
    col('Node', 1),
    col('Nominated Node', 1),
    col('Readiness Gates', 1),
  ],
  cells(obj, nowMs) {
    const spec = rec(obj.spec);
    const status = rec(obj.status);
    const statuses = arr(status.containerStatuses).map(rec);
    const ready = statuses.filter((c) => c.ready === true).length;
    const restarts = statuses.reduce((n, c) => n + num(c.restartCount), 0);
    const phase = obj.metadata.deletionTimestamp ? 'Terminating' : str(status.phase, 'Pending');
    const gates = arr(spec.readinessGates).length;
    return [
      `${ready}/${arr(spec.containers).length}`,
      phase,
      String(restarts),
      age(obj, nowMs),
      str(status.podIP),
      str(spec.nodeName),
      str(status.nominatedNodeName),
      gates === 0 ? '<none>' : `0/${gates}`,
    ];
  },
};

export const deploymentPrinter: Printer = {
  columns: [
    col('Ready'),
    col('Up-to-date', 0, 'integer'),
    col('Available', 0, 'integer'),
    AGE_COLUMN,
    col('Containers', 1),
    col('Images', 1),
    col('Selector', 1),
  ],
  cells(obj, nowMs) {
    const spec = rec(obj.spec);
    const status = rec(obj.status);
    const containers = arr(rec(rec(spec.template).spec).containers).map(rec);
    const match = rec(rec(spec.selector).matchLabels);
    return [
      `${num(status.readyReplicas)}/${typeof spec.replicas === 'number' ? spec.replicas : 1}`,
      num(status.updatedReplicas),
      num(status.availableReplicas),
      age(obj, nowMs),
      containers.map((c) => str(c.name, '')).join(','),
      containers.map((c) => str(c.image, '')).join(','),
      Object.entries(match)
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(',') || '<none>',
    ];
  },
};

export const namespacePrinter: Printer = {
  columns: [col('Status'), AGE_COLUMN],
  cells(obj, nowMs) {
    return [str(rec(obj.status).phase, 'Active'), age(obj, nowMs)];
  },
};

export const configMapPrinter: Printer = {
  columns: [col('Data', 0, 'integer'), AGE_COLUMN],
  cells(obj, nowMs) {
    const n = Object.keys(rec(obj.data)).length + Object.keys(rec(obj.binaryData)).length;
    return [n, age(obj, nowMs)];
  },
};

export const defaultPrinter: Printer = {
  columns: [AGE_COLUMN],
  cells(obj, nowMs) {
    return [age(obj, nowMs)];
  },
};
