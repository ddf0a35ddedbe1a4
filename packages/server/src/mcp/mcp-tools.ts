/**
 * The environment as MCP tools: `observe` (the task and what the agent sees now) and `act`
 * (one action in the domain's grammar, written out in the tool's description). An MCP
 * session plays one episode: it starts at the first tool call (on the task the session was
 * opened for, or one the task source draws), and it ends when the environment says done;
 * the {@link EpisodeRunner} then hands it to the task source, which is how the reward and the
 * end reach the trainer. The names avoid OpenEnv's reserved tool names (`reset`, `step`,
 * `state`, `close`): those stay the Gym-side messages.
 */
import type { EpisodeRunner } from '../episode-runner.js';
import type { ResetParameters, StepReply } from '../protocol/openenv-messages.js';

/** An MCP tool as `tools/list` returns it. */
export interface McpToolDefinition {
  name: string;
  title: string;
  description: string;
  inputSchema: { type: 'object'; properties: Record<string, unknown>; required?: string[] };
}

/** The result of `tools/call`, as MCP writes it. */
export interface McpToolResult {
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError: boolean;
}

/** The episode an MCP session plays: its runner and the task it was opened for. */
export interface McpEpisode {
  runner: EpisodeRunner;
  /** The `reset` of the episode's first tool call (task, episode id, seed). */
  start: ResetParameters;
}

/** The tools of an environment whose action grammar is `grammar` (the adapter's agent instructions). */
export function environmentTools(grammar: string): McpToolDefinition[] {
  return [
    {
      name: 'observe',
      title: 'Observe the environment',
      description:
        'Read the task and what the environment shows now (and the admissible actions where it lists them). The first call starts the episode.',
      inputSchema: { type: 'object', properties: {} },
    },
    {
      name: 'act',
      title: 'Act in the environment',
      description:
        `Take one action in the environment and read what follows: the new observation, the reward, and whether the episode has ended. ${grammar}`.trim(),
      inputSchema: {
        type: 'object',
        properties: {
          action: {
            type: 'string',
            description:
              "One action, written exactly as the environment's grammar says (for example one of the admissible actions it lists).",
          },
        },
        required: ['action'],
      },
    },
  ];
}

/** Raised for a call the tools cannot take (unknown tool, bad arguments): a JSON-RPC error. */
export class McpToolCallError extends Error {}

/** Runs `tools/call` on the session's episode. */
export async function callEnvironmentTool(
  episode: McpEpisode,
  name: unknown,
  args: unknown,
): Promise<McpToolResult> {
  if (name !== 'observe' && name !== 'act') {
    throw new McpToolCallError(`Unknown tool: ${String(name)}. The tools are "observe" and "act".`);
  }
  const { runner } = episode;
  try {
    let reply = runner.current;
    // The first tool call of a session starts its episode (a WebSocket session may have
    // started one already with a `reset` message).
    if (!reply) reply = await runner.reset(episode.start);
    if (name === 'observe') return toolResult(reply, describeObservation(reply, true));
    const action = (args as { action?: unknown } | undefined)?.action;
    if (typeof action !== 'string' || action.trim() === '') {
      throw new McpToolCallError('The act tool needs a non-empty string argument "action".');
    }
    if (reply.done) {
      return errorResult(
        `The episode ${reply.observation.metadata.episode_id} has ended (${reply.observation.metadata.success ? 'success' : 'failure'}): no more actions are taken. Open a new MCP session for another episode.`,
      );
    }
    const next = await runner.step({ action: action.trim() });
    return toolResult(next, describeObservation(next, false));
  } catch (error) {
    if (error instanceof McpToolCallError) throw error;
    // An environment's refusal is the tool's result (the model reads it), not a protocol error.
    return errorResult(error instanceof Error ? error.message : String(error));
  }
}

function toolResult(reply: StepReply, text: string): McpToolResult {
  const { observation } = reply;
  return {
    content: [{ type: 'text', text }],
    structuredContent: {
      episode_id: observation.metadata.episode_id,
      task_id: observation.metadata.task_id,
      instruction: observation.instruction,
      observation: observation.text,
      actions: observation.actions,
      reward: reply.reward,
      done: reply.done,
      success: observation.metadata.success,
      truncated: observation.metadata.truncated,
      invalid_action: observation.metadata.invalid_action,
      step: observation.metadata.step,
    },
    isError: false,
  };
}

function errorResult(text: string): McpToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/** What the model reads: the task (on `observe`), the observation, the actions, the outcome. */
function describeObservation(reply: StepReply, withTask: boolean): string {
  const { observation } = reply;
  const lines = withTask ? [`Task: ${observation.instruction}`, ''] : [];
  lines.push(observation.text);
  if (observation.actions.length > 0) {
    lines.push(`Admissible actions: ${observation.actions.join(', ')}`);
  }
  if (reply.reward !== null) lines.push(`Reward: ${reply.reward}`);
  if (reply.done) {
    lines.push(
      `(The episode has ended: ${observation.metadata.success ? 'success' : observation.metadata.truncated ? 'step limit reached' : 'failure'}.)`,
    );
  }
  return lines.join('\n');
}
