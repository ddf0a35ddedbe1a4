import {
  HashingEmbedder,
  ReplayBuffer,
  SeededRandom,
  type Transition,
  trajectoryToTransitions,
} from '@dreamgym/core';
import type {
  RetrievalFilter,
  RetrievalQuery,
  ScoredTransition,
  TransitionRetriever,
} from '@dreamgym/core/replay';
import { corridorTasks, playCorridor } from '@dreamgym/core/testing';
import { describe, expect, it } from 'vitest';
import { CachingRetriever } from './caching-retriever.js';

/** A real buffer of corridor play, and a retriever over it that counts the searches reaching it. */
async function countedBuffer() {
  const buffer = ReplayBuffer.create({ embedder: new HashingEmbedder({ dimension: 64 }) });
  const tasks = corridorTasks(4);
  const random = new SeededRandom(3);
  const transitions: Transition[] = [];
  for (let index = 0; index < 8; index += 1) {
    const trajectory = await playCorridor(tasks[index % tasks.length]!, random, {
      noise: 0.3,
      maxSteps: 8,
    });
    transitions.push(...trajectoryToTransitions(trajectory, { trajectoryId: `t${index}` }));
  }
  await buffer.add(transitions.slice(0, -4));
  const counted = {
    searches: 0,
    search(query: RetrievalQuery, k: number, filter?: RetrievalFilter) {
      counted.searches += 1;
      return buffer.search(query, k, filter);
    },
  } satisfies TransitionRetriever & { searches: number };
  return { buffer, counted, held: transitions.slice(-4), first: transitions[0]! };
}

const ids = (answer: readonly ScoredTransition[]) => answer.map((each) => each.transition.id);

describe('CachingRetriever', () => {
  it('answers a repeated query from memory, and a different one from the buffer', async () => {
    const { counted, first } = await countedBuffer();
    const cache = new CachingRetriever(counted);
    const query = { state: first.state, action: first.action, instruction: first.instruction };
    const once = await cache.search(query, 3, { domain: first.domain });
    const twice = await cache.search(query, 3, { domain: first.domain });
    expect(twice).toBe(once);
    expect(counted.searches).toBe(1);
    // Another action, k, filter or instruction is another question.
    await cache.search({ ...query, action: 'something else' }, 3, { domain: first.domain });
    await cache.search(query, 2, { domain: first.domain });
    await cache.search(query, 3);
    await cache.search({ ...query, instruction: 'another task' }, 3, { domain: first.domain });
    expect(counted.searches).toBe(5);
    expect(cache.stats()).toMatchObject({ lookups: 6, hits: 1 });
    expect(cache.stats().searchMilliseconds).toBeGreaterThan(0);
  });

  it('forgets its answers when the buffer changes, and then finds the new transitions', async () => {
    const { buffer, counted, held } = await countedBuffer();
    const cache = new CachingRetriever(counted);
    const target = held.at(-1)!;
    const query = { state: target.state, action: target.action, instruction: target.instruction };
    const stale = await cache.search(query, 1);
    expect(ids(stale)).not.toContain(target.id);
    await buffer.add(held);
    // Not invalidated yet: the remembered answer still stands (the owner invalidates after a write).
    expect(await cache.search(query, 1)).toBe(stale);
    cache.invalidate();
    const fresh = await cache.search(query, 1);
    expect(fresh[0]!.score).toBeGreaterThan(stale[0]!.score);
    expect(counted.searches).toBe(2);
  });

  it('does not remember an answer that started before an invalidation', async () => {
    const { counted, first } = await countedBuffer();
    const cache = new CachingRetriever(counted);
    const query = { state: first.state, action: first.action };
    const inFlight = cache.search(query, 2);
    cache.invalidate();
    await inFlight;
    await cache.search(query, 2);
    expect(counted.searches).toBe(2);
  });

  it('keeps nothing with maxEntries 0 (timing only) and retries a failed search', async () => {
    const { counted, first } = await countedBuffer();
    const timing = new CachingRetriever(counted, { maxEntries: 0 });
    const query = { state: first.state, action: first.action };
    await timing.search(query, 2);
    await timing.search(query, 2);
    expect(counted.searches).toBe(2);
    expect(timing.stats()).toMatchObject({ lookups: 2, hits: 0 });

    let failures = 1;
    const flaky: TransitionRetriever = {
      search: async (...args) => {
        if (failures-- > 0) throw new Error('index busy');
        return counted.search(...args);
      },
    };
    const cache = new CachingRetriever(flaky);
    await expect(cache.search(query, 2)).rejects.toThrow('index busy');
    expect((await cache.search(query, 2)).length).toBe(2);
  });
});
