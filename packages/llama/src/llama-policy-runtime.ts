/**
 * `LlamaPolicyRuntime`: `LlmRuntime` on llama.cpp in process, the acting side of an
 * `LlmPolicy`. Generates with per-token ids and log-probabilities, scores continuations by
 * teacher forcing, tokenises with the GGUF's own tokenizer, and swaps in new weights (a LoRA
 * adapter over the base GGUF, or a whole exported GGUF) by loading them next to the running
 * model and disposing of the old one once its requests are done.
 */
import { join } from 'node:path';
import type { ChatMessage } from '@dreamgym/core/models';
import { LlamaChatModel } from './llama-chat-model.js';
import type { LlamaChatModelOptions } from './llama-chat-model-options.js';
import type { ExportedWeights, LlmRuntime, RuntimeGeneration } from './llm-runtime.js';

/** Options of {@link LlamaPolicyRuntime.load}: those of `LlamaChatModel.load`. */
export type LlamaPolicyRuntimeOptions = Omit<LlamaChatModelOptions, 'loraAdapters'>;

/** llama.cpp as the acting side of an LLM policy. */
export class LlamaPolicyRuntime implements LlmRuntime {
  readonly id: string;
  readonly modelPath: string;
  readonly endOfTurn: string;
  readonly weightFormat = 'gguf' as const;
  private model: LlamaChatModel;
  private active = 0;
  private idle: (() => void)[] = [];
  private closed: Promise<void> | undefined;
  /** Seconds each `loadWeights` took, in order. */
  readonly reloadSeconds: number[] = [];

  private constructor(
    model: LlamaChatModel,
    private readonly options: LlamaPolicyRuntimeOptions,
  ) {
    this.model = model;
    this.id = model.id;
    this.modelPath = model.path;
    this.endOfTurn = model.chatTemplate === 'chatml' ? '<|im_end|>' : '';
  }

  /** Loads the base model (`local`, a known name, or a GGUF path). */
  static async load(options: LlamaPolicyRuntimeOptions = {}): Promise<LlamaPolicyRuntime> {
    return new LlamaPolicyRuntime(await LlamaChatModel.load(options), options);
  }

  /** The model generating now. */
  get current(): LlamaChatModel {
    return this.model;
  }

  async promptTokens(messages: readonly ChatMessage[]): Promise<number[]> {
    return Array.from(await this.model.promptTokens(messages));
  }

  async tokenize(text: string): Promise<number[]> {
    return this.model.tokenize(text, true);
  }

  countTokens(text: string): number {
    return this.model.countTokens(text);
  }

  async generate(request: {
    messages: readonly ChatMessage[];
    maxTokens: number;
    temperature: number;
    seed?: number;
    stop?: readonly string[];
    signal?: AbortSignal;
  }): Promise<RuntimeGeneration> {
    return this.using(async (model) => {
      const response = await model.chat({
        messages: [...request.messages],
        maxTokens: request.maxTokens,
        temperature: request.temperature,
        // The model's own distribution at the temperature: what the trainer scores.
        topK: 0,
        topP: 1,
        minP: 0,
        logprobs: true,
        ...(request.seed === undefined ? {} : { seed: request.seed }),
        ...(request.stop ? { stop: [...request.stop] } : {}),
        ...(request.signal ? { signal: request.signal } : {}),
      });
      return {
        text: response.text,
        tokens: response.tokens.map((token) => ({ id: token.id, logprob: token.logprob ?? -9999 })),
        finishReason: response.finishReason === 'length' ? 'length' : 'stop',
      };
    });
  }

  async score(request: {
    messages: readonly ChatMessage[];
    continuations: readonly string[];
    signal?: AbortSignal;
  }): Promise<number[][]> {
    return this.using(async (model) => {
      const { scores } = await model.scoreContinuations({
        messages: [...request.messages],
        continuations: [...request.continuations],
        ...(request.signal ? { signal: request.signal } : {}),
      });
      return scores.map((score) => score.tokens.map((token) => token.logprob));
    });
  }

  async loadWeights(weights: ExportedWeights): Promise<void> {
    const started = performance.now();
    const next = await LlamaChatModel.load({
      ...this.options,
      ...(weights.kind === 'model'
        ? { model: weights.path }
        : {
            model: this.modelPath,
            loraAdapters: [
              weights.kind === 'peft' ? join(weights.path, 'adapter.gguf') : weights.path,
            ],
          }),
      id: this.id,
    });
    const previous = this.model;
    this.model = next;
    await this.waitIdle();
    await previous.dispose();
    this.reloadSeconds.push((performance.now() - started) / 1000);
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      await this.waitIdle();
      await this.model.dispose();
    })();
    return this.closed;
  }

  /** Runs `work` on the current model, counted so a reload waits for it. */
  private async using<T>(work: (model: LlamaChatModel) => Promise<T>): Promise<T> {
    this.active += 1;
    try {
      return await work(this.model);
    } finally {
      this.active -= 1;
      if (this.active === 0) for (const resolve of this.idle.splice(0)) resolve();
    }
  }

  private waitIdle(): Promise<void> {
    if (this.active === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }
}
