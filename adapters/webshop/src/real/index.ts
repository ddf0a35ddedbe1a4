/**
 * The real WebShop environment: a client of a running WebShop server in the AgentGym
 * WebShop protocol, and the `Environment` over it.
 */
export { connectWebshopReal } from './connect.js';
export {
  type WebshopRealOptions,
  type WebshopRealOptionsInput,
  WebshopRealOptionsSchema,
} from './options.js';
export {
  type WebshopAvailableActionsAnswer,
  WebshopConnectionError,
  WebshopProtocolClient,
  type WebshopRetryPolicy,
  WebshopServerAnswerError,
  type WebshopStateAnswer,
  type WebshopStepAnswer,
} from './protocol-client.js';
export { WebshopRealEnvironment, webshopSessionOf } from './webshop-real-environment.js';
