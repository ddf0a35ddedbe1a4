/**
 * A tool-calling agent on the `openai` package and the official MCP TypeScript client.
 *
 * It knows nothing of DreamGym: its model endpoint comes from OPENAI_BASE_URL and
 * OPENAI_API_KEY (as the `openai` package reads them), its model name from OPENAI_MODEL, and its
 * tools from the MCP server at MCP_URL. It plays until a tool says the episode is over, the
 * model answers without a tool call, or MAX_TURNS turns have passed.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import OpenAI from 'openai';

const model = process.env.OPENAI_MODEL ?? 'default';
const maxTurns = Number(process.env.MAX_TURNS ?? '4');
const openai = new OpenAI();
const mcp = new Client({ name: 'typescript-agent', version: '1.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL!));
await mcp.connect(transport);

const { tools } = await mcp.listTools();
const functions = tools.map((tool) => ({
  type: 'function' as const,
  function: {
    name: tool.name,
    description: tool.description ?? '',
    parameters: tool.inputSchema as Record<string, unknown>,
  },
}));
const text = (result: { content?: unknown }) =>
  ((result.content as Array<{ text?: string }> | undefined)?.[0]?.text ?? '') as string;
const first = await mcp.callTool({ name: 'observe', arguments: {} });
const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
  { role: 'system', content: mcp.getInstructions() ?? 'Use the tools.' },
  { role: 'user', content: text(first) },
];
for (let turn = 0; turn < maxTurns; turn += 1) {
  const answer = await openai.chat.completions.create({
    model,
    messages,
    tools: functions,
    tool_choice: 'required',
    max_tokens: 48,
  });
  const message = answer.choices[0]!.message;
  messages.push(message);
  if (!message.tool_calls?.length) break;
  let over = false;
  for (const call of message.tool_calls) {
    if (call.type !== 'function') continue;
    const result = await mcp.callTool({
      name: call.function.name,
      arguments: JSON.parse(call.function.arguments || '{}') as Record<string, unknown>,
    });
    messages.push({ role: 'tool', tool_call_id: call.id, content: text(result) });
    over ||= (result.structuredContent as { done?: boolean } | undefined)?.done === true;
  }
  if (over) break;
}
await transport.terminateSession();
await mcp.close();
