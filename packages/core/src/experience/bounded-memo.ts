/**
 * A memo of at most `capacity` entries, emptied when full: what recurs (action texts, an
 * instruction's words) is computed once, and memory stays bounded on a long run.
 */
export class BoundedMemo<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly capacity: number) {}

  /** The remembered value of `key`, or `compute(key)`, remembered. */
  get(key: K, compute: (key: K) => V): V {
    const remembered = this.entries.get(key);
    if (remembered !== undefined || this.entries.has(key)) return remembered as V;
    const value = compute(key);
    if (this.entries.size >= this.capacity) this.entries.clear();
    this.entries.set(key, value);
    return value;
  }

  /** Forgets every value (what they were computed from changed). */
  clear(): void {
    this.entries.clear();
  }
}
