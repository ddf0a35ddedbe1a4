/**
 * The real ALFWorld environment: the ALFWorld/TextWorld engine (Python) behind an
 * AgentGym-protocol HTTP server, the TypeScript connector that starts and drives it, and
 * offline exploration on it.
 */
export {
  AlfworldRealEnvironment,
  alfworldGameOf,
  NOTHING_HAPPENS,
} from './alfworld-real-environment.js';
export { connectAlfworldReal } from './connect.js';
export {
  type ExploreAlfworldOptions,
  ExploreAlfworldOptionsSchema,
  type ExploreAlfworldSummary,
  exploreAlfworld,
} from './explore.js';
export {
  type AlfworldRealOptions,
  type AlfworldRealOptionsInput,
  AlfworldRealOptionsSchema,
} from './options.js';
export {
  type AlfworldEpisodePayload,
  type AlfworldHealth,
  AlfworldProtocolClient,
  type AlfworldResetRequest,
} from './protocol-client.js';
export {
  ALFWORLD_SERVER_MODULE,
  AlfworldServerProcess,
  alfworldServerDirectory,
  defaultAlfworldPython,
} from './server-process.js';
