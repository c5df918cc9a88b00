/**
 * The demo's phases: the same Service (pods, clients, scale-out, rolling restart) balanced five
 * ways. Each phase names the part of evenlb it needs, so a build without that part skips the
 * phase and says why.
 */

export const PHASE_IDS = ['pinned', 'client', 'proxy', 'recycler', 'sidecar', 'recycler-age'] as const;
export type PhaseId = (typeof PHASE_IDS)[number];
/** The phases run when `--phases` is not given (the age-only recycler is shown on request). */
export const DEFAULT_PHASE_IDS: readonly PhaseId[] = ['pinned', 'client', 'proxy', 'recycler', 'sidecar'];

export interface PhaseInfo {
  readonly id: PhaseId;
  readonly title: string;
  /** One paragraph for the report: what runs and what to look for. */
  readonly explanation: string;
}

export const PHASES: Readonly<Record<PhaseId, PhaseInfo>> = Object.freeze({
  pinned: {
    id: 'pinned',
    title: 'pinned: connections balanced, not requests',
    explanation:
      'The problem. Each client keeps one keep-alive connection and the endpoint is chosen only when a ' +
      'connection is dialled: kube-proxy does this for every Service (a random DNAT per new connection), and ' +
      "so did kube-apiserver's webhook client before WebhookRoundTripLoadBalancing (here: BalancedAgent with " +
      'RoundTripLoadBalancing=false, or real iptables rules with --dataplane netfilter). A few connections over ' +
      'a few pods land unevenly, the pod added by the scale-out receives nothing until connections are ' +
      'reopened, and during the rolling restart the reconnects pile onto whichever pods exist at that moment.',
  },
  client: {
    id: 'client',
    title: 'evenlb client: BalancedAgent, per request',
    explanation:
      'The client-side cure. Each client uses a BalancedAgent that picks an endpoint for every request ' +
      '(power of two choices by requests in flight) from the endpoint list it watches, with one connection pool ' +
      'per endpoint. Load is even from the first second, the new pod gets its share as soon as it is listed, ' +
      'and terminating pods stop receiving requests at once, so the rolling restart costs no failed request.',
  },
  proxy: {
    id: 'proxy',
    title: 'evenlb proxy: an L7 hop balancing per request',
    explanation:
      'The cure for clients you cannot change. The same pinned clients now talk to `evenlb proxy` (a real ' +
      'child process), which balances each request over the pods it reads from a watched file:/// endpoint ' +
      'list that the demo rewrites as pods come and go, as the EndpointSlice controller would. The clients ' +
      'keep their few long-lived connections; the spread happens behind them.',
  },
  recycler: {
    id: 'recycler',
    title: 'recycler: pinned clients, servers shed their excess (fair share)',
    explanation:
      'The server-side cure. Clients are pinned as in the first phase, but every pod runs the evenlb connection ' +
      'recycler with fair-share shedding: each pod asks a few peers (listed in a watched file:/// endpoint list, as ' +
      'an EndpointSlice would list them) for their load and closes a connection gracefully (Connection: close) ' +
      'only while it serves more than the fleet mean plus 10%, or more than the mean while a peer is well below it. ' +
      'Load here is the connections each pod holds (--fair-share-load-metric connections): every client sends ' +
      'at the same rate over one connection, so that count is exact, where requests per second over a short ' +
      'window are noisy on a busy machine (the library default, right when callers differ in rate). The ' +
      're-dial lands on a random pod; pods at or below their share close nothing, so the fleet settles with few ' +
      'reconnects and the new pod is filled by the others shedding toward it.',
  },
  sidecar: {
    id: 'sidecar',
    title: 'sidecar: plain servers, evenlb proxy --sidecar in each pod sheds by fair share',
    explanation:
      'The server-side cure for servers that are not Node. Every pod is a plain HTTP server written with ' +
      "Node's core http module and nothing else — standing in for a Go, Java or Python server, an admission " +
      'webhook — with `evenlb proxy --sidecar` in front of it in the same pod: the clients (pinned as in the first ' +
      "phase) connect to the sidecar's port, the Service's targetPort; the sidecar forwards to the app over a " +
      'small keep-alive pool and sheds its client connections by fair share with the other pods’ sidecars — ' +
      'the same shedder and settings as the recycler phase, outside the app. A pod marked terminating hands its ' +
      'clients over (Connection: close on their next response) before it is stopped. The app never changes.',
  },
  'recycler-age': {
    id: 'recycler-age',
    title: 'recycler (age only): pinned clients, servers recycle by age and request count',
    explanation:
      'For comparison: every pod closes each connection after 100 requests or 5 s (with jitter), whatever its ' +
      'load, so clients re-dial and re-roll the dice. Imbalance is bounded by how often the dice are re-rolled, ' +
      'and every re-roll costs a handshake.',
  },
});
