import {
  deterministicEmbedding,
  type OpenAICompatibleServer,
  type OpenAICompatibleServerOptions,
  openAICompatibleServerPool,
  type ReceivedEmbeddingsRequest,
} from '@dreamgym/test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, InvalidArgumentError, ModelError, ModelOutputError } from '../errors.js';
import { SeededRandom } from '../random/seeded-random.js';
import {
  decodeEmbeddings,
  normalizeInPlace,
  OpenAICompatibleEmbeddingModel,
  toBatches,
} from './openai-compatible-embedding-model.js';
import type { OpenAICompatibleEmbeddingModelOptions } from './openai-compatible-options.js';

const servers = openAICompatibleServerPool();
let server: OpenAICompatibleServer | undefined;

afterEach(() => servers.closeAll());

async function start(options: OpenAICompatibleServerOptions = {}): Promise<OpenAICompatibleServer> {
  server = await servers.start(options);
  return server;
}

function embedder(
  url: string,
  options: Partial<OpenAICompatibleEmbeddingModelOptions> = {},
): OpenAICompatibleEmbeddingModel {
  return new OpenAICompatibleEmbeddingModel(
    { baseURL: url, model: 'embedder', retryBaseDelayMs: 5, retryMaxDelayMs: 20, ...options },
    { random: new SeededRandom(3), env: {} },
  );
}

function unit(vector: number[]): number[] {
  const norm = Math.hypot(...vector);
  return vector.map((value) => value / norm);
}

function norm(vector: Float32Array): number {
  return Math.hypot(...vector);
}

