/**
 * IPv4 CIDR ranges as Kubernetes uses them (`--cluster-cidr`, a service IP range):
 * parsing (ipaddr.js), the n-th address of a range, and the n-th sub-range of a given
 * prefix length (each node's share of the cluster CIDR). Shared by the server (Service
 * clusterIPs) and the simulated nodes (Pod IPs).
 */
import ipaddr from 'ipaddr.js';

export interface Cidr {
  /** The network address as a 32-bit number. */
  base: number;
  prefix: number;
  /** Addresses in the range. */
  size: number;
  text: string;
}

export function parseCidr(text: string): Cidr {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  let prefix: number;
  try {
    [addr, prefix] = ipaddr.parseCIDR(text.trim());
  } catch {
    throw new TypeError(`${JSON.stringify(text)} is not a CIDR (e.g. 10.96.0.0/12)`);
  }
  if (addr.kind() !== 'ipv4') throw new TypeError(`${text}: only IPv4 ranges are supported`);
  if (prefix < 8 || prefix > 30) throw new TypeError(`${text}: the prefix must be /8 to /30`);
  const bytes = (addr as ipaddr.IPv4).toByteArray();
  const raw =
    ((bytes[0] as number) << 24) |
    ((bytes[1] as number) << 16) |
    ((bytes[2] as number) << 8) |
    (bytes[3] as number);
  const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
  const base = (raw & mask) >>> 0;
  return { base, prefix, size: 2 ** (32 - prefix), text: `${ipString(base)}/${prefix}` };
}

export function ipString(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

export function ipNumber(text: string): number | undefined {
  if (!ipaddr.IPv4.isValidFourPartDecimal(text)) return undefined;
  const b = ipaddr.IPv4.parse(text).toByteArray();
  return (
    (((b[0] as number) << 24) |
      ((b[1] as number) << 16) |
      ((b[2] as number) << 8) |
      (b[3] as number)) >>>
    0
  );
}

/** The address at `offset` in the range. */
export function addressAt(c: Cidr, offset: number): string {
  if (offset < 0 || offset >= c.size) throw new RangeError(`offset ${offset} outside ${c.text}`);
  return ipString((c.base + offset) >>> 0);
}

export function contains(c: Cidr, ip: string): boolean {
  const n = ipNumber(ip);
  return n !== undefined && n >= c.base && n < c.base + c.size;
}

/** The index-th sub-range of length `prefix` (a node's pod CIDR). */
export function subnet(c: Cidr, prefix: number, index: number): Cidr {
  if (prefix < c.prefix) throw new RangeError(`/${prefix} is larger than ${c.text}`);
  const count = 2 ** (prefix - c.prefix);
  if (index < 0 || index >= count)
    throw new RangeError(`${c.text} has only ${count} /${prefix} ranges`);
  const size = 2 ** (32 - prefix);
  const base = (c.base + index * size) >>> 0;
  return { base, prefix, size, text: `${ipString(base)}/${prefix}` };
}
