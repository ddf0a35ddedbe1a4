/** Helpers of a served run's folder: the configuration hash and log truncation on resume. */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { CheckpointError } from '@dreamgym/core';
import { writeFileAtomic } from '@dreamgym/core/internal';

/** FNV-1a of a value's JSON: tells a checkpoint's configuration from another. */
export function stableHash(value: unknown): string {
  let hash = 0x811c9dc5;
  const text = JSON.stringify(value);
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

/** Keeps the first `lines` lines of a log (drops what a crashed server wrote after its checkpoint). */
export async function truncateLines(file: string, lines: number): Promise<void> {
  const text = existsSync(file) ? await readFile(file, 'utf8') : '';
  const kept = text.split('\n').slice(0, lines);
  if (kept.length < lines || kept.some((line) => line.trim() === '')) {
    throw new CheckpointError(
      `${file} holds fewer lines than the checkpoint covers (${lines}); the run folder is damaged.`,
      { path: file },
    );
  }
  await writeFileAtomic(file, lines === 0 ? '' : `${kept.join('\n')}\n`);
}
