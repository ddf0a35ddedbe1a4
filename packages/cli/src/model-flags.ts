/**
 * The flags that choose every model-backed part of a run, read into a `ModelSelection` of
 * `@dreamgym/run` (which builds the models: `selectModels`):
 *
 *   --experience embedded|llm|hybrid    --policy linear|llm    --task-generator mutation|llm
 *   --embedder hashing|openai           --model local|PATH.gguf|NAME   --base-url URL
 *
 * `--model local` (the default) or a GGUF path runs the model in process through
 * `@dreamgym/llama`; `--base-url URL --model NAME` talks to any OpenAI-compatible server
 * instead. Commands spread {@link MODEL_SELECTION_FLAGS} into their flags and read them with
 * {@link parseModelSelection}.
 */
import type { ModelSelection } from '@dreamgym/run';
import { decimal, type FlagSpecs, type FlagValues, fail, integer } from './command-arguments.js';

/** The model-selection flags, for a command's `parseFlags` (spread them into its own). */
export const MODEL_SELECTION_FLAGS: FlagSpecs = {
  experience: { type: 'string' },
  policy: { type: 'string' },
  'task-generator': { type: 'string' },
  embedder: { type: 'string' },
  model: { type: 'string' },
  'base-url': { type: 'string' },
  'experience-format': { type: 'string' },
  'embedding-model': { type: 'string' },
  'embedding-base-url': { type: 'string' },
  'model-concurrency': { type: 'string' },
  'model-context-size': { type: 'string' },
  'model-threads': { type: 'string' },
  'experience-temperature': { type: 'string' },
};

/** The usage text of {@link MODEL_SELECTION_FLAGS}, for a command's `--help`. */
export const MODEL_SELECTION_USAGE = `Models:
  --experience embedded|llm|hybrid   experience model: retrieval over real transitions (default),
                             the reasoning LLM, or the LLM grounded by retrieval
  --policy linear|llm        the policy: linear softmax (default) or the LLM (ChatModelPolicy)
  --task-generator mutation|llm   curriculum task generator (default mutation)
  --embedder hashing|openai  replay-buffer embedder (default hashing)
  --model local|PATH.gguf|NAME   the LLM: local (SmolLM2-135M-Instruct in process, the
                             default), any GGUF file, or with --base-url the served model's name
  --base-url URL             an OpenAI-compatible server (vLLM, SGLang, Ollama, dreamgym model serve)
  --experience-format compact|standard   experience prompt (default: compact for local models)
  --experience-temperature X sampling temperature of the experience model (default 0)
  --embedding-model NAME     embedding model for --embedder openai
  --embedding-base-url URL   its server (default --base-url)
  --model-concurrency N  --model-context-size N  --model-threads N   local model settings`;

function choice<T extends string>(
  values: FlagValues,
  flag: string,
  allowed: readonly T[],
  fallback: T,
): T {
  const value = values[flag];
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    fail(`--${flag} must be ${allowed.join(' or ')}, got "${String(value)}".`, `--${flag}`);
  }
  return value as T;
}

/** Reads the model-selection flags; throws a `ConfigError` naming the flag at fault. */
export function parseModelSelection(values: FlagValues): ModelSelection {
  const string = (flag: string) => values[flag] as string | undefined;
  const baseUrl = string('base-url');
  const model = string('model') ?? (baseUrl ? undefined : 'local');
  if (model === undefined) {
    fail('--base-url needs --model NAME: the model name the server serves.', '--model');
  }
  if (baseUrl !== undefined) {
    if (!/^https?:\/\/.+/.test(baseUrl)) {
      fail(
        `--base-url must be an http(s) URL such as http://127.0.0.1:8000/v1, got "${baseUrl}".`,
        '--base-url',
      );
    }
    if (model === 'local' || /\.gguf$/i.test(model)) {
      fail(
        `--model ${model} is a local model; drop --base-url to run it in process, or name the served model.`,
        '--model',
      );
    }
  }
  const embedder = choice(values, 'embedder', ['hashing', 'openai'] as const, 'hashing');
  const embeddingBaseUrl = string('embedding-base-url') ?? baseUrl;
  const embeddingModel = string('embedding-model');
  if (embedder === 'openai' && (embeddingBaseUrl === undefined || embeddingModel === undefined)) {
    fail(
      '--embedder openai needs --embedding-model NAME and a server (--embedding-base-url URL or --base-url URL).',
      '--embedder',
    );
  }
  const experienceFormat = string('experience-format');
  if (
    experienceFormat !== undefined &&
    experienceFormat !== 'compact' &&
    experienceFormat !== 'standard'
  ) {
    fail(
      `--experience-format must be compact or standard, got "${experienceFormat}".`,
      '--experience-format',
    );
  }
  const temperature = decimal(string('experience-temperature'), '--experience-temperature') ?? 0;
  if (temperature < 0 || temperature > 2) {
    fail(
      `--experience-temperature must be between 0 and 2, got ${temperature}.`,
      '--experience-temperature',
    );
  }
  const concurrency = integer(string('model-concurrency'), '--model-concurrency');
  const contextSize = integer(string('model-context-size'), '--model-context-size');
  const threads = integer(string('model-threads'), '--model-threads');
  return {
    experience: choice(values, 'experience', ['embedded', 'llm', 'hybrid'] as const, 'embedded'),
    policy: choice(values, 'policy', ['linear', 'llm'] as const, 'linear'),
    taskGenerator: choice(values, 'task-generator', ['mutation', 'llm'] as const, 'mutation'),
    embedder,
    model,
    ...(baseUrl === undefined ? {} : { baseUrl }),
    ...(experienceFormat === undefined
      ? {}
      : { experienceFormat: experienceFormat as 'compact' | 'standard' }),
    experienceTemperature: temperature,
    ...(embeddingModel === undefined ? {} : { embeddingModel }),
    ...(embedder === 'openai' && embeddingBaseUrl !== undefined ? { embeddingBaseUrl } : {}),
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(contextSize === undefined ? {} : { contextSize }),
    ...(threads === undefined ? {} : { threads }),
  };
}
