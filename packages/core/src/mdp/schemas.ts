/**
 * The agent MDP as zod schemas: the single source of truth for every record that
 * crosses a boundary (dataset files, HTTP, prompts, checkpoints). Types are inferred.
 *
 * Notation follows the paper: at step t the agent sees the abstract state s_t (an
 * {@link Observation}), takes action a_t and receives s_{t+1} and r_{t+1}.
 */
import { z } from 'zod';

const metaSchema = z.record(z.string(), z.unknown());

/** The abstract textual state s_t the agent sees. */
export const ObservationSchema = z.object({
  /** The state as text: what the agent reads. */
  text: z.string(),
  /** Admissible actions, where the domain lists them (ALFWorld commands, clickables). */
  actions: z.array(z.string()).optional(),
  /** Domain-specific extras (URL, page type, raw ids). Never shown to the policy by core. */
  meta: metaSchema.optional(),
});
export type Observation = z.infer<typeof ObservationSchema>;

/** A task (instruction) the agent is trained or evaluated on. */
export const TaskSchema = z.object({
  /** Stable unique id, e.g. the game path or goal index. */
  id: z.string().min(1),
  /** Domain name of the adapter that owns the task (`alfworld`, `webshop`...). */
  domain: z.string().min(1),
  /** The instruction given to the agent. */
  instruction: z.string().min(1),
  /** `seed` for tasks from a dataset, `generated` for curriculum variations. */
  origin: z.enum(['seed', 'generated']).default('seed'),
  /** For generated tasks: the task they were derived from. */
  parentId: z.string().min(1).optional(),
  /** For generated tasks: the curriculum iteration that produced them. */
  iteration: z.number().int().nonnegative().optional(),
  /** The initial state s_0 when it is known (synthetic environments start from it). */
  initialObservation: ObservationSchema.optional(),
  /** Domain-specific extras (split, task type, game file...). */
  meta: metaSchema.default({}),
});
export type Task = z.infer<typeof TaskSchema>;
/** A task as accepted from users and files (defaults not yet applied). */
export type TaskInput = z.input<typeof TaskSchema>;

/** One step of a trajectory: the state seen, the action taken, and what followed. */
export const StepSchema = z.object({
  /** s_t: the state in which the action was taken. */
  observation: ObservationSchema,
  /** a_t: the action, as text in the domain's grammar. */
  action: z.string(),
  /** r_{t+1}: reward received after the action. */
  reward: z.number().finite(),
  /** True when the episode ended after this action. */
  done: z.boolean(),
  /** True when a limit, not the task, ended the episode after this action (see `StepResult.truncated`). */
  truncated: z.boolean().optional(),
  /** The experience model's reasoning for this transition, when there was one. */
  reasoning: z.string().optional(),
  /** Extra per-step data (log-probability, timing, retrieved demo ids...). */
  info: metaSchema.optional(),
});
export type Step = z.infer<typeof StepSchema>;

/** What `Environment.step` returns. */
export const StepResultSchema = z.object({
  /** s_{t+1}. */
  observation: ObservationSchema,
  /** r_{t+1}. */
  reward: z.number().finite(),
  /** True when the episode is over, for whatever reason (the task ended, or a limit cut it). */
  done: z.boolean(),
  /**
   * True when a limit (a step cap, a real-transition budget) cut the episode rather than the
   * task ending it (Gymnasium's `truncated`; the task's own end is `done && !truncated`).
   * A truncated episode is neither a success nor a failure of the task: value-based
   * trainers bootstrap from the last state, and evaluations count it separately.
   */
  truncated: z.boolean().default(false),
  /** Diagnostics: `success`, `invalidAction`, reasoning, demo ids... */
  info: metaSchema.default({}),
});
export type StepResult = z.infer<typeof StepResultSchema>;

/** Where experience came from. */
export const ExperienceSourceSchema = z.enum(['offline', 'synthetic', 'real']);
export type ExperienceSource = z.infer<typeof ExperienceSourceSchema>;

/** A whole episode. */
export const TrajectorySchema = z.object({
  /** Optional stable id (defaults to the task id plus an index where needed). */
  id: z.string().min(1).optional(),
  task: TaskSchema,
  steps: z.array(StepSchema),
  /** s_T: the state after the last action, when it was recorded. */
  finalObservation: ObservationSchema.optional(),
  source: ExperienceSourceSchema,
  /** True when the task was accomplished. */
  success: z.boolean(),
  meta: metaSchema.optional(),
});
export type Trajectory = z.infer<typeof TrajectorySchema>;
export type TrajectoryInput = z.input<typeof TrajectorySchema>;

/** One transition (s_t, a_t, s_{t+1}, r_{t+1}) with the metadata the replay buffer filters on. */
export const TransitionSchema = z.object({
  /** Unique id, stable across save and reload. */
  id: z.string().min(1),
  domain: z.string().min(1),
  taskId: z.string().min(1),
  /** The task instruction, kept so a transition can be shown as a demonstration alone. */
  instruction: z.string(),
  /** Id of the trajectory this transition came from, when known. */
  trajectoryId: z.string().optional(),
  /** Index t of the step within its trajectory. */
  stepIndex: z.number().int().nonnegative(),
  state: ObservationSchema,
  action: z.string(),
  nextState: ObservationSchema,
  reward: z.number().finite(),
  done: z.boolean(),
  source: ExperienceSourceSchema,
  /** Outcome label of the whole trajectory (success or failure), used by reward prediction. */
  trajectorySuccess: z.boolean().optional(),
  /** Policy version that produced the action, for synthetic and real experience. */
  policyVersion: z.number().int().nonnegative().optional(),
  reasoning: z.string().optional(),
});
export type Transition = z.infer<typeof TransitionSchema>;
