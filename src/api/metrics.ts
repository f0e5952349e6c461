/**
 * The API's own Prometheus metrics, registered in the member's registry (GET /metrics
 * serves them with the member's). Registration is idempotent: several apps over one member
 * (tests, a second listener) share the same series.
 */
import { Counter, Histogram, type Registry } from 'prom-client';

export interface ApiMetrics {
  /** Call when a request finishes: its route (a known path or "other"), status and duration. */
  observe(route: string, status: number, seconds: number): void;
}

function existing<T>(registry: Registry, name: string): T | undefined {
  return registry.getSingleMetric(name) as T | undefined;
}

export function apiMetrics(registry: Registry): ApiMetrics {
  const requests =
    existing<Counter<'route' | 'code'>>(registry, 'etcetera_api_requests_total') ??
    new Counter({
      name: 'etcetera_api_requests_total',
      help: 'Requests answered by the etcd JSON API, by route and HTTP status.',
      labelNames: ['route', 'code'],
      registers: [registry],
    });
  const duration =
    existing<Histogram<'route'>>(registry, 'etcetera_api_request_duration_seconds') ??
    new Histogram({
      name: 'etcetera_api_request_duration_seconds',
      help: 'Time from request to answer in the etcd JSON API, by route.',
      labelNames: ['route'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    });
  return {
    observe(route, status, seconds) {
      requests.inc({ route, code: String(status) });
      duration.observe({ route }, seconds);
    },
  };
}
