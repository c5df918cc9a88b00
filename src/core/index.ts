/** The core vocabulary, re-exported. */
export * from './clock.js';
export * from './endpoint.js';
export * from './endpoint-set.js';
export * from './errors.js';
export * from './feature-gates.js';
export * from './host.js';
export * from './options.js';
export * from './random.js';
export * from './target.js';
