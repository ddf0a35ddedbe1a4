import { createServer } from 'node:http';
import { ChatCompletionRequestSchema, chatCompletionBody, chatMessageText, OpenAIHttpError, parseOpenAIRequest, readRequestBody, sendJson, sendOpenAIError } from '@dreamgym/openai-wire';

const server = createServer(async (request, response) => {
  try {
    const body = parseOpenAIRequest(await readRequestBody(request, 1_000_000), ChatCompletionRequestSchema); // else a 400 that names the field
    const content = `You said: ${chatMessageText(body.messages.at(-1)?.content)}`;
    sendJson(response, 200, chatCompletionBody({ id: 'chatcmpl-1', created: Math.floor(Date.now() / 1000), model: body.model ?? 'echo', content, finishReason: 'stop', logprobs: null, usage: null }));
  } catch (error) {
    sendOpenAIError(response, error instanceof OpenAIHttpError ? error : new OpenAIHttpError(500, String(error)));
  }
});
await new Promise<void>((resolve) => server.listen(Number(process.env.PORT ?? 8080), '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`; // an OpenAI client's baseURL
const ask = (messages: unknown) => fetch(`${url}/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'echo', messages }) }).then((r) => r.json());
console.log((await ask([{ role: 'user', content: 'Hi!' }])).choices[0].message.content); // You said: Hi!
console.log((await ask([])).error.message); // Invalid request (field `messages`): ...
server.close();
