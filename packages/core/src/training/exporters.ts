/**
 * Exporters of rollouts with advantages, as JSONL for Python trainers, so an LLM policy can
 * be updated by TRL, verl or ART on DreamGym's (synthetic or real) experience.
 *
 * Every step is one sample: the prompt the policy acted under and its completion, as the
 * policy recorded them (`policyInfo.messages` and `output`, which `ChatModelPolicy` and
 * `LlmPolicy` keep), never rebuilt where a record exists; steps of policies that keep none
 * (the linear policy) get the agent prompt `LlmPolicy` acts under (`buildAgentMessages`) and
 * its answer (`<action>a_t</action>` by default), so an LLM trained on the export acts under
 * the prompt it learned. Where the policy
 * recorded tokens (`policyInfo.llm`, as `LlmPolicy` keeps the exact prompt and completion ids
 * and the sampled tokens' log-probabilities), the records carry them, so a trainer that reads
 * them trains on the tokens that were sampled, without tokenising again. Rewards are broadcast
 * from the episode to its steps as verl-agent does; `advantage` is whatever the trainer's
 * estimator gave the step.
 */
import { z } from 'zod';
import { writeJsonl } from '../mdp/jsonl.js';
import type { ChatMessage } from '../models/chat-model.js';
import {
  type AgentPromptOptions,
  buildAgentMessages,
  formatAgentAnswer,
} from '../policy/agent-prompt.js';
import type { ScoredRollout } from './policy-gradient-trainer.js';

const ChatMessageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant']),
  content: z.string(),
});

/**
 * TRL: one line per step, in TRL's conversational prompt-completion format (the dataset
 * format `GRPOTrainer` and `RLOOTrainer` read), with the reward and the precomputed advantage
 * as extra columns (TRL passes extra columns to reward functions as keyword arguments).
 */
export const TrlStepRecordSchema = z.object({
  /** The agent prompt: system and user messages. */
  prompt: z.array(ChatMessageSchema),
  /** The agent's answer: one assistant message. */
  completion: z.array(ChatMessageSchema),
  /** The episode reward (sum of step rewards), broadcast to every step. */
  reward: z.number(),
  /** The step's advantage under the exporting trainer's estimator. */
  advantage: z.number(),
  /** This step's own reward r_{t+1}. */
  step_reward: z.number(),
  /** log pi_old(a_t|s_t), when known. */
  logprob: z.number().nullable(),
  /** The prompt's token ids as the policy's engine evaluated them, where recorded. */
  prompt_token_ids: z.array(z.number().int()).nullable(),
  /** The completion's token ids as sampled (or the chosen candidate's), where recorded. */
  completion_token_ids: z.array(z.number().int()).nullable(),
  /** Each sampled completion token's log-probability, where recorded. */
  completion_logprobs: z.array(z.number()).nullable(),
  task_id: z.string(),
  /** Group key (task id) shared by the rollouts of one task. */
  group_id: z.string(),
  trajectory_id: z.string(),
  step_index: z.number().int(),
  success: z.boolean(),
});
export type TrlStepRecord = z.infer<typeof TrlStepRecordSchema>;

/**
 * verl / verl-agent: one line per step with the `DataProto` fields as flat JSON. The tensor
 * fields verl derives by tokenising (`input_ids`, `attention_mask`, `response_mask`) are left
 * to the Python side; the per-token tensors `advantages`, `returns`, `old_log_probs` and
 * `ref_log_prob` are given once per step (verl broadcasts them over the response mask).
 * `non_tensor_batch` keys follow verl-agent: `uid` (group), `traj_uid`, `active_masks`,
 * `data_source`, `raw_prompt`.
 */
export const VerlStepRecordSchema = z.object({
  /** Group id for GRPO (verl's `uid`): the task id. */
  uid: z.string(),
  /** Trajectory id (verl-agent's `traj_uid`). */
  traj_uid: z.string(),
  /** Domain name. */
  data_source: z.string(),
  /** The prompt as chat messages (verl's `raw_prompt`). */
  raw_prompt: z.array(ChatMessageSchema),
  /** The response text to tokenise. */
  response: z.string(),
  /** This step's reward r_{t+1}. */
  rewards: z.number(),
  /** The episode reward, broadcast to every step. */
  episode_rewards: z.number(),
  episode_lengths: z.number().int(),
  /** True for real steps (verl-agent masks padding steps with false). */
  active_masks: z.boolean(),
  advantages: z.number(),
  /** Return targets (GAE); equal to `advantages` where the estimator has no value baseline. */
  returns: z.number(),
  old_log_probs: z.number().nullable(),
  ref_log_prob: z.number().nullable(),
  /** The prompt's token ids as the policy's engine evaluated them, where recorded. */
  prompt_token_ids: z.array(z.number().int()).nullable(),
  /** The response's token ids as sampled, where recorded (verl's `responses`). */
  response_token_ids: z.array(z.number().int()).nullable(),
  /** Each response token's behaviour log-probability, where recorded (verl's `old_log_probs` per token). */
  response_log_probs: z.array(z.number()).nullable(),
  step_index: z.number().int(),
  success: z.boolean(),
});
export type VerlStepRecord = z.infer<typeof VerlStepRecordSchema>;

