/**
 * `createLlmPolicy`: a trainable LLM policy for a domain in one call, as `dreamgym train
 * --policy llm --model local|PATH.gguf|NAME` needs it. The model runs in process through
 * llama.cpp for acting, and its fp32 copy trains in the torch worker (the package's `trainer/`).
 */
import { join } from 'node:path';
import { ConfigError, type DomainAdapter, parseOptions, SeededRandom } from '@dreamgym/core';
import type { AgentPromptOptions } from '@dreamgym/core/policy';
import { z } from 'zod';
import { LlamaPolicyRuntime } from './llama-policy-runtime.js';
import { LlmPolicy } from './llm-policy.js';
import { resolveModelPath } from './model-files.js';

/** The trainer's settings (see `LlmTrainerOptions`). */
export const LlmPolicyTrainerSettingsSchema = z.object({
  /** `lora` (default) or `full` fine-tuning. */
  mode: z.enum(['lora', 'full']).default('lora'),
  /** LoRA rank. Default 16. */
  loraRank: z.number().int().positive().default(16),
  /** LoRA alpha. Default 2 x rank. */
  loraAlpha: z.number().positive().optional(),
  /**
   * LoRA on the top N layers only (the layers below are frozen and their outputs cached).
   * Default: 4 on a CPU, every layer on a GPU.
   */
  topLayers: z.number().int().positive().optional(),
  /** AdamW learning rate. Default 1e-4. */
  learningRate: z.number().positive().default(1e-4),
  /** What generation reloads after an update. Default `lora` (LoRA mode) or `f16` (full). */
  exportType: z.enum(['lora', 'f16', 'f32', 'q8_0', 'source']).optional(),
  /** torch device of the worker: `cpu` (default) or `cuda` / `cuda:N`. */
  device: z
    .string()
    .regex(/^(cpu|cuda(:\d+)?)$/, 'cpu, cuda or cuda:N')
    .default('cpu'),
  /** torch CPU threads. */
  threads: z.number().int().positive().optional(),
  /** Weights in the trainer. Default `float32`; `bfloat16` on a GPU halves memory. */
  dtype: z.enum(['float32', 'bfloat16']).default('float32'),
  /**
   * The worker's Python (with the trainer's requirements: `npx @dreamgym/cli doctor --fix
   * --only trainer` makes the project's `.venv`). Default `$DREAMGYM_PYTHON`, else the nearest
   * `.venv/bin/python`.
   */
  python: z.string().min(1).optional(),
  /** The folder holding `dreamgym_trainer`. Default `$DREAMGYM_TRAINER_DIR`, else the trainer this package ships (`trainer/`), else `trainers/python` above the working folder. */
  trainerDirectory: z.string().min(1).optional(),
});

/** Settings of earlier versions, and their names now. */
const RENAMED_SETTINGS = [
  ['invalidActionPenalty', 'invalidAnswerPenalty'],
  ['invalidActionFallback', 'invalidAnswerFallback'],
] as const;

/** Options of {@link createLlmPolicy} (besides the adapter and callbacks). */
export const LlmPolicyFactoryOptionsSchema = z.object({
  /** `local` (the embedded SmolLM2-135M-Instruct), a known model name, or a GGUF path. */
  model: z.string().min(1).default('local'),
  /** Model cache folder for names. Default `$DREAMGYM_MODEL_DIR`, else `~/.cache/dreamgym/models`. */
  modelDirectory: z.string().min(1).optional(),
  /** `auto` (default): `score` where a step lists candidate actions, else `generate` (see `LlmPolicyOptions.actionSelection`). */
  actionSelection: z.enum(['auto', 'generate', 'score']).default('auto'),
  /** `runtime` (default): act in llama.cpp; `trainer`: act in the torch worker on its own weights (one GPU, no hand-over). */
  actOn: z.enum(['runtime', 'trainer']).default('runtime'),
  /** `tagged` (default, `<action>...</action>`), `reasoned` (reasoning, then the block) or `plain` answers. */
  answerFormat: z.enum(['tagged', 'reasoned', 'plain']).default('tagged'),
  /** `full`: the domain's description and instructions; `compact`: one line (small models, long states). */
  prompt: z.enum(['full', 'compact']).default('full'),
  /** Previous actions shown in the prompt. Default 5. */
  historyWindow: z.number().int().nonnegative().default(5),
  /** Sampling temperature. Default 1. */
  temperature: z.number().gt(0).max(2).default(1),
  /** Token limit of an answer. Default 64. */
  maxTokens: z.number().int().positive().default(64),
  /** Reward added for an invalid output (zero or negative). Default -0.1. */
  invalidAnswerPenalty: z.number().max(0).default(-0.1),
  /** What an invalid output sends. Default `skip` (its text, which the environment rejects). */
  invalidAnswerFallback: z.enum(['skip', 'first-candidate']).default('skip'),
  /** llama.cpp context size. Default 2048. */
  contextSize: z.number().int().min(256).default(2048),
  /** Decisions evaluated at once. Default 2. */
  concurrency: z.number().int().positive().default(2),
  /** llama.cpp CPU threads. */
  threads: z.number().int().positive().optional(),
  /** Where exported weights go (created). */
  workDirectory: z.string().min(1),
  /** Seeds the default sampling stream and the adapter initialisation. Default 0. */
  seed: z.number().int().default(0),
  trainer: LlmPolicyTrainerSettingsSchema.default(LlmPolicyTrainerSettingsSchema.parse({})),
});
/** Input of {@link createLlmPolicy}'s options. */
export type LlmPolicyFactoryOptions = z.input<typeof LlmPolicyFactoryOptionsSchema>;

