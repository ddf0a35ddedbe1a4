/**
 * `OpenAICompatibleEmbeddingModel`: an {@link EmbeddingModel} behind any OpenAI-compatible
 * `/v1/embeddings` endpoint (vLLM, SGLang, llama.cpp server, Ollama, OpenAI, TEI).
 */
import { z } from 'zod';
import { ConfigError, InvalidArgumentError, ModelError, ModelOutputError } from '../errors.js';
import { parseOptions } from '../parse-options.js';
import type { EmbeddingModel } from './embedding-model.js';
import {
  decodeResponseBody,
  MalformedResponseError,
  type ModelClientDependencies,
  ModelTransport,
} from './model-transport.js';
import {
  type OpenAICompatibleEmbeddingModelOptions,
  OpenAICompatibleEmbeddingModelOptionsSchema,
} from './openai-compatible-options.js';

const EmbeddingsBodySchema = z.object({
  data: z.array(z.object({ index: z.number().int().min(0), embedding: z.array(z.number()) })),
  usage: z
    .object({
      prompt_tokens: z.number().int().min(0),
      total_tokens: z.number().int().min(0).optional(),
    })
    .nullish(),
});

/** Totals of an embedding client. */
export interface EmbeddingModelStats {
  /** Batches (HTTP requests) that completed. */
  requests: number;
  /** Texts embedded. */
  texts: number;
  /** Attempts that were retried. */
  retries: number;
  /** Batches that failed after all retries. */
  failures: number;
  /** HTTP attempts sent. */
  attempts: number;
  promptTokens: number;
  totalTokens: number;
}

/**
 * Scales `vector` in place to unit length (L2) and returns it; throws `InvalidArgumentError` for an
 * all-zero or non-finite vector, which has no direction.
 */
export function normalizeInPlace(vector: Float32Array): Float32Array {
  let squares = 0;
  for (const value of vector) squares += value * value;
  const norm = Math.sqrt(squares);
  if (!(norm > 0) || !Number.isFinite(norm)) {
    throw new InvalidArgumentError(`cannot normalise a vector of norm ${norm}`, {
      argument: 'vector',
    });
  }
  for (let index = 0; index < vector.length; index += 1) vector[index]! /= norm;
  return vector;
}

/** Splits `items` into consecutive batches of at most `size`. */
export function toBatches<T>(items: readonly T[], size: number): T[][] {
  const batches: T[][] = [];
  for (let start = 0; start < items.length; start += size)
    batches.push(items.slice(start, start + size));
  return batches;
}

/**
 * An {@link EmbeddingModel} for any OpenAI-compatible server: batches inputs, sends the
 * batches concurrently (up to `concurrency`), retries like the chat model, and returns
 * L2-normalised `Float32Array`s in input order.
 *
 * The dimension is `options.dimension` or, when not given, learned from the first
 * response; `dimension` and `id` throw a `ConfigError` until it is known
 * (use {@link OpenAICompatibleEmbeddingModel.connect} to learn it up front).
 *
 * @example
 * ```ts
 * const embedder = await OpenAICompatibleEmbeddingModel.connect({ baseURL: 'http://127.0.0.1:8000/v1', model: 'BAAI/bge-small-en-v1.5' });
 * const [vector] = await embedder.embed(['open drawer 1']); // Float32Array, unit length
 * embedder.id; // 'openai-compatible:BAAI/bge-small-en-v1.5:dim=384'
 * ```
 */
export class OpenAICompatibleEmbeddingModel implements EmbeddingModel {
  private readonly options: z.output<typeof OpenAICompatibleEmbeddingModelOptionsSchema>;
  private readonly transport: ModelTransport;
  private knownDimension: number | undefined;
  private readonly counts = { requests: 0, texts: 0, failures: 0, promptTokens: 0, totalTokens: 0 };

  /** Validates `options` (throws `ConfigError` naming the field) and creates the client. */
  constructor(
    options: OpenAICompatibleEmbeddingModelOptions,
    dependencies: ModelClientDependencies = {},
  ) {
    this.options = parseOptions(
      OpenAICompatibleEmbeddingModelOptionsSchema,
      options,
      'embedding model',
    );
    if (this.options.requestDimensions && this.options.dimension === undefined) {
      throw new ConfigError(
        'requestDimensions needs `dimension`: the length to ask the server for.',
        {
          field: 'dimension',
        },
      );
    }
    this.transport = new ModelTransport(this.options, dependencies);
    this.knownDimension = this.options.dimension;
  }

