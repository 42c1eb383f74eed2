import type { Server } from '@hapi/hapi';
import type { Metrics } from '../metrics.ts';

/**
 * Every answered request's duration, by method, route template (`/jobs/{job_id}`, never the raw
 * path, so ids do not make one series each) and status; unmatched paths count under hapi's
 * catch-all route `/{p*}`.
 */
export function measureRequests(server: Server, metrics: Metrics): void {
  const duration = metrics.histogram('svc_http_request_duration_seconds', 'HTTP requests by route and status', ['method', 'route', 'status']);
  server.events.on('response', (request) => {
    const response = request.response as { statusCode?: number; output?: { statusCode: number } } | null;
    const status = response?.statusCode ?? response?.output?.statusCode ?? 0;
    const route = request.route.path;
    duration.observe({ method: request.method.toUpperCase(), route, status: String(status) }, (Date.now() - request.info.received) / 1000);
  });
}
