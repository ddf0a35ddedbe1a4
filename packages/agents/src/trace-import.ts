/**
 * Captured traces of a deployed agent as offline trajectories for the replay buffer (what
 * `dreamgym data import` does). A trace is a JSONL file of the capture's {@link ModelCall}s
 * (each written from `onCall` as `JSON.stringify(call)`), optionally with outcome lines `{"episodeId", "reward", "success"}`
 * that the application appends when it learns how an episode went.
 *
 * Calls are grouped into conversations: by `episodeId` where the agent ran inside
 * `capture.episode`, otherwise by their messages (a call whose messages extend an earlier call's
 * continues that conversation). Each call of the `act` tool (the tool name and its argument are
 * options) becomes a step: the state is what the agent read before it (the task's first
 * observation, then the previous action's tool result; the first user message is split at its
 * first blank line into the instruction and that observation, as `EnvironmentEpisode.prompt`
 * writes them), the action is the argument, and the
 * next state is the tool result the next call carries back. Messages must be in the OpenAI chat
 * format, as the fetch capture, the trace processor and the middleware over OpenAI-compatible
 * providers record them. Rewards come from outcome lines (at the last step, the paper's
 * outcome reward); an episode without one is imported with reward 0, unsuccessful, and
 * `meta.outcome: "unknown"`.
 */
import {
  DatasetFormatError,
  type Observation,
  type Step,
  type Trajectory,
  TrajectorySchema,
} from '@dreamgym/core';
import { parseRecord, readJsonlLines } from '@dreamgym/core/mdp';
import { z } from 'zod';
import type { EnvironmentEpisode } from './environment-episode.js';

/** One line of a captured trace: a {@link ModelCall} as JSON. */
export const ModelCallRecordSchema = z.object({
  episodeId: z.string().nullish(),
  model: z.string(),
  messages: z.array(z.unknown()),
  tools: z.array(z.unknown()),
  content: z.string().nullable(),
  toolCalls: z.array(z.object({ id: z.string(), name: z.string(), arguments: z.string() })),
  finishReason: z.string(),
  promptTokenIds: z.array(z.number().int()).optional(),
  completionTokenIds: z.array(z.number().int()).optional(),
  logprobs: z.array(z.number()).optional(),
  milliseconds: z.number(),
  overheadMilliseconds: z.number(),
});

/** An outcome line: how the episode `episodeId` went, written by the application. */
export const EpisodeOutcomeSchema = z.object({
  episodeId: z.string().min(1),
  reward: z.number().finite(),
  /** Default: reward > 0. */
  success: z.boolean().optional(),
  /**
   * What the last action led to, as the agent would read it. A trace has it only when a later
   * call of the agent carried it back, which a loop that stops after the last action (or a
   * capture that answered for an ended episode) never makes: without it, the last step has no
   * next state and the replay buffer leaves it out.
   */
  finalObservation: z.string().optional(),
});
export type EpisodeOutcome = z.infer<typeof EpisodeOutcomeSchema>;

/** The outcome line of an episode played through an {@link EnvironmentEpisode}. */
export function episodeOutcome(episodeId: string, episode: EnvironmentEpisode): EpisodeOutcome {
  const last = episode.steps.at(-1);
  return {
    episodeId,
    reward: episode.reward,
    success: episode.success,
    ...(last ? { finalObservation: last.observation } : {}),
  };
}

/** Options of {@link importTraces}. */
export interface TraceImportOptions {
  /** The domain the trajectories' tasks belong to (the adapter's name). */
  domain: string;
  /** The tool whose calls are the environment's actions. Default `act`. */
  tool?: string;
  /** The argument of that tool that holds the action. Default `action`. */
  argument?: string;
}

/** What {@link importTraces} found. */
export interface TraceImport {
  trajectories: Trajectory[];
  /** Model calls read. */
  calls: number;
  /** Conversations without any call of the tool, not imported. */
  withoutActions: number;
  /** Trajectories whose last action's result is unknown (see `EpisodeOutcome.finalObservation`). */
  withoutFinalObservation: number;
}

