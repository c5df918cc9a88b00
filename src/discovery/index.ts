/** Discovery: the EndpointSource contract and its implementations. */
export * from './endpoint-source.js';
export * from './kubernetes/index.js';
export * from './static-endpoint-source.js';
