/**
 * The demo's options, parsed once. Defaults finish the five phases in about a minute on two
 * cores: 4 pods, 20 clients at 80 requests/s each, 11 s per phase (plus about 2 s of start-up and shut-down each).
 * 20 connections share evenly over 4 pods and over 5 (after the scale-out): with 8, no placement
 * can give the fifth pod its fair share (it holds 1 or 2 of 8 connections: 62% or 125%).
 */
import { opt, type Parsed, parseOptions } from '../core/options.js';
import { DEFAULT_PHASE_IDS, PHASE_IDS, type PhaseId } from './phases.js';

const isPhaseList = (v: unknown): v is PhaseId[] =>
  Array.isArray(v) && v.length > 0 && v.every((p) => (PHASE_IDS as readonly unknown[]).includes(p));

export const demoOptionsSpec = {
  /** Pods before the scale-out. */
  pods: opt.int({ min: 2, max: 50, default: 4 }),
  /** Long-lived clients (each one request at a time). */
  clients: opt.int({ min: 1, max: 200, default: 20 }),
  /** Length of each phase, ms. */
  durationMs: opt.number({ min: 3000, max: 600_000, default: 11_000 }),
  /** Requests per second each client sends. */
  ratePerClient: opt.number({ min: 1, max: 2000, default: 80 }),
  seed: opt.int({ min: 0, max: 4294967295, default: 1 }),
  /** Where the HTML report goes. */
  output: opt.string({ nonEmpty: true, default: 'demo-report.html' }),
  /** Where machine-readable results go; unset = not written. */
  json: opt.string({ nonEmpty: true, optional: true }),
  phases: opt.custom(`a non-empty list of ${PHASE_IDS.join(', ')}`, isPhaseList, { default: [...DEFAULT_PHASE_IDS] }),
  /** `netfilter`: the pinned, recycler and sidecar phases go through kube-proxy-style iptables rules in a network namespace. */
  dataplane: opt.oneOf(['loopback', 'netfilter'] as const, { default: 'loopback' }),
  /** Live line style: redrawn bar (tty), a line every few seconds (plain), or none. */
  progress: opt.oneOf(['auto', 'tty', 'plain', 'none'] as const, { default: 'auto' }),
};

export type DemoOptions = Parsed<typeof demoOptionsSpec>;

/** Validates demo options (unknown keys rejected, errors name the field). */
export function parseDemoOptions(input: unknown): DemoOptions {
  return parseOptions('demo', input, demoOptionsSpec);
}
