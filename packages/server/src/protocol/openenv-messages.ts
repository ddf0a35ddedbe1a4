/**
 * Meta's OpenEnv wire protocol (openenv-core 0.3: `env_server/types.py`, `serialization.py`,
 * `http_server.py`) as zod schemas: the WebSocket messages on `/ws`, the HTTP bodies of
 * `/reset` and `/step`, and DreamGym's action, observation and state records. The field names
 * are OpenEnv's (snake_case), so Python clients read them as they read any OpenEnv server.
 *
 * Where DreamGym carries more than OpenEnv's `{observation, reward, done}` (Gymnasium's
 * `truncated`, the task, the episode id), it goes into `observation.metadata`: the one place
 * an OpenEnv `Observation` subclass accepts arbitrary data.
 */
import { z } from 'zod';

/** `WSErrorCode` of OpenEnv: the `code` of every `error` reply. */
export const WS_ERROR_CODES = [
  'INVALID_JSON',
  'UNKNOWN_TYPE',
  'VALIDATION_ERROR',
  'EXECUTION_ERROR',
  'CAPACITY_REACHED',
  'FACTORY_ERROR',
  'SESSION_ERROR',
] as const;
export type WsErrorCode = (typeof WS_ERROR_CODES)[number];

/**
 * WebSocket close codes the server uses. OpenEnv's own server closes with 1000 after an
 * `error` reply; these say why, so a client that only sees the close still knows.
 */
export const CLOSE_CODES = {
  /** The client sent `close`. */
  normal: 1000,
  /** The server is shutting down. */
  goingAway: 1001,
  /** A malformed WebSocket frame (set by `ws`). */
  protocolError: 1002,
  /** A frame larger than `maxPayloadBytes` (set by `ws`). */
  messageTooBig: 1009,
  /** The environment factory failed. */
  internalError: 1011,
  /**
   * The worker thread playing the session's environment died (`serve --workers`); it has
   * been restarted: open a new session.
   */
  serviceRestart: 1012,
  /** Every session slot is taken (after a `CAPACITY_REACHED` error reply). */
  tryAgainLater: 1013,
  /** The session was idle longer than `sessionTimeoutMs` (application range, like HTTP 408). */
  idleTimeout: 4408,
} as const;

const metadataSchema = z.record(z.string(), z.unknown());

/** The body of `reset` (`data` of the WebSocket message, or the HTTP `/reset` body). */
export const ResetParametersSchema = z.strictObject({
  /** Seeds the task draw: the same seed gives the same seed task, bypassing the curriculum. */
  seed: z.number().int().nonnegative().optional(),
  /** Episode id; a fresh UUID when absent. Over HTTP it names the episode in later `/step` calls. */
  episode_id: z.string().min(1).max(255).optional(),
  /**
   * A task of the curriculum's pool to play (e.g. the `task_id` another episode reported, to
   * play a GRPO group of the same task); the curriculum draws one when absent.
   */
  task_id: z.string().min(1).max(1024).optional(),
});
export type ResetParameters = z.infer<typeof ResetParametersSchema>;

/** DreamGym's action: text in the domain's grammar (`go to desk 1`, `click [12]`). */
export const ActionSchema = z.strictObject({
  /** The action text, parsed by the domain's grammar. An action outside it is answered, not refused. */
  action: z.string().max(16_384),
  /** Free-form data for the client's own use; ignored by the environment (OpenEnv's `Action.metadata`). */
  metadata: metadataSchema.optional(),
});
export type Action = z.infer<typeof ActionSchema>;

/** `observation.metadata`: what DreamGym adds to OpenEnv's observation. */
export const ObservationMetadataSchema = z.object({
  /** The episode this observation belongs to. */
  episode_id: z.string(),
  /** The task being played (pass it as `task_id` to `reset` to play the task again). */
  task_id: z.string(),
  /** `seed` for a dataset task, `generated` for one the curriculum wrote. */
  task_origin: z.enum(['seed', 'generated']),
  /** Steps taken in the episode so far. */
  step: z.number().int().nonnegative(),
  /**
   * True when a limit (the step cap), not the task, ended the episode (Gymnasium's
   * `truncated`); the task itself ended it when `done && !truncated`.
   */
  truncated: z.boolean(),
  /** True when the task was accomplished (set on the last step). */
  success: z.boolean(),
  /** True when the last action was outside the domain's grammar (the observation says why). */
  invalid_action: z.boolean(),
});
export type ObservationMetadata = z.infer<typeof ObservationMetadataSchema>;

/** DreamGym's observation (the class OpenEnv's `/schema` describes: its own fields plus `done`, `reward`, `metadata`). */
export const ObservationSchema = z.object({
  /** The abstract textual state s_t. */
  text: z.string(),
  /** Admissible actions in this state (empty when the domain has no list). */
  actions: z.array(z.string()),
  /** The task's instruction, repeated on every observation so a stateless policy has it. */
  instruction: z.string(),
  /** The episode is over (the task ended, or a limit cut it). */
  done: z.boolean(),
  /** r_{t+1}; null after `reset`. */
  reward: z.number().nullable(),
  metadata: ObservationMetadataSchema,
});
export type WireObservation = z.infer<typeof ObservationSchema>;

/** The observation as sent inside replies: OpenEnv moves `done` and `reward` up a level. */
export const ObservationPayloadSchema = ObservationSchema.omit({ done: true, reward: true });
export type ObservationPayload = z.infer<typeof ObservationPayloadSchema>;

