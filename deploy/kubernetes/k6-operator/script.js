// Example k6 script for the compose stack: a request mix in the shape of
// the envelope's demo baseline (an actor fetch each iteration, then login,
// register or upload now and then), against go-httpbin standing in for
// the service. Requests carry a `name` tag: the exporter keeps it as the
// endpoint label, so per-endpoint rules and panels work.
//
// Run by the compose file with --out opentelemetry (or --out json) and a
// testid tag.
import http from 'k6/http';
import { check, sleep } from 'k6';

const BASE = __ENV.BASE_URL || 'http://localhost:8080';

export const options = {
  scenarios: {
    baseline: {
      executor: 'constant-vus',
      vus: Number(__ENV.VUS || 20),
      duration: __ENV.DURATION || '6m',
    },
  },
  thresholds: {
    http_req_failed: ['rate<0.01'],
    http_req_duration: ['p(95)<1500'],
  },
};

export default function () {
  const id = Math.floor(Math.random() * 1000);
  const r = http.get(`${BASE}/anything/actors/${id}`, { tags: { name: 'actor_get' } });
  check(r, { 'actor 200': (x) => x.status === 200 });
  const p = Math.random();
  if (p < 0.17) {
    // /delay/N waits N seconds: a slow login like the baseline's.
    http.post(`${BASE}/delay/0.3`, '{}', { tags: { name: 'auth_login' } });
  } else if (p < 0.22) {
    http.post(`${BASE}/delay/0.8`, '{}', { tags: { name: 'auth_register' } });
  } else if (p < 0.25) {
    const u = http.post(`${BASE}/anything/documents`, 'x'.repeat(2048), { tags: { name: 'document_upload' } });
    check(u, { 'upload 200': (x) => x.status === 200 });
  }
  sleep(1);
}
