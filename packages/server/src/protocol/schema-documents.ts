/**
 * The documents generated from the zod schemas: `GET /schema` (OpenEnv's `SchemaResponse`:
 * JSON Schemas of the action, the observation and the state) and `GET /openapi.json` (the
 * HTTP API; `openenv validate` reads its `info.version` and paths to tell the server's mode).
 */
import { z } from 'zod';
import {
  ActionSchema,
  EnvironmentMetadataSchema,
  HealthResponseSchema,
  HttpStepRequestSchema,
  ObservationSchema,
  ResetParametersSchema,
  StateSchema,
  StepReplySchema,
} from './openenv-messages.js';

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output', title: string): JsonSchema {
  const { $schema: _dialect, ...document } = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
  }) as JsonSchema;
  return { title, ...document };
}

/** `GET /schema`: `{action, observation, state}` as JSON Schemas. */
export function schemaDocument(): {
  action: JsonSchema;
  observation: JsonSchema;
  state: JsonSchema;
} {
  return {
    action: jsonSchema(ActionSchema, 'input', 'DreamGymAction'),
    observation: jsonSchema(ObservationSchema, 'output', 'DreamGymObservation'),
    state: jsonSchema(StateSchema, 'output', 'DreamGymState'),
  };
}

const ErrorDetailSchema = z.object({ detail: z.unknown() });

/** `GET /openapi.json`: the HTTP API as OpenAPI 3.1, schemas generated from zod. */
export function openApiDocument(info: {
  title: string;
  version: string;
  description: string;
}): Record<string, unknown> {
  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
  const json = (name: string) => ({ 'application/json': { schema: ref(name) } });
  const errors = {
    '404': { description: 'Unknown episode', content: json('ErrorDetail') },
    '413': { description: 'Body larger than the payload limit', content: json('ErrorDetail') },
    '422': { description: 'Validation error', content: json('ErrorDetail') },
    '503': { description: 'At capacity or shutting down', content: json('ErrorDetail') },
  };
  return {
    openapi: '3.1.0',
    info,
    paths: {
      '/reset': {
        post: {
          tags: ['Environment Control'],
          summary: 'Start an episode (kept on the server under observation.metadata.episode_id)',
          requestBody: { required: false, content: json('ResetRequest') },
          responses: {
            '200': { description: 'Initial observation', content: json('StepResponse') },
            ...errors,
          },
        },
      },
      '/step': {
        post: {
          tags: ['Environment Control'],
          summary: 'Apply an action in the episode named by episode_id',
          requestBody: { required: true, content: json('StepRequest') },
          responses: {
            '200': { description: 'What followed', content: json('StepResponse') },
            ...errors,
          },
        },
      },
      '/state': {
        get: {
          tags: ['State Management'],
          summary: 'State of the HTTP episode named by ?episode_id= (a fresh state without it)',
          parameters: [
            { name: 'episode_id', in: 'query', required: false, schema: { type: 'string' } },
          ],
          responses: { '200': { description: 'Episode state', content: json('State') }, ...errors },
        },
      },
      '/metadata': {
        get: {
          tags: ['Environment Info'],
          responses: {
            '200': { description: 'Environment metadata', content: json('EnvironmentMetadata') },
          },
        },
      },
      '/health': {
        get: {
          tags: ['Health'],
          responses: { '200': { description: 'Healthy', content: json('HealthResponse') } },
        },
      },
      '/schema': {
        get: {
          tags: ['Schema'],
          responses: { '200': { description: 'Action, observation and state schemas' } },
        },
      },
      '/mcp': {
        post: {
          tags: ['MCP'],
          summary:
            'MCP over Streamable HTTP (JSON-RPC 2.0): initialize opens a session (Mcp-Session-Id), one episode; tools observe and act. Query: task_id, episode_id, seed',
          responses: {
            '200': { description: 'JSON-RPC response' },
            '202': { description: 'Notification accepted' },
          },
        },
        delete: {
          tags: ['MCP'],
          summary:
            'Ends the MCP session named by the Mcp-Session-Id header (its episode abandoned if unfinished)',
          responses: { '200': { description: 'Session ended' } },
        },
      },
      '/dreamgym/status': {
        get: {
          tags: ['DreamGym'],
          summary: 'Sessions, episodes, curriculum and replay buffer counts',
          responses: { '200': { description: 'Status' } },
        },
      },
    },
    components: {
      schemas: {
        ResetRequest: jsonSchema(ResetParametersSchema, 'input', 'ResetRequest'),
        StepRequest: jsonSchema(HttpStepRequestSchema, 'input', 'StepRequest'),
        StepResponse: jsonSchema(StepReplySchema, 'output', 'StepResponse'),
        State: jsonSchema(StateSchema, 'output', 'State'),
        EnvironmentMetadata: jsonSchema(EnvironmentMetadataSchema, 'output', 'EnvironmentMetadata'),
        HealthResponse: jsonSchema(HealthResponseSchema, 'output', 'HealthResponse'),
        ErrorDetail: jsonSchema(ErrorDetailSchema, 'output', 'ErrorDetail'),
      },
    },
  };
}
