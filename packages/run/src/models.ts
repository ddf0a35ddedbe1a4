/**
 * The models of a run: the LLM (in process through `@dreamgym/llama`, an optional install
 * loaded on demand, or any OpenAI-compatible server), the embedder, and every model-backed part
 * a {@link ModelSelection} chooses (the experience model through `createExperienceModel`, the
 * task generator, an LLM policy). One chat model is shared by every part that needs one. The
 * CLI reads a selection from its flags (`--experience`, `--model`, `--base-url` ...).
 */
import { resolve } from 'node:path';
import {
  ConfigError,
  type DomainAdapter,
  type EmbeddingModel,
  type ExperienceModel,
  HashingEmbedder,
  MutationTaskGenerator,
  type Policy,
  type TaskGenerator,
} from '@dreamgym/core';
import { LlmTaskGenerator } from '@dreamgym/core/curriculum';
import { compactExperienceFormat, standardExperienceFormat } from '@dreamgym/core/experience';
import {
  type ChatModel,
  type ContinuationScorer,
  OpenAICompatibleChatModel,
  OpenAICompatibleEmbeddingModel,
  OpenAICompatibleScorer,
} from '@dreamgym/core/models';
import { ChatModelPolicy } from '@dreamgym/core/policy';
import { createExperienceModel, type ExperienceGrounding } from './experience-model.js';

/** The parts of a `@dreamgym/llama` `LlamaChatModel` a run uses. */
export interface LocalChatModel extends ChatModel, ContinuationScorer {
  /** The model's name (`smollm2-135m-instruct`, or the GGUF's file name). */
  readonly name: string;
  /** Path of the GGUF file. */
  readonly path: string;
  /** Tokens one request may hold. */
  readonly contextSize: number;
  /** Exact token count of a text, for prompt budgets. */
  readonly countTokens: (text: string) => number;
  dispose(): Promise<void>;
}

/** A running `dreamgym model serve` server. */
export interface LocalModelServer {
  url: string;
  baseURL: string;
  port: number;
  modelName: string;
  close(): Promise<void>;
}

/** What a run uses of the `@dreamgym/llama` module. */
export interface LlamaRuntime {
  LlamaChatModel: { load(options: Record<string, unknown>): Promise<LocalChatModel> };
  startLlamaServer(options: {
    model: LocalChatModel;
    port?: number;
    host?: '127.0.0.1' | 'localhost' | '::1';
    modelName?: string;
    maxBodyBytes?: number;
    maxQueue?: number;
    log?: (line: string) => void;
  }): Promise<LocalModelServer>;
  pullModel(
    name: string,
    options?: {
      modelDirectory?: string;
      python?: string;
      force?: boolean;
      log?: (message: string) => void;
    },
  ): Promise<{ name: string; path: string; sha256: string; bytes: number; downloaded: boolean }>;
  resolveModelPath(
    spec: string,
    options?: { env?: NodeJS.ProcessEnv; modelDirectory?: string; cwd?: string },
  ): { path: string; name: string };
  modelCacheDirectory(env?: NodeJS.ProcessEnv): string;
  KNOWN_MODELS: ReadonlyArray<{
    name: string;
    wheel: string;
    bytes: number;
    license: string;
    description: string;
  }>;
}

/** The package name of the local model runtime. */
const LLAMA_PACKAGE = '@dreamgym/llama';

/**
 * Loads `@dreamgym/llama`; throws a `ConfigError` saying how to install it when it is not.
 * Kept out of the static imports: the runtime loads a native library and is an optional
 * install for users who only talk to model servers.
 */
export async function loadLlamaRuntime(): Promise<LlamaRuntime> {
  const specifier: string = LLAMA_PACKAGE;
  try {
    return (await import(specifier)) as LlamaRuntime;
  } catch (error) {
    throw new ConfigError(
      `Local models need the package ${LLAMA_PACKAGE}, which could not be loaded (${(error as Error).message}). Install it: npm install ${LLAMA_PACKAGE}. Or use a model server: --base-url URL --model NAME.`,
      { field: 'model', cause: error },
    );
  }
}

