/**
 * `CaptureTraceProcessor`: a {@link ModelCallCapture} fed by OpenAI Agents JS's tracing, for
 * an agent whose OpenAI client cannot be given our `fetch`. Registered with
 * `addTraceProcessor`, it turns each generation span that ends into a {@link ModelCall} of the
 * calling episode (or `capture.untracked` outside any):
 *
 * ```ts
 * addTraceProcessor(new CaptureTraceProcessor(capture));
 * await capture.episode('task#1', () => run(agent, prompt));
 * ```
 *
 * What a span carries, and so what is recorded (`@openai/agents` 0.20):
 * - Only `OpenAIChatCompletionsModel` writes generation spans with data: the messages sent
 *   (`input`, system instructions first), the model, and the whole chat-completion reply
 *   (`output`), and only while tracing includes sensitive data (the default;
 *   `traceIncludeSensitiveData: false` or `OPENAI_AGENTS_DONT_LOG_MODEL_DATA` leave them out).
 *   The Responses API model writes `response` spans with an id and no messages: such calls are
 *   counted in {@link CaptureTraceProcessor.skipped}, not recorded.
 * - Tool definitions are not in the span: `tools` is recorded empty.
 * - Token ids and log-probabilities are recorded when the reply holds them, which needs the
 *   request to ask: `modelSettings: { providerData: { return_token_ids: true, logprobs: true } }`
 *   on the agent (vLLM, SGLang, `dreamgym model serve`), or `capture.fetch` as its client's
 *   fetch (which then records the calls itself).
 * - Tracing cannot answer a call, so a call after the episode's end still reaches the model;
 *   it is not recorded (it cannot change the episode's outcome), only counted in `skipped`.
 * - Tracing is off when `NODE_ENV` is `test` or `OPENAI_AGENTS_DISABLE_TRACING` is set:
 *   `setTracingDisabled(false)` turns it on.
 */
import type { Span, SpanData, Trace, TracingProcessor } from '@openai/agents';
import { callFromReply, type ModelCallCapture } from './capture.js';

/** A model call the processor saw but did not record, and why. */
export interface SkippedSpan {
  spanId: string;
  reason: 'no-data' | 'responses-api' | 'episode-over';
}

interface ChatCompletionReply {
  choices?: Array<{
    message?: {
      content?: string | null;
      tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: string } }>;
    };
    finish_reason?: string | null;
  }>;
}

/** Records the generation spans of OpenAI Agents JS runs into a {@link ModelCallCapture}. */
export class CaptureTraceProcessor implements TracingProcessor {
  /** Model calls seen but not recorded, oldest first. */
  readonly skipped: SkippedSpan[] = [];

  constructor(private readonly capture: ModelCallCapture) {}

  async onSpanEnd(span: Span<SpanData>): Promise<void> {
    // The span ends inside the run's async context: that tells the capture the episode.
    const seen = performance.now();
    const data = span.spanData;
    if (data.type === 'response') {
      this.skipped.push({ spanId: span.spanId, reason: 'responses-api' });
      return;
    }
    if (data.type !== 'generation') return;
    const reply = data.output?.[0] as ChatCompletionReply | undefined;
    const choice = reply?.choices?.[0];
    if (!data.input || !choice) {
      this.skipped.push({ spanId: span.spanId, reason: 'no-data' });
      return;
    }
    if (this.capture.episodeOver) {
      this.skipped.push({ spanId: span.spanId, reason: 'episode-over' });
      return;
    }
    const started = span.startedAt ? Date.parse(span.startedAt) : Number.NaN;
    const ended = span.endedAt ? Date.parse(span.endedAt) : Number.NaN;
    const call = callFromReply(
      { model: data.model ?? '', messages: data.input, tools: [] },
      reply,
      Number.isFinite(ended - started) ? ended - started : 0,
    );
    if (call) this.capture.record({ ...call, overheadMilliseconds: performance.now() - seen });
  }

  async onTraceStart(_trace: Trace): Promise<void> {}
  async onTraceEnd(_trace: Trace): Promise<void> {}
  async onSpanStart(_span: Span<SpanData>): Promise<void> {}
  async shutdown(): Promise<void> {}
  async forceFlush(): Promise<void> {}
}
