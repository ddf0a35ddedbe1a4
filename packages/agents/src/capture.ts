/**
 * `ModelCallCapture`: records every chat-completion call an agent makes, by wrapping the
 * `fetch` its OpenAI-compatible client uses (the AI SDK's `createOpenAICompatible({ fetch })`
 * and `createOpenAI({ fetch })`, the `openai` package's `new OpenAI({ fetch })` that OpenAI
 * Agents JS runs on). The agent's code is not changed: only the client it is given.
 *
 * Each call becomes a {@link ModelCall}: the exact messages and tool definitions sent, the
 * answer and its tool calls, and the prompt's and answer's token ids with the answer's
 * log-probabilities (asked for with vLLM's `return_token_ids` and `logprobs`, which
 * `dreamgym model serve`, vLLM and SGLang answer). The tokens recorded are the tokens
 * trained: nothing is tokenised again. Calls made inside {@link ModelCallCapture.episode} belong to
 * that episode; a call after the episode has ended is answered here with a final message and no
 * tool call, so the agent's own loop stops as it would on a final answer.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';

/** A tool call of an answer, as the OpenAI wire format writes it. */
export interface CapturedToolCall {
  id: string;
  name: string;
  /** The arguments as the model wrote them (a JSON text). */
  arguments: string;
}

/** One model call of an agent. */
export interface ModelCall {
  /** The episode the call belongs to; undefined outside any episode (a deployed agent). */
  episodeId: string | undefined;
  /** The model named in the request (after the capture's `model` override, if any). */
  model: string;
  /** The request's messages, exactly as sent. */
  messages: unknown[];
  /** The request's tool definitions, exactly as sent. */
  tools: unknown[];
  /** The answer's text, or null when it only calls tools. */
  content: string | null;
  toolCalls: CapturedToolCall[];
  finishReason: string;
  /** The prompt's token ids as the server tokenised it (absent when the server does not return them). */
  promptTokenIds?: number[];
  /** The answer's token ids. */
  completionTokenIds?: number[];
  /** Each answer token's log-probability, when the server returned them. */
  logprobs?: number[];
  /** Wall-clock milliseconds of the HTTP call. */
  milliseconds: number;
  /** Milliseconds the capture itself added (parsing, copying, recording). */
  overheadMilliseconds: number;
}

/** Options of {@link ModelCallCapture}. */
export interface ModelCallCaptureOptions {
  /** The `fetch` to send requests with. Default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /**
   * Ask for token ids and log-probabilities (`return_token_ids: true`, `logprobs: true`) on
   * every chat-completion request. Default true: training needs them. Servers that do not know
   * the fields ignore them (OpenAI's own API refuses `return_token_ids`: set false there).
   */
  requestTokens?: boolean;
  /** Receives each call as it is recorded. */
  onCall?: (call: ModelCall) => void;
}

interface EpisodeContext {
  id: string;
  calls: ModelCall[];
  ended: boolean;
}

/** The answer given, without calling the model, to a call made after its episode ended. */
export const EPISODE_OVER_MESSAGE = 'The episode is over.';

/** Records an agent's model calls, per episode, from the `fetch` its client uses. */
export class ModelCallCapture {
  /**
   * A `fetch` to give the agent's OpenAI-compatible client: chat completions are recorded,
   * everything else passes through unchanged.
   */
  readonly fetch: typeof fetch;
  /** The model every chat completion is sent to (a LoRA adapter's name), overriding the agent's. */
  model: string | undefined;
  /** Calls made outside any episode (a deployed agent's traffic), oldest first. */
  readonly untracked: ModelCall[] = [];
  private readonly episodes = new AsyncLocalStorage<EpisodeContext>();
  private readonly base: typeof fetch;
  private readonly options: ModelCallCaptureOptions;

  constructor(options: ModelCallCaptureOptions = {}) {
    this.options = options;
    this.base = options.fetch ?? globalThis.fetch;
    this.fetch = (input, init) => this.send(input, init);
  }

  /**
   * Runs `play` as one episode: the model calls it makes (however deep, across awaits) are
   * recorded under `id`. `end()` (given to `play`) marks the episode over: later calls get a
   * final answer without reaching the model.
   */
  async episode<T>(
    id: string,
    play: (end: () => void) => Promise<T>,
  ): Promise<{ result: T; calls: ModelCall[] }> {
    const context: EpisodeContext = { id, calls: [], ended: false };
    const result = await this.episodes.run(context, () =>
      play(() => {
        context.ended = true;
      }),
    );
    return { result, calls: context.calls };
  }

  /** Whether servers are asked for token ids and log-probabilities (the `requestTokens` option). */
  get requestTokens(): boolean {
    return this.options.requestTokens ?? true;
  }

  /** The episode the calling async context plays; undefined outside {@link ModelCallCapture.episode}. */
  get currentEpisodeId(): string | undefined {
    return this.episodes.getStore()?.id;
  }