/** Which model backs each part of a run (`dreamgym train` reads it from its flags). */
export interface ModelSelection {
  experience: 'embedded' | 'llm' | 'hybrid';
  policy: 'linear' | 'llm';
  taskGenerator: 'mutation' | 'llm';
  embedder: 'hashing' | 'openai';
  /** `local`, a GGUF path, a known local model name, or (with `baseUrl`) the served model's name. */
  model: string;
  baseUrl?: string;
  experienceFormat?: 'compact' | 'standard';
  experienceTemperature: number;
  embeddingModel?: string;
  embeddingBaseUrl?: string;
  /** Local model settings. */
  concurrency?: number;
  contextSize?: number;
  threads?: number;
}

/** Whether any part of `selection` needs the LLM. */
export function usesChatModel(selection: ModelSelection): boolean {
  return (
    selection.experience !== 'embedded' ||
    selection.policy === 'llm' ||
    selection.taskGenerator === 'llm'
  );
}

/** Where the run runs: environment (API keys, model cache) and working folder. */
export interface SelectionEnvironment {
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** The LLM of a selection, opened: in process or behind a server. */
export interface OpenedChatModel {
  chat: ChatModel;
  scorer: ContinuationScorer;
  /** The local model, when it runs in process. */
  local?: LocalChatModel;
  /** Exact token counter of a local model. */
  countTokens?: (text: string) => number;
  dispose(): Promise<void>;
}

/** Opens the selection's LLM: `@dreamgym/llama` for local models, an OpenAI-compatible client otherwise. */
export async function openChatModel(
  selection: Pick<ModelSelection, 'model' | 'baseUrl' | 'concurrency' | 'contextSize' | 'threads'>,
  where: SelectionEnvironment,
): Promise<OpenedChatModel> {
  if (selection.baseUrl !== undefined) {
    const client = { baseURL: selection.baseUrl, model: selection.model };
    const dependencies = { env: where.env };
    return {
      chat: new OpenAICompatibleChatModel(client, dependencies),
      scorer: new OpenAICompatibleScorer(client, dependencies),
      dispose: async () => {},
    };
  }
  const runtime = await loadLlamaRuntime();
  const spec = selection.model;
  const local = await runtime.LlamaChatModel.load({
    model: /\.gguf$/i.test(spec) ? resolve(where.cwd, spec) : spec,
    modelDirectory: runtime.modelCacheDirectory(where.env),
    ...(selection.concurrency === undefined ? {} : { concurrency: selection.concurrency }),
    ...(selection.contextSize === undefined ? {} : { contextSize: selection.contextSize }),
    ...(selection.threads === undefined ? {} : { threads: selection.threads }),
  });
  return {
    chat: local,
    scorer: local,
    local,
    countTokens: local.countTokens,
    dispose: () => local.dispose(),
  };
}

/** What {@link selectModels} needs of the run. */
export interface SelectionContext extends SelectionEnvironment {
  /** The domain. */
  adapter: DomainAdapter;
  /**
   * What the domain's experience models are grounded in (`setUpDomain(...).experienceGrounding`):
   * the selected model, embedded, LLM or hybrid, is built on it by `createExperienceModel`,
   * its outcomes judged by the grounding's outcome judge.
   */
  grounding: ExperienceGrounding;
  /** Progress lines. */
  log?: (message: string) => void;
  /**
   * The embedder to use, when the command built it earlier (for the replay buffer, before the
   * domain's other parts): default {@link createEmbedder} of the selection.
   */
  embedder?: EmbeddingModel;
}

/**
 * The replay-buffer embedder a selection names: hashing (256 dimensions) or an
 * OpenAI-compatible server, asked once for its dimension (a replay buffer needs it up front,
 * and an unreachable server fails here rather than mid-run).
 */
export async function createEmbedder(
  selection: Pick<ModelSelection, 'embedder' | 'embeddingModel' | 'embeddingBaseUrl'>,
  env: NodeJS.ProcessEnv,
): Promise<EmbeddingModel> {
  return selection.embedder === 'openai'
    ? await OpenAICompatibleEmbeddingModel.connect(
        { baseURL: selection.embeddingBaseUrl!, model: selection.embeddingModel! },
        { env },
      )
    : new HashingEmbedder({ dimension: 256 });
}

/** The parts a selection produced. `undefined` parts keep the command's embedded defaults. */
export interface SelectedModels {
  selection: ModelSelection;
  experienceModel: ExperienceModel;
  /** The LLM policy; undefined for `--policy linear` (the command builds its LinearSoftmaxPolicy). */
  policy?: Policy;
  taskGenerator: TaskGenerator;
  /** The replay buffer's embedder. */
  embedder: EmbeddingModel;
  /** The shared LLM, when a part uses one. */
  chat?: ChatModel;
  /** Log-probability scoring by the same LLM (for LLM policies choosing among candidates). */
  scorer?: ContinuationScorer;
  /** The in-process model, when local. */
  local?: LocalChatModel;
  /** One line per part, for the run log. */
  describe(): string[];
  /** Frees the local model. */
  dispose(): Promise<void>;
}

/**
 * Builds every model-backed part the selection names. Throws `ConfigError` for impossible
 * combinations and `ModelFileError` for a local model that is not there.
 */
export async function selectModels(
  selection: ModelSelection,
  context: SelectionContext,
): Promise<SelectedModels> {
  const { adapter } = context;
  const embedder = context.embedder ?? (await createEmbedder(selection, context.env));
  const opened = usesChatModel(selection) ? await openChatModel(selection, context) : undefined;
  const describe: string[] = [];
  const chatName = opened
    ? opened.local
      ? `${opened.local.name} in process (${opened.local.path})`
      : `${selection.model} at ${selection.baseUrl}`
    : undefined;
  try {
    let experienceModel: ExperienceModel;
    if (selection.experience !== 'embedded') {
      const format =
        (selection.experienceFormat ?? (opened?.local ? 'compact' : 'standard')) === 'compact'
          ? compactExperienceFormat()
          : standardExperienceFormat;
      experienceModel = createExperienceModel(context.grounding, {
        kind: selection.experience,
        chat: opened!.chat,
        format,
        temperature: selection.experienceTemperature,
        ...(opened?.countTokens ? { countTokens: opened.countTokens } : {}),
      });
      describe.push(
        `experience model: ${selection.experience === 'hybrid' ? 'grounded hybrid of retrieval and ' : ''}the reasoning LLM ${chatName} (${format.name} prompt, temperature ${selection.experienceTemperature})${context.grounding.judged ? ', outcomes by the learned judge' : ''}`,
      );
    } else {
      experienceModel = createExperienceModel(context.grounding, { kind: 'embedded' });
      describe.push(`experience model: ${experienceModel.id} (embedded)`);
    }
    const policy =
      selection.policy === 'llm'
        ? new ChatModelPolicy({
            model: opened!.chat,
            agentInstructions: adapter.prompts.agentInstructions,
            environmentDescription: adapter.prompts.environmentDescription,
            parseAction: (text) => adapter.parseAction(text),
            invalidAnswerFallback: 'first-candidate',
          })
        : undefined;
    describe.push(
      policy ? `policy: ChatModelPolicy on ${chatName}` : 'policy: linear softmax (embedded)',
    );
    const taskGenerator: TaskGenerator =
      selection.taskGenerator === 'llm'
        ? new LlmTaskGenerator({ model: opened!.chat, adapter, embedder })
        : new MutationTaskGenerator({ adapter, embedder });
    describe.push(
      selection.taskGenerator === 'llm'
        ? `task generator: LLM (${chatName})`
        : "task generator: the adapter's mutations (embedded)",
    );
    describe.push(
      selection.embedder === 'openai'
        ? `embedder: ${selection.embeddingModel} at ${selection.embeddingBaseUrl}`
        : 'embedder: hashing (embedded, 256 dimensions)',
    );
    return {
      selection,
      experienceModel,
      ...(policy ? { policy } : {}),
      taskGenerator,
      embedder,
      ...(opened ? { chat: opened.chat, scorer: opened.scorer } : {}),
      ...(opened?.local ? { local: opened.local } : {}),
      describe: () => [...describe],
      dispose: async () => {
        await opened?.dispose();
      },
    };
  } catch (error) {
    await opened?.dispose();
    throw error;
  }
}
