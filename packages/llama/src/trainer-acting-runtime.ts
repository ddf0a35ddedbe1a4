/**
 * Acting on the trainer's own weights (`LlmPolicyOptions.actOn: 'trainer'`): generation and
 * candidate scoring run in the torch worker, so one GPU acts and learns with no inference
 * server and no weight hand-over after an update. The runtime the policy was given still
 * tokenises (prompts and answers are its token ids, as everywhere); its own weights are not
 * used.
 */
import type { ChatMessage } from '@dreamgym/core/models';
import type { ExportedWeights, LlmRuntime, RuntimeGeneration } from './llm-runtime.js';
import type { LlmTrainerClient } from './llm-trainer-client.js';

/** An `LlmRuntime` whose generation and scoring are the trainer worker's. */
export class TrainerActingRuntime implements LlmRuntime {
  readonly id: string;
  readonly modelPath: string;
  readonly endOfTurn: string;
  readonly weightFormat: LlmRuntime['weightFormat'];
  /** The tokenizer runtime's count, where it counts in process. */
  readonly countTokens?: (text: string) => number;
  private endTokens: Promise<number[]> | undefined;

  constructor(
    private readonly trainer: LlmTrainerClient,
    private readonly tokenizer: LlmRuntime,
  ) {
    this.id = `${tokenizer.id}+trainer`;
    this.modelPath = tokenizer.modelPath;
    this.endOfTurn = tokenizer.endOfTurn;
    this.weightFormat = tokenizer.weightFormat;
    if (tokenizer.countTokens) this.countTokens = tokenizer.countTokens.bind(tokenizer);
  }

  promptTokens(messages: readonly ChatMessage[]): Promise<number[]> {
    return this.tokenizer.promptTokens(messages);
  }

  tokenize(text: string): Promise<number[]> {
    return this.tokenizer.tokenize(text);
  }

  async generate(request: Parameters<LlmRuntime['generate']>[0]): Promise<RuntimeGeneration> {
    const prompt = await this.promptTokens(request.messages);
    this.endTokens ??= this.endOfTurn === '' ? Promise.resolve([]) : this.tokenize(this.endOfTurn);
    const endTokens = await this.endTokens;
    const { generations } = await this.trainer.generate({
      prompts: [prompt],
      maxTokens: request.maxTokens,
      temperature: request.temperature,
      ...(request.seed === undefined ? {} : { seed: request.seed }),
      ...(request.stop ? { stop: request.stop } : {}),
      stopTokens: endTokens.slice(-1),
      ...(request.signal ? { signal: request.signal } : {}),
    });
    const generation = generations[0]!;
    const tokens = generation.tokens.map((id, index) => ({
      id,
      logprob: generation.logprobs[index]!,
    }));
    // As the llama.cpp runtime does: no end-of-turn token, and the text cut before a stop text.
    const endToken = endTokens.at(-1);
    if (tokens.length > 0 && tokens.at(-1)!.id === endToken) tokens.pop();
    let text = generation.text;
    for (const stop of [...(request.stop ?? []), this.endOfTurn].filter(Boolean)) {
      const at = text.indexOf(stop);
      if (at >= 0) text = text.slice(0, at);
    }
    return { text, tokens, finishReason: generation.finish, promptTokens: prompt };
  }

  async score(request: Parameters<LlmRuntime['score']>[0]): Promise<number[][]> {
    const [prompt, candidates] = await Promise.all([
      this.promptTokens(request.messages),
      Promise.all(request.continuations.map((text) => this.tokenize(text))),
    ]);
    return this.trainer.scoreCandidates(prompt, candidates, request.signal);
  }

  /** The trainer's weights are the ones acting: nothing to load. */
  async loadWeights(_weights: ExportedWeights): Promise<void> {}

  /** The tokenizer runtime is the policy's to close. */
  async close(): Promise<void> {}
}
