/**
 * Model selection for the CLI: `@dreamgym/llama` (an optional install) loaded on demand.
 */
import { type ChatModel, ConfigError, type ContinuationScorer } from '@dreamgym/core';

/** The parts of a `@dreamgym/llama` `LlamaChatModel` the CLI uses. */
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

/** What the CLI uses of the `@dreamgym/llama` module. */
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
 * Kept out of the CLI's static imports: the runtime loads a native library and is an optional
 * install for users who only talk to model servers.
 */
export async function loadLlamaRuntime(): Promise<LlamaRuntime> {
  const specifier: string = LLAMA_PACKAGE;
  try {
    return (await import(specifier)) as LlamaRuntime;
  } catch (error) {
    throw new ConfigError(
      `Local models need the package ${LLAMA_PACKAGE}, which could not be loaded (${(error as Error).message}). Install it next to the CLI: npm install ${LLAMA_PACKAGE}. Or use a model server: --base-url URL --model NAME.`,
      { field: 'model', cause: error },
    );
  }
}
