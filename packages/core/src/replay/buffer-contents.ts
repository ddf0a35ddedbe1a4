/**
 * What a replay buffer holds, kept in step: the slot table (one slot per stored transition),
 * the phi rows (one per distinct phi input, shared by the slots with that state and action)
 * and the rows' vectors. Registering a transition gives it a slot and a row: an existing row
 * when a stored transition has the same phi inputs (its vector is not embedded again), else
 * a new one whose vector the caller embeds and appends.
 */
import type { Transition } from '../mdp/schemas.js';
import { PhiRows } from './phi-rows.js';
import type { LoggedRecord } from './replay-log.js';
import { type SlotColumns, SlotTable } from './slot-table.js';
import { phiHash, samePhiInputs } from './transition-keys.js';
import { VectorStore } from './vector-store.js';

/** Where a registered transition went. */
export interface Registered {
  slot: number;
  row: number;
  /** Whether the row is new: its vector is still to be appended. */
  created: boolean;
}

/** The slot table, the phi rows and the row vectors of one buffer. */
export class BufferContents {
  readonly slots: SlotTable;
  readonly rows = new PhiRows();
  /** One vector per row, in row order (replaced as a whole when reloaded from the file). */
  vectors: VectorStore;

  /**
   * @param withInstruction whether phi embeds the instruction (it is then part of both a
   * transition's content and its phi inputs).
   */
  constructor(
    logFile: string,
    readonly withInstruction: boolean,
    dimension: number,
  ) {
    this.slots = new SlotTable(logFile, withInstruction);
    this.vectors = new VectorStore(dimension);
  }

  /** The row holding `transition`'s phi inputs, if any (dead rows included). */
  findRow(
    transition: Transition,
    hash = phiHash(transition, this.withInstruction),
  ): number | undefined {
    return this.rows.find(hash, (row) => this.sharesPhi(row, transition));
  }

  /**
   * Registers `transition` in the next slot and attaches it to `row` when given (a row
   * from `rows.i32`; the next new row number creates it), else to the row of its phi inputs
   * (created when none exists).
   */
  register(
    transition: Transition,
    options: { keep?: boolean; count?: number; row?: number; logged?: LoggedRecord } = {},
  ): Registered {
    const slot = this.slots.register(transition, options.keep ?? true, options.count ?? 1);
    if (options.logged) this.slots.setLogged(slot, options.logged);
    // A reloaded slot names its row (from `rows.i32`): its phi inputs are hashed only where
    // it creates that row, not for each of the row's other members.
    let hash: number | undefined;
    let row = options.row;
    let created = false;
    if (row === undefined) {
      hash = phiHash(transition, this.withInstruction);
      row = this.findRow(transition, hash);
    }
    if (row === undefined || row === this.rows.size) {
      row = this.rows.create(hash ?? phiHash(transition, this.withInstruction), slot);
      created = true;
    } else if (row > this.rows.size || row < 0) {
      throw new RangeError(
        `row ${row} of slot ${slot} is beyond the ${this.rows.size} rows so far`,
      );
    }
    this.rows.attach(slot, row);
    return { slot, row, created };
  }

  /**
   * Fills these empty contents from a snapshot: the slots from `columns`, each on its row
   * from `mapped` (`rows.i32`), rows created with their phi hashes `rowHashes`.
   *
   * @throws RangeError when `mapped` and `rowHashes` do not fit the slots.
   */
  restore(columns: SlotColumns, rowHashes: Float64Array, mapped: Int32Array): void {
    const slots = columns.idHashes.length;
    if (mapped.length < slots) {
      throw new RangeError(`${slots} slots in the snapshot, ${mapped.length} in rows.i32`);
    }
    this.slots.restore(columns);
    for (let slot = 0; slot < slots; slot += 1) {
      const row = mapped[slot]!;
      if (row === this.rows.size && row < rowHashes.length) this.rows.create(rowHashes[row]!, slot);
      else if (row >= this.rows.size || row < 0) {
        throw new RangeError(
          `row ${row} of slot ${slot} is beyond the ${this.rows.size} rows so far`,
        );
      }
      this.rows.attach(slot, row);
    }
    if (this.rows.size !== rowHashes.length) {
      throw new RangeError(
        `${rowHashes.length} rows in the snapshot, ${this.rows.size} in rows.i32`,
      );
    }
    for (let slot = 0; slot < slots; slot += 1)
      if (!this.slots.isLive(slot)) this.rows.detach(slot);
  }

  /** Evicts `slot`: it leaves the slot table's lookups and its row's members. */
  unregister(slot: number): void {
    if (!this.slots.isLive(slot)) return;
    this.rows.detach(slot);
    this.slots.unregister(slot);
  }

  /**
   * Whether `row` holds the phi inputs of `transition`: checked on a live member, else on
   * the row's origin where its record can still be read; a dead row whose origin is gone
   * (evicted in this session) is trusted on its 53-bit hash.
   */
  private sharesPhi(row: number, transition: Transition): boolean {
    let member = this.rows.firstMember(row);
    if (member === -1) {
      const origin = this.rows.origin(row);
      if (!this.slots.canPeek(origin)) return true;
      member = origin;
    }
    return samePhiInputs(this.slots.peek(member), transition, this.withInstruction);
  }
}
