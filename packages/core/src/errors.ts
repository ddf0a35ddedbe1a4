/**
 * The DreamGym error hierarchy.
 *
 * Every error the SDK throws on purpose is a {@link DreamGymError} with a stable
 * `code`. Use the static `isInstance` checks rather than `instanceof`: they work
 * when two copies of `@dreamgym/core` are installed side by side (an adapter with
 * its own nested copy, say), where `instanceof` silently fails.
 */

const marker = Symbol.for('@dreamgym/core/error');

/** Stable machine-readable error codes. */
export type DreamGymErrorCode =
  | 'CONFIG_INVALID'
  | 'DATASET_FORMAT'
  | 'DATASET_NOT_FOUND'
  | 'ACTION_PARSE'
  | 'ENVIRONMENT'
  | 'ENVIRONMENT_STATE'
  | 'MODEL'
  | 'MODEL_OUTPUT'
  | 'MODEL_FILE'
  | 'INDEX'
  | 'CHECKPOINT'
  | 'LOCKED'
  | 'INVALID_ARGUMENT'
  | 'BUDGET_EXHAUSTED'
  | 'TRAINER_BACKEND'
  | 'NOT_IMPLEMENTED';

/** Base class of every error DreamGym throws on purpose. */
export class DreamGymError extends Error {
  /** Marker that survives duplicated installs; see {@link DreamGymError.isInstance}. */
  readonly [marker] = true;
  /** Stable machine-readable code, one per failure kind. */
  readonly code: DreamGymErrorCode;

  constructor(code: DreamGymErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }

  /** True for any DreamGym error, including ones thrown by another copy of this package. */
  static isInstance(error: unknown): error is DreamGymError {
    return (
      typeof error === 'object' &&
      error !== null &&
      (error as Record<symbol, unknown>)[marker] === true
    );
  }
}

/** Builds the cross-install `isInstance` check of one subclass from its code. */
function hasCode<T extends DreamGymError>(code: DreamGymErrorCode) {
  return (error: unknown): error is T => DreamGymError.isInstance(error) && error.code === code;
}

/** A configuration object or option failed validation. */
export class ConfigError extends DreamGymError {
  /** Dotted path of the offending field, e.g. `trainer.clipLow`. */
  readonly field: string | undefined;
  constructor(message: string, options?: { field?: string; cause?: unknown }) {
    super('CONFIG_INVALID', message, options);
    this.field = options?.field;
  }
  static override isInstance = hasCode<ConfigError>('CONFIG_INVALID');
}

/** Where a record came from: a file and a 1-based line number. */
export interface RecordLocation {
  file: string;
  line: number;
}

/** A dataset record (JSONL line, JSON file, game file) is malformed. */
export class DatasetFormatError extends DreamGymError {
  readonly file: string;
  /** 1-based line number, or undefined when the whole file is at fault. */
  readonly line: number | undefined;
  /** 1-based column on `line`, where known. */
  readonly column: number | undefined;
  /** Dotted path of the failing field, e.g. `steps.3.reward`, when one field is at fault. */
  readonly field: string | undefined;
  /** The id of the record at fault (a task id), where known. */
  readonly recordId: string | undefined;
  constructor(
    message: string,
    options: {
      file: string;
      line?: number;
      column?: number;
      field?: string;
      recordId?: string;
      cause?: unknown;
    },
  ) {
    const where =
      options.line === undefined
        ? options.file
        : `${options.file}:${options.line}${options.column === undefined ? '' : `:${options.column}`}`;
    const record = options.recordId === undefined ? '' : ` (${options.recordId})`;
    const what = options.field ? ` (field \`${options.field}\`)` : '';
    super('DATASET_FORMAT', `${where}${record}${what}: ${message}`, options);
    this.file = options.file;
    this.line = options.line;
    this.column = options.column;
    this.field = options.field;
    this.recordId = options.recordId;
  }
  static override isInstance = hasCode<DatasetFormatError>('DATASET_FORMAT');
}

/** A dataset directory or file that was asked for does not exist. */
export class DatasetNotFoundError extends DreamGymError {
  readonly path: string;
  constructor(message: string, options: { path: string; cause?: unknown }) {
    super('DATASET_NOT_FOUND', message, options);
    this.path = options.path;
  }
  static override isInstance = hasCode<DatasetNotFoundError>('DATASET_NOT_FOUND');
}

/** An action string does not follow the domain's action grammar. */
export class ActionParseError extends DreamGymError {
  /** The action text as given. */
  readonly action: string;
  constructor(message: string, options: { action: string; cause?: unknown }) {
    super('ACTION_PARSE', message, options);
    this.action = options.action;
  }
  static override isInstance = hasCode<ActionParseError>('ACTION_PARSE');
}

/** A real or synthetic environment failed (server down, protocol error, crash). */
export class EnvironmentError extends DreamGymError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ENVIRONMENT', message, options);
  }
  static override isInstance = hasCode<EnvironmentError>('ENVIRONMENT');
}

