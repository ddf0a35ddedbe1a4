import { describe, expect, it } from 'vitest';
import { SlotChains } from './slot-chains.js';

/** Every slot `find` offers to the check under `hash`, in order. */
function offered(chains: SlotChains, hash: number): number[] {
  const seen: number[] = [];
  chains.find(hash, (slot) => {
    seen.push(slot);
    return false;
  });
  return seen;
}

describe('SlotChains', () => {
  it('finds slots sharing a hash newest first, and unlinks any of them', () => {
    const chains = new SlotChains();
    chains.add(7, 0);
    chains.add(9, 1);
    chains.add(7, 2);
    chains.add(7, 3);
    // Same bucket (7 + 1024), other hash: never offered to the check.
    chains.add(1031, 4);
    expect(offered(chains, 7)).toEqual([3, 2, 0]);
    expect(chains.find(7, (slot) => slot < 3)).toBe(2);
    chains.remove(7, 2); // middle
    expect(chains.find(7, (slot) => slot < 3)).toBe(0);
    chains.remove(7, 3); // head
    chains.remove(7, 5); // absent: no-op
    expect(chains.find(7, () => true)).toBe(0);
    chains.remove(7, 0); // last
    expect(chains.find(7, () => true)).toBeUndefined();
    expect(chains.find(9, () => true)).toBe(1);
    expect(chains.find(1031, () => true)).toBe(4);
    chains.clear();
    expect(chains.find(9, () => true)).toBeUndefined();
  });

  it('keeps every slot findable, newest first, as the table grows', () => {
    const chains = new SlotChains();
    const slots = 5000;
    // Hashes shared by 1, 2 or 3 slots, spread over more buckets than the initial table.
    for (let slot = 0; slot < slots; slot += 1) chains.add((slot % 2000) * 4099, slot);
    for (let key = 0; key < 2000; key += 1) {
      const expected = [key + 4000, key + 2000, key].filter((slot) => slot < slots);
      expect(offered(chains, key * 4099)).toEqual(expected);
    }
  });
});
