/**
 * The replay buffer's slot table: one slot per stored transition, in the order they were
 * added (= the order of `add` entries in `records.jsonl`). It keeps what lookups, filters
 * and duplicate checks need of every slot in flat per-slot arrays and typed-array hash
 * chains, and the transition itself either as a validated object or, for a record reloaded
 * from the log, as the log's bytes until it is first served. A reload of a million records
 * then retains no million objects for the garbage collector to trace.
 */
import { parseRecord } from '../mdp/jsonl.js';
import { type ExperienceSource, type Transition, TransitionSchema } from '../mdp/schemas.js';
import { invalidJsonError, LogBytes, type LoggedRecord, loggedTransition } from './replay-log.js';
import type { RetrievalFilter } from './retriever.js';
import { SlotChains } from './slot-chains.js';
import { contentKey, sameContent, textHash } from './transition-keys.js';

const SOURCE_NAMES: Record<ExperienceSource, ExperienceSource> = {
  offline: 'offline',
  synthetic: 'synthetic',
  real: 'real',
};
/** Sources by number, in {@link SlotColumns.sources}. */
const SOURCE_ORDER: readonly ExperienceSource[] = ['offline', 'synthetic', 'real'];

/**
 * A slot table as flat columns (one entry per slot), what a snapshot stores so that a
 * reopened buffer need not parse every record of its log.
 */
export interface SlotColumns {
  /** Distinct domain and task names: `domains` and `tasks` number them. */
  names: string[];
  /** 30-bit hash of each slot's id; -1 for an evicted slot. */
  idHashes: Int32Array;
  domains: Int32Array;
  tasks: Int32Array;
  /** 0 offline, 1 synthetic, 2 real. */
  sources: Uint8Array;
  /** 30-bit hash of the trajectory id; -1 for none. */
  trajectories: Int32Array;
  /** 30-bit content key (see `transition-keys.ts`). */
  contents: Int32Array;
  counts: Float64Array;
  /** Line and byte range of each slot's `add` entry in the log. */
  lines: Float64Array;
  starts: Float64Array;
  ends: Float64Array;
  /** Live aliases (ids of duplicates counted on a slot) in the order they were added. */
  aliasSlots: Int32Array;
  aliasIds: string[];
}

function increment(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next === 0) counts.delete(key);
  else counts.set(key, next);
}

/** Slots of stored transitions: records, filter facets, occurrence counts, id and content lookups. */
export class SlotTable {
  /**
   * Validated transition per slot. Undefined once evicted, and for a record reloaded from
   * the log but not yet served: that one stays as bytes in `log` until first served, when it
   * is parsed and validated in full.
   */
  private records: (Transition | undefined)[] = [];
  /** {@link textHash} of the id per slot; -1 once evicted (the liveness of a slot). */
  private idHashes: number[] = [];
  /** Domain, source and task per slot (interned strings). */
  private domains: string[] = [];
  private sources: string[] = [];
  private tasks: string[] = [];
  /** {@link textHash} of the trajectory id per slot (-1: none); matches are confirmed on the record. */
  private trajectories: number[] = [];
  /** {@link contentKey} per slot. */
  private contents: number[] = [];
  /** Times the transition of each slot occurred (its exact duplicates counted on it). */
  private counts: number[] = [];
  /** Log bytes read on open (reloaded records stay there until first served). */
  readonly log = new LogBytes();
  /** Where each slot's `add` line lies in the log (undefined: not written to a log). */
  private loggedLines: number[] = [];
  private loggedStarts: number[] = [];
  private loggedEnds: number[] = [];
  private readonly interned = new Map<string, string>();
  private readonly byId = new SlotChains();
  /**
   * Ids of duplicates counted on a slot (aliases): added again, a transition under one of
   * them is the same occurrence, not another. Numbered entries: the id, the slot, the next
   * alias of the same slot (-1 ends); per slot its first alias.
   */
  private aliasIds: string[] = [];
  private aliasSlots: number[] = [];
  private aliasNext: number[] = [];
  private firstAlias: number[] = [];
  private readonly byAlias = new SlotChains();
  private readonly byContent = new SlotChains();
  private readonly domainCounts = new Map<string, number>();
  private readonly sourceCounts = new Map<string, number>();
  private readonly taskCounts = new Map<string, number>();
  private liveSlots = 0;
  private occurrenceTotal = 0;