  /** Creates the client and, when `dimension` is not given, learns it with one short request. */
  static async connect(
    options: OpenAICompatibleEmbeddingModelOptions,
    dependencies: ModelClientDependencies = {},
  ): Promise<OpenAICompatibleEmbeddingModel> {
    const model = new OpenAICompatibleEmbeddingModel(options, dependencies);
    if (model.knownDimension === undefined) await model.embed(['dimension probe']);
    return model;
  }

  /** Vector length; throws `ConfigError` before it is known. */
  get dimension(): number {
    if (this.knownDimension === undefined) {
      throw new ConfigError(
        `The dimension of embedding model ${this.options.model} is not known yet: pass \`dimension\` in the options, ` +
          'call embed() once, or create the model with OpenAICompatibleEmbeddingModel.connect().',
        { field: 'dimension' },
      );
    }
    return this.knownDimension;
  }

  /** `openai-compatible:<model>:dim=<dimension>`; the server URL is left out, as it does not change the vectors. */
  get id(): string {
    return `openai-compatible:${this.options.model}:dim=${this.dimension}`;
  }

  /** Usage and request counts so far. */
  stats(): EmbeddingModelStats {
    const { attempts, retries } = this.transport.counts();
    return { ...this.counts, retries, attempts };
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const batches = toBatches(texts, this.options.batchSize);
    const results = await Promise.all(batches.map((batch) => this.embedBatch(batch)));
    return results.flat();
  }

  private async embedBatch(batch: string[]): Promise<Float32Array[]> {
    const url = `${this.transport.baseURL}/embeddings`;
    const body = {
      model: this.options.model,
      input: batch,
      encoding_format: 'float' as const,
      ...(this.options.requestDimensions ? { dimensions: this.options.dimension } : {}),
    };
    let decoded: { vectors: Float32Array[]; promptTokens: number; totalTokens: number };
    try {
      decoded = await this.transport.call(
        '/embeddings',
        (requestOptions) =>
          this.transport.client.embeddings.create(body, requestOptions).asResponse(),
        (text) => decodeEmbeddings(text, batch.length),
      );
    } catch (error) {
      this.counts.failures += 1;
      throw error;
    }
    this.counts.requests += 1;
    this.counts.texts += batch.length;
    this.counts.promptTokens += decoded.promptTokens;
    this.counts.totalTokens += decoded.totalTokens;
    const { vectors } = decoded;
    const dimension = this.knownDimension ?? vectors[0]!.length;
    const normalized = vectors.map((vector, position) => {
      if (vector.length !== dimension) {
        throw new ModelError(
          `POST ${url}: embedding ${position} of the batch has ${vector.length} dimensions, expected ${dimension}. ` +
            'Check `model` and `dimension`: the server may serve a different model.',
          { url },
        );
      }
      try {
        return normalizeInPlace(vector);
      } catch {
        throw new ModelOutputError(
          `POST ${url}: the embedding of input ${position} of the batch ("${batch[position]?.slice(0, 80)}") is all zeros or not finite.`,
          { output: JSON.stringify([...vector.slice(0, 16)]) },
        );
      }
    });
    this.knownDimension = dimension;
    return normalized;
  }
}

/** Reads an embeddings body (vectors back in input order); throws `MalformedResponseError` otherwise. */
export function decodeEmbeddings(
  text: string,
  expected: number,
): { vectors: Float32Array[]; promptTokens: number; totalTokens: number } {
  const body = decodeResponseBody(text, EmbeddingsBodySchema, 'an embeddings list');
  const vectors = new Array<Float32Array | undefined>(expected);
  for (const item of body.data) {
    if (item.index >= expected || vectors[item.index] !== undefined) {
      throw new MalformedResponseError(
        `the response's embedding indices do not match the ${expected} inputs (index ${item.index})`,
        text,
      );
    }
    vectors[item.index] = Float32Array.from(item.embedding);
  }
  if (body.data.length !== expected) {
    throw new MalformedResponseError(
      `the response has ${body.data.length} embeddings for ${expected} inputs`,
      text,
    );
  }
  const promptTokens = body.usage?.prompt_tokens ?? 0;
  return {
    vectors: vectors as Float32Array[],
    promptTokens,
    totalTokens: body.usage?.total_tokens ?? promptTokens,
  };
}
