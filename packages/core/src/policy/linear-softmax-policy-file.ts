/**
 * The file a `LinearSoftmaxPolicy` saves to: the 8-byte magic `DGLSPOL1`, a little-endian
 * uint32 header length, the JSON header ({@link LinearSoftmaxPolicyHeader}) padded with
 * spaces to a multiple of 4 bytes, then three little-endian Float32Arrays of 2^hashBits
 * values: weights, Adam first moments, Adam second moments.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { CheckpointError } from '../errors.js';
import { writeFileAtomic } from '../files/atomic-write.js';
import type { RandomState } from '../random/seeded-random.js';
import type { AdamConfig } from './adam.js';

/** A policy's weights, optimiser state and configuration, for in-memory checkpoints. */
export interface LinearSoftmaxPolicyState {
  header: LinearSoftmaxPolicyHeader;
  weights: Float32Array;
  adamM: Float32Array;
  adamV: Float32Array;
}

/**
 * The JSON header of a saved policy. Version 2 names its feature set; version 1 files
 * (written before there was a choice) hold `lexical` policies and load as such.
 */
export interface LinearSoftmaxPolicyHeader {
  format: 'dreamgym-linear-softmax-policy';
  version: 2;
  id: string;
  hashBits: number;
  historyWindow: number;
  /** Which features the weights belong to (`LinearSoftmaxPolicyOptions.features`). */
  features: 'lexical' | 'relational' | 'lexical+relational';
  optimizer: AdamConfig;
  adamSteps: number;
  random: RandomState;
}

const MAGIC = 'DGLSPOL1';

/** Writes `state` to `file` atomically (its folder is created). */
export async function writeLinearSoftmaxPolicyFile(
  file: string,
  state: LinearSoftmaxPolicyState,
): Promise<void> {
  let headerText = JSON.stringify(state.header);
  while ((12 + Buffer.byteLength(headerText)) % 4 !== 0) headerText += ' ';
  const headerBytes = Buffer.from(headerText, 'utf8');
  const prefix = Buffer.alloc(12);
  prefix.write(MAGIC, 0, 'latin1');
  prefix.writeUInt32LE(headerBytes.length, 8);
  const arrays = [state.weights, state.adamM, state.adamV].map((array) =>
    Buffer.from(array.buffer, array.byteOffset, array.byteLength),
  );
  await mkdir(dirname(file), { recursive: true });
  await writeFileAtomic(file, [prefix, headerBytes, ...arrays]);
}

/** Reads a policy file; throws a `CheckpointError` saying what is wrong. */
export async function readLinearSoftmaxPolicyFile(file: string): Promise<LinearSoftmaxPolicyState> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    throw new CheckpointError(`Cannot read policy file ${file}: ${(error as Error).message}`, {
      path: file,
      cause: error,
    });
  }
  if (bytes.length < 12 || bytes.toString('latin1', 0, 8) !== MAGIC) {
    throw new CheckpointError(
      `${file} is not a LinearSoftmaxPolicy file (missing the ${MAGIC} magic); save one with policy.save().`,
      { path: file },
    );
  }
  const headerLength = bytes.readUInt32LE(8);
  let header: LinearSoftmaxPolicyHeader;
  try {
    header = JSON.parse(bytes.toString('utf8', 12, 12 + headerLength));
  } catch (error) {
    throw new CheckpointError(`${file}: the policy header is not valid JSON.`, {
      path: file,
      cause: error,
    });
  }
  if (header.format !== 'dreamgym-linear-softmax-policy') {
    throw new CheckpointError(
      `${file}: not a linear softmax policy (format ${String(header.format)}).`,
      { path: file },
    );
  }
  const version = header.version as number;
  if (version === 1) {
    // Written before policies named their features: every one of them was lexical.
    header = { ...header, version: 2, features: 'lexical' };
  } else if (version !== 2) {
    throw new CheckpointError(
      `${file}: linear softmax policy file version ${String(version)}; this @dreamgym/core reads versions 1 and 2. A newer release wrote it: upgrade @dreamgym/core to load it.`,
      { path: file },
    );
  }
  const size = 1 << header.hashBits;
  const start = 12 + headerLength;
  if (bytes.length !== start + 3 * 4 * size) {
    throw new CheckpointError(
      `${file}: expected ${start + 12 * size} bytes for hashBits ${header.hashBits}, found ${bytes.length}; the file is truncated or corrupt.`,
      { path: file },
    );
  }
  // Copy out of the Buffer: its offset in Node's pool need not be 4-byte aligned.
  const arrays = [0, 1, 2].map((part) => {
    const slice = bytes.subarray(start + part * 4 * size, start + (part + 1) * 4 * size);
    return new Float32Array(Uint8Array.from(slice).buffer);
  });
  return { header, weights: arrays[0]!, adamM: arrays[1]!, adamV: arrays[2]! };
}