  /**
   * @param logFile named in the error of a corrupt record found when first served.
   * @param withInstruction whether the instruction is part of a transition's content (it is
   * when phi embeds it: transitions of different instructions are then retrieved by
   * different similarities, so they are not duplicates of each other).
   */
  constructor(
    private readonly logFile: string,
    readonly withInstruction: boolean,
  ) {}

  /** Slots ever given out (evicted ones included, until compaction). */
  get length(): number {
    return this.records.length;
  }

  /** Live slots. */
  get live(): number {
    return this.liveSlots;
  }

  /** Occurrences of the live transitions (the sum of their counts). */
  get occurrences(): number {
    return this.occurrenceTotal;
  }

  isLive(slot: number): boolean {
    return slot < this.idHashes.length && this.idHashes[slot] !== -1;
  }

  /** Times the transition of `slot` occurred. */
  count(slot: number): number {
    return this.counts[slot]!;
  }

  source(slot: number): string {
    return this.sources[slot]!;
  }

  /**
   * Gives `transition` the next slot, with `count` occurrences. `keep` false: the object is
   * not retained (a record reloaded from the log, parsed again when first served).
   */
  register(transition: Transition, keep = true, count = 1): number {
    const slot = this.records.length;
    this.records.push(keep ? transition : undefined);
    this.firstAlias.push(-1);
    this.counts.push(count);
    const idHash = textHash(transition.id);
    this.idHashes.push(idHash);
    // Checked to be one of the three sources on reading; the constant keeps one copy.
    this.sources.push(SOURCE_NAMES[transition.source]);
    this.domains.push(this.intern(transition.domain));
    this.tasks.push(this.intern(transition.taskId));
    this.trajectories.push(
      transition.trajectoryId === undefined ? -1 : textHash(transition.trajectoryId),
    );
    this.contents.push(contentKey(transition, this.withInstruction));
    this.index(slot);
    return slot;
  }

  /** Enters the newly pushed live `slot` in the lookups and per-facet counts. */
  private index(slot: number): void {
    this.byId.add(this.idHashes[slot]!, slot);
    this.byContent.add(this.contents[slot]!, slot);
    increment(this.domainCounts, this.domains[slot]!, 1);
    increment(this.sourceCounts, this.sources[slot]!, 1);
    increment(this.taskCounts, this.tasks[slot]!, 1);
    this.liveSlots += 1;
    this.occurrenceTotal += this.counts[slot]!;
  }

  /**
   * The table as columns, for a snapshot (see `slot-snapshot.ts`); undefined when a slot's
   * log line is not known (a buffer in memory).
   */
  columns(): SlotColumns | undefined {
    const slots = this.records.length;
    if (this.loggedEnds.length < slots) return undefined;
    const names: string[] = [];
    const numbers = new Map<string, number>();
    const nameOf = (text: string) => {
      let number = numbers.get(text);
      if (number === undefined) {
        number = names.length;
        names.push(text);
        numbers.set(text, number);
      }
      return number;
    };
    const columns: SlotColumns = {
      names,
      idHashes: Int32Array.from(this.idHashes),
      domains: new Int32Array(slots),
      tasks: new Int32Array(slots),
      sources: new Uint8Array(slots),
      trajectories: Int32Array.from(this.trajectories),
      contents: Int32Array.from(this.contents),
      counts: Float64Array.from(this.counts),
      lines: Float64Array.from(this.loggedLines),
      starts: Float64Array.from(this.loggedStarts),
      ends: Float64Array.from(this.loggedEnds),
      aliasSlots: new Int32Array(0),
      aliasIds: [],
    };
    for (let slot = 0; slot < slots; slot += 1) {
      if (this.loggedEnds[slot] === undefined) return undefined;
      columns.domains[slot] = nameOf(this.domains[slot]!);
      columns.tasks[slot] = nameOf(this.tasks[slot]!);
      columns.sources[slot] = SOURCE_ORDER.indexOf(this.sources[slot] as ExperienceSource);
    }
    const aliasSlots: number[] = [];
    this.aliasSlots.forEach((slot, alias) => {
      if (slot === -1) return;
      aliasSlots.push(slot);
      columns.aliasIds.push(this.aliasIds[alias]!);
    });
    columns.aliasSlots = Int32Array.from(aliasSlots);
    return columns;
  }

