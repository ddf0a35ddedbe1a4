/**
 * `OpenAICompatibleRuntime`: an `LlmRuntime` on an inference server, so an `LlmPolicy` acts
 * through vLLM, SGLang or `dreamgym model serve` and learns in the torch trainer. What it asks
 * of the server (vLLM's API; `dreamgym model serve` implements the same):
 * - `POST /v1/chat/completions` with `logprobs` and `return_token_ids`: the answer, its token
 *   ids and their log-probabilities, and the prompt's token ids as the server evaluated them
 *   (what the policy records, so the trainer scores exactly the tokens that were sampled);
 * - `POST /tokenize`: a conversation's prompt tokens and a text's tokens;
 * - `POST /v1/completions` with token-id prompts and `prompt_logprobs: 0`: teacher-forced
 *   log-probabilities of candidate answers (score selection), with DreamGym's
 *   `prompt_logprobs_from` naming the first candidate token (`dreamgym model serve` then
 *   evaluates the conversation without logits, as in-process scoring does; vLLM ignores it);
 * - `POST /v1/load_lora_adapter` and `POST /v1/unload_lora_adapter`: after an update the
 *   trainer writes a PEFT adapter folder, the server loads it under a new name, later requests
 *   name it as `model`, and the previous one is unloaded.
 *
 * vLLM needs `--enable-lora --max-lora-rank R` and `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`;
 * its log-probabilities are the model's raw ones unless it runs with
 * `--logprobs-mode processed_logprobs`, which matches the trainer's at temperatures other
 * than 1. The server must serve the weights of `modelPath` (the trainer's starting point).
 */
import { ConfigError, ModelError } from '@dreamgym/core';
import type { ChatMessage } from '@dreamgym/core/models';
import type { ExportedWeights, LlmRuntime, RuntimeGeneration } from './llm-runtime.js';

/** Options of {@link OpenAICompatibleRuntime}. */
export interface OpenAICompatibleRuntimeOptions {
  /** The server's OpenAI base URL, `http://127.0.0.1:8000/v1`. `/tokenize` is at its root. */
  baseURL: string;
  /** The base model's name on the server (requests name it until an adapter is loaded). */
  model: string;
  /** The GGUF of the weights the server serves: where the trainer starts from. */
  modelPath: string;
  /** The text that ends an assistant turn. Default `<|im_end|>` (ChatML). */
  endOfTurn?: string;
  /** Sent as a bearer token when given. */
  apiKey?: string;
  /** Milliseconds one request may take. Default 120000. */
  timeoutMs?: number;
  /** Prefix of the names adapters are loaded under (`dreamgym-v3`). Default `dreamgym`. */
  adapterPrefix?: string;
  /** A name for logs and stats. Default `openai:<model>`. */
  id?: string;
}

interface ChatResponseBody {
  prompt_token_ids?: number[];
  choices?: Array<{
    message?: { content?: string | null };
    finish_reason?: string;
    token_ids?: number[];
    logprobs?: { content?: Array<{ logprob: number }> | null } | null;
  }>;
}

interface CompletionResponseBody {
  choices?: Array<{
    index?: number;
    prompt_logprobs?: Array<Record<string, { logprob: number }> | null>;
  }>;
}

/** An `LlmRuntime` on an OpenAI-compatible inference server; see the file's comment. */
export class OpenAICompatibleRuntime implements LlmRuntime {
  readonly id: string;
  readonly modelPath: string;
  readonly endOfTurn: string;
  readonly weightFormat = 'peft' as const;
  private readonly root: string;
  private readonly baseURL: string;
  private current: string;
  private loads = 0;
  private readonly tokenCache = new Map<string, Promise<number[]>>();

  constructor(private readonly options: OpenAICompatibleRuntimeOptions) {
    let url: URL;
    try {
      url = new URL(options.baseURL);
    } catch {
      throw new ConfigError(`baseURL is not a URL: "${options.baseURL}".`, { field: 'baseURL' });
    }
    this.baseURL = url.href.replace(/\/+$/, '');
    this.root = this.baseURL.replace(/\/v1$/, '');
    this.current = options.model;
    this.modelPath = options.modelPath;
    this.endOfTurn = options.endOfTurn ?? '<|im_end|>';
    this.id = options.id ?? `openai:${options.model}`;
  }

  /** The `model` requests name now: the base, or the adapter loaded last. */
  get servedModel(): string {
    return this.current;
  }

  async promptTokens(messages: readonly ChatMessage[]): Promise<number[]> {
    const body = await this.post<{ tokens?: number[] }>(`${this.root}/tokenize`, {
      model: this.current,
      messages,
      add_generation_prompt: true,
    });
    return this.ids(body.tokens, `${this.root}/tokenize`, 'tokens');
  }

  tokenize(text: string): Promise<number[]> {
    // Answers repeat (the same candidates at every step): one request per distinct text.
    let cached = this.tokenCache.get(text);
    if (!cached) {
      cached = this.post<{ tokens?: number[] }>(`${this.root}/tokenize`, {
        model: this.options.model,
        prompt: text,
        add_special_tokens: false,
      }).then((body) => this.ids(body.tokens, `${this.root}/tokenize`, 'tokens'));
      cached.catch(() => this.tokenCache.delete(text));
      if (this.tokenCache.size > 50_000) this.tokenCache.clear();
      this.tokenCache.set(text, cached);
    }
    return cached;
  }

