/**
 * Service clusterIPs as kube-apiserver's registry hands them out, the pure part: which
 * Services get one, the requested address checked against the range and the addresses
 * taken, a free address picked, and the Kubernetes texts of the 422s. The write path
 * (src/api/k8s/service-ips.ts) reads what is taken from the store and makes the create
 * atomic with that reading.
 *
 * The range is `--service-cluster-ip-range` (default 10.96.0.0/12, kube-apiserver's). Its
 * network address is never handed out, nor the first address after it (the `kubernetes`
 * Service's in a real cluster), nor the broadcast address.
 */
import { addressAt, type Cidr, contains, ipNumber } from '../wire/cidr.js';
import { invalidObject } from './errors.js';
import { type FieldError, invalid } from './field-errors.js';
import { StatusError } from './status.js';
import type { KubeObject } from './types.js';

export const DEFAULT_SERVICE_CLUSTER_IP_RANGE = '10.96.0.0/12';

export interface ServiceSpecIps {
  type?: unknown;
  clusterIP?: unknown;
  clusterIPs?: unknown;
}

function plain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function specOf(obj: KubeObject): ServiceSpecIps {
  return plain(obj.spec) ? (obj.spec as ServiceSpecIps) : {};
}

/** The clusterIP a Service asks for: spec.clusterIP, else spec.clusterIPs[0]; '' for none. */
export function requestedClusterIp(obj: KubeObject): string {
  const s = specOf(obj);
  if (typeof s.clusterIP === 'string' && s.clusterIP !== '') return s.clusterIP;
  if (Array.isArray(s.clusterIPs) && typeof s.clusterIPs[0] === 'string') return s.clusterIPs[0];
  return '';
}

/** What a create needs: nothing (ExternalName, headless), a given address, or any. */
export type ClusterIpNeed = { kind: 'none' } | { kind: 'given'; ip: string } | { kind: 'any' };

export function clusterIpNeed(obj: KubeObject): ClusterIpNeed {
  if (obj.spec !== undefined && !plain(obj.spec)) return { kind: 'none' };
  const s = specOf(obj);
  const type = typeof s.type === 'string' && s.type !== '' ? s.type : 'ClusterIP';
  if (type === 'ExternalName') return { kind: 'none' };
  const ip = requestedClusterIp(obj);
  if (ip === 'None') return { kind: 'none' };
  return ip === '' ? { kind: 'any' } : { kind: 'given', ip };
}

/** The clusterIP a stored Service holds in `range`, or undefined. */
export function heldClusterIp(obj: KubeObject): string | undefined {
  const ip = requestedClusterIp(obj);
  return ip !== '' && ip !== 'None' ? ip : undefined;
}

function allocatable(range: Cidr, ip: string): boolean {
  const n = ipNumber(ip);
  return n !== undefined && n > range.base + 1 && n < range.base + range.size - 1;
}

/** Sets the allocated address (and its family fields, as the registry defaults them). */
export function setClusterIp(obj: KubeObject, ip: string): void {
  const spec = (obj.spec ?? {}) as Record<string, unknown>;
  obj.spec = spec;
  spec.clusterIP = ip;
  spec.clusterIPs = [ip];
  spec.ipFamilies ??= ['IPv4'];
  spec.ipFamilyPolicy ??= 'SingleStack';
}

function allocationError(obj: KubeObject, ip: string, why: string): Error {
  const err: FieldError = invalid('spec.clusterIPs', [ip], `failed to allocate IP ${ip}: ${why}`);
  return invalidObject('', 'Service', obj.metadata.name ?? '', [err]);
}

/**
 * Checks a requested address: 422 Invalid with Kubernetes' texts when it is outside the
 * range (or is one of the addresses never handed out) or already taken.
 */
export function checkRequested(
  obj: KubeObject,
  range: Cidr,
  ip: string,
  taken: ReadonlySet<string>,
) {
  if (ipNumber(ip) === undefined) {
    throw allocationError(obj, ip, `${JSON.stringify(ip)} is not a valid IPv4 address`);
  }
  if (!contains(range, ip) || !allocatable(range, ip)) {
    throw allocationError(
      obj,
      ip,
      `the provided IP (${ip}) is not in the valid range. The range of valid IPs is ${range.text}`,
    );
  }
  if (taken.has(ip)) throw allocationError(obj, ip, 'provided IP is already allocated');
}

/**
 * A free address: from a random offset (so that concurrent writers on other members rarely
 * pick the same one), the next one not taken; 500 InternalError, as kube-apiserver answers,
 * when there is none.
 */
export function pickFree(range: Cidr, taken: ReadonlySet<string>, random = Math.random): string {
  const first = 2; // network address and the `kubernetes` Service's
  const count = range.size - 3; // ... and the broadcast address
  const start = Math.floor(random() * count);
  for (let i = 0; i < count; i++) {
    const ip = addressAt(range, first + ((start + i) % count));
    if (!taken.has(ip)) return ip;
  }
  throw new StatusError('InternalError', 'failed to allocate a serviceIP: range is full');
}

/**
 * An update keeps the clusterIP: one left out (a replace or apply without it) is carried
 * over from the stored Service, unless the Service becomes an ExternalName one (which
 * releases it); a different one is 422, as Kubernetes answers.
 */
export function keepClusterIp(next: KubeObject, old: KubeObject): void {
  const oldSpec = specOf(old);
  const oldIp = typeof oldSpec.clusterIP === 'string' ? oldSpec.clusterIP : '';
  if (oldIp === '') return;
  const wants = requestedClusterIp(next);
  if (wants === '') {
    if (specOf(next).type === 'ExternalName') return;
    if (next.spec !== undefined && !plain(next.spec)) return;
    const spec = (next.spec ?? {}) as Record<string, unknown>;
    next.spec = spec;
    spec.clusterIP = oldIp;
    if (Array.isArray(oldSpec.clusterIPs)) spec.clusterIPs = [...oldSpec.clusterIPs];
    return;
  }
  if (wants !== oldIp) {
    const err = invalid('spec.clusterIPs[0]', wants, 'may not change once set');
    throw invalidObject('', 'Service', next.metadata.name ?? '', [err]);
  }
}