  /**
   * Fills this empty table from `columns`: every slot's record stays as bytes in the log
   * (read into {@link SlotTable.log} by the caller) until first served.
   */
  restore(columns: SlotColumns): void {
    if (this.records.length > 0) throw new Error('SlotTable.restore needs an empty table');
    const slots = columns.idHashes.length;
    const { names } = columns;
    this.records = new Array<Transition | undefined>(slots).fill(undefined);
    this.firstAlias = new Array<number>(slots).fill(-1);
    this.idHashes = Array.from(columns.idHashes);
    this.trajectories = Array.from(columns.trajectories);
    this.contents = Array.from(columns.contents);
    this.counts = Array.from(columns.counts);
    this.loggedLines = Array.from(columns.lines);
    this.loggedStarts = Array.from(columns.starts);
    this.loggedEnds = Array.from(columns.ends);
    const interned = names.map((name) => this.intern(name));
    for (let slot = 0; slot < slots; slot += 1) {
      this.domains.push(interned[columns.domains[slot]!]!);
      this.tasks.push(interned[columns.tasks[slot]!]!);
      this.sources.push(SOURCE_ORDER[columns.sources[slot]!]!);
      if (this.idHashes[slot] !== -1) this.index(slot);
    }
    columns.aliasIds.forEach((id, alias) => {
      this.addAlias(columns.aliasSlots[alias]!, id);
    });
  }

  /** Where the `add` line of `slot` lies in the log (see {@link SlotTable.served}). */
  setLogged(slot: number, where: LoggedRecord): void {
    this.loggedLines[slot] = where.line;
    this.loggedStarts[slot] = where.start;
    this.loggedEnds[slot] = where.end;
  }

  /** Evicts `slot`: it stays numbered (its row in files) but matches nothing. */
  unregister(slot: number): void {
    const idHash = this.idHashes[slot];
    if (idHash === undefined || idHash === -1) return;
    this.records[slot] = undefined;
    this.idHashes[slot] = -1;
    this.byId.remove(idHash, slot);
    this.byContent.remove(this.contents[slot]!, slot);
    increment(this.domainCounts, this.domains[slot]!, -1);
    increment(this.sourceCounts, this.sources[slot]!, -1);
    increment(this.taskCounts, this.tasks[slot]!, -1);
    this.liveSlots -= 1;
    this.occurrenceTotal -= this.counts[slot]!;
    for (let alias = this.firstAlias[slot]!; alias !== -1; alias = this.aliasNext[alias]!) {
      this.byAlias.remove(textHash(this.aliasIds[alias]!), alias);
      this.aliasSlots[alias] = -1;
    }
    this.firstAlias[slot] = -1;
  }

  /** Records that the duplicate `id` was counted on live `slot`. */
  addAlias(slot: number, id: string): void {
    const alias = this.aliasIds.length;
    this.aliasIds.push(id);
    this.aliasSlots.push(slot);
    this.aliasNext.push(this.firstAlias[slot]!);
    this.firstAlias[slot] = alias;
    this.byAlias.add(textHash(id), alias);
  }

  /** The live slot a duplicate with this id was counted on, if any. */
  aliasSlotOf(id: string): number | undefined {
    const alias = this.byAlias.find(textHash(id), (entry) => this.aliasIds[entry] === id);
    return alias === undefined ? undefined : this.aliasSlots[alias]!;
  }

  /** Ids of the duplicates counted on `slot`, oldest first. */
  aliasesOf(slot: number): string[] {
    const ids: string[] = [];
    for (let alias = this.firstAlias[slot]!; alias !== -1; alias = this.aliasNext[alias]!)
      ids.push(this.aliasIds[alias]!);
    return ids.reverse();
  }

  /** Sets the occurrence count of a live slot. */
  setCount(slot: number, count: number): void {
    this.occurrenceTotal += count - this.counts[slot]!;
    this.counts[slot] = count;
  }

  /** The transition of a live slot, validated in full against the schema on first use. */
  served(slot: number): Transition {
    const record = this.records[slot];
    if (record) return record;
    const where = this.loggedAt(slot);
    const valid = parseRecord(TransitionSchema, this.parseLogged(where), {
      file: this.logFile,
      line: where.line,
      fieldPrefix: 'transition',
    });
    this.records[slot] = valid;
    return valid;
  }

  /**
   * The transition of a slot for internal use (duplicate checks, embedding): its indexed
   * fields are valid, the rest is not checked until it is served. Reloaded slots can be
   * peeked after eviction too (their log bytes stay until compaction).
   */
  peek(slot: number): Transition {
    return this.records[slot] ?? this.parseLogged(this.loggedAt(slot));
  }

