import { describe, expect, it } from 'vitest';
import { combinePhi, phiTexts } from './phi.js';
import { exactTopK, TopK, VectorStore } from './vector-store.js';

describe('VectorStore and exact top-k', () => {
  it('keeps rows across chunk boundaries and scores them by inner product', () => {
    const store = new VectorStore(2);
    const rows = 20_000;
    const data = new Float32Array(rows * 2);
    for (let row = 0; row < rows; row += 1) data.set([row, 1], row * 2);
    store.append(data, rows);
    expect(store.size).toBe(rows);
    expect([...store.row(16_384)]).toEqual([16_384, 1]);
    expect(store.dot(new Float32Array([0.5, 2]), 3)).toBe(3.5);
    expect([...store.slice(16_383, 16_385)]).toEqual([16_383, 1, 16_384, 1]);
    const best = exactTopK(store, new Float32Array([1, 0]), 3, (slot) => slot % 2 === 0);
    expect(best.slots).toEqual([19_998, 19_996, 19_994]);
  });

  it('TopK keeps the k highest scores, best first', () => {
    const best = new TopK(3);
    for (const [slot, score] of [
      [0, 0.1],
      [1, 0.9],
      [2, 0.5],
      [3, 0.7],
      [4, 0.2],
    ] as const) {
      best.offer(slot, score);
    }
    expect(best.slots).toEqual([1, 3, 2]);
    expect(best.scores).toEqual([0.9, 0.7, 0.5]);
  });
});

describe('phi(s, a)', () => {
  it('embeds the weighted parts and normalises their sum (hand-computed)', () => {
    expect(
      phiTexts(
        { stateText: 's', action: 'a', instruction: 'i' },
        { state: 1, action: 1, instruction: 0 },
      ),
    ).toEqual(['s', 'action: a']);
    const target = new Float32Array(2);
    // 3 * [1, 0] + 4 * [0, 1] = [3, 4] -> [0.6, 0.8].
    combinePhi(
      [new Float32Array([1, 0]), new Float32Array([0, 1])],
      { state: 3, action: 4, instruction: 0 },
      target,
    );
    expect(target[0]).toBeCloseTo(0.6, 6);
    expect(target[1]).toBeCloseTo(0.8, 6);
  });
});
