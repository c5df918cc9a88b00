/**
 * @kubernetes/client-node is an optional peer dependency: evenlb talks to the API server on
 * undici itself and needs client-node only to read a kubeconfig (its exec plugins, OIDC and
 * token-file authenticators). In a pod (service-account token and CA) or with an explicit
 * connection nothing else is needed, and `npm install evenlb` stays small. When a kubeconfig is
 * chosen and the package is missing, the error says so and gives the command to install it
 * (`EVENLB_MISSING_PACKAGE`); any other failure to load it is passed on as it is.
 */
import { createRequire } from 'node:module';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';

type ClientNode = typeof import('@kubernetes/client-node');

/** The optional peer's package name. */
export const CLIENT_NODE_PACKAGE = '@kubernetes/client-node';
/** The command that installs the version evenlb supports (1.x; 2.x needs undici 8 and Node 22). */
export const CLIENT_NODE_INSTALL = 'npm install @kubernetes/client-node@1';

/**
 * The error for `what` (a kubeconfig, a command) when client-node is not installed.
 *
 * @example
 * missingClientNode('kubeconfig /home/me/.kube/config').message;
 * // 'kubeconfig /home/me/.kube/config: reading a kubeconfig needs the optional package ...'
 */
export function missingClientNode(what: string): EvenlbError {
  return new EvenlbError(
    ErrorCodes.MISSING_PACKAGE,
    `${what}: reading a kubeconfig needs the optional package ${CLIENT_NODE_PACKAGE}, which is not installed; ` +
      `install it with \`${CLIENT_NODE_INSTALL}\` (in a pod, the service account needs no extra package)`,
    { details: { package: CLIENT_NODE_PACKAGE, install: CLIENT_NODE_INSTALL } },
  );
}

/** True when `err` says client-node itself cannot be found (not one of its own imports). */
function isClientNodeMissing(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as Error & { code?: unknown }).code;
  return (
    (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && err.message.includes(`'${CLIENT_NODE_PACKAGE}'`)
  );
}

/**
 * Loads @kubernetes/client-node for `what`; throws `EVENLB_MISSING_PACKAGE` when it is not
 * installed.
 *
 * @example
 * const { KubeConfig } = await importClientNode('kubeconfig ~/.kube/config');
 */
export async function importClientNode(what: string): Promise<ClientNode> {
  try {
    return await import('@kubernetes/client-node');
  } catch (err) {
    if (isClientNodeMissing(err)) throw missingClientNode(what);
    throw err;
  }
}

/**
 * True when client-node can be found from here (checked without loading it), for commands that
 * refuse to start rather than fail later.
 *
 * @example
 * if (config.type === 'kubeconfig' && !clientNodeInstalled()) throw missingClientNode(describeConnection(config));
 */
export function clientNodeInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve(CLIENT_NODE_PACKAGE);
    return true;
  } catch {
    return false;
  }
}
