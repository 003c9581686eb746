/** Prometheus metrics (prom-client), one registry per server so embedded servers do not share counters. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EngineClient } from './worker/client.js';
import type { PrefixLoad } from './worker/protocol.js';

export class ServerMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({ name: 'mlxcel_requests_total', help: 'HTTP requests by route and status', labelNames: ['route', 'status'] as const, registers: [this.registry] });
  readonly promptTokens = new Counter({ name: 'mlxcel_prompt_tokens_total', help: 'Prompt tokens processed', registers: [this.registry] });
  /** Per request, the tokens its usage reports as cached_tokens (counted when the request ends). */
  readonly cachedPromptTokens = new Counter({
    name: 'mlxcel_prompt_cached_tokens_total', help: 'Prompt tokens whose KV came from the prefix cache (not prefilled again)', registers: [this.registry],
  });
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
    this.prefixCacheMetrics(engine);
  }

  /**
   * The prefix cache as the engine thread last reported it (every 200 ms at most): its size, and its
   * cumulative counters as Prometheus counters (each scrape adds what grew since the last one). Absent
   * series mean the prefix cache is off (--no-prefix-cache).
   */
  private prefixCacheMetrics(engine: EngineClient): void {
    const registers = [this.registry];
    const gauge = (name: string, help: string, read: (p: PrefixLoad) => number) =>
      new Gauge({ name, help, registers, collect() { const p = engine.load.prefix; if (p) this.set(read(p)); } });
    gauge('mlxcel_prefix_cache_blocks', 'Blocks of prompt-prefix KV held by the prefix cache', (p) => p.blocks);
    gauge('mlxcel_prefix_cache_bytes', 'Bytes held by the prefix cache', (p) => p.bytes);
    gauge('mlxcel_prefix_cache_budget_bytes', 'Byte budget of the prefix cache', (p) => p.budgetBytes);
    const counter = (name: string, help: string, read: (p: PrefixLoad) => number) => {
      let seen = 0;
      new Counter({
        name, help, registers,
        collect() {
          const p = engine.load.prefix;
          if (!p) return;
          const v = read(p);
          if (v > seen) this.inc(v - seen);
          seen = Math.max(seen, v);
        },
      });
    };
    counter('mlxcel_prefix_cache_lookups_total', 'Prompts looked up in the prefix cache', (p) => p.lookups);
    counter('mlxcel_prefix_cache_hits_total', 'Prefix-cache lookups that restored at least one token', (p) => p.hits);
    counter('mlxcel_prefix_cache_restored_tokens_total', 'Prompt tokens restored from the prefix cache', (p) => p.restoredTokens);
    counter('mlxcel_prefix_cache_evicted_blocks_total', 'Prefix-cache blocks evicted (least recently used) to make room', (p) => p.evictedBlocks);
    counter('mlxcel_prefix_cache_refused_blocks_total', 'Prefix-cache blocks not stored for lack of room', (p) => p.refusedBlocks);
  }
}
