/**
 * A lock file that keeps two processes from writing one replay-buffer directory. Created
 * with O_EXCL and holding the owner's pid; a lock whose pid is no longer running (a crashed
 * writer) is stale and taken over.
 */

import { open, readFile, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { LockedError } from '../errors.js';

/** What the lock file holds. */
interface LockOwner {
  pid: number;
  host: string;
  since: string;
}

/** True when a process with this pid exists on this machine. */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readOwner(file: string): Promise<LockOwner | undefined> {
  try {
    const owner = JSON.parse(await readFile(file, 'utf8')) as Partial<LockOwner>;
    if (typeof owner.pid !== 'number' || typeof owner.host !== 'string') return undefined;
    return { pid: owner.pid, host: owner.host, since: String(owner.since ?? '') };
  } catch {
    return undefined;
  }
}

/** True when `file` was modified within the last two seconds. */
async function isFresh(file: string): Promise<boolean> {
  try {
    return Date.now() - (await stat(file)).mtimeMs < 2000;
  } catch {
    return false;
  }
}

/** A held lock; {@link BufferLock.release} removes the file. */
export class BufferLock {
  private constructor(readonly file: string) {}

  /**
   * Takes the lock at `file`.
   *
   * @param onStale called with a message when a stale lock of a dead process is taken over.
   * @throws LockedError when a live process (or one on another host) holds it.
   */
  static async acquire(file: string, onStale: (message: string) => void): Promise<BufferLock> {
    const me: LockOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
    for (let attempt = 0; attempt < 2; attempt += 1) {
      try {
        const handle = await open(file, 'wx');
        try {
          await handle.writeFile(JSON.stringify(me));
        } finally {
          await handle.close();
        }
        return new BufferLock(file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const owner = await readOwner(file);
      if (owner && (owner.host !== me.host || isProcessAlive(owner.pid))) {
        const where =
          owner.host === me.host ? `process ${owner.pid}` : `process ${owner.pid} on ${owner.host}`;
        throw new LockedError(
          `The replay buffer is locked by ${where} (since ${owner.since}): only one process may write it. Close the buffer there, open this one with { readOnly: true }, or delete ${file} if that process is gone.`,
          { path: file },
        );
      }
      if (!owner && (await isFresh(file))) {
        // Another process may be between creating the file and writing its pid.
        throw new LockedError(
          `The replay buffer is being locked by another process right now (${file} was just created). Try again, or delete ${file} if no process uses the buffer.`,
          { path: file },
        );
      }
      onStale(
        owner
          ? `Taking over the stale replay-buffer lock ${file} of process ${owner.pid}, which is no longer running.`
          : `Taking over the unreadable replay-buffer lock ${file} (left by a crash while it was created).`,
      );
      await rm(file, { force: true });
    }
    throw new LockedError(
      `Could not take the replay-buffer lock ${file}: another process keeps creating it.`,
      {
        path: file,
      },
    );
  }

  /** Removes the lock file (only if it is still ours). */
  async release(): Promise<void> {
    const owner = await readOwner(this.file);
    if (owner?.pid === process.pid && owner.host === hostname())
      await rm(this.file, { force: true });
  }
}
