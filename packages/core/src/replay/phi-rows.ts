/**
 * Phi rows: the replay buffer's vector index holds one row per distinct phi input (state,
 * action, and the instruction where phi weighs it), not one per transition. Experience
 * repeats states and actions with different outcomes (ALFWorld's expert data: 60,628
 * transitions, 19,905 distinct (state, action) pairs), and identical vectors cost an HNSW
 * graph both build time and recall: its links fill up with copies. Each row keeps the
 * transitions (slots) that share it; a search finds rows and ranks their members.
 *
 * Typed arrays and hash chains only, so that a million rows and slots keep no objects for
 * the garbage collector to trace.
 */
import { SlotChains } from './slot-chains.js';

const NONE = -1;
const KEY_SPACE = 1073741824;

function grow(array: Int32Array, size: number, fill = 0): Int32Array<ArrayBuffer> {
  const grown = new Int32Array(size);
  if (fill !== 0) grown.fill(fill);
  grown.set(array);
  return grown;
}

/** Rows of distinct phi inputs, and the slots (transitions) that share each. */
export class PhiRows {
  /** Row per slot; -1 for a slot never attached. */
  private slotRow = new Int32Array(1024).fill(NONE);
  /** Doubly linked members of a row: next and previous slot, -1 at the ends. */
  private slotNext = new Int32Array(1024).fill(NONE);
  private slotPrevious = new Int32Array(1024).fill(NONE);
  /** First (newest) member slot per row; -1 when no member is live. */
  private rowHead = new Int32Array(1024).fill(NONE);
  /** Live member slots per row. */
  private rowLive = new Int32Array(1024);
  /** The slot whose transition created the row (its phi inputs embed the row's vector). */
  private rowOrigin = new Int32Array(1024).fill(NONE);
  /** High 23 bits of the row's 53-bit phi hash (the low 30 are its chain key). */
  private rowCheck = new Int32Array(1024);
  private readonly byKey = new SlotChains();
  private rows = 0;
  private liveRows = 0;

  /** Rows, live or not (dead rows keep their place in the index until compaction). */
  get size(): number {
    return this.rows;
  }

  /** Rows with at least one live member. */
  get live(): number {
    return this.liveRows;
  }

  /** The row of `slot`, -1 when it has none. */
  rowOf(slot: number): number {
    return slot < this.slotRow.length ? this.slotRow[slot]! : NONE;
  }

  /** Whether `row` has a live member. */
  isLive(row: number): boolean {
    return this.rowLive[row]! > 0;
  }

  /** Live members of `row`. */
  liveMembers(row: number): number {
    return this.rowLive[row]!;
  }

  /** The slot that created `row`. */
  origin(row: number): number {
    return this.rowOrigin[row]!;
  }

  /**
   * The row of the 53-bit phi hash `hash` for which `confirm` holds (a check of the phi
   * inputs against one of its slots), if any; dead rows included, so that a state and
   * action seen again reuse their vector.
   */
  find(hash: number, confirm: (row: number) => boolean): number | undefined {
    const key = hash % KEY_SPACE;
    const check = Math.floor(hash / KEY_SPACE) | 0;
    return this.byKey.find(key, (row) => this.rowCheck[row] === check && confirm(row));
  }

  /** A new row for phi hash `hash`, created by `slot`; returns its number. */
  create(hash: number, slot: number): number {
    const row = this.rows;
    if (row >= this.rowHead.length) {
      const size = Math.max(row + 1, this.rowHead.length * 2);
      this.rowHead = grow(this.rowHead, size, NONE);
      this.rowLive = grow(this.rowLive, size);
      this.rowOrigin = grow(this.rowOrigin, size, NONE);
      this.rowCheck = grow(this.rowCheck, size);
    }
    this.rows += 1;
    this.rowOrigin[row] = slot;
    this.rowCheck[row] = Math.floor(hash / KEY_SPACE) | 0;
    this.byKey.add(hash % KEY_SPACE, row);
    return row;
  }

  /** The 53-bit phi hash of each row (what {@link PhiRows.create} was given), for a snapshot. */
  hashes(): Float64Array {
    const hashes = new Float64Array(this.rows);
    for (let row = 0; row < this.rows; row += 1)
      hashes[row] = this.rowCheck[row]! * KEY_SPACE + this.byKey.hashOf(row);
    return hashes;
  }

  /** Makes live `slot` a member of `row`. */
  attach(slot: number, row: number): void {
    if (slot >= this.slotRow.length) {
      const size = Math.max(slot + 1, this.slotRow.length * 2);
      this.slotRow = grow(this.slotRow, size, NONE);
      this.slotNext = grow(this.slotNext, size, NONE);
      this.slotPrevious = grow(this.slotPrevious, size, NONE);
    }
    this.slotRow[slot] = row;
    const head = this.rowHead[row]!;
    this.slotNext[slot] = head;
    this.slotPrevious[slot] = NONE;
    if (head !== NONE) this.slotPrevious[head] = slot;
    this.rowHead[row] = slot;
    if (this.rowLive[row] === 0) this.liveRows += 1;
    this.rowLive[row]! += 1;
  }

  /** Removes evicted `slot` from its row's members (it keeps its row number). */
  detach(slot: number): void {
    const row = this.rowOf(slot);
    if (row === NONE || this.rowLive[row] === 0) return;
    const next = this.slotNext[slot]!;
    const previous = this.slotPrevious[slot]!;
    if (previous === NONE) {
      if (this.rowHead[row] !== slot) return;
      this.rowHead[row] = next;
    } else this.slotNext[previous] = next;
    if (next !== NONE) this.slotPrevious[next] = previous;
    this.slotNext[slot] = NONE;
    this.slotPrevious[slot] = NONE;
    this.rowLive[row]! -= 1;
    if (this.rowLive[row] === 0) this.liveRows -= 1;
  }

  /** The newest live member slot of `row`, -1 when none is live. */
  firstMember(row: number): number {
    return this.rowHead[row]!;
  }

  /** Calls `visit` with each live member slot of `row`, newest first. */
  forEachMember(row: number, visit: (slot: number) => void): void {
    for (let slot = this.rowHead[row]!; slot !== NONE; slot = this.slotNext[slot]!) visit(slot);
  }

  /** Forgets every row and slot. */
  clear(): void {
    this.slotRow = new Int32Array(1024).fill(NONE);
    this.slotNext = new Int32Array(1024).fill(NONE);
    this.slotPrevious = new Int32Array(1024).fill(NONE);
    this.rowHead = new Int32Array(1024).fill(NONE);
    this.rowLive = new Int32Array(1024);
    this.rowOrigin = new Int32Array(1024).fill(NONE);
    this.rowCheck = new Int32Array(1024);
    this.byKey.clear();
    this.rows = 0;
    this.liveRows = 0;
  }

  /** The rows of slots [start, end), for the `rows.i32` file (-1: a slot without a row). */
  slotRows(start: number, end: number): Int32Array {
    const out = new Int32Array(end - start).fill(NONE);
    if (start < this.slotRow.length)
      out.set(this.slotRow.subarray(start, Math.min(end, this.slotRow.length)));
    return out;
  }
}
