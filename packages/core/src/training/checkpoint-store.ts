/**
 * Atomic, verified checkpoints of a training run.
 *
 * A checkpoint is a folder `checkpoints/<name>/` of named parts (curriculum, RNG state,
 * counters...) and of part folders that a component writes itself (a policy's weights and
 * optimiser state), plus a `manifest.json` with the SHA-256 of every file. It is written into a temporary folder and renamed into place only when complete,
 * and `checkpoints/LATEST` (itself replaced by rename) names the newest one, so a crash at
 * any moment leaves either the previous checkpoint or the new one, never half of one.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { z } from 'zod';
import { CheckpointError, ConfigError } from '../errors.js';
import { writeFileAtomic, writeFileDurably } from '../files/atomic-write.js';

const ManifestSchema = z.object({
  format: z.literal('dreamgym-checkpoint/1'),
  name: z.string().min(1),
  createdAt: z.string(),
  parts: z.record(
    z.string(),
    z.object({ file: z.string(), sha256: z.string(), bytes: z.number() }),
  ),
  /** Part folders: every file they hold, by path relative to the checkpoint. */
  folders: z
    .record(
      z.string(),
      z.array(z.object({ file: z.string(), sha256: z.string(), bytes: z.number() })),
    )
    .default({}),
});
type Manifest = z.infer<typeof ManifestSchema>;

/** A checkpoint's parts: raw bytes, or JSON-serialisable values. */
export type CheckpointParts = Record<string, Uint8Array | unknown>;

/** Part folders of a checkpoint: each function writes its files into the folder it is given. */
export type CheckpointFolders = Record<string, (folder: string) => Promise<void>>;

/** A loaded checkpoint. */
export interface LoadedCheckpoint {
  name: string;
  /** Reads a part saved as bytes. */
  bytes(part: string): Uint8Array;
  /** Reads a part saved as a JSON value. */
  json<T = unknown>(part: string): T;
  /** Names of the stored parts. */
  parts(): string[];
  /** The path of a part folder (its files verified on load), or undefined when there is none. */
  folder(part: string): string | undefined;
}

async function filesUnder(directory: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) files.push(...(await filesUnder(path)));
    else if (entry.isFile()) files.push(path);
  }
  return files.sort();
}

/** SHA-256 and size of a file, streamed (policy folders can hold gigabytes). */
async function hashFile(path: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).byteLength;
  }
  return { sha256: hash.digest('hex'), bytes };
}