  async generate(request: Parameters<LlmRuntime['generate']>[0]): Promise<RuntimeGeneration> {
    const url = `${this.baseURL}/chat/completions`;
    const body = await this.post<ChatResponseBody>(
      url,
      {
        model: this.current,
        messages: request.messages,
        max_tokens: request.maxTokens,
        temperature: request.temperature,
        ...(request.seed === undefined ? {} : { seed: request.seed }),
        ...(request.stop && request.stop.length > 0 ? { stop: request.stop } : {}),
        logprobs: true,
        return_token_ids: true,
        // The model's own distribution at the temperature: what the trainer scores.
        top_p: 1,
        top_k: 0,
      },
      request.signal,
    );
    const choice = body.choices?.[0];
    const ids = this.ids(
      choice?.token_ids,
      url,
      'choices[0].token_ids (send return_token_ids: a vLLM >= 0.10.2 or dreamgym model serve server)',
    );
    const logprobs = choice?.logprobs?.content;
    if (!Array.isArray(logprobs) || logprobs.length !== ids.length) {
      throw new ModelError(
        `${url}: the answer has ${ids.length} token ids but ${Array.isArray(logprobs) ? logprobs.length : 'no'} log-probabilities (choices[0].logprobs.content).`,
      );
    }
    return {
      text: choice?.message?.content ?? '',
      tokens: ids.map((id, index) => ({ id, logprob: logprobs[index]!.logprob })),
      finishReason: choice?.finish_reason === 'length' ? 'length' : 'stop',
      ...(Array.isArray(body.prompt_token_ids) ? { promptTokens: body.prompt_token_ids } : {}),
    };
  }

  async score(request: Parameters<LlmRuntime['score']>[0]): Promise<number[][]> {
    const [prompt, continuations] = await Promise.all([
      this.promptTokens(request.messages),
      Promise.all(request.continuations.map((text) => this.tokenize(text))),
    ]);
    const url = `${this.baseURL}/completions`;
    const body = await this.post<CompletionResponseBody>(
      url,
      {
        model: this.current,
        prompt: continuations.map((ids) => [...prompt, ...ids]),
        max_tokens: 1,
        temperature: 0,
        prompt_logprobs: 0,
        // Only the candidates' tokens are read; servers that know this field skip the rest.
        prompt_logprobs_from: prompt.length,
      },
      request.signal,
    );
    const choices = body.choices ?? [];
    if (choices.length !== continuations.length) {
      throw new ModelError(
        `${url}: ${continuations.length} prompts gave ${choices.length} choices.`,
      );
    }
    return continuations.map((ids, index) => {
      const choice = choices.find((entry) => entry.index === index) ?? choices[index]!;
      const entries = choice.prompt_logprobs;
      if (!Array.isArray(entries) || entries.length !== prompt.length + ids.length) {
        throw new ModelError(
          `${url}: choice ${index} has no prompt_logprobs for its ${prompt.length + ids.length} prompt tokens.`,
        );
      }
      return ids.map((id, offset) => {
        const entry = entries[prompt.length + offset]?.[String(id)];
        if (entry === undefined) {
          throw new ModelError(`${url}: prompt_logprobs of choice ${index} lack token ${id}.`);
        }
        return entry.logprob;
      });
    });
  }

  async loadWeights(weights: ExportedWeights): Promise<void> {
    if (weights.kind !== 'peft') {
      throw new ConfigError(
        `${this.id} loads LoRA adapters as PEFT folders; got ${weights.kind} weights (${weights.path}).`,
        { field: 'weights' },
      );
    }
    this.loads += 1;
    const name = `${this.options.adapterPrefix ?? 'dreamgym'}-v${this.loads}-${process.pid}`;
    await this.post(`${this.baseURL}/load_lora_adapter`, {
      lora_name: name,
      lora_path: weights.path,
    });
    const previous = this.current;
    this.current = name;
    if (previous !== this.options.model) await this.unload(previous);
  }

  /** Unloads the adapter loaded last, if any (the server keeps serving its base model). */
  async close(): Promise<void> {
    if (this.current !== this.options.model) {
      const adapter = this.current;
      this.current = this.options.model;
      await this.unload(adapter).catch(() => {});
    }
  }

  private async unload(name: string): Promise<void> {
    await this.post(`${this.baseURL}/unload_lora_adapter`, { lora_name: name });
  }

  private ids(value: unknown, url: string, field: string): number[] {
    if (!Array.isArray(value) || !value.every((id) => Number.isInteger(id))) {
      throw new ModelError(`${url}: the response has no ${field}.`);
    }
    return value as number[];
  }

  private async post<T>(url: string, body: unknown, signal?: AbortSignal): Promise<T> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs ?? 120_000);
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
        },
        body: JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw new ModelError(`POST ${url} failed: ${(error as Error).message}`, { cause: error });
    }
    const text = await response.text();
    if (!response.ok) {
      let message = text.slice(0, 500);
      try {
        const parsed = JSON.parse(text) as { error?: { message?: string }; message?: string };
        message = parsed.error?.message ?? parsed.message ?? message;
      } catch {}
      throw new ModelError(`POST ${url}: HTTP ${response.status}: ${message}`);
    }
    try {
      return (text === '' ? {} : JSON.parse(text)) as T;
    } catch {
      // vLLM answers the adapter endpoints with plain text.
      return {} as T;
    }
  }
}
