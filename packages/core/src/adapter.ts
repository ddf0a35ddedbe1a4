/**
 * `DomainAdapter`: everything DreamGym needs to know about one benchmark domain.
 * Adapters (`@dreamgym/alfworld`, `@dreamgym/webshop`, `@dreamgym/webarena-lite`) implement
 * it and run the conformance suite from `@dreamgym/core/testing`.
 */
import type { DatasetFormatError } from './errors.js';
import type { Environment } from './mdp/environment.js';
import type { GoalCheckInput } from './mdp/goal-check.js';
import type {
  ExpertGenerationOptions,
  ExpertGenerationSummary,
  ExplorationOptions,
  ExplorationSummary,
} from './mdp/offline-data.js';
import type { Observation, Step, Task, Trajectory } from './mdp/schemas.js';
import type { SeededRandom } from './random/seeded-random.js';

/** An action parsed by the domain's grammar. */
export interface ParsedAction {
  /** Action type, the grammar's verb (`go to`, `take`, `click`, `search`...). */
  type: string;
  /** The action's arguments in order (object and receptacle names, element ids, text). */
  args: string[];
  /** The action in canonical form, as the environment expects it. */
  text: string;
}

/** How listings are written in a domain's state texts. */
export interface ListingStyle {
  /** The word an empty listing reads as. Default `nothing`. */
  emptyListing?: string;
  /** Separator before the last of several items. Default `, and `. */
  finalSeparator?: string;
  /** Article of an added item when the listing shows none. Default `a`. */
  article?: string;
  /** Order of entity names in a listing, to insert at the right place. Default: appended last. */
  compareEntities?: (a: string, b: string) => number;
}

/** What a domain tells the embedded experience model about its actions. All optional. */
export interface ConsistencyHints extends ListingStyle {
  /**
   * Action types that look at a place (their arguments) without changing it, so that
   * repeating one repeats what it showed (`go to`, `examine` in ALFWorld). Without
   * them the model never replays history.
   */
  revisitActionTypes?: readonly string[];
  /** Action types moving their first argument out of their last (`take O from R`). */
  removeActionTypes?: readonly string[];
  /** Action types moving their first argument into their last (`put O in/on R`). */
  placeActionTypes?: readonly string[];
  /** Observation texts meaning an action had no effect. Default `['Nothing happens.']`. */
  noEffectObservations?: readonly string[];
}

/** A loader of one kind of record from a dataset directory. */
export interface DatasetLoader<T> {
  /**
   * Streams validated records from `dir`. A malformed record throws a
   * `DatasetFormatError` naming the file, line and field; a missing file a
   * `DatasetNotFoundError` that says what to pass.
   */
  load(dir: string, options?: DatasetLoadOptions): AsyncIterable<T>;
}

/** Options common to every dataset loader. */
export interface DatasetLoadOptions {
  /** Only records of these splits (`train`, `valid_seen`, `test`...), where the domain has splits. */
  splits?: readonly string[];
  /** Stop after this many records. */
  limit?: number;
  /**
   * Load the valid records and skip the invalid ones, reporting each to `onInvalid`, instead
   * of failing (loaders that validate record by record; by default they fail with every
   * invalid record named). Default false.
   */
  skipInvalid?: boolean;
  /** Called with each invalid record's error when `skipInvalid` is set. */
  onInvalid?: (error: DatasetFormatError) => void;
}

/** The domain's datasets: offline trajectories and seed tasks. */
export interface DomainDatasets {
  /** Offline trajectories (demonstrations, exploration) that seed the replay buffer. */
  trajectories: DatasetLoader<Trajectory>;
  /** Seed tasks for training and evaluation. */
  tasks: DatasetLoader<Task>;
  /** Fetches the public dataset files into `dir`, for users with internet access. */
  download?(dir: string, options?: { signal?: AbortSignal }): Promise<void>;
}

/** Domain-specific prompt parts; core assembles the full prompts around them. */
export interface DomainPrompts {
  /** What the environment is and how states look: the experience model's world description. */
  environmentDescription: string;
  /** How the agent acts: action grammar and an example, for LLM policies. */
  agentInstructions: string;
  /** What makes a good new task in this domain, for the LLM task generator. */
  taskGenerationGuidance: string;
}

/** What the CLI uses for a domain when the user does not say otherwise. */
export interface DomainDefaults {
  /** Split of the evaluation tasks (`valid_seen` for ALFWorld, `eval` for WebShop). */
  evaluationSplit: string;
  /**
   * Where to evaluate: `real` when the real environment runs without extra set-up (a local
   * engine, a configured server), else `synthetic`.
   */
  evaluationEnvironment: 'real' | 'synthetic';
}

/** Everything DreamGym needs to know about one domain. */
export interface DomainAdapter<RawObservation = unknown, RealOptions = unknown> {
  /** Domain name, equal to `Task.domain` of its tasks (`alfworld`, `webshop`...). */
  readonly name: string;
  /** The state mapper: turns the real environment's raw output into an abstract state. */
  toObservation(raw: RawObservation): Observation;
  /** Parses an action against the domain's grammar; throws an `ActionParseError` saying why not. */
  parseAction(text: string): ParsedAction;
  /**
   * Admissible actions for a state that does not list them itself (as in the synthetic
   * environment), proposed from the domain grammar and what the episode has shown.
   */
  candidateActions(observation: Observation, history: readonly Step[]): string[];
  readonly datasets: DomainDatasets;
  readonly prompts: DomainPrompts;
  /** Defaults the CLI applies when no flag or config names them. */
  readonly defaults?: DomainDefaults;
  /**
   * What the domain's actions do to what the agent has seen (revisits, taking, placing),
   * so the embedded `RetrievalExperienceModel` keeps synthetic episodes consistent.
   */
  readonly experienceHints?: ConsistencyHints;
  /**
   * What the domain knows of its goals, for synthetic steps: `true` when the task is
   * accomplished after this step (the episode ends with success), `false` when it surely is
   * not (a success the learned outcome judge sees is refused), `undefined` to leave the step
   * to the judge. The judge learns outcomes from the offline data; a check written from the
   * domain's rules (a recipe's directions, a form's required fields) settles what the data
   * cannot teach it. Absent: the judge decides every step.
   */
  goalCheck?(step: GoalCheckInput): boolean | undefined;
  /**
   * A new task of the same kind as `task` with other entities or constraints (the
   * embedded curriculum generator), or undefined when none can be made.
   */
  mutateTask(task: Task, random: SeededRandom): Task | undefined;
  /**
   * Connects to (or starts) the real environment, for sim-to-real training and evaluation.
   * A run passes `countTokens` (the tokenizer of the model that reads the observations, where
   * it has one) to every adapter: one that budgets its observations counts them in it, the
   * others ignore it.
   */
  connectReal(options: RealOptions): Promise<Environment>;
  /**
   * Plays exploration episodes on the real environment over the adapter's data folder and
   * writes them as offline trajectories (`dreamgym data explore`, and `dreamgym train`'s
   * `setup.exploration`). Absent where the domain has no exploration.
   */
  explore?(options: ExplorationOptions): Promise<ExplorationSummary>;
  /**
   * Plays the domain's expert on the games of the adapter's data folder and writes its
   * trajectories (`dreamgym data expert`). Absent where the domain has no expert.
   */
  generateExpertTrajectories?(options: ExpertGenerationOptions): Promise<ExpertGenerationSummary>;
}