function sha256(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

const PART_NAME = /^[a-z][a-z0-9-]*$/;

/** Saves and loads checkpoints under `<directory>/`. */
export class CheckpointStore {
  /**
   * @param directory folder holding the checkpoints (created on first save)
   * @param keep how many checkpoints to keep; older ones are deleted after each save
   */
  constructor(
    readonly directory: string,
    private readonly keep = 3,
  ) {
    if (!Number.isInteger(keep) || keep < 1)
      throw new ConfigError(`keep must be a positive integer, got ${keep}.`, { field: 'keep' });
  }

  /** Writes a checkpoint atomically and makes it the latest. */
  async save(name: string, parts: CheckpointParts, folders: CheckpointFolders = {}): Promise<void> {
    if (!/^[A-Za-z0-9_.-]+$/.test(name))
      throw new CheckpointError(`Invalid checkpoint name "${name}".`);
    await mkdir(this.directory, { recursive: true });
    const final = join(this.directory, name);
    const temporary = join(this.directory, `.${name}.tmp-${process.pid}`);
    await rm(temporary, { recursive: true, force: true });
    await mkdir(temporary);
    const manifest: Manifest = {
      format: 'dreamgym-checkpoint/1',
      name,
      createdAt: new Date().toISOString(),
      parts: {},
      folders: {},
    };
    for (const [part, value] of Object.entries(parts)) {
      if (!PART_NAME.test(part))
        throw new CheckpointError(`Invalid checkpoint part name "${part}".`);
      const isBytes = value instanceof Uint8Array;
      const data = isBytes ? value : Buffer.from(JSON.stringify(value));
      const file = `${part}.${isBytes ? 'bin' : 'json'}`;
      await writeFileDurably(join(temporary, file), data);
      manifest.parts[part] = { file, sha256: sha256(data), bytes: data.byteLength };
    }
    for (const [part, write] of Object.entries(folders)) {
      if (!PART_NAME.test(part) || part in parts)
        throw new CheckpointError(`Invalid checkpoint folder name "${part}".`);
      const folder = join(temporary, part);
      await mkdir(folder, { recursive: true });
      await write(folder);
      const files = [];
      for (const path of await filesUnder(folder)) {
        const handle = await open(path, 'r');
        await handle.sync().finally(() => handle.close());
        files.push({ file: relative(temporary, path), ...(await hashFile(path)) });
      }
      manifest.folders[part] = files;
    }
    await writeFileDurably(join(temporary, 'manifest.json'), JSON.stringify(manifest, null, 2));
    await rm(final, { recursive: true, force: true });
    await rename(temporary, final);
    await writeFileAtomic(join(this.directory, 'LATEST'), name);
    await this.prune(name);
  }

  /** The latest checkpoint's name, or undefined when there is none. */
  async latestName(): Promise<string | undefined> {
    try {
      return (await readFile(join(this.directory, 'LATEST'), 'utf8')).trim() || undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Loads and verifies a checkpoint (default: the latest). Throws a `CheckpointError` that
   * names the damaged file when a part is missing or its checksum does not match.
   */
  async load(name?: string): Promise<LoadedCheckpoint | undefined> {
    const chosen = name ?? (await this.latestName());
    if (chosen === undefined) return undefined;
    const folder = join(this.directory, chosen);
    const manifestPath = join(folder, 'manifest.json');
    let manifest: Manifest;
    try {
      manifest = ManifestSchema.parse(JSON.parse(await readFile(manifestPath, 'utf8')));
    } catch (error) {
      throw new CheckpointError(
        `Checkpoint ${folder} is corrupt: its manifest cannot be read (${(error as Error).message}). Delete the folder to resume from an earlier checkpoint, or start a new run.`,
        { path: manifestPath, cause: error },
      );
    }
    const data = new Map<string, Uint8Array>();
    for (const [part, entry] of Object.entries(manifest.parts)) {
      const path = join(folder, entry.file);
      let bytes: Uint8Array;
      try {
        bytes = await readFile(path);
      } catch (error) {
        throw new CheckpointError(`Checkpoint part ${path} is missing.`, { path, cause: error });
      }
      if (sha256(bytes) !== entry.sha256) {
        throw new CheckpointError(
          `Checkpoint part ${path} is corrupt (checksum mismatch: ${bytes.byteLength} bytes, expected ${entry.bytes}). Delete ${folder} to resume from an earlier checkpoint.`,
          { path },
        );
      }
      data.set(part, bytes);
    }
    for (const files of Object.values(manifest.folders)) {
      for (const entry of files) {
        const path = join(folder, entry.file);
        let actual: { sha256: string; bytes: number };
        try {
          actual = await hashFile(path);
        } catch (error) {
          throw new CheckpointError(`Checkpoint file ${path} is missing.`, { path, cause: error });
        }
        if (actual.sha256 !== entry.sha256) {
          throw new CheckpointError(
            `Checkpoint file ${path} is corrupt (checksum mismatch: ${actual.bytes} bytes, expected ${entry.bytes}). Delete ${folder} to resume from an earlier checkpoint.`,
            { path },
          );
        }
      }
    }
    const get = (part: string): Uint8Array => {
      const bytes = data.get(part);
      if (!bytes)
        throw new CheckpointError(`Checkpoint ${folder} has no part "${part}".`, { path: folder });
      return bytes;
    };
    return {
      name: chosen,
      bytes: get,
      json: <T>(part: string) => JSON.parse(Buffer.from(get(part)).toString('utf8')) as T,
      parts: () => [...data.keys()],
      folder: (part: string) => (part in manifest.folders ? join(folder, part) : undefined),
    };
  }

  private async prune(current: string): Promise<void> {
    const entries = (await readdir(this.directory, { withFileTypes: true }))
      .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'))
      .map((entry) => entry.name)
      .sort();
    const stale = entries
      .filter((entry) => entry !== current)
      .slice(0, Math.max(0, entries.length - this.keep));
    for (const entry of stale)
      await rm(join(this.directory, entry), { recursive: true, force: true });
  }
}
