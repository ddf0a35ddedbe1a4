/**
 * The slot snapshot (`slots.bin`): what the slot table and phi rows derive from the record
 * log (hashes, facets, counts, aliases, each record's line and bytes, each row's phi hash),
 * written as typed arrays at every flush. Opening a buffer then reads the snapshot and
 * parses only the log entries after it, instead of every record of a log that may hold a
 * million. The snapshot describes a prefix of the log: its header names the prefix's length
 * and a hash of its last bytes, and the body carries its own hash, so a torn snapshot, or
 * one that no longer describes the log (a crash between writes, a log edited or compacted),
 * is detected and the whole log is read instead.
 *
 * Layout: a 4-byte little-endian header length, the header as JSON, then the sections (each
 * at an 8-byte-aligned offset from the start of the body) that the header lists.
 */
import { createHash } from 'node:crypto';
import { open, readFile, rm } from 'node:fs/promises';
import { z } from 'zod';
import { writeFileAtomic } from '../files/atomic-write.js';
import type { BufferContents } from './buffer-contents.js';
import type { SlotColumns } from './slot-table.js';

/** Bytes at the end of the described log prefix whose hash the header keeps. */
const TAIL_BYTES = 65536;

type Column = Exclude<keyof SlotColumns, 'names' | 'aliasIds'>;
const COLUMNS: readonly Column[] = [
  'idHashes',
  'domains',
  'tasks',
  'sources',
  'trajectories',
  'contents',
  'counts',
  'lines',
  'starts',
  'ends',
  'aliasSlots',
];
const ARRAY_TYPES = {
  idHashes: Int32Array,
  domains: Int32Array,
  tasks: Int32Array,
  sources: Uint8Array,
  trajectories: Int32Array,
  contents: Int32Array,
  counts: Float64Array,
  lines: Float64Array,
  starts: Float64Array,
  ends: Float64Array,
  aliasSlots: Int32Array,
} as const;

const SectionSchema = z.object({
  name: z.string(),
  offset: z.number().int().nonnegative(),
  length: z.number().int().nonnegative(),
});

const HeaderSchema = z.object({
  format: z.literal('dreamgym-replay-slots'),
  version: z.literal(1),
  /** The log prefix described: its bytes, its lines, the SHA-1 of its last bytes. */
  log: z.object({
    bytes: z.number().int().nonnegative(),
    lines: z.number().int().nonnegative(),
    tailSha1: z.string(),
  }),
  slotCount: z.number().int().nonnegative(),
  withInstruction: z.boolean(),
  names: z.array(z.string()),
  aliasIds: z.array(z.string()),
  sections: z.array(SectionSchema),
  bodySha1: z.string(),
});
type Header = z.infer<typeof HeaderSchema>;

/** What a snapshot holds: the slot table's columns and the rows' phi hashes. */
export interface SlotSnapshot {
  /** The log prefix it describes (parse the log from `bytes`, numbering lines after `lines`). */
  log: { bytes: number; lines: number };
  columns: SlotColumns;
  rowHashes: Float64Array;
}

/** The log prefix a snapshot is written for. */
export interface LogPrefix {
  file: string;
  bytes: number;
  lines: number;
}

function sha1(parts: readonly Uint8Array[]): string {
  const hash = createHash('sha1');
  for (const part of parts) hash.update(part);
  return hash.digest('hex');
}

/** SHA-1 of the last (up to {@link TAIL_BYTES}) bytes of the first `bytes` of `file`. */
async function tailSha1(file: string, bytes: number): Promise<string> {
  const length = Math.min(bytes, TAIL_BYTES);
  const tail = Buffer.alloc(length);
  if (length > 0) {
    const handle = await open(file, 'r');
    try {
      const { bytesRead } = await handle.read(tail, 0, length, bytes - length);
      if (bytesRead < length) throw new RangeError(`${file} is shorter than ${bytes} bytes`);
    } finally {
      await handle.close();
    }
  }
  return sha1([tail]);
}

const bytesOf = (array: ArrayBufferView) =>
  new Uint8Array(array.buffer, array.byteOffset, array.byteLength);

/**
 * Writes the snapshot of `contents` for the log prefix `log` to `file` (a temporary file
 * renamed over it); removes `file` where the contents cannot be snapshot (a slot whose log
 * line is not known).
 */
