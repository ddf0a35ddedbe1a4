import { describe, expect, it, vi } from 'vitest';
import type { Transition } from '../mdp/schemas.js';
import { HashingEmbedder } from '../models/hashing-embedder.js';
import { loadExpertTransitions, synthetic } from './expert-transitions.test-support.js';
import { FaissVectorIndex } from './faiss-index.js';
import { ReplayBuffer } from './replay-buffer.js';

/** Write-backs with states of their own (new vector rows), as a synthetic environment makes. */
function writeBacks(from: readonly Transition[], tag: string): Transition[] {
  return from.map((transition, index) => ({
    ...synthetic(transition, `${tag}${index}`),
    state: { text: `${transition.state.text}\n(${tag} ${index})` },
  }));
}

describe('ReplayBuffer index release', () => {
  it('frees each index it replaces when compacting, and keeps answering from the new one', async () => {
    const all = [...(await loadExpertTransitions(80)).values()].flat();
    const offline = all.slice(0, 300);
    const buffer = ReplayBuffer.create({
      embedder: new HashingEmbedder({ dimension: 64 }),
      index: { type: 'hnsw', m: 16, efConstruction: 40, efSearch: 64 },
      capacity: offline.length + 40,
      compactAt: 0.1,
    });
    await buffer.add(offline);
    const dispose = vi.spyOn(FaissVectorIndex.prototype, 'dispose');
    let compactions = 0;
    for (let batch = 0; batch < 8; batch += 1) {
      const rows = buffer.stats().indexedRows;
      await buffer.add(writeBacks(all.slice(300 + batch * 30, 330 + batch * 30), `b${batch}-`));
      if (buffer.stats().indexedRows < rows) compactions += 1;
    }
    expect(compactions).toBeGreaterThan(0);
    // One replaced index freed per compaction, never the one in use: it still answers.
    expect(dispose).toHaveBeenCalledTimes(compactions);
    dispose.mockRestore();
    for (const query of all.slice(600, 620)) {
      const vector = await buffer.embedQuery({ state: query.state, action: query.action });
      const found = buffer.searchVector(vector, 5);
      expect(found).toHaveLength(5);
      expect(found[0]!.score).toBeCloseTo(buffer.searchExactVector(vector, 5)[0]!.score, 5);
    }
  });
});