/** An environment method was called in the wrong state (step before reset, after close...). */
export class EnvironmentStateError extends DreamGymError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ENVIRONMENT_STATE', message, options);
  }
  static override isInstance = hasCode<EnvironmentStateError>('ENVIRONMENT_STATE');
}

/** A model server request failed after all retries. */
export class ModelError extends DreamGymError {
  /** HTTP status of the last attempt, when there was a response. */
  readonly status: number | undefined;
  /** The endpoint that failed. */
  readonly url: string | undefined;
  constructor(message: string, options?: { status?: number; url?: string; cause?: unknown }) {
    super('MODEL', message, options);
    this.status = options?.status;
    this.url = options?.url;
  }
  static override isInstance = hasCode<ModelError>('MODEL');
}

/** A model answered, but its output does not match the expected structure. */
export class ModelOutputError extends DreamGymError {
  /** The raw text the model produced. */
  readonly output: string;
  constructor(message: string, options: { output: string; cause?: unknown }) {
    super('MODEL_OUTPUT', message, options);
    this.output = options.output;
  }
  static override isInstance = hasCode<ModelOutputError>('MODEL_OUTPUT');
}

/** A model file (GGUF weights) is missing, unreadable, or not what its checksum says. */
export class ModelFileError extends DreamGymError {
  /** The file at fault. */
  readonly path: string;
  constructor(message: string, options: { path: string; cause?: unknown }) {
    super('MODEL_FILE', message, options);
    this.path = options.path;
  }
  static override isInstance = hasCode<ModelFileError>('MODEL_FILE');
}

/** A vector index or replay-buffer store is missing, corrupt or mismatched. */
export class IndexError extends DreamGymError {
  readonly path: string | undefined;
  constructor(message: string, options?: { path?: string; cause?: unknown }) {
    super('INDEX', message, options);
    this.path = options?.path;
  }
  static override isInstance = hasCode<IndexError>('INDEX');
}

/** A checkpoint is missing, corrupt or from an incompatible run. */
export class CheckpointError extends DreamGymError {
  readonly path: string | undefined;
  constructor(message: string, options?: { path?: string; cause?: unknown }) {
    super('CHECKPOINT', message, options);
    this.path = options?.path;
  }
  static override isInstance = hasCode<CheckpointError>('CHECKPOINT');
}

/** A resource (replay buffer directory, run directory) is locked by another process. */
export class LockedError extends DreamGymError {
  readonly path: string;
  constructor(message: string, options: { path: string; cause?: unknown }) {
    super('LOCKED', message, options);
    this.path = options.path;
  }
  static override isInstance = hasCode<LockedError>('LOCKED');
}

/** A function was called with an argument outside its domain (a length mismatch, a negative size). */
export class InvalidArgumentError extends DreamGymError {
  /** Name of the offending argument. */
  readonly argument: string | undefined;
  constructor(message: string, options?: { argument?: string; cause?: unknown }) {
    super('INVALID_ARGUMENT', message, options);
    this.argument = options?.argument;
  }
  static override isInstance = hasCode<InvalidArgumentError>('INVALID_ARGUMENT');
}

/**
 * The real-transition budget of sim-to-real is spent: the action was not sent to the real
 * environment. Rollout collection ends the episode as cut by the budget (`truncated`), and
 * keeps it out of success rates and GRPO groups.
 */
export class BudgetExhaustedError extends DreamGymError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('BUDGET_EXHAUSTED', message, options);
  }
  static override isInstance = hasCode<BudgetExhaustedError>('BUDGET_EXHAUSTED');
}

/**
 * The trainer backend (the Python worker that runs an LLM policy's gradient steps) could not
 * start, crashed, or failed a request. The message says which request, the worker's exit
 * status, and the last lines it wrote to stderr.
 */
export class TrainerBackendError extends DreamGymError {
  /** The request that failed (`start`, `update`, ...), when one did. */
  readonly method: string | undefined;
  /** The worker's error kind (`internal`, `out-of-memory`, `exited`...). */
  readonly kind: string;
  constructor(message: string, options: { kind: string; method?: string; cause?: unknown }) {
    super('TRAINER_BACKEND', message, options);
    this.kind = options.kind;
    this.method = options.method;
  }
  static override isInstance = hasCode<TrainerBackendError>('TRAINER_BACKEND');
}

/**
 * A part of an extension that was scaffolded but not written yet (the stubs of
 * `dreamgym new adapter`). The message names the part, the file to edit and what to write.
 */
export class NotImplementedError extends DreamGymError {
  /** The missing part, e.g. `parseAction` of `@dreamgym/acme`. */
  readonly part: string;
  /** The file that holds the stub to replace. */
  readonly file: string | undefined;
  constructor(message: string, options: { part: string; file?: string; cause?: unknown }) {
    super('NOT_IMPLEMENTED', message, options);
    this.part = options.part;
    this.file = options.file;
  }
  static override isInstance = hasCode<NotImplementedError>('NOT_IMPLEMENTED');
}