export async function writeSlotSnapshot(
  file: string,
  contents: BufferContents,
  log: LogPrefix,
): Promise<void> {
  const columns = contents.slots.columns();
  if (!columns) {
    await rm(file, { force: true });
    return;
  }
  const arrays: [string, ArrayBufferView][] = [
    ...COLUMNS.map((name): [string, ArrayBufferView] => [name, columns[name]]),
    ['rowHashes', contents.rows.hashes()],
  ];
  const sections: Header['sections'] = [];
  const body: Uint8Array[] = [];
  let offset = 0;
  for (const [name, array] of arrays) {
    const padding = (8 - (offset % 8)) % 8;
    if (padding > 0) body.push(new Uint8Array(padding));
    offset += padding;
    sections.push({ name, offset, length: array.byteLength });
    body.push(bytesOf(array));
    offset += array.byteLength;
  }
  const header: Header = {
    format: 'dreamgym-replay-slots',
    version: 1,
    log: { bytes: log.bytes, lines: log.lines, tailSha1: await tailSha1(log.file, log.bytes) },
    slotCount: columns.idHashes.length,
    withInstruction: contents.withInstruction,
    names: columns.names,
    aliasIds: columns.aliasIds,
    sections,
    bodySha1: sha1(body),
  };
  const headerBytes = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(headerBytes.length);
  await writeFileAtomic(file, [length, headerBytes, ...body]);
}

/**
 * Reads the snapshot in `file` and checks it against the log it describes and the buffer
 * being opened. Returns undefined when there is none; `{ stale }` with the reason when it
 * cannot be used (then the whole log is read).
 */
export async function readSlotSnapshot(
  file: string,
  expected: { logFile: string; logBytes: number; slotCount: number; withInstruction: boolean },
): Promise<SlotSnapshot | { stale: string } | undefined> {
  let data: Buffer;
  try {
    data = await readFile(file);
  } catch {
    return undefined;
  }
  let header: Header;
  let body: Buffer;
  try {
    const headerLength = data.readUInt32LE(0);
    header = HeaderSchema.parse(JSON.parse(data.toString('utf8', 4, 4 + headerLength)));
    body = data.subarray(4 + headerLength);
  } catch (error) {
    return { stale: `its header is unreadable (${(error as Error).message})` };
  }
  if (sha1([body]) !== header.bodySha1) return { stale: 'it is torn (its hash does not match)' };
  if (header.slotCount !== expected.slotCount) {
    return {
      stale: `it holds ${header.slotCount} records, the manifest ${expected.slotCount}`,
    };
  }
  if (header.withInstruction !== expected.withInstruction)
    return { stale: 'it was written with other phi weights' };
  if (
    header.log.bytes > expected.logBytes ||
    (await tailSha1(expected.logFile, header.log.bytes)) !== header.log.tailSha1
  ) {
    return { stale: `it does not describe ${expected.logFile} as it is now` };
  }
  const arrays = new Map<string, ArrayBufferView>();
  for (const section of header.sections) {
    const type = section.name === 'rowHashes' ? Float64Array : ARRAY_TYPES[section.name as Column];
    if (!type || section.offset + section.length > body.length)
      return { stale: `its section ${section.name} is malformed` };
    const array = new type(section.length / type.BYTES_PER_ELEMENT);
    bytesOf(array).set(body.subarray(section.offset, section.offset + section.length));
    arrays.set(section.name, array);
  }
  const slotCount = header.slotCount;
  for (const name of COLUMNS) {
    const array = arrays.get(name) as (ArrayBufferView & { length: number }) | undefined;
    const wanted = name === 'aliasSlots' ? header.aliasIds.length : slotCount;
    if (!array || array.length !== wanted) return { stale: `its section ${name} is malformed` };
  }
  const rowHashes = arrays.get('rowHashes');
  if (!(rowHashes instanceof Float64Array)) return { stale: 'its section rowHashes is missing' };
  const columns = Object.fromEntries(COLUMNS.map((name) => [name, arrays.get(name)])) as Omit<
    SlotColumns,
    'names' | 'aliasIds'
  >;
  return {
    log: { bytes: header.log.bytes, lines: header.log.lines },
    columns: { ...columns, names: header.names, aliasIds: header.aliasIds },
    rowHashes,
  };
}
