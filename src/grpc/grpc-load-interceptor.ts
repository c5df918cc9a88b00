/**
 * Load reports from a grpc-js server: a server interceptor (grpc-js ≥ 1.10, the `interceptors`
 * server option) that counts every call in a `LoadReporter` from its start to its status, and
 * adds the reporter's report to the call's trailing metadata as the ASCII entry
 * `endpoint-load-metrics` (the TEXT form, as on HTTP responses) — every method kind, no change
 * to the handlers. The evenlb gRPC policy reads that entry when its policy reads reports.
 *
 * What grpc-js does not allow, and so what this does not do: it gives an interceptor no access
 * to the HTTP/2 response headers after they are sent, so the report rides only on trailers (a
 * call the client cancels ends without them); there is no out-of-band ORCA stream here; and a
 * plain HTTP/1.1 load probe cannot reach the gRPC port (grpc-js owns the HTTP/2 server), so
 * probes are answered on a port of its own (`serveLoadDocument` in `evenlb/server`). grpc-js's
 * own per-call ORCA recording (`grpc.server_call_metric_recording`, the binary
 * `endpoint-load-metrics-bin` trailer) is independent of this and not read by evenlb.
 *
 * Calls ending with a failure status of the shared gRPC rule (`grpc-outcome.ts`: UNKNOWN,
 * DEADLINE_EXCEEDED, INTERNAL, UNAVAILABLE, DATA_LOSS) count in `eps`.
 */
import type * as Grpc from '@grpc/grpc-js';
import { LOAD_REPORT_HEADER } from '../balancing/load-report.js';
import { grpcOutcome } from '../cluster/grpc-outcome.js';
import type { LoadReporter } from '../server/load/load-reporter.js';

/** The grpc-js module, as far as the interceptor uses it. */
export type GrpcServerModule = Pick<typeof Grpc, 'ServerInterceptingCall' | 'Metadata'>;

/**
 * A grpc-js server interceptor reporting `reporter`'s load in every call's trailing metadata
 * (see the module comment). Pass the grpc-js module your server uses.
 *
 * @example
 * import * as grpc from '@grpc/grpc-js';
 * import { grpcLoadInterceptor } from 'evenlb/grpc';
 * import { LoadReporter, serveLoadDocument } from 'evenlb/server';
 *
 * const reporter = new LoadReporter({ applicationUtilization: () => busy / workers });
 * const server = new grpc.Server({ interceptors: [grpcLoadInterceptor(grpc, reporter)] });
 * serveLoadDocument(reporter, { port: 9091 }); // load probes (prequal)
 */
export function grpcLoadInterceptor(grpc: GrpcServerModule, reporter: LoadReporter): Grpc.ServerInterceptor {
  return (_method, call) => {
    const request = reporter.begin();
    return new grpc.ServerInterceptingCall(call, {
      start: (next) => next({ onCancel: () => request.end() }),
      sendStatus: (status, next) => {
        const value = request.reportValue();
        request.end(isFailure(status.code));
        if (value === undefined) {
          next(status);
          return;
        }
        const metadata = status.metadata?.clone() ?? new grpc.Metadata();
        metadata.set(LOAD_REPORT_HEADER, value);
        next({ ...status, metadata });
      },
    });
  };
}

function isFailure(code: number): boolean {
  const outcome = grpcOutcome(code);
  return outcome === 'http-error' || outcome === 'transport-error';
}