describe('OpenAICompatibleEmbeddingModel', () => {
  it('returns L2-normalised Float32Arrays and learns the dimension from the first answer', async () => {
    const { url, requests } = await start({ embeddingDimension: 8 });
    const model = embedder(url);
    expect(() => model.dimension).toThrow(ConfigError);
    expect(() => model.id).toThrow(/not known yet/);
    const [first, second] = await model.embed(['open drawer 1', 'go to cabinet 2']);
    expect(first).toBeInstanceOf(Float32Array);
    expect(norm(first!)).toBeCloseTo(1, 6);
    const expected = unit(deterministicEmbedding('go to cabinet 2', 8));
    for (let index = 0; index < 8; index += 1)
      expect(second![index]).toBeCloseTo(expected[index]!, 6);
    expect(model.dimension).toBe(8);
    expect(model.id).toBe('openai-compatible:embedder:dim=8');
    const body = requests[0]?.body as ReceivedEmbeddingsRequest;
    expect(body).toEqual({
      model: 'embedder',
      input: ['open drawer 1', 'go to cabinet 2'],
      encoding_format: 'float',
    });
    expect(await model.embed([])).toEqual([]);
    expect(requests).toHaveLength(1);
  });

  it('connect() learns the dimension up front', async () => {
    const { url } = await start({ embeddingDimension: 5 });
    const model = await OpenAICompatibleEmbeddingModel.connect({ baseURL: url, model: 'e' });
    expect(model.dimension).toBe(5);
  });

  it('splits inputs into batches sent concurrently and keeps input order', async () => {
    const { url, requests } = await start({
      embeddings: (_request, inputs) => ({
        type: 'embeddings',
        // Slow down the first batch so batches finish out of order, and shuffle each answer.
        delayMs: inputs[0] === 't0' ? 60 : 20,
        shuffle: true,
        vectors: inputs.map((input) => [Number(input.slice(1)) + 1, 1]),
      }),
    });
    const model = embedder(url, { batchSize: 3, concurrency: 4 });
    const texts = Array.from({ length: 10 }, (_, index) => `t${index}`);
    const vectors = await model.embed(texts);
    expect(requests.map((record) => (record.body as ReceivedEmbeddingsRequest).input)).toEqual([
      ['t0', 't1', 't2'],
      ['t3', 't4', 't5'],
      ['t6', 't7', 't8'],
      ['t9'],
    ]);
    expect(server?.maxInFlight).toBe(4);
    vectors.forEach((vector, index) => {
      const [x, y] = unit([index + 1, 1]);
      expect(vector[0]).toBeCloseTo(x!, 6);
      expect(vector[1]).toBeCloseTo(y!, 6);
    });
    expect(model.stats()).toMatchObject({ requests: 4, texts: 10, attempts: 4, retries: 0 });
  });

  it('retries 429, 5xx and malformed answers, and counts usage exactly', async () => {
    const { url, requests } = await start({
      embeddings: (_request, inputs, index) => {
        if (index === 0) return { type: 'error', status: 429, retryAfter: 0 };
        if (index === 1) return { type: 'error', status: 502 };
        if (index === 2) return { type: 'raw', body: '{"data": [{"index": 0, "embedding": [0.1,' };
        // A wrong count of vectors is as broken as malformed JSON.
        if (index === 3) return [[1, 0]];
        return {
          type: 'embeddings',
          vectors: inputs.map(() => [3, 4]),
          usage: { promptTokens: 7 },
        };
      },
    });
    const model = embedder(url, { maxRetries: 4 });
    const vectors = await model.embed(['a', 'b']);
    expect([...vectors[0]!]).toEqual([Math.fround(0.6), Math.fround(0.8)]);
    expect(requests).toHaveLength(5);
    expect(model.stats()).toEqual({
      requests: 1,
      texts: 2,
      retries: 4,
      failures: 0,
      attempts: 5,
      promptTokens: 7,
      totalTokens: 7,
    });
  });

  it('throws ModelError when retries run out', async () => {
    const { url } = await start({ embeddings: () => ({ type: 'error', status: 503 }) });
    const model = embedder(url, { maxRetries: 1 });
    const error = await model.embed(['a']).catch((caught: unknown) => caught);
    expect(ModelError.isInstance(error)).toBe(true);
    expect((error as ModelError).url).toBe(`${url}/embeddings`);
    expect((error as ModelError).status).toBe(503);
    expect(model.stats()).toMatchObject({ failures: 1, attempts: 2 });
  });

  it('refuses vectors of the wrong length and all-zero vectors', async () => {
    const { url } = await start({ embeddingDimension: 6 });
    await expect(embedder(url, { dimension: 4 }).embed(['a'])).rejects.toThrow(
      /has 6 dimensions, expected 4/,
    );
    server?.setEmbeddings(() => [[0, 0, 0]]);
    const error = await embedder(url)
      .embed(['blank'])
      .catch((caught: unknown) => caught);
    expect(ModelOutputError.isInstance(error)).toBe(true);
    expect((error as ModelOutputError).message).toContain('"blank"');
  });

  it('asks for a dimension only when told to', async () => {
    const { url, requests } = await start({
      embeddings: (request, inputs) => inputs.map(() => new Array(request.dimensions ?? 3).fill(1)),
    });
    const model = embedder(url, { dimension: 2, requestDimensions: true });
    expect((await model.embed(['a']))[0]).toHaveLength(2);
    expect((requests[0]!.body as ReceivedEmbeddingsRequest).dimensions).toBe(2);
    expect(() => embedder(url, { requestDimensions: true })).toThrow(
      /requestDimensions needs `dimension`/,
    );
  });
});

describe('embedding helpers', () => {
  it('normalizeInPlace scales to unit length and refuses the zero vector', () => {
    expect([...normalizeInPlace(Float32Array.from([3, 4]))]).toEqual([
      Math.fround(0.6),
      Math.fround(0.8),
    ]);
    expect(() => normalizeInPlace(new Float32Array(3))).toThrow(InvalidArgumentError);
  });

  it('toBatches splits in order', () => {
    expect(toBatches([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(toBatches([], 2)).toEqual([]);
  });

  it('decodeEmbeddings puts vectors back in input order and rejects gaps and duplicates', () => {
    const body = JSON.stringify({
      data: [
        { index: 1, embedding: [2] },
        { index: 0, embedding: [1] },
      ],
      usage: { prompt_tokens: 4, total_tokens: 4 },
    });
    const decoded = decodeEmbeddings(body, 2);
    expect(decoded.vectors.map((vector) => [...vector])).toEqual([[1], [2]]);
    expect(decoded.promptTokens).toBe(4);
    const duplicate = JSON.stringify({
      data: [
        { index: 0, embedding: [1] },
        { index: 0, embedding: [2] },
      ],
    });
    expect(() => decodeEmbeddings(duplicate, 2)).toThrow(/indices/);
    expect(() => decodeEmbeddings('{"data": []}', 1)).toThrow(/0 embeddings for 1 inputs/);
  });
});
