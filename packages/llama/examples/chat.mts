import { LlamaChatModel, startLlamaServer } from '@dreamgym/llama';
import { z } from 'zod';

const model = await LlamaChatModel.load({ model: 'local' }); // or 'path/to/any.gguf'
const reply = await model.complete({ messages: [{ role: 'user', content: 'Hi!' }], logprobs: true });
const { value } = await model.completeStructured({
  messages: [{ role: 'user', content: 'Name a fruit.' }],
  schema: z.object({ fruit: z.string().max(20) }), schemaName: 'fruit', maxTokens: 40,
});
const { scores } = await model.scoreContinuations({ messages: [{ role: 'user', content: 'Go?' }], continuations: ['yes', 'no'] });
const server = await startLlamaServer({ model, port: 8080 }); // http://127.0.0.1:8080/v1
await server.close(); await model.dispose();
