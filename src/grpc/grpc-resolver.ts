/**
 * grpc-js resolvers for evenlb targets (`static:///`, `file:///`, `k8s:///`, and `dns:///` when
 * opted in), built on evenlb's endpoint sources, so a channel follows exactly what the
 * `BalancedAgent` and the proxy follow: ready / serving / terminating conditions, the last known
 * set while discovery fails, one shared watch per target.
 *
 * A resolver hands grpc-js two things. The addresses: the endpoints eligible for new calls
 * (ready ones; serving-and-terminating ones only when none is ready), so even grpc-js's own
 * `round_robin` and `pick_first` never send a call to a not-ready or terminating pod. And, as a
 * channel attribute the subchannels never see, the whole discovery snapshot with conditions,
 * weights, zones and status, which the `evenlb` policy balances on. Unless the channel sets
 * `grpc.service_config`, the resolver also supplies a service config choosing the `evenlb`
 * policy with the registration's defaults: changing the target is the one line a client changes.
 *
 * Sources are push-based; `updateResolution()` (grpc-js calls it when a connection drops)
 * re-delivers the current snapshot. Nothing is delivered while discovery is `pending`: calls
 * wait in grpc-js's queue (until their deadline) for the first answer.
 */
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { parseTarget } from '../core/target.js';
import type { DiscoverySnapshot } from '../discovery/endpoint-source.js';
import { EVENLB_POLICY_NAME } from './balancing-config.js';
import { toGrpcEndpoints } from './grpc-endpoints.js';
import type { ChannelOptions, GrpcModule, GrpcResolver, GrpcUri, ResolverListener } from './grpc-module.js';
import type { SharedSources, SourceLease } from './shared-sources.js';

type ServiceConfig = Extract<NonNullable<Parameters<ResolverListener>[2]>, { ok: true }>['value'];

/** Channel attribute carrying the `DiscoverySnapshot` (the prefix keeps it out of subchannel args). */
export const SNAPSHOT_ATTRIBUTE = 'grpc.internal.no_subchannel.evenlb.snapshot';
/** Channel attribute carrying the evenlb target URI (the channel's name in stats). */
export const TARGET_ATTRIBUTE = 'grpc.internal.no_subchannel.evenlb.target';

/** What the resolvers of one registration share. */
export interface ResolverContext {
  readonly grpc: GrpcModule;
  readonly sources: SharedSources;
  /** The `evenlb` config of the service config resolvers supply. */
  readonly defaultConfig: Readonly<Record<string, unknown>>;
  /** True once the registration is closed: resolvers then report an error. */
  closed(): boolean;
}

type ResolverConstructor = Parameters<GrpcModule['experimental']['registerResolver']>[1];

/**
 * The evenlb target URI of a grpc-js target (`{ scheme: 'k8s', path: 'web.prod:grpc' }` →
 * `k8s:///web.prod:grpc`). Throws `EVENLB_INVALID_TARGET` for an authority or a malformed path.
 */
export function evenlbTargetOf(target: GrpcUri): string {
  const uri = `${target.scheme ?? 'dns'}:///${target.path}`;
  if (target.authority !== undefined && target.authority !== '') {
    throw new EvenlbError(
      ErrorCodes.INVALID_TARGET,
      `invalid target ${JSON.stringify(`${target.scheme}://${target.authority}/${target.path}`)}: evenlb targets take no authority; expected ${uri}`,
      { details: { target: uri } },
    );
  }
  return parseTarget(uri).uri;
}

/** The `:authority` a channel sends for an evenlb target: the Service name for `k8s:///`, the host for `dns:///`. */
export function defaultAuthorityOf(uri: string): string {
  const t = parseTarget(uri);
  switch (t.scheme) {
    case 'k8s':
      return `${t.name}.${t.namespace}.svc${typeof t.port === 'number' ? `:${t.port}` : ''}`;
    case 'dns':
      return `${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}`;
    default:
      return 'localhost';
  }
}

/** The resolver class of one registration, for `grpc.experimental.registerResolver`. */
export function createResolverClass(ctx: ResolverContext): ResolverConstructor {
  const { experimental } = ctx.grpc;
  return class EvenlbResolver implements GrpcResolver {
    readonly #uri: string | undefined;
    readonly #targetError: EvenlbError | undefined;
    readonly #listener: ResolverListener;
    readonly #serviceConfig: Parameters<ResolverListener>[2];
    #lease: SourceLease | undefined;
    #unsubscribe: (() => void) | undefined;
    #scheduled = false;
    #destroyed = false;

    static getDefaultAuthority(target: GrpcUri): string {
      return defaultAuthorityOf(evenlbTargetOf(target));
    }

    constructor(target: GrpcUri, listener: ResolverListener, channelOptions: ChannelOptions) {
      this.#listener = listener;
      try {
        this.#uri = evenlbTargetOf(target);
      } catch (err) {
        this.#targetError = err as EvenlbError;
      }
      // The channel's own service config wins; otherwise choose the evenlb policy.
      this.#serviceConfig =
        channelOptions['grpc.service_config'] === undefined
          ? experimental.statusOrFromValue<ServiceConfig>({
              loadBalancingConfig: [{ [EVENLB_POLICY_NAME]: { ...ctx.defaultConfig } }],
              methodConfig: [],
            })
          : null;
    }

    updateResolution(): void {
      this.#destroyed = false;
      if (this.#lease === undefined && this.#uri !== undefined && !ctx.closed()) {
        try {
          this.#lease = ctx.sources.acquire(this.#uri);
          this.#unsubscribe = this.#lease.source.subscribe(() => this.#deliver());
        } catch (err) {
          this.#failLater(err as Error);
          return;
        }
      }
      // Never call the listener synchronously from updateResolution (grpc-js's contract).
      if (this.#scheduled) return;
      this.#scheduled = true;
      process.nextTick(() => {
        this.#scheduled = false;
        this.#deliver();
      });
    }

    destroy(): void {
      this.#destroyed = true;
      this.#unsubscribe?.();
      this.#unsubscribe = undefined;
      this.#lease?.release();
      this.#lease = undefined;
    }

    #failLater(err: Error): void {
      process.nextTick(() => {
        if (this.#destroyed) return;
        this.#listener(
          experimental.statusOrFromError({ code: ctx.grpc.status.UNAVAILABLE, details: err.message }),
          {},
          this.#serviceConfig,
          err.message,
        );
      });
    }

    #deliver(): void {
      if (this.#destroyed) return;
      if (this.#targetError !== undefined || ctx.closed() || this.#lease === undefined) {
        this.#failLater(
          this.#targetError ?? new EvenlbError(ErrorCodes.CLOSED, `evenlb gRPC registration is closed (${this.#uri})`),
        );
        return;
      }
      const snapshot: DiscoverySnapshot = this.#lease.source.snapshot();
      if (snapshot.status.state === 'pending') return;
      const note = 'error' in snapshot.status ? snapshot.status.error.message : '';
      this.#listener(
        experimental.statusOrFromValue(toGrpcEndpoints(snapshot.endpoints, true)),
        { [SNAPSHOT_ATTRIBUTE]: snapshot, [TARGET_ATTRIBUTE]: this.#uri },
        this.#serviceConfig,
        note,
      );
    }
  };
}