/** An OpenAI chat-completion choice, as ART stores the trainable assistant turns. */
const ArtChoiceSchema = z.object({
  finish_reason: z.string(),
  index: z.number().int(),
  message: z.object({ role: z.literal('assistant'), content: z.string() }),
  logprobs: z.null(),
});

/** One ART `Trajectory`: the episode as one conversation. */
export const ArtTrajectorySchema = z.object({
  /** System and user messages as plain messages, the agent's turns as `Choice` objects (trainable). */
  messages_and_choices: z.array(z.union([ChatMessageSchema, ArtChoiceSchema])),
  /** The episode reward. */
  reward: z.number(),
  /** Numeric metrics: `advantage` (the episode's), `success` (0/1), `steps`. */
  metrics: z.record(z.string(), z.number()),
  /** Scalars: `task_id`, `trajectory_id`. */
  metadata: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
  logs: z.array(z.string()),
});

/** ART: one line per task group, an ART `TrajectoryGroup` (`trajectories`, `metadata`, `exceptions`). */
export const ArtTrajectoryGroupRecordSchema = z.object({
  trajectories: z.array(ArtTrajectorySchema),
  metadata: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
  exceptions: z.array(z.unknown()),
});
export type ArtTrajectoryGroupRecord = z.infer<typeof ArtTrajectoryGroupRecordSchema>;

/** How exporters render prompts and completions. */
export interface ExportOptions extends AgentPromptOptions {}

function isMessages(value: unknown): value is ChatMessage[] {
  return ChatMessageSchema.array().safeParse(value).success;
}

/** Token ids a policy recorded for one decision. */
interface RecordedTokens {
  prompt: number[] | null;
  completion: number[] | null;
  logprobs: number[] | null;
}

const ids = (value: unknown): number[] | null =>
  Array.isArray(value) && value.every((id) => Number.isInteger(id)) ? (value as number[]) : null;

/**
 * The tokens in `policyInfo.llm`: a sequence (`prompt`, `completion`, per-token `behaviour`)
 * or a choice among candidates (`prompt`, `candidates`, `choice`; the chosen candidate's ids,
 * and no per-token log-probabilities: the choice's is the step's `logprob`).
 */
function recordedTokens(info: Record<string, unknown> | undefined): RecordedTokens {
  const record = info?.llm as Record<string, unknown> | undefined;
  if (!record || typeof record !== 'object')
    return { prompt: null, completion: null, logprobs: null };
  if (record.kind === 'choice') {
    const candidates = Array.isArray(record.candidates) ? record.candidates : [];
    const choice = typeof record.choice === 'number' ? candidates[record.choice] : undefined;
    return { prompt: ids(record.prompt), completion: ids(choice), logprobs: null };
  }
  const behaviour = record.behaviour;
  return {
    prompt: ids(record.prompt),
    completion: ids(record.completion),
    logprobs:
      Array.isArray(behaviour) && behaviour.every((value) => typeof value === 'number')
        ? (behaviour as number[])
        : null,
  };
}

/** The prompt and completion of one step: what the policy was shown and wrote. */
function stepConversation(
  scored: ScoredRollout,
  stepIndex: number,
  options: ExportOptions,
): { prompt: ChatMessage[]; completion: string; tokens: RecordedTokens } {
  const step = scored.rollout.steps[stepIndex]!;
  const recorded = step.policyInfo;
  const prompt = isMessages(recorded?.messages)
    ? recorded.messages
    : buildAgentMessages(
        scored.rollout.task,
        step.observation,
        scored.rollout.steps.slice(0, stepIndex).map((previous) => previous.action),
        step.candidates,
        options,
      );
  const completion =
    typeof recorded?.output === 'string'
      ? recorded.output
      : formatAgentAnswer(step.action, options.answerFormat);
  return { prompt, completion, tokens: recordedTokens(recorded) };
}

