/**
 * Writing a whole file atomically, once for the SDK: the new contents go to a temporary
 * file beside the target, which is renamed over it only once complete, so a crash at any
 * moment leaves the old file or the new one, never half of one.
 */
import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';

/** Bytes for {@link writeFileAtomic}: text, bytes, or byte chunks written in order. */
export type FileData = string | Uint8Array | Iterable<Uint8Array>;

/** Writes `data` to `file` and syncs it to the disk before resolving. */
export async function writeFileDurably(file: string, data: FileData): Promise<void> {
  const handle = await open(file, 'w');
  try {
    if (typeof data === 'string' || data instanceof Uint8Array) await handle.writeFile(data);
    // Each call writes on from where the previous one ended.
    else for (const chunk of data) await handle.writeFile(chunk);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Replaces `file` with what `write` writes to the temporary path it is given: renamed over
 * `file` once `write` resolves, removed when it throws. Resolves to `write`'s result. The
 * temporary name is unique per call, so writes to one file from one process do not collide.
 */
export async function replaceFileAtomic<T>(
  file: string,
  write: (temporary: string) => Promise<T>,
): Promise<T> {
  const temporary = `${file}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  try {
    const result = await write(temporary);
    await rename(temporary, file);
    return result;
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/** Writes a whole file atomically (temporary file, fsync, rename). */
export function writeFileAtomic(file: string, data: FileData): Promise<void> {
  return replaceFileAtomic(file, (temporary) => writeFileDurably(temporary, data));
}