  /**
   * The transition of a logged record, parsed from its bytes (a record restored from a
   * snapshot was not parsed on open: a line corrupted since is reported here).
   */
  private parseLogged(where: LoggedRecord): Transition {
    try {
      return loggedTransition(this.log, where);
    } catch (error) {
      throw invalidJsonError(error, this.logFile, where.line);
    }
  }

  /** Whether {@link SlotTable.peek} can read `slot` (live, or reloaded from the log). */
  canPeek(slot: number): boolean {
    if (this.records[slot] !== undefined) return true;
    const start = this.loggedStarts[slot];
    return start !== undefined && this.log.holds(start, this.loggedEnds[slot]!);
  }

  private loggedAt(slot: number): LoggedRecord {
    return {
      line: this.loggedLines[slot]!,
      start: this.loggedStarts[slot]!,
      end: this.loggedEnds[slot]!,
    };
  }

  /** The live slot holding the transition with this id, if any. */
  slotOf(id: string): number | undefined {
    return this.byId.find(textHash(id), (slot) => this.peek(slot).id === id);
  }

  /** A live slot whose transition is an exact duplicate of `transition`, if any. */
  twinOf(transition: Transition): number | undefined {
    return this.byContent.find(contentKey(transition, this.withInstruction), (slot) =>
      sameContent(this.peek(slot), transition, this.withInstruction),
    );
  }

  /** The slots in [start, end) that hold a record (not evicted). */
  liveIn(start: number, end: number): number[] {
    const live: number[] = [];
    for (let slot = start; slot < end; slot += 1) if (this.idHashes[slot] !== -1) live.push(slot);
    return live;
  }

  /** Upper bound on the transitions `filter` can match, from per-facet counts. */
  matchBound(filter: RetrievalFilter | undefined): number {
    let bound = this.liveSlots;
    if (!filter) return bound;
    if (filter.domain !== undefined)
      bound = Math.min(bound, this.domainCounts.get(filter.domain) ?? 0);
    if (filter.sources) {
      const total = [...new Set(filter.sources)].reduce(
        (sum, source) => sum + (this.sourceCounts.get(source) ?? 0),
        0,
      );
      bound = Math.min(bound, total);
    }
    if (filter.taskIds) {
      const total = [...new Set(filter.taskIds)].reduce(
        (sum, task) => sum + (this.taskCounts.get(task) ?? 0),
        0,
      );
      bound = Math.min(bound, total);
    }
    return bound;
  }

  /** Whether a slot is live and passes `filter`. */
  acceptor(filter: RetrievalFilter | undefined): (slot: number) => boolean {
    const { idHashes, domains, sources: slotSources, tasks: slotTasks, trajectories } = this;
    const sources = filter?.sources && new Set<string>(filter.sources);
    const tasks = filter?.taskIds && new Set(filter.taskIds);
    const excluded = filter?.excludeTrajectoryIds && new Set(filter.excludeTrajectoryIds);
    const excludedHashes = excluded && new Set([...excluded].map(textHash));
    const domain = filter?.domain;
    return (slot) => {
      if (idHashes[slot] === -1) return false;
      if (domain !== undefined && domains[slot] !== domain) return false;
      if (sources && !sources.has(slotSources[slot]!)) return false;
      if (tasks && !tasks.has(slotTasks[slot]!)) return false;
      if (excludedHashes?.has(trajectories[slot]!)) {
        // The hash matches: confirm on the record (a hash collision must not exclude it).
        const trajectoryId = this.peek(slot).trajectoryId;
        if (trajectoryId !== undefined && excluded!.has(trajectoryId)) return false;
      }
      return true;
    };
  }

  /** Live transitions by source. */
  bySource(): Record<ExperienceSource, number> {
    const bySource: Record<ExperienceSource, number> = { offline: 0, synthetic: 0, real: 0 };
    for (const [source, count] of this.sourceCounts) bySource[source as ExperienceSource] = count;
    return bySource;
  }

  /** Live transitions by domain. */
  byDomain(): Record<string, number> {
    return Object.fromEntries(this.domainCounts);
  }

  /** Distinct tasks of the live transitions. */
  get taskCount(): number {
    return this.taskCounts.size;
  }

  private intern(text: string): string {
    const known = this.interned.get(text);
    if (known !== undefined) return known;
    this.interned.set(text, text);
    return text;
  }
}
