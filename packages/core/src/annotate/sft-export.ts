/**
 * `exportExperienceSft`: the experience-model SFT set as chat JSONL. Each example is one
 * distinct offline transition with its teacher trace: the experience model's own prompt (the
 * same format, demonstrations retrieved as at inference, the episode's real history) and, as
 * the assistant's answer, the format's JSON with the reasoning R* first and the next state
 * after it, so a causal LM trained on the answer minimises the paper's loss
 * `-log P(R* | s, a, H, D) - log P(s' | s, a, R*, H, D)`.
 */
import { z } from 'zod';
import type { ParsedAction } from '../adapter.js';
import {
  type ExperiencePromptFormat,
  standardExperienceFormat,
} from '../experience/experience-format.js';
import type { TokenCounter } from '../experience/history-window.js';
import { writeJsonl } from '../mdp/jsonl.js';
import type { Trajectory } from '../mdp/schemas.js';
import { trajectoryToTransitions } from '../mdp/transitions.js';
import type { TransitionRetriever } from '../replay/retriever.js';
import { type ReasoningTrace, transitionKey } from './reasoning-annotator.js';

/** One chat example of the SFT set. */
export const ExperienceSftExampleSchema = z.object({
  /** System and user messages (the prompt), then the assistant's target answer. */
  messages: z
    .array(z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() }))
    .min(2),
  meta: z.object({
    key: z.string(),
    trajectoryId: z.string(),
    stepIndex: z.number().int().min(0),
    taskId: z.string(),
    /** The prompt format's name. */
    format: z.string(),
    /** Ids of the demonstrations shown. */
    demoIds: z.array(z.string()),
    /** The teacher that wrote the reasoning. */
    teacher: z.string(),
  }),
});
export type ExperienceSftExample = z.infer<typeof ExperienceSftExampleSchema>;

/** Options of {@link exportExperienceSft}. */
export interface ExportExperienceSftOptions {
  /** The offline trajectories the traces were written for. */
  trajectories: Iterable<Trajectory> | AsyncIterable<Trajectory>;
  /** Traces by transition key ({@link readReasoningTraces}). */
  traces: ReadonlyMap<string, ReasoningTrace>;
  /** The domain's `prompts.environmentDescription`. */
  environmentDescription: string;
  /** Output file (written atomically). */
  file: string;
  /** Prompt format; use the one the fine-tuned model will be run with. Default standard. */
  format?: ExperiencePromptFormat;
  /** Where demonstrations come from (excluding each example's own trajectory); none without it. */
  retriever?: TransitionRetriever;
  /** Demonstrations per example. Default 4. */
  k?: number;
  /** The domain's grammar, to write actions in canonical form as at inference. */
  parseAction?: (text: string) => ParsedAction;
  /** Domain name for the retrieval filter. */
  domain?: string;
  /** History and demonstration budgets, as the experience model gets them. */
  historyTokens?: number;
  demoTokens?: number;
  countTokens?: TokenCounter;
}

/** What an export wrote. */
export interface SftExportCounts {
  /** Examples written. */
  examples: number;
  /** Transitions skipped for having no trace yet. */
  missingTrace: number;
  /** Transitions identical to an earlier one. */
  duplicates: number;
}

/** Writes the SFT set; see the module doc. */
export async function exportExperienceSft(
  options: ExportExperienceSftOptions,
): Promise<SftExportCounts> {
  const format = options.format ?? standardExperienceFormat;
  const counts: SftExportCounts = { examples: 0, missingTrace: 0, duplicates: 0 };
  const seen = new Set<string>();
  const k = options.retriever ? (options.k ?? 4) : 0;
  const budget = {
    ...(options.historyTokens === undefined ? {} : { historyTokens: options.historyTokens }),
    ...(options.demoTokens === undefined ? {} : { demoTokens: options.demoTokens }),
    ...(options.countTokens ? { countTokens: options.countTokens } : {}),
  };
  async function* examples(): AsyncGenerator<ExperienceSftExample> {
    for await (const trajectory of options.trajectories) {
      const trajectoryId = trajectory.id ?? trajectory.task.id;
      for (const transition of trajectoryToTransitions(trajectory, { trajectoryId })) {
        const key = transitionKey(transition);
        if (seen.has(key)) {
          counts.duplicates += 1;
          continue;
        }
        seen.add(key);
        const trace = options.traces.get(key);
        if (!trace) {
          counts.missingTrace += 1;
          continue;
        }
        let action = transition.action;
        try {
          if (options.parseAction) action = options.parseAction(action).text;
        } catch {
          // Recorded actions outside the grammar are kept as they are, as in evaluation.
        }
        const demos =
          k > 0 && options.retriever
            ? await options.retriever.search(
                { state: transition.state, action, instruction: transition.instruction },
                k,
                {
                  ...(options.domain ? { domain: options.domain } : {}),
                  excludeTrajectoryIds: [trajectoryId],
                },
              )
            : [];
        const prompt = format.build(
          options.environmentDescription,
          {
            task: trajectory.task,
            history: trajectory.steps.slice(0, transition.stepIndex),
            state: transition.state,
            action,
            demos,
          },
          budget,
        );
        counts.examples += 1;
        yield {
          messages: [
            ...prompt.messages,
            {
              role: 'assistant',
              content: format.target({
                reasoning: trace.reasoning,
                nextState: transition.nextState.text,
                done: transition.done,
                success:
                  transition.done &&
                  (transition.reward > 0 || transition.trajectorySuccess === true),
                reward: transition.reward,
              }),
            },
          ],
          meta: {
            key,
            trajectoryId,
            stepIndex: transition.stepIndex,
            taskId: transition.taskId,
            format: format.name,
            demoIds: prompt.demoIds,
            teacher: trace.teacher,
          },
        };
      }
    }
  }
  await writeJsonl(options.file, ExperienceSftExampleSchema, examples());
  return counts;
}
