/**
 * Who a write is recorded for in metadata.managedFields (src/k8s/managed.ts records it): the
 * request's fieldManager, or (as Kubernetes does) its User-Agent's product name.
 */
import type { IncomingMessage } from 'node:http';

/** The fieldManager of a request, or its User-Agent's product name (at most 128 characters). */
export function managerOf(req: IncomingMessage, query: URLSearchParams): string {
  const explicit = query.get('fieldManager');
  if (explicit) return explicit;
  const ua = req.headers['user-agent'] ?? '';
  const product = ua.split('/')[0]?.trim() ?? '';
  return product.slice(0, 128) || 'unknown';
}
