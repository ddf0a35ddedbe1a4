/**
 * The domain's prompt parts; core assembles the experience-model, agent and task-generation
 * prompts around them.
 */
import type { DomainPrompts } from '@dreamgym/core';
import { notImplemented } from './not-implemented.js';

const stub = (part: keyof DomainPrompts, what: string) => () => {
  throw notImplemented(`prompts.${part}`, 'src/prompts.ts', what, 6);
};

/** The prompt parts of MiniWoB++. Replace each getter with its text. */
export const miniwobPrompts: DomainPrompts = {
  get environmentDescription(): string {
    return stub(
      'environmentDescription',
      'describe the environment and how its states look, for the experience model',
    )();
  },
  get agentInstructions(): string {
    return stub('agentInstructions', 'say how the agent acts: the action grammar and an example')();
  },
  get taskGenerationGuidance(): string {
    return stub(
      'taskGenerationGuidance',
      'say what makes a good new task in this domain, for the LLM task generator',
    )();
  },
};
