/**
 * Kubernetes resource quantities (`100m`, `1Gi`, `1e3`, `0.5`, `2k`) read exactly, as
 * apimachinery's resource.Quantity does: a signed decimal number, then a binary suffix
 * (Ki Mi Gi Ti Pi Ei), a decimal suffix (n u m k M G T P E) or a decimal exponent (e3, E-2).
 * `milliValue` rounds up to whole thousandths (cpu), `value` up to whole units (memory,
 * pods), like Quantity.MilliValue() and Quantity.Value().
 */

const BINARY: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DECIMAL: Readonly<Record<string, number>> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const SHAPE = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(.*)$/;

/** An exact rational: numerator / denominator, denominator > 0. */
interface Exact {
  num: bigint;
  den: bigint;
}

function parseExact(text: string): Exact | undefined {
  const m = SHAPE.exec(text.trim());
  if (!m) return undefined;
  const [, sign, digits, suffix] = m as unknown as [string, string, string, string];
  const [whole, frac = ''] = digits.split('.');
  let num = BigInt(`${whole || '0'}${frac}`);
  let den = 10n ** BigInt(frac.length);
  if (sign === '-') num = -num;
  if (suffix in BINARY) num *= 2n ** BigInt(BINARY[suffix] as number);
  else if (suffix in DECIMAL) {
    const e = DECIMAL[suffix] as number;
    if (e >= 0) num *= 10n ** BigInt(e);
    else den *= 10n ** BigInt(-e);
  } else {
    const exp = /^[eE]([+-]?\d+)$/.exec(suffix);
    if (!exp) return undefined;
    const e = Number(exp[1]);
    if (!Number.isSafeInteger(e) || Math.abs(e) > 1000) return undefined;
    if (e >= 0) num *= 10n ** BigInt(e);
    else den *= 10n ** BigInt(-e);
  }
  return { num, den };
}

function ceilDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a > 0n ? q + 1n : q;
}

function toNumber(v: bigint): number {
  const max = BigInt(Number.MAX_SAFE_INTEGER);
  if (v > max) return Number.MAX_SAFE_INTEGER;
  if (v < -max) return -Number.MAX_SAFE_INTEGER;
  return Number(v);
}

/** True when the text is a quantity Kubernetes accepts. */
export function isQuantity(text: unknown): boolean {
  if (typeof text === 'number') return Number.isFinite(text);
  return typeof text === 'string' && parseExact(text) !== undefined;
}

/** Thousandths, rounded up (`100m` → 100, `1` → 1000, `0.0001` → 1); undefined if malformed. */
export function milliValue(q: string | number): number | undefined {
  const e = parseExact(String(q));
  return e ? toNumber(ceilDiv(e.num * 1000n, e.den)) : undefined;
}

/** Whole units, rounded up (`1Gi` → 1073741824, `1e3` → 1000); undefined if malformed. */
export function value(q: string | number): number | undefined {
  const e = parseExact(String(q));
  return e ? toNumber(ceilDiv(e.num, e.den)) : undefined;
}

/** The amount the scheduler adds up for a resource: millicores for cpu, units otherwise. */
export function amountOf(resource: string, q: string | number): number | undefined {
  return resource === 'cpu' ? milliValue(q) : value(q);
}
