/**
 * The server's figures in Prometheus' text exposition format (`GET /metrics`): steps and their
 * latency histogram, steps per second over the last window, sessions, process memory, and the
 * gauges the served run adds (replay buffer size and capacity, transitions written, episodes).
 */

/** Upper bounds of the step-latency histogram's buckets, in seconds. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** A window of recent step times for the steps-per-second gauge. */
const RATE_WINDOW_MS = 10_000;

/** One gauge or counter the served run adds: name (`dreamgym_` is prefixed), help, value. */
export interface ExtraMetric {
  name: string;
  help: string;
  type: 'gauge' | 'counter';
  value: number;
}

/** Step counts and latencies, recorded as steps finish. */
export class StepMetrics {
  private readonly bucketCounts = new Array<number>(LATENCY_BUCKETS.length).fill(0);
  private count = 0;
  private sum = 0;
  private recent: number[] = [];

  /** Records one step that took `milliseconds`. */
  record(milliseconds: number): void {
    const seconds = milliseconds / 1000;
    this.count += 1;
    this.sum += seconds;
    for (const [index, bound] of LATENCY_BUCKETS.entries()) {
      if (seconds <= bound) this.bucketCounts[index]! += 1;
    }
    const now = performance.now();
    this.recent.push(now);
    if (this.recent.length > 100_000 || this.recent[0]! < now - RATE_WINDOW_MS * 2) {
      this.recent = this.recent.filter((at) => at >= now - RATE_WINDOW_MS);
    }
  }

  /** Steps per second over the last {@link RATE_WINDOW_MS}. */
  stepsPerSecond(): number {
    const since = performance.now() - RATE_WINDOW_MS;
    return this.recent.filter((at) => at >= since).length / (RATE_WINDOW_MS / 1000);
  }

  /** The histogram's exposition lines. */
  histogramLines(name: string): string[] {
    return [
      ...LATENCY_BUCKETS.map(
        (bound, index) => `${name}_bucket{le="${bound}"} ${this.bucketCounts[index]}`,
      ),
      `${name}_bucket{le="+Inf"} ${this.count}`,
      `${name}_sum ${this.sum}`,
      `${name}_count ${this.count}`,
    ];
  }

  get total(): number {
    return this.count;
  }

  /** Milliseconds of all the steps recorded. */
  get milliseconds(): number {
    return this.sum * 1000;
  }
}

/** The exposition text of the server's figures and the run's extra ones. */
export function formatMetrics(
  steps: StepMetrics,
  server: {
    websocketSessions: number;
    maxSessions: number;
    httpEpisodes: number;
    maxHttpEpisodes: number;
    sessionsOpened: number;
    sessionsRejected: number;
    httpEpisodesEvicted: number;
  },
  extra: readonly ExtraMetric[],
): string {
  const lines: string[] = [];
  const add = (name: string, type: string, help: string, value: number) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${value}`);
  };
  add('dreamgym_steps_total', 'counter', 'Environment steps served.', steps.total);
  add(
    'dreamgym_steps_per_second',
    'gauge',
    'Steps served per second over the last 10 seconds.',
    steps.stepsPerSecond(),
  );
  lines.push(
    '# HELP dreamgym_step_duration_seconds Time to serve one step (WebSocket and HTTP).',
    '# TYPE dreamgym_step_duration_seconds histogram',
    ...steps.histogramLines('dreamgym_step_duration_seconds'),
  );
  add('dreamgym_websocket_sessions', 'gauge', 'Open WebSocket sessions.', server.websocketSessions);
  add('dreamgym_websocket_sessions_max', 'gauge', 'WebSocket session cap.', server.maxSessions);
  add('dreamgym_http_episodes', 'gauge', 'Live HTTP episodes.', server.httpEpisodes);
  add('dreamgym_http_episodes_max', 'gauge', 'HTTP episode cap.', server.maxHttpEpisodes);
  add(
    'dreamgym_sessions_opened_total',
    'counter',
    'Sessions and HTTP episodes opened.',
    server.sessionsOpened,
  );
  add(
    'dreamgym_sessions_rejected_total',
    'counter',
    'Sessions and resets refused (capacity, rate).',
    server.sessionsRejected,
  );
  add(
    'dreamgym_http_episodes_evicted_total',
    'counter',
    'HTTP episodes closed to make room.',
    server.httpEpisodesEvicted,
  );
  const memory = process.memoryUsage();
  add(
    'dreamgym_process_resident_memory_bytes',
    'gauge',
    'Resident set size of the server process.',
    memory.rss,
  );
  add('dreamgym_process_heap_used_bytes', 'gauge', 'V8 heap in use.', memory.heapUsed);
  for (const metric of extra) {
    add(`dreamgym_${metric.name}`, metric.type, metric.help, metric.value);
  }
  return `${lines.join('\n')}\n`;
}