const COMPACT_INSTRUCTIONS =
  'Each turn, choose one admissible action that makes progress on the task.';

/**
 * Loads the model for acting, starts the trainer worker on the same GGUF, and returns the
 * `LlmPolicy` (close it when done). Throws `ModelFileError` when the model is not there and
 * `ConfigError` for invalid options.
 *
 * @example
 * ```ts
 * const policy = await createLlmPolicy({ adapter, model: 'local', workDirectory: 'runs/x/policy' });
 * const loop = new DreamGymLoop({ config, components: { adapter, policy, ... }, runDirectory: 'runs/x' });
 * await loop.run();
 * await policy.close();
 * ```
 */
export async function createLlmPolicy(
  options: LlmPolicyFactoryOptions & {
    /** The domain: its prompts and its action grammar. */
    adapter: DomainAdapter;
    /** Progress lines (weight syncs; the worker's log). */
    log?: (message: string) => void;
    /** Environment of the worker. Default `process.env`. */
    env?: NodeJS.ProcessEnv;
  },
): Promise<LlmPolicy> {
  const { adapter, log, env, ...rest } = options;
  // Renamed settings are refused by name, not ignored: the loop's `invalidActionPenalty` is
  // the synthetic environment's, for actions outside the grammar.
  for (const [old, now] of RENAMED_SETTINGS) {
    if (old in rest) {
      throw new ConfigError(
        `LLM policy: ${old} is now ${now} (what an answer that is no valid action earns or sends); the loop's invalidActionPenalty is the synthetic environment's.`,
        { field: old },
      );
    }
  }
  const settings = parseOptions(LlmPolicyFactoryOptionsSchema, rest, 'LLM policy');
  const trainer = settings.trainer;
  if (trainer.exportType === 'lora' && trainer.mode === 'full') {
    throw new ConfigError('trainer.exportType lora needs trainer.mode lora.', {
      field: 'trainer.exportType',
    });
  }
  // Resolved first, so a missing model fails before anything starts.
  const model = resolveModelPath(settings.model, {
    ...(settings.modelDirectory ? { modelDirectory: settings.modelDirectory } : {}),
    ...(env ? { env } : {}),
  });
  const runtime = await LlamaPolicyRuntime.load({
    model: model.path,
    contextSize: settings.contextSize,
    concurrency: settings.concurrency,
    ...(settings.threads === undefined ? {} : { threads: settings.threads }),
  });
  const prompt: AgentPromptOptions =
    settings.prompt === 'full'
      ? {
          agentInstructions: adapter.prompts.agentInstructions,
          environmentDescription: adapter.prompts.environmentDescription,
          historyWindow: settings.historyWindow,
          answerFormat: settings.answerFormat,
        }
      : {
          agentInstructions: COMPACT_INSTRUCTIONS,
          historyWindow: settings.historyWindow,
          answerFormat: settings.answerFormat,
        };
  const topLayers = trainer.topLayers ?? (trainer.device === 'cpu' ? 4 : undefined);
  try {
    return await LlmPolicy.create({
      runtime,
      prompt,
      actionSelection: settings.actionSelection,
      actOn: settings.actOn,
      parseAction: (text) => adapter.parseAction(text),
      temperature: settings.temperature,
      maxTokens: settings.maxTokens,
      invalidAnswerPenalty: settings.invalidAnswerPenalty,
      invalidAnswerFallback: settings.invalidAnswerFallback,
      trainer: {
        mode: trainer.mode,
        ...(trainer.mode === 'lora'
          ? {
              lora: {
                rank: trainer.loraRank,
                ...(trainer.loraAlpha === undefined ? {} : { alpha: trainer.loraAlpha }),
                ...(topLayers === undefined ? {} : { topLayers }),
              },
            }
          : {}),
        learningRate: trainer.learningRate,
        ...(trainer.exportType ? { exportType: trainer.exportType } : {}),
        dtype: trainer.dtype,
        seed: settings.seed,
        backend: {
          device: trainer.device,
          ...(trainer.threads === undefined ? {} : { threads: trainer.threads }),
          ...(trainer.python ? { python: trainer.python } : {}),
          ...(trainer.trainerDirectory ? { trainerDirectory: trainer.trainerDirectory } : {}),
          ...(env ? { env } : {}),
          ...(log ? { log: (line: string) => log(`trainer: ${line}`) } : {}),
        },
      },
      workDirectory: settings.workDirectory,
      random: new SeededRandom(settings.seed).fork('llm-policy'),
      id: `llm:${model.name}`,
      ...(log ? { log } : {}),
    });
  } catch (error) {
    await runtime.close();
    throw error;
  }
}

/** Where `dreamgym train` keeps a run's exported policy weights. */
export function llmPolicyWorkDirectory(runDirectory: string): string {
  return join(runDirectory, 'policy-weights');
}