/** What `reset` and `step` return (OpenEnv's `serialize_observation`, `ResetResponse`, `StepResponse`). */
export const StepReplySchema = z.strictObject({
  observation: ObservationPayloadSchema,
  reward: z.number().nullable(),
  done: z.boolean(),
});
export type StepReply = z.infer<typeof StepReplySchema>;

/** The episode state (`state` message, `GET /state`): OpenEnv's `State` plus DreamGym's fields. */
export const StateSchema = z.looseObject({
  /** The current episode, null before the first `reset`. */
  episode_id: z.string().nullable(),
  /** Steps taken in the current episode. */
  step_count: z.number().int().nonnegative(),
  task_id: z.string().nullable(),
  instruction: z.string().nullable(),
  done: z.boolean(),
  truncated: z.boolean(),
  /** Sum of the episode's rewards so far. */
  total_reward: z.number(),
});
export type WireState = z.infer<typeof StateSchema>;

/** Incoming WebSocket messages (OpenEnv's `WSIncomingMessage`; every message forbids extra keys). */
export const WsResetMessageSchema = z.strictObject({
  type: z.literal('reset'),
  data: z.record(z.string(), z.unknown()).default({}),
});
export const WsStepMessageSchema = z.strictObject({
  type: z.literal('step'),
  data: z.record(z.string(), z.unknown()),
});
export const WsStateMessageSchema = z.strictObject({ type: z.literal('state') });
export const WsCloseMessageSchema = z.strictObject({ type: z.literal('close') });
export const WsIncomingMessageSchema = z.discriminatedUnion('type', [
  WsResetMessageSchema,
  WsStepMessageSchema,
  WsStateMessageSchema,
  WsCloseMessageSchema,
]);
export type WsIncomingMessage = z.infer<typeof WsIncomingMessageSchema>;

/**
 * The action of the common step message, `{"type": "step", "data": {"action": "..."}}` and
 * nothing else, checked without the schemas (no copies on the path every step takes);
 * `undefined` for any other message, which the schemas then check and explain.
 */
export function plainStepAction(message: object): Action | undefined {
  const { type, data } = message as { type?: unknown; data?: unknown };
  if (type !== 'step' || typeof data !== 'object' || data === null) return undefined;
  const action = (data as { action?: unknown }).action;
  if (typeof action !== 'string' || action.length > 16_384) return undefined;
  for (const key in message) if (key !== 'type' && key !== 'data') return undefined;
  for (const key in data) if (key !== 'action') return undefined;
  return { action };
}

/** Outgoing WebSocket messages. */
export const WsObservationResponseSchema = z.strictObject({
  type: z.literal('observation'),
  data: StepReplySchema,
});
export const WsStateResponseSchema = z.strictObject({
  type: z.literal('state'),
  data: StateSchema,
});
/** One field error, shaped like pydantic's `ValidationError.errors()` entries. */
export const FieldErrorSchema = z.object({
  loc: z.array(z.union([z.string(), z.number()])),
  msg: z.string(),
  type: z.string(),
});
export type FieldError = z.infer<typeof FieldErrorSchema>;
export const WsErrorResponseSchema = z.strictObject({
  type: z.literal('error'),
  data: z.looseObject({
    message: z.string(),
    code: z.enum(WS_ERROR_CODES),
    errors: z.array(FieldErrorSchema).optional(),
  }),
});
export type WsErrorResponse = z.infer<typeof WsErrorResponseSchema>;

/**
 * `POST /step` body: OpenEnv's `StepRequest` (`action`, `timeout_s`, `request_id`) plus the
 * `episode_id` that `/reset` returned, since DreamGym keeps HTTP episodes on the server.
 */
export const HttpStepRequestSchema = z.strictObject({
  action: ActionSchema,
  /** The episode to step: `observation.metadata.episode_id` of the `/reset` reply. */
  episode_id: z.string().min(1).max(255),
  timeout_s: z.number().positive().optional(),
  request_id: z.string().max(255).optional(),
});
export type HttpStepRequest = z.infer<typeof HttpStepRequestSchema>;

/** `GET /health`. */
export const HealthResponseSchema = z.strictObject({
  status: z.enum(['healthy', 'unhealthy', 'degraded']),
});

/** `GET /metadata` (OpenEnv's `EnvironmentMetadata`). */
export const EnvironmentMetadataSchema = z.strictObject({
  name: z.string(),
  description: z.string(),
  readme_content: z.string().nullable().optional(),
  version: z.string().nullable().optional(),
  author: z.string().nullable().optional(),
  documentation_url: z.string().nullable().optional(),
});
export type EnvironmentMetadata = z.infer<typeof EnvironmentMetadataSchema>;

/** Pydantic-style field errors from a zod error, with `loc` prefixed (`['body', 'action']`). */
export function fieldErrors(error: z.ZodError, prefix: readonly (string | number)[] = []) {
  return error.issues.map(
    (issue): FieldError => ({
      loc: [
        ...prefix,
        ...issue.path.map((key) => (typeof key === 'number' ? key : String(key))),
        ...(issue.code === 'unrecognized_keys' ? issue.keys : []),
      ],
      msg: issue.message,
      type: issue.code,
    }),
  );
}

/** One line naming each failing field: `data.task_id: expected string, received number`. */
export function describeFieldErrors(errors: readonly FieldError[]): string {
  return errors
    .map((error) => `${error.loc.length > 0 ? `${error.loc.join('.')}: ` : ''}${error.msg}`)
    .join('; ');
}
