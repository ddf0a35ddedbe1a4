/**
 * A run's parts, built in the order that fails fastest: what can fail without the data (the
 * LLM policy's package, the local model file, the embeddings server) before the domain loads
 * (which takes minutes), then the domain, the models of the selection and the policy.
 * `dreamgym train` opens a new or resumed run with it, `dreamgym eval` and `fidelity` a finished
 * one.
 */
import { ConfigError, type DreamGymConfig, type EmbeddingModel } from '@dreamgym/core';
import { type DomainSetup, type DomainSetupOptions, setUpDomain } from './domain-setup.js';
import {
  createEmbedder,
  loadLlamaRuntime,
  type ModelSelection,
  type SelectedModels,
  selectModels,
  usesChatModel,
} from './models.js';
import {
  createRunPolicy,
  loadLlmPolicyModule,
  type RunPolicy,
  type RunPolicySettings,
} from './run-policy.js';

/** A run's parts on its domain. */
export interface RunParts {
  domain: DomainSetup;
  /** The configuration the policy was built with. */
  config: DreamGymConfig;
  /** The models of the selection, when there was one. */
  models?: SelectedModels;
  policy: RunPolicy;
  /** Frees the policy, then the models. */
  close(): Promise<void>;
}

/**
 * Builds a run's parts. What can fail without the data fails before the domain loads (which
 * takes minutes): the LLM policy's package, the local model file, the embeddings server.
 * `onDomain` does what needs the loaded domain and returns the configuration the policy is
 * built with; `logModel` picks the lines of the models' description to log.
 */
export async function openRun(options: {
  setup: DomainSetupOptions;
  policy: RunPolicySettings;
  selection: ModelSelection | undefined;
  runDirectory: string;
  /** The environment (API keys, the model cache) over the process's. */
  env: NodeJS.ProcessEnv;
  /** The working folder relative paths (a GGUF file) are read from. */
  cwd: string;
  log(message: string): void;
  onDomain(domain: DomainSetup): DreamGymConfig | Promise<DreamGymConfig>;
  logModel(line: string): boolean;
}): Promise<RunParts> {
  const { selection, runDirectory, log, cwd } = options;
  // The worker and the model cache need PATH and HOME even where the caller passes a partial environment.
  const env = { ...process.env, ...options.env };
  const module =
    options.policy.kind === 'llm' ? await loadLlmPolicyModule(options.policy.package) : undefined;
  const embedder = selection && (await prepareRunModels(selection, { env, cwd }));
  const domain = await setUpDomain(options.setup, log, embedder ? { embedder } : {});
  const config = await options.onDomain(domain);
  const models =
    selection && (await selectRunModels(selection, domain, { env, cwd, log, embedder }));
  try {
    for (const line of models?.describe() ?? []) if (options.logModel(line)) log(line);
    const policy = await createRunPolicy({
      settings: options.policy,
      config,
      adapter: domain.adapter,
      runDirectory,
      ...(module ? { module } : {}),
      env,
      log,
    });
    const { countTokens } = policy;
    return {
      // The run's real environments count their observation budget in the tokens of the
      // policy's model, which reads them (a conservative estimate where it has no tokenizer).
      domain: countTokens
        ? { ...domain, realEnvironment: () => domain.realEnvironment({ countTokens }) }
        : domain,
      config,
      ...(models ? { models } : {}),
      policy,
      close: async () => {
        try {
          await policy.close();
        } finally {
          await models?.dispose();
        }
      },
    };
  } catch (error) {
    await models?.dispose();
    throw error;
  }
}

/**
 * What a selection needs before the domain loads: a local model file that is not there fails
 * at once, and the `--embedder openai` client connects (the replay buffer embeds with it).
 * Resolves to that client; undefined for the hashing embedder.
 */
async function prepareRunModels(
  selection: ModelSelection,
  context: { env: NodeJS.ProcessEnv; cwd: string },
): Promise<EmbeddingModel | undefined> {
  if (usesChatModel(selection) && selection.baseUrl === undefined) {
    (await loadLlamaRuntime()).resolveModelPath(selection.model, context);
  }
  return selection.embedder === 'openai' ? connectEmbedder(selection, context.env) : undefined;
}

/**
 * The selection's parts on a loaded domain (its experience model built on the domain's
 * grounding by `createExperienceModel`), with the embedder {@link prepareRunModels} connected.
 */
function selectRunModels(
  selection: ModelSelection,
  domain: DomainSetup,
  context: {
    env: NodeJS.ProcessEnv;
    cwd: string;
    log: (message: string) => void;
    embedder: EmbeddingModel | undefined;
  },
): Promise<SelectedModels> {
  const { embedder, ...rest } = context;
  return selectModels(selection, {
    adapter: domain.adapter,
    grounding: domain.experienceGrounding,
    ...rest,
    ...(embedder ? { embedder } : {}),
  });
}

/** The `--embedder openai` client, asked for its dimension now; a failure names the flag. */
async function connectEmbedder(
  selection: ModelSelection,
  env: NodeJS.ProcessEnv,
): Promise<EmbeddingModel> {
  try {
    return await createEmbedder(selection, env);
  } catch (error) {
    throw new ConfigError(
      `--embedder openai could not use ${selection.embeddingModel} at ${selection.embeddingBaseUrl}: ${(error as Error).message} Check --embedding-base-url (default --base-url) and --embedding-model.`,
      { field: '--embedding-base-url', cause: error },
    );
  }
}