/** TRL records of `rollouts`, one per step. */
export function toTrlRecords(
  rollouts: readonly ScoredRollout[],
  options: ExportOptions,
): TrlStepRecord[] {
  return rollouts.flatMap((scored) =>
    scored.rollout.steps.map((step, stepIndex) => {
      const { prompt, completion, tokens } = stepConversation(scored, stepIndex, options);
      return {
        prompt,
        completion: [{ role: 'assistant' as const, content: completion }],
        reward: scored.rollout.totalReward,
        advantage: scored.advantages[stepIndex]!,
        step_reward: step.reward,
        logprob: scored.behaviourLogprobs?.[stepIndex] ?? step.logprob ?? null,
        prompt_token_ids: tokens.prompt,
        completion_token_ids: tokens.completion,
        completion_logprobs: tokens.logprobs,
        task_id: scored.rollout.task.id,
        group_id: scored.rollout.groupId,
        trajectory_id: scored.rollout.id,
        step_index: stepIndex,
        success: scored.rollout.success,
      };
    }),
  );
}

/** verl records of `rollouts`, one per step. */
export function toVerlRecords(
  rollouts: readonly ScoredRollout[],
  options: ExportOptions,
): VerlStepRecord[] {
  return rollouts.flatMap((scored) =>
    scored.rollout.steps.map((step, stepIndex) => {
      const { prompt, completion, tokens } = stepConversation(scored, stepIndex, options);
      const advantage = scored.advantages[stepIndex]!;
      return {
        uid: scored.rollout.groupId,
        traj_uid: scored.rollout.id,
        data_source: scored.rollout.task.domain,
        raw_prompt: prompt,
        response: completion,
        rewards: step.reward,
        episode_rewards: scored.rollout.totalReward,
        episode_lengths: scored.rollout.steps.length,
        active_masks: true,
        advantages: advantage,
        returns: scored.returns?.[stepIndex] ?? advantage,
        old_log_probs: scored.behaviourLogprobs?.[stepIndex] ?? step.logprob ?? null,
        ref_log_prob: scored.referenceLogprobs?.[stepIndex] ?? null,
        prompt_token_ids: tokens.prompt,
        response_token_ids: tokens.completion,
        response_log_probs: tokens.logprobs,
        step_index: stepIndex,
        success: scored.rollout.success,
      };
    }),
  );
}

/**
 * ART trajectory groups of `rollouts`, one per group. Each episode is one conversation: the
 * first step's system and user messages, then for every step the agent's answer (a `Choice`)
 * followed by the next observation's user message.
 */
export function toArtRecords(
  rollouts: readonly ScoredRollout[],
  options: ExportOptions,
): ArtTrajectoryGroupRecord[] {
  const groups = new Map<string, ScoredRollout[]>();
  for (const scored of rollouts) {
    const list = groups.get(scored.rollout.groupId);
    if (list) list.push(scored);
    else groups.set(scored.rollout.groupId, [scored]);
  }
  return [...groups].map(([groupId, members]) => ({
    trajectories: members.map((scored) => {
      const messages: ArtTrajectoryGroupRecord['trajectories'][number]['messages_and_choices'] = [];
      scored.rollout.steps.forEach((step, stepIndex) => {
        const { prompt, completion } = stepConversation(scored, stepIndex, options);
        if (stepIndex === 0) messages.push(...prompt);
        else messages.push({ role: 'user', content: prompt.at(-1)!.content });
        messages.push({
          finish_reason: 'stop',
          index: 0,
          message: { role: 'assistant', content: completion },
          logprobs: null,
        });
        if (step.done)
          messages.push({ role: 'user', content: scored.rollout.finalObservation.text });
      });
      return {
        messages_and_choices: messages,
        reward: scored.rollout.totalReward,
        metrics: {
          advantage: scored.advantages[0] ?? 0,
          success: scored.rollout.success ? 1 : 0,
          steps: scored.rollout.steps.length,
        },
        metadata: { task_id: scored.rollout.task.id, trajectory_id: scored.rollout.id },
        logs: [],
      };
    }),
    metadata: { group_id: groupId },
    exceptions: [],
  }));
}

/** Writes TRL records to `file` (JSONL, atomically); returns the number of lines. */
export function exportTrl(
  file: string,
  rollouts: readonly ScoredRollout[],
  options: ExportOptions,
): Promise<number> {
  return writeJsonl(file, TrlStepRecordSchema, toTrlRecords(rollouts, options));
}

/** Writes verl records to `file` (JSONL, atomically); returns the number of lines. */
export function exportVerl(
  file: string,
  rollouts: readonly ScoredRollout[],
  options: ExportOptions,
): Promise<number> {
  return writeJsonl(file, VerlStepRecordSchema, toVerlRecords(rollouts, options));
}

/** Writes ART trajectory groups to `file` (JSONL, atomically); returns the number of lines. */
export function exportArt(
  file: string,
  rollouts: readonly ScoredRollout[],
  options: ExportOptions,
): Promise<number> {
  return writeJsonl(file, ArtTrajectoryGroupRecordSchema, toArtRecords(rollouts, options));
}