  /**
   * True inside an episode that has ended: a front-end then answers the agent's call with
   * {@link EPISODE_OVER_MESSAGE} and no tool call, without reaching the model.
   */
  get episodeOver(): boolean {
    return this.episodes.getStore()?.ended === true;
  }

  /**
   * Records a call observed by another front-end of this capture (the AI SDK middleware, the
   * Agents JS trace processor) into the calling context's episode, or into `untracked` outside
   * any; `onCall` sees it. Returns the call with its `episodeId`.
   */
  record(observed: Omit<ModelCall, 'episodeId'>): ModelCall {
    const context = this.episodes.getStore();
    const call: ModelCall = { episodeId: context?.id, ...observed };
    if (context) context.calls.push(call);
    else this.untracked.push(call);
    this.options.onCall?.(call);
    return call;
  }

  private async send(input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!/\/chat\/completions\/?(\?|$)/.test(url) || typeof init?.body !== 'string') {
      return this.base(input, init);
    }
    const started = performance.now();
    const context = this.episodes.getStore();
    const request = JSON.parse(init.body) as Record<string, unknown>;
    if (context?.ended) return episodeOverResponse(request);
    if (this.model !== undefined) request.model = this.model;
    if (this.options.requestTokens ?? true) {
      request.return_token_ids = true;
      request.logprobs = true;
    }
    const body = JSON.stringify(request);
    const sending = performance.now();
    const response = await this.base(input, { ...init, body });
    const text = await response.text();
    const received = performance.now();
    if (response.ok) {
      const call = recordedCall(request, text, received - sending);
      if (call) {
        call.overheadMilliseconds = sending - started + (performance.now() - received);
        this.record(call);
      }
    }
    return new Response(text, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  }
}

interface WireChoice {
  message?: {
    content?: string | null;
    tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: string } }>;
  };
  finish_reason?: string;
  token_ids?: number[];
  logprobs?: { content?: Array<{ logprob: number }> | null } | null;
}

/** The token ids and log-probabilities an OpenAI-compatible reply carries, where it has them. */
export type ReplyTokens = Pick<ModelCall, 'promptTokenIds' | 'completionTokenIds' | 'logprobs'>;

/**
 * Reads the prompt's token ids (`prompt_token_ids`), the answer's (`choices[0].token_ids`) and
 * their log-probabilities (`choices[0].logprobs.content[].logprob`) from a chat-completion
 * reply, as vLLM, SGLang and `dreamgym model serve` write them; fields absent are left out.
 */
export function replyTokens(reply: unknown): ReplyTokens {
  const body = (reply ?? {}) as { choices?: WireChoice[]; prompt_token_ids?: unknown };
  const choice = Array.isArray(body.choices) ? body.choices[0] : undefined;
  const logprobs = choice?.logprobs?.content?.map((token) => token.logprob);
  return {
    ...(isIdList(body.prompt_token_ids) ? { promptTokenIds: body.prompt_token_ids } : {}),
    ...(isIdList(choice?.token_ids) ? { completionTokenIds: choice.token_ids } : {}),
    ...(logprobs ? { logprobs } : {}),
  };
}

function isIdList(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((id) => Number.isInteger(id));
}

/** The call a request and its reply make; undefined when the reply is not a chat completion. */
function recordedCall(
  request: Record<string, unknown>,
  replyText: string,
  milliseconds: number,
): Omit<ModelCall, 'episodeId'> | undefined {
  let reply: unknown;
  try {
    reply = JSON.parse(replyText);
  } catch {
    return undefined;
  }
  return callFromReply(request, reply, milliseconds);
}

/**
 * The call a chat-completion request (its `model`, `messages` and `tools`) and its parsed reply
 * make, with no capture overhead yet; undefined when the reply has no choice.
 */
export function callFromReply(
  request: Record<string, unknown>,
  reply: unknown,
  milliseconds: number,
): Omit<ModelCall, 'episodeId'> | undefined {
  const choice = (reply as { choices?: WireChoice[] } | null | undefined)?.choices?.[0];
  if (!choice) return undefined;
  return {
    model: String(request.model ?? ''),
    messages: (request.messages as unknown[]) ?? [],
    tools: (request.tools as unknown[]) ?? [],
    content: choice.message?.content ?? null,
    toolCalls: (choice.message?.tool_calls ?? []).map((call) => ({
      id: call.id ?? '',
      name: call.function?.name ?? '',
      arguments: call.function?.arguments ?? '',
    })),
    finishReason: choice.finish_reason ?? 'stop',
    ...replyTokens(reply),
    milliseconds,
    overheadMilliseconds: 0,
  };
}

/** A final answer with no tool call, so the agent's loop ends once its episode has. */
function episodeOverResponse(request: Record<string, unknown>): Response {
  const body = {
    id: `chatcmpl-${randomBytes(8).toString('hex')}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: String(request.model ?? ''),
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: EPISODE_OVER_MESSAGE, refusal: null },
        finish_reason: 'stop',
        logprobs: null,
      },
    ],
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  };
  return new Response(JSON.stringify(body), {
    status: 200,
    headers: { 'content-type': 'application/json' },
  });
}