/** A call with where it was read. */
interface LocatedCall {
  call: z.infer<typeof ModelCallRecordSchema>;
  file: string;
  line: number;
}

/** Reads trace files and turns their conversations into offline trajectories. */
export async function importTraces(
  files: readonly string[],
  options: TraceImportOptions,
): Promise<TraceImport> {
  const calls: LocatedCall[] = [];
  const outcomes = new Map<string, EpisodeOutcome>();
  for (const file of files) {
    for await (const { line, value } of readJsonlLines(file)) {
      const isOutcome =
        typeof value === 'object' && value !== null && 'reward' in value && !('messages' in value);
      if (isOutcome) {
        const outcome = parseRecord(EpisodeOutcomeSchema, value, { file, line });
        outcomes.set(outcome.episodeId, outcome);
      } else {
        calls.push({ call: parseRecord(ModelCallRecordSchema, value, { file, line }), file, line });
      }
    }
  }
  const trajectories: Trajectory[] = [];
  let withoutActions = 0;
  for (const conversation of conversations(calls)) {
    const trajectory = toTrajectory(conversation, options, outcomes);
    if (trajectory) trajectories.push(trajectory);
    else withoutActions += 1;
  }
  const withoutFinalObservation = trajectories.filter(
    (trajectory) => !trajectory.finalObservation,
  ).length;
  return { trajectories, calls: calls.length, withoutActions, withoutFinalObservation };
}

/** Calls grouped by episode, or by the messages they continue. */
function conversations(calls: readonly LocatedCall[]): LocatedCall[][] {
  const byEpisode = new Map<string, LocatedCall[]>();
  const open: LocatedCall[][] = [];
  const groups: LocatedCall[][] = [];
  for (const located of calls) {
    const id = located.call.episodeId;
    if (id) {
      let group = byEpisode.get(id);
      if (!group) {
        group = [];
        byEpisode.set(id, group);
        groups.push(group);
      }
      group.push(located);
      continue;
    }
    const messages = located.call.messages.map((message) => JSON.stringify(message));
    const continued = open.find((group) => {
      const last = group.at(-1)!.call.messages;
      return (
        last.length < messages.length &&
        last.every((message, index) => JSON.stringify(message) === messages[index])
      );
    });
    if (continued) continued.push(located);
    else {
      const group = [located];
      open.push(group);
      groups.push(group);
    }
  }
  return groups;
}

/** The text of an OpenAI chat message's content (a string, or parts with `text`). */
function messageText(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  return content
    .map((part) => (typeof part?.text === 'string' ? (part.text as string) : ''))
    .join('');
}

const ENDED = '\n(The episode has ended.)';
const ACTIONS = '\nAdmissible actions: ';

/** A tool result or prompt as an observation: the admissible actions the act tool lists. */
function toObservation(text: string): Observation {
  const body = text.endsWith(ENDED) ? text.slice(0, -ENDED.length) : text;
  const at = body.lastIndexOf(ACTIONS);
  if (at < 0) return { text: body };
  return {
    text: body.slice(0, at),
    actions: body
      .slice(at + ACTIONS.length)
      .split(', ')
      .filter((action) => action.length > 0),
  };
}

function formatError(message: string, where: LocatedCall, field: string): DatasetFormatError {
  return new DatasetFormatError(message, { file: where.file, line: where.line, field });
}

