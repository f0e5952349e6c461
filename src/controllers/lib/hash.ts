/**
 * The `pod-template-hash` of a Pod template: FNV-1a (32 bit) of the template's canonical
 * JSON (keys sorted) and the collision count, written with Kubernetes' "safe" alphabet (no
 * vowels, no look-alike digits) so that it never spells a word.
 */

const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  const bytes = new TextEncoder().encode(s);
  for (const b of bytes) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

function safeEncode(n: number): string {
  const digits = String(n);
  let out = '';
  for (const ch of digits) out += ALPHABET[Number(ch) % ALPHABET.length];
  // Mix in the value's remainders too, so that similar numbers differ visibly.
  let x = n;
  while (x > 0 && out.length < 10) {
    out += ALPHABET[x % ALPHABET.length];
    x = Math.floor(x / ALPHABET.length);
  }
  return out.slice(0, 10);
}

/**
 * A template with null, {} and [] left out (recursively): what a client that decodes and
 * re-encodes it (kubectl rollout undo) may add or drop, and what does not change the Pods.
 */
export function pruneEmpty(v: unknown): unknown {
  if (Array.isArray(v)) {
    const a = v.map(pruneEmpty).filter((x) => x !== undefined);
    return a.length === 0 ? undefined : a;
  }
  if (v === null) return undefined;
  if (typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      const p = pruneEmpty(x);
      if (p !== undefined) out[k] = p;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  return v;
}

/** Equal templates give equal keys (compare these, not raw JSON). */
export function templateKey(template: unknown): string {
  return canonicalJson(pruneEmpty(template) ?? {});
}

export function podTemplateHash(template: unknown, collisionCount = 0): string {
  return safeEncode(
    fnv1a32(canonicalJson(template) + (collisionCount ? String(collisionCount) : '')),
  );
}
