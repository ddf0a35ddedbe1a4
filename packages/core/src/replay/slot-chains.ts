/**
 * Slots of the replay buffer grouped by a 30-bit hash of a key (an id, or a transition's
 * content): a chained hash table in typed arrays. A buffer of a million transitions then
 * keeps no million key strings, boxed numbers or map entries for the garbage collector to
 * trace; callers confirm a candidate slot against the record itself.
 */
export class SlotChains {
  /** First slot per bucket (hash & mask); -1: empty. */
  private heads = new Int32Array(1024).fill(-1);
  /** Next slot in the same bucket per slot; -1 ends a chain. */
  private next = new Int32Array(1024);
  /** Hash per slot (compared before the caller's check). */
  private hashes = new Int32Array(1024);
  /** Slots currently held. */
  private count = 0;

  /** Adds `slot` under `hash` (a non-negative 30-bit integer). */
  add(hash: number, slot: number): void {
    if (slot >= this.next.length) {
      const size = Math.max(slot + 1, this.next.length * 2);
      this.next = grow(this.next, size);
      this.hashes = grow(this.hashes, size);
    }
    this.count += 1;
    if (this.count > this.heads.length) this.rehash(this.heads.length * 2);
    const bucket = hash & (this.heads.length - 1);
    this.hashes[slot] = hash;
    this.next[slot] = this.heads[bucket]!;
    this.heads[bucket] = slot;
  }

  /** The hash `slot` was added under. */
  hashOf(slot: number): number {
    return this.hashes[slot]!;
  }

  /** Removes `slot` from the chain of `hash` (no-op when absent). */
  remove(hash: number, slot: number): void {
    const bucket = hash & (this.heads.length - 1);
    let previous = -1;
    let current = this.heads[bucket]!;
    while (current !== -1 && current !== slot) {
      previous = current;
      current = this.next[current]!;
    }
    if (current === -1) return;
    if (previous === -1) this.heads[bucket] = this.next[slot]!;
    else this.next[previous] = this.next[slot]!;
    this.count -= 1;
  }

  /** The newest slot under `hash` for which `matches` holds, if any. */
  find(hash: number, matches: (slot: number) => boolean): number | undefined {
    const { next, hashes } = this;
    for (let slot = this.heads[hash & (this.heads.length - 1)]!; slot !== -1; slot = next[slot]!) {
      if (hashes[slot] === hash && matches(slot)) return slot;
    }
    return undefined;
  }

  /** Calls `visit` with every slot held under `hash`, newest first. */
  forEach(hash: number, visit: (slot: number) => void): void {
    const { next, hashes } = this;
    for (let slot = this.heads[hash & (this.heads.length - 1)]!; slot !== -1; slot = next[slot]!) {
      if (hashes[slot] === hash) visit(slot);
    }
  }

  /** Forgets every slot. */
  clear(): void {
    this.heads = new Int32Array(1024).fill(-1);
    this.next = new Int32Array(1024);
    this.hashes = new Int32Array(1024);
    this.count = 0;
  }

  /** Re-buckets every held slot into `buckets` buckets, keeping each chain's order. */
  private rehash(buckets: number): void {
    const old = this.heads;
    const heads = new Int32Array(buckets).fill(-1);
    const tails = new Int32Array(buckets).fill(-1);
    for (const head of old) {
      // Old chains newest first: appending at the tails keeps that order in the new ones.
      for (let slot = head; slot !== -1; ) {
        const following = this.next[slot]!;
        const bucket = this.hashes[slot]! & (buckets - 1);
        if (tails[bucket] === -1) heads[bucket] = slot;
        else this.next[tails[bucket]!] = slot;
        tails[bucket] = slot;
        this.next[slot] = -1;
        slot = following;
      }
    }
    this.heads = heads;
  }
}

function grow(array: Int32Array, size: number): Int32Array<ArrayBuffer> {
  const grown = new Int32Array(size);
  grown.set(array);
  return grown;
}