/** One conversation as a trajectory; undefined when it holds no call of the tool. */
function toTrajectory(
  conversation: readonly LocatedCall[],
  options: TraceImportOptions,
  outcomes: ReadonlyMap<string, EpisodeOutcome>,
): Trajectory | undefined {
  const toolName = options.tool ?? 'act';
  const argument = options.argument ?? 'action';
  const first = conversation[0]!;
  const results = new Map<string, string>();
  for (const { call } of conversation) {
    for (const message of call.messages as Array<Record<string, unknown>>) {
      if (message?.role !== 'tool' || typeof message.tool_call_id !== 'string') continue;
      const text = messageText(message.content);
      if (text !== undefined) results.set(message.tool_call_id, text);
    }
  }
  const prompt = (first.call.messages as Array<Record<string, unknown>>).find(
    (message) => message?.role === 'user',
  );
  const promptText = prompt ? messageText(prompt.content) : undefined;
  if (promptText === undefined) {
    throw formatError(
      'The call has no user message in the OpenAI chat format ({"role": "user", "content": ...}): the task cannot be read. Capture with capture.fetch, the trace processor, or the middleware over an OpenAI-compatible provider.',
      first,
      'messages',
    );
  }
  const split = promptText.indexOf('\n\n');
  const instruction = split < 0 ? promptText : promptText.slice(0, split);
  const start = toObservation(split < 0 ? promptText : promptText.slice(split + 2));

  const actions: Array<{ action: string; id: string; where: LocatedCall }> = [];
  for (const located of conversation) {
    for (const [index, toolCall] of located.call.toolCalls.entries()) {
      const field = `toolCalls.${index}`;
      if (toolCall.name !== toolName) {
        throw formatError(
          `A call of the tool "${toolCall.name}", not of "${toolName}": name the environment's tool with --tool.`,
          located,
          `${field}.name`,
        );
      }
      let input: unknown;
      try {
        input = JSON.parse(toolCall.arguments);
      } catch {
        throw formatError(
          `The arguments ${JSON.stringify(toolCall.arguments.slice(0, 80))} are not JSON.`,
          located,
          `${field}.arguments`,
        );
      }
      const action = (input as Record<string, unknown> | null)?.[argument];
      if (typeof action !== 'string') {
        throw formatError(
          `The arguments have no string "${argument}": name the action's argument with --argument.`,
          located,
          `${field}.arguments`,
        );
      }
      actions.push({ action: action.trim(), id: toolCall.id, where: located });
    }
  }
  if (actions.length === 0) return undefined;

  const episodeId = first.call.episodeId ?? undefined;
  const outcome = episodeId === undefined ? undefined : outcomes.get(episodeId);
  const steps: Step[] = [];
  let observation = start;
  let finalObservation: Observation | undefined;
  for (const [index, { action, id, where }] of actions.entries()) {
    const last = index === actions.length - 1;
    const result = results.get(id);
    if (result === undefined && !last) {
      throw formatError(
        `No later call carries the result of tool call ${id}: the trace misses calls of this conversation.`,
        where,
        'toolCalls',
      );
    }
    steps.push({
      observation,
      action,
      reward: last ? (outcome?.reward ?? 0) : 0,
      done: last,
      ...(result?.startsWith('Invalid action:') ? { info: { invalidAction: true } } : {}),
    });
    if (result !== undefined) {
      observation = toObservation(result);
      if (last) finalObservation = observation;
    }
  }
  if (!finalObservation && outcome?.finalObservation !== undefined) {
    finalObservation = toObservation(outcome.finalObservation);
  }
  const source = `${first.file}:${first.line}`;
  return TrajectorySchema.parse({
    id: `import:${episodeId ?? source}`,
    task: {
      id: `import:${episodeId ?? source}`,
      domain: options.domain,
      instruction,
      origin: 'seed',
      initialObservation: start,
      meta: { importedFrom: source, model: first.call.model },
    },
    steps,
    ...(finalObservation ? { finalObservation } : {}),
    source: 'offline',
    success: outcome ? (outcome.success ?? outcome.reward > 0) : false,
    meta: {
      importedFrom: source,
      calls: conversation.length,
      ...(episodeId === undefined ? {} : { episodeId }),
      ...(outcome ? {} : { outcome: 'unknown' }),
    },
  });
}
