/**
 * `OpenAICompatibleScorer`: a {@link ContinuationScorer} for OpenAI-compatible servers that
 * offer the legacy `/v1/completions` endpoint with `echo` and `logprobs` (vLLM, SGLang, our
 * `dreamgym model serve`). One request scores every continuation: the prompts
 * `prompt + continuation` are sent as a batch, echoed back with a log-probability per token,
 * and each continuation's tokens are summed.
 */
import { z } from 'zod';
import { ModelError } from '../errors.js';
import { parseOptions } from '../parse-options.js';
import type { ChatMessage, TokenLogprob } from './chat-model.js';
import { formatChatMLPrompt } from './chat-template.js';
import type {
  ContinuationScore,
  ContinuationScorer,
  ScoreRequest,
  ScoreResponse,
} from './continuation-scorer.js';
import {
  decodeResponseBody,
  type ModelClientDependencies,
  ModelTransport,
} from './model-transport.js';
import { OpenAICompatibleClientOptionsSchema } from './openai-compatible-options.js';

/** Options of {@link OpenAICompatibleScorer}. */
export const OpenAICompatibleScorerOptionsSchema = OpenAICompatibleClientOptionsSchema.extend({
  /**
   * How `messages` become the raw prompt: `chatml` (default; SmolLM2, Qwen and other ChatML
   * models), or a function writing the server model's template, ending where the assistant's
   * reply starts. Requests with a raw `prompt` skip it.
   */
  chatTemplate: z
    .union([
      z.literal('chatml'),
      z.custom<(messages: readonly ChatMessage[]) => string>(
        (value) => typeof value === 'function',
      ),
    ])
    .default('chatml'),
  /** System prompt the template adds when the conversation has none (ChatML only). */
  defaultSystemPrompt: z.string().optional(),
});
/** Input options of {@link OpenAICompatibleScorer}. */
export type OpenAICompatibleScorerOptions = z.input<typeof OpenAICompatibleScorerOptionsSchema>;

const CompletionBodySchema = z.object({
  choices: z
    .array(
      z.object({
        index: z.number().int().min(0),
        text: z.string(),
        logprobs: z.object({
          tokens: z.array(z.string()),
          token_logprobs: z.array(z.number().nullable()),
          text_offset: z.array(z.number().int()),
        }),
      }),
    )
    .min(1),
  usage: z
    .object({
      prompt_tokens: z.number().int().min(0),
      completion_tokens: z.number().int().min(0).optional(),
      total_tokens: z.number().int().min(0).optional(),
    })
    .nullish(),
});
type CompletionBody = z.output<typeof CompletionBodySchema>;

/**
 * The tokens of an echoed `prompt + continuation` that spell the continuation (the first
 * is cut where it straddles the boundary), with their log-probabilities; tokens after the
 * continuation (generated ones) are left out. Undefined when a token in it has no log-probability.
 */
export function continuationTokens(
  logprobs: CompletionBody['choices'][number]['logprobs'],
  promptLength: number,
  textLength: number,
): TokenLogprob[] | undefined {
  const tokens: TokenLogprob[] = [];
  for (const [index, token] of logprobs.tokens.entries()) {
    const start = logprobs.text_offset[index] ?? 0;
    const end = start + token.length;
    if (end <= promptLength || start >= textLength) continue;
    const logprob = logprobs.token_logprobs[index];
    if (logprob === null || logprob === undefined) return undefined;
    tokens.push({ token: token.slice(Math.max(0, promptLength - start)), logprob });
  }
  return tokens;
}

/** A {@link ContinuationScorer} over an OpenAI-compatible `/v1/completions` endpoint. */
export class OpenAICompatibleScorer implements ContinuationScorer {
  readonly id: string;
  private readonly options: z.output<typeof OpenAICompatibleScorerOptionsSchema>;
  private readonly transport: ModelTransport;

  /** Validates `options` (throws `ConfigError` naming the field) and creates the client. */
  constructor(options: OpenAICompatibleScorerOptions, dependencies: ModelClientDependencies = {}) {
    this.options = parseOptions(OpenAICompatibleScorerOptionsSchema, options, 'scorer');
    this.transport = new ModelTransport(this.options, dependencies);
    this.id = `${this.options.model}@${this.transport.baseURL}`;
  }

  /** The raw prompt a request's continuations follow. */
  promptOf(request: Pick<ScoreRequest, 'messages' | 'prompt'>): string {
    if ((request.prompt === undefined) === (request.messages === undefined)) {
      throw new ModelError('scoreContinuations needs exactly one of `prompt` and `messages`.');
    }
    if (request.prompt !== undefined) return request.prompt;
    const template = this.options.chatTemplate;
    return template === 'chatml'
      ? formatChatMLPrompt(request.messages!, {
          ...(this.options.defaultSystemPrompt === undefined
            ? {}
            : { defaultSystemPrompt: this.options.defaultSystemPrompt }),
        })
      : template(request.messages!);
  }

  async scoreContinuations(request: ScoreRequest): Promise<ScoreResponse> {
    const prompt = this.promptOf(request);
    if (request.continuations.length === 0) {
      return { scores: [], usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } };
    }
    const texts = request.continuations.map((continuation) => prompt + continuation);
    const body = {
      model: this.options.model,
      prompt: texts,
      // One generated token is the most portable way to get the echo; it is left out below.
      max_tokens: 1,
      temperature: 0,
      echo: true,
      logprobs: 1,
    };
    const url = `${this.transport.baseURL}/completions`;
    const response = await this.transport.call(
      '/completions',
      (requestOptions) =>
        this.transport.client.completions
          .create(
            body as Parameters<typeof this.transport.client.completions.create>[0] & {
              stream?: false;
            },
            requestOptions,
          )
          .asResponse(),
      (text) => decodeResponseBody(text, CompletionBodySchema, 'a text completion with logprobs'),
      { signal: request.signal },
    );
    const scores: ContinuationScore[] = request.continuations.map((continuation, index) => {
      const choice = response.choices.find((candidate) => candidate.index === index);
      const tokens = choice
        ? continuationTokens(choice.logprobs, prompt.length, texts[index]!.length)
        : undefined;
      if (!choice?.text.startsWith(texts[index]!) || tokens === undefined) {
        throw new ModelError(
          `POST ${url}: the server did not echo prompt ${index} with a log-probability for every token; it needs /v1/completions with echo and logprobs (vLLM, SGLang, dreamgym model serve).`,
          { url },
        );
      }
      return {
        text: continuation,
        logprob: tokens.reduce((sum, token) => sum + token.logprob, 0),
        tokens,
      };
    });
    const promptTokens = response.usage?.prompt_tokens ?? 0;
    const completionTokens = response.usage?.completion_tokens ?? 0;
    return {
      scores,
      usage: {
        promptTokens,
        completionTokens,
        totalTokens: response.usage?.total_tokens ?? promptTokens + completionTokens,
      },
    };
  }
}
