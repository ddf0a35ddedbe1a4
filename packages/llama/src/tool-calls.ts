/**
 * Tool calling for `dreamgym model serve` on models whose chat template knows no tools
 * (SmolLM2's ChatML among them), in the generic JSON format llama.cpp's server uses for such
 * models: the tools are described in the system message, and the answer is one JSON object,
 * `{"tool_call": {"name": ..., "arguments": {...}}}` or `{"response": "..."}`, constrained by
 * a grammar built from the tools' parameter schemas, so it always parses. `tool_choice`
 * `required` (or a named function) leaves only the tool-call form; `none` offers no tools.
 *
 * Earlier turns are written back the same way: an assistant's tool calls as the JSON it
 * answered, a tool's result as a user turn that names the tool.
 */

import { randomBytes } from 'node:crypto';
import type { ChatMessage } from '@dreamgym/core/models';
import { OpenAIHttpError } from '@dreamgym/openai-wire';

/** A function tool of a chat-completion request. */
export interface WireTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** `tool_choice` of a chat-completion request. */
export type WireToolChoice =
  | 'none'
  | 'auto'
  | 'required'
  | { type: 'function'; function: { name: string } };

/** A tool call of an assistant message. */
export interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A chat message of the request, tool calls and tool results included. */
export interface WireChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: WireToolCall[] | null;
  tool_call_id?: string | null;
}

/** The tools a request offers, after `tool_choice`: none, or some with the call required or not. */
export interface ToolOffer {
  tools: WireTool[];
  required: boolean;
}

/** What `tools` and `tool_choice` offer the model; undefined when no tool is offered. */
export function toolOffer(
  tools: readonly WireTool[] | null | undefined,
  choice: WireToolChoice | null | undefined,
): ToolOffer | undefined {
  if (!tools || tools.length === 0 || choice === 'none') return undefined;
  if (typeof choice === 'object' && choice !== null) {
    const named = tools.find((tool) => tool.function.name === choice.function.name);
    if (!named) {
      throw new OpenAIHttpError(
        400,
        `tool_choice names the function "${choice.function.name}", which is not among the tools (${tools.map((tool) => tool.function.name).join(', ')}).`,
        'invalid_request_error',
        'tool_choice',
      );
    }
    return { tools: [named], required: true };
  }
  return { tools: [...tools], required: choice === 'required' };
}

/** The conversation as the model reads it: tools described, tool turns written as text. */
export function toolConversation(
  messages: readonly WireChatMessage[],
  offer: ToolOffer | undefined,
): ChatMessage[] {
  const toolNames = new Map<string, string>();
  const conversation: ChatMessage[] = messages.map((message) => {
    if (message.role === 'tool') {
      const name = toolNames.get(message.tool_call_id ?? '') ?? 'the tool';
      return { role: 'user', content: `Result of ${name}:\n${message.content}` };
    }
    if (message.role === 'assistant' && message.tool_calls && message.tool_calls.length > 0) {
      for (const call of message.tool_calls) toolNames.set(call.id, call.function.name);
      const calls = message.tool_calls.map((call) =>
        JSON.stringify({
          tool_call: { name: call.function.name, arguments: parseArguments(call) },
        }),
      );
      return { role: 'assistant', content: calls.join('\n') };
    }
    return {
      role: message.role === 'developer' ? 'system' : message.role,
      content: message.content,
    };
  });
  if (!offer) return conversation;
  const instructions = toolInstructions(offer);
  const first = conversation[0];
  if (first?.role === 'system') {
    return [
      { role: 'system', content: `${first.content}\n\n${instructions}` },
      ...conversation.slice(1),
    ];
  }
  return [{ role: 'system', content: instructions }, ...conversation];
}

/** The JSON schema every answer follows when tools are offered. */
export function toolAnswerSchema(offer: ToolOffer): Record<string, unknown> {
  const calls = offer.tools.map((tool) => ({
    type: 'object',
    properties: {
      tool_call: {
        type: 'object',
        properties: {
          name: { const: tool.function.name },
          arguments: argumentSchema(tool),
        },
        required: ['name', 'arguments'],
        additionalProperties: false,
      },
    },
    required: ['tool_call'],
    additionalProperties: false,
  }));
  const answer = {
    type: 'object',
    properties: { response: { type: 'string' } },
    required: ['response'],
    additionalProperties: false,
  };
  const forms = offer.required ? calls : [...calls, answer];
  return forms.length === 1 ? forms[0]! : { anyOf: forms };
}

/**
 * The answer's text and tool calls, from the model's JSON answer. Text that is not one of
 * the forms (an answer cut by `max_tokens`) is returned as the text, with no tool call.
 */
export function parseToolAnswer(
  text: string,
  offer: ToolOffer,
): { content: string | null; toolCalls: WireToolCall[] } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { content: text, toolCalls: [] };
  }
  const value = parsed as {
    tool_call?: { name?: unknown; arguments?: unknown };
    response?: unknown;
  };
  const call = value.tool_call;
  if (
    call &&
    typeof call.name === 'string' &&
    offer.tools.some((tool) => tool.function.name === call.name)
  ) {
    return {
      content: null,
      toolCalls: [
        {
          id: `call_${randomBytes(12).toString('hex')}`,
          type: 'function',
          function: { name: call.name, arguments: JSON.stringify(call.arguments ?? {}) },
        },
      ],
    };
  }
  if (typeof value.response === 'string') return { content: value.response, toolCalls: [] };
  return { content: text, toolCalls: [] };
}

function toolInstructions(offer: ToolOffer): string {
  const described = offer.tools.map((tool) =>
    JSON.stringify({
      name: tool.function.name,
      ...(tool.function.description ? { description: tool.function.description } : {}),
      parameters: argumentSchema(tool),
    }),
  );
  const forms = offer.required
    ? 'Answer with JSON only: {"tool_call": {"name": <tool name>, "arguments": <arguments object>}}.'
    : 'Answer with JSON only: {"tool_call": {"name": <tool name>, "arguments": <arguments object>}} to call a tool, or {"response": <text>} to answer without one.';
  return `You can call these tools:\n${described.join('\n')}\n${forms}`;
}

/** A tool's parameter schema, without the keys a grammar has no use for. */
function argumentSchema(tool: WireTool): Record<string, unknown> {
  const { $schema: _schema, ...schema } = tool.function.parameters ?? {};
  if (Object.keys(schema).length === 0)
    return { type: 'object', properties: {}, additionalProperties: false };
  return schema;
}

function parseArguments(call: WireToolCall): unknown {
  try {
    return JSON.parse(call.function.arguments);
  } catch {
    return call.function.arguments;
  }
}
