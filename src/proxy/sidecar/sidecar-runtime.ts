/**
 * What a server-side sidecar runs beside its proxy, once its configuration is read: a JSON
 * logger on stderr at the configuration's level, and the app's active check, started, gating
 * `/readyz` and logging each change of the app's state. `evenlb proxy --sidecar` and the demo's
 * sidecar pods start a sidecar through it, so both run the same thing. The check's timers never
 * keep the process alive; `appHealth.close()` stops it.
 */
import { destination, type Logger, pino } from 'pino';
import type { Clock } from '../../core/clock.js';
import type { ProxyOptions } from '../proxy-server.js';
import { AppHealth } from './app-health.js';
import type { SidecarSetup } from './sidecar-config.js';

/** The sidecar's logger and app check, and the proxy options that wire them in. */
export interface SidecarRuntime {
  readonly logger: Logger;
  readonly appHealth: AppHealth;
  /** For `ProxyServer.start`: the logger, and the app check as a readiness condition. */
  readonly proxyOptions: ProxyOptions;
}

/**
 * Starts the app check of `setup` and returns it with the logger and the proxy options.
 *
 * @example
 * const { proxyOptions } = startSidecarRuntime(loadSidecarConfigFile(file), systemClock);
 * const proxy = await ProxyServer.start(setup.config, proxyOptions);
 */
export function startSidecarRuntime(setup: SidecarSetup, clock: Clock): SidecarRuntime {
  const logger = pino({ level: setup.config.logLevel }, destination(2));
  const appHealth = new AppHealth(setup.app, setup.appCheck, clock, (state) => {
    if (state.ready) logger.info({ app: setup.options.app }, 'app answers: ready');
    else logger.warn({ app: setup.options.app, reason: state.reason }, 'app not answering: not ready');
  });
  appHealth.start();
  return { logger, appHealth, proxyOptions: { logger, readiness: appHealth } };
}
