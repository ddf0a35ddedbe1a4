/**
 * What an adapter's exploration and expert generation take and write
 * (`DomainAdapter.explore`, `DomainAdapter.generateExpertTrajectories`): offline trajectories,
 * as JSONL, played on the real environment over the adapter's data folder.
 */

/** One episode an adapter's exploration has written (`DomainAdapter.explore`). */
export interface ExplorationProgress {
  /** Episodes written so far, this one included. */
  completed: number;
  /** Episodes to play. */
  total: number;
  /** Whether the episode ended with the task done. */
  success: boolean;
}

/**
 * Options of `DomainAdapter.explore`: episodes played on the real environment over the
 * adapter's own data folder (its training tasks) by the adapter's exploration policies
 * (random play and perturbed expert play, successes and failures, as the paper builds its
 * offline data).
 */
export interface ExplorationOptions {
  /** JSONL file of core `Trajectory` records the episodes go to. */
  output: string;
  /** Episodes to play (the adapter's default when absent). */
  episodes?: number;
  /** Seed of the policies and of the task order. */
  seed?: number;
  /** Step limit per episode. */
  maxSteps?: number;
  /** Share of uniformly random episodes; the others play perturbed expert play. */
  randomShare?: number;
  /** Real environments played at once. */
  concurrency?: number;
  /** Add to `output` instead of replacing it. */
  append?: boolean;
  /**
   * Settings of the adapter's own policies (ALFWorld's `epsilon`, `expertPolicy`,
   * `perturbations`), checked by the adapter: an unknown one is refused.
   */
  settings?: Record<string, unknown>;
  /** Called after each episode is written; when it throws, exploration stops with its error. */
  onEpisode?: (progress: ExplorationProgress) => void;
}

/** What `DomainAdapter.explore` wrote (an adapter may report more). */
export interface ExplorationSummary {
  /** The JSONL file. */
  output: string;
  /** Trajectories written. */
  episodes: number;
  /** Episodes that ended with the task done. */
  successes: number;
  /** Real transitions played. */
  steps: number;
}

/** One game an adapter's expert generation has finished (`DomainAdapter.generateExpertTrajectories`). */
export interface ExpertGenerationProgress {
  /** 1-based position of the game. */
  index: number;
  /** Games to play. */
  total: number;
  /** The game's name in the adapter's data. */
  game: string;
  /** `written`: solved and written; `skipped`: already in the output; `failed`: see `reason`. */
  status: 'written' | 'skipped' | 'failed';
  /** Actions played. */
  steps: number;
  /** Seconds the game took. */
  seconds: number;
  /** Why the expert did not solve the game. */
  reason?: string;
}

/** Options of `DomainAdapter.generateExpertTrajectories`, over the adapter's data folder. */
export interface ExpertGenerationOptions {
  /** JSONL file of expert trajectories; games already in it are skipped (a stopped run resumes). */
  output: string;
  /** Split of the games to play (the adapter's training split when absent). */
  split?: string;
  /** The games to play, by name; default every game of the split. */
  games?: readonly string[];
  /** Only the first N games. */
  limit?: number;
  /** Seed of the expert's random choices. */
  seed?: number;
  /** Actions per game before it counts as unsolved. */
  maxSteps?: number;
  /** Settings of the adapter's own experts (ALFWorld's `expert: 'planner'`), checked by the adapter. */
  settings?: Record<string, unknown>;
  /** Called after each game. */
  onProgress?: (progress: ExpertGenerationProgress) => void;
}

/** What `DomainAdapter.generateExpertTrajectories` did (an adapter may report more). */
export interface ExpertGenerationSummary {
  /** The JSONL file. */
  output: string;
  /** The games that could not be played, and why. */
  failed: Array<{ game: string; reason: string }>;
}
