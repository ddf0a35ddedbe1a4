/**
 * The policy of a `dreamgym train` run: the embedded linear softmax policy (`--policy
 * linear`, the default) or a trainable LLM (`--policy llm`: `@dreamgym/llama`'s
 * `createLlmPolicy`, acting through llama.cpp in process and learning in the torch worker of
 * `trainers/python`). The choice is written to the run folder (`run.json`) so a resumed run
 * builds the same policy; the loop restores its weights from the checkpoint's `policy/` folder.
 */
import {
  ConfigError,
  createLinearSoftmaxPolicy,
  type DomainAdapter,
  type DreamGymConfig,
  type TrainablePolicy,
} from '@dreamgym/core';
import { z } from 'zod';

/** The package that provides `createLlmPolicy` unless `--policy-package` names another. */
export const LLM_POLICY_PACKAGE = '@dreamgym/llama';

/**
 * LLM policy settings: `createLlmPolicy`'s options without the adapter and the folder
 * (`model`, `actionSelection`, `answerFormat`, `prompt`, `temperature`, `maxTokens`,
 * `trainer: {mode, loraRank, topLayers, learningRate, device, ...}` ...). Checked by the
 * package itself; here only their shape.
 */
const LlmSettingsSchema = z.record(z.string(), z.unknown());

/** A run's policy choice, as `run.json` keeps it. */
export const RunPolicySettingsSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('linear') }),
  z.object({
    kind: z.literal('llm'),
    /** The package providing `createLlmPolicy`. Default `@dreamgym/llama`. */
    package: z.string().min(1).default(LLM_POLICY_PACKAGE),
    settings: LlmSettingsSchema.default({}),
  }),
]);
/** A run's policy choice. */
export type RunPolicySettings = z.infer<typeof RunPolicySettingsSchema>;

/** What the CLI uses of the LLM policy package. */
interface LlmPolicyModule {
  createLlmPolicy(
    options: Record<string, unknown> & {
      adapter: DomainAdapter;
      workDirectory: string;
      log?: (message: string) => void;
      env?: NodeJS.ProcessEnv;
    },
  ): Promise<
    TrainablePolicy & {
      close(): Promise<void>;
      countTokens?: ((text: string) => number) | undefined;
    }
  >;
  llmPolicyWorkDirectory(runDirectory: string): string;
}

/**
 * Loads the LLM policy package (kept out of the CLI's static imports: it loads a native
 * library and is an optional install). A `ConfigError` says how to install it.
 */
export async function loadLlmPolicyModule(packageName: string): Promise<LlmPolicyModule> {
  let module: Partial<LlmPolicyModule>;
  try {
    module = (await import(packageName)) as Partial<LlmPolicyModule>;
  } catch (error) {
    throw new ConfigError(
      `--policy llm needs the package ${packageName}, which could not be loaded (${(error as Error).message}). Install it next to the CLI: npm install ${packageName}. Or train the embedded policy: --policy linear.`,
      { field: '--policy', cause: error },
    );
  }
  if (
    typeof module.createLlmPolicy !== 'function' ||
    typeof module.llmPolicyWorkDirectory !== 'function'
  ) {
    throw new ConfigError(
      `${packageName} does not export createLlmPolicy and llmPolicyWorkDirectory; --policy llm needs @dreamgym/llama (or a package with the same exports).`,
      { field: '--policy' },
    );
  }
  return module as LlmPolicyModule;
}

/** A run's policy, ready for the loop, and how to release it. */
export interface RunPolicy {
  policy: TrainablePolicy;
  /** Human-readable description for the log. */
  description: string;
  /**
   * Tokens of a text in the tokenizer of the policy's model, where it has one it counts in
   * process (the LLM policy on llama.cpp): the real environment's observation budget is counted
   * in it. Absent for the linear policy (no model reads the text).
   */
  countTokens?: (text: string) => number;
  /** Stops the LLM's worker and frees the model (nothing for the linear policy). */
  close(): Promise<void>;
}

/**
 * Builds the run's policy. For `llm`, `module` is what {@link loadLlmPolicyModule} returned;
 * exported weights go to the run's `policy-weights/` folder.
 */
export async function createRunPolicy(options: {
  settings: RunPolicySettings;
  config: DreamGymConfig;
  adapter: DomainAdapter;
  runDirectory: string;
  module?: LlmPolicyModule;
  env?: NodeJS.ProcessEnv;
  log?: (message: string) => void;
}): Promise<RunPolicy> {
  const { settings, config } = options;
  if (settings.kind === 'linear') {
    return {
      policy: createLinearSoftmaxPolicy(config),
      description: 'linear softmax (embedded)',
      close: async () => {},
    };
  }
  const module = options.module ?? (await loadLlmPolicyModule(settings.package));
  const policy = await module.createLlmPolicy({
    seed: config.seed,
    ...settings.settings,
    adapter: options.adapter,
    workDirectory: module.llmPolicyWorkDirectory(options.runDirectory),
    ...(options.env ? { env: options.env } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  const trainer = (policy as { trainer?: { mode?: string; trainableParameters?: number } }).trainer;
  return {
    policy,
    ...(typeof policy.countTokens === 'function' ? { countTokens: policy.countTokens } : {}),
    description: `LLM ${policy.id} (${trainer?.mode ?? 'lora'}, ${trainer?.trainableParameters ?? '?'} trainable parameters)`,
    close: () => policy.close(),
  };
}
