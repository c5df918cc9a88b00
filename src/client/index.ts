/** Balancing clients: the undici BalancedAgent, the node:http agent and the webhook client. */
export * from './balanced-agent.js';
export {
  normalizeRouteKey,
  type RouteOptions,
  type RouteSpec,
  type RoutingOptions,
  type RoutingStats,
} from './client-routes.js';
export * from './http-agent.js';
export * from './webhook-client.js';
