/**
 * The HTTP side of the Kubernetes client: requests over the global fetch (undici keeps
 * connections alive between requests), JSON in and out, non-2xx answers as KubeApiError,
 * and raw streaming responses for watches.
 */
import { errorFromResponse, transportFailure } from './errors.js';

export interface KubeTransportOptions {
  /** The server URL, e.g. http://127.0.0.1:2379. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** Per-request timeout (not watches). Default 30 s. */
  timeoutMs?: number;
  /** A fetch to use instead of the global one (tests). */
  fetch?: typeof fetch;
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Query;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
}

export function queryString(q: Query | undefined): string {
  if (!q) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined) params.set(k, String(v));
  const s = params.toString();
  return s === '' ? '' : `?${s}`;
}

export class KubeTransport {
  readonly baseUrl: string;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly fetchFn: typeof fetch;

  constructor(o: KubeTransportOptions) {
    this.baseUrl = o.baseUrl.replace(/\/+$/, '');
    this.headers = {
      'User-Agent': 'etcetera-kube-client',
      ...(o.token ? { Authorization: `Bearer ${o.token}` } : {}),
      ...o.headers,
    };
    this.timeoutMs = o.timeoutMs ?? 30_000;
    this.fetchFn = o.fetch ?? fetch;
  }

  /** One request answered with JSON; rejects with KubeApiError on a non-2xx answer. */
  async request<T>(spec: RequestSpec): Promise<T> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
    const res = await this.send(spec, { Accept: 'application/json' }, signal);
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      throw transportFailure(e);
    }
    if (res.status < 200 || res.status > 299) throw errorFromResponse(res.status, text);
    return JSON.parse(text) as T;
  }

  /**
   * A streaming GET (a watch): resolves once the headers came. A non-2xx answer is read
   * whole and rejected as KubeApiError; the caller owns the body otherwise.
   */
  async stream(path: string, query: Query, signal: AbortSignal): Promise<Response> {
    const res = await this.send(
      { method: 'GET', path, query },
      { Accept: 'application/json' },
      signal,
    );
    if (res.status < 200 || res.status > 299) {
      const text = await res.text().catch(() => '');
      throw errorFromResponse(res.status, text);
    }
    return res;
  }

  private async send(
    spec: RequestSpec,
    extra: Record<string, string>,
    signal: AbortSignal,
  ): Promise<Response> {
    const headers: Record<string, string> = { ...this.headers, ...extra };
    let body: string | undefined;
    if (spec.body !== undefined) {
      body = typeof spec.body === 'string' ? spec.body : JSON.stringify(spec.body);
      headers['Content-Type'] = spec.contentType ?? 'application/json';
    }
    try {
      return await this.fetchFn(this.baseUrl + spec.path + queryString(spec.query), {
        method: spec.method,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal,
      });
    } catch (e) {
      throw transportFailure(e);
    }
  }
}
