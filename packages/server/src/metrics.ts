/** Prometheus metrics (prom-client), one registry per server so embedded servers do not share counters. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EngineClient } from './worker/client.js';

export class ServerMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({ name: 'mlxcel_requests_total', help: 'HTTP requests by route and status', labelNames: ['route', 'status'] as const, registers: [this.registry] });
  readonly promptTokens = new Counter({ name: 'mlxcel_prompt_tokens_total', help: 'Prompt tokens processed', registers: [this.registry] });
  readonly generatedTokens = new Counter({ name: 'mlxcel_generated_tokens_total', help: 'Tokens generated', registers: [this.registry] });
  readonly timeToFirstToken = new Histogram({
    name: 'mlxcel_time_to_first_token_seconds', help: 'Request arrival to first generated token',
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [this.registry],
  });
  readonly interTokenLatency = new Histogram({
    name: 'mlxcel_inter_token_latency_seconds', help: 'Time between consecutive tokens of one choice',
    buckets: [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2], registers: [this.registry],
  });

  constructor(engine: EngineClient) {
    collectDefaultMetrics({ register: this.registry, prefix: 'mlxcel_process_' });
    new Gauge({ name: 'mlxcel_queue_depth', help: 'Sequences waiting for a batch slot', registers: [this.registry], collect() { this.set(engine.load.waiting); } });
    new Gauge({ name: 'mlxcel_active_sequences', help: 'Sequences being prefilled or decoded', registers: [this.registry], collect() { this.set(engine.load.active); } });
    new Gauge({ name: 'mlxcel_kv_cache_bytes', help: 'Bytes of KV cache held by running sequences', registers: [this.registry], collect() { this.set(engine.load.kvBytes); } });
  }
}
