import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { isEvenlbError } from '../core/errors.js';
import { sidecarFromCli } from './proxy-sidecar.js';
import { addSidecarOptions, type SidecarFlags } from './proxy-sidecar-flags.js';

/** Parses `args` as `evenlb proxy` does (its own flags and the sidecar's) and builds the sidecar. */
function build(args: readonly string[]) {
  const command = addSidecarOptions(
    new Command('proxy')
      .exitOverride()
      .option('-c, --config <file>')
      .option('--listen <host:port>', 'listen', '127.0.0.1:8080')
      .option('--upstream <target>')
      .option('--policy <name>')
      .option('--protocol <p>')
      .option('--admin <host:port>')
      .option('--access-log'),
  );
  command.parse([...args], { from: 'user' });
  return sidecarFromCli(command.opts<SidecarFlags>(), command);
}

function usageOf(args: readonly string[]): { message: string; field: unknown } {
  try {
    const s = build(args);
    void s?.appHealth.destroy();
  } catch (err) {
    if (!isEvenlbError(err)) throw err;
    return { message: err.message, field: (err.details as { field?: unknown } | undefined)?.field };
  }
  throw new Error(`no usage error for ${args.join(' ')}`);
}

const BASE = ['--sidecar', '--listen', '127.0.0.1:0', '--peers', 'static:///127.0.0.1:1'];
const APP = ['--app', '127.0.0.1:8081'];

describe('evenlb proxy --sidecar flags', () => {
  const cases: { args: string[]; flag: string; message: RegExp }[] = [
    { args: [...APP], flag: '--app', message: /^--app is a sidecar flag: add --sidecar$/ },
    { args: ['--peers', 'k8s:///web.shop:80'], flag: '--peers', message: /--peers is a sidecar flag/ },
    {
      args: ['--sidecar', ...APP, '--peers', 'static:///127.0.0.1:1'],
      flag: '--listen',
      message: /--sidecar needs --listen HOST:PORT or :PORT/,
    },
    { args: [...BASE], flag: '--app', message: /--sidecar needs --app HOST:PORT/ },
    { args: ['--sidecar', '--listen', ':8080', ...APP], flag: '--peers', message: /--sidecar needs --peers TARGET/ },
    {
      args: [...BASE, ...APP, '--upstream', 'static:///127.0.0.1:9'],
      flag: '--upstream',
      message: /--upstream cannot be combined with --sidecar/,
    },
    { args: [...BASE, ...APP, '--policy', 'round-robin'], flag: '--policy', message: /--policy cannot be combined/ },
    { args: [...BASE, ...APP, '--protocol', 'h2'], flag: '--protocol', message: /--protocol cannot be combined/ },
    {
      args: [...BASE, '--app', 'app.local:8081'],
      flag: '--app',
      message: /^--app: must be HOST:PORT, or http:\/\/.*received "app\.local:8081"$/,
    },
    { args: [...BASE, '--app', 'ftp://127.0.0.1:21'], flag: '--app', message: /^--app: must be/ },
    {
      args: ['--sidecar', '--listen', '127.0.0.1:99999', ...APP, '--peers', 'static:///127.0.0.1:1'],
      flag: '--listen',
      message: /^--listen: must be HOST:PORT or :PORT/,
    },
    {
      args: ['--sidecar', '--listen', ':8080', ...APP, '--peers', 'k8s:///web'],
      flag: '--peers',
      message: /^--peers: must be a target URI.*received "k8s:\/\/\/web"$/,
    },
    { args: [...BASE, ...APP, '--tls-cert', '/etc/tls.crt'], flag: '--tls-key', message: /--tls-cert needs --tls-key/ },
    { args: [...BASE, ...APP, '--tls-key', '/etc/tls.key'], flag: '--tls-cert', message: /--tls-key needs --tls-cert/ },
    {
      args: [...BASE, ...APP, '--tls-client-ca', '/etc/ca.crt'],
      flag: '--tls-client-ca',
      message: /--tls-client-ca needs --tls-cert and --tls-key/,
    },
    {
      args: [...BASE, ...APP, '--tls-cert', '/nonexistent.crt', '--tls-key', '/nonexistent.key'],
      flag: '--tls-cert',
      message: /^--tls-cert: must name a readable file \(ENOENT\); received "\/nonexistent\.crt"$/,
    },
    {
      args: [...BASE, ...APP, '--app-ca', '/etc/ca.crt'],
      flag: '--app-ca',
      message: /--app-ca needs an app serving TLS/,
    },
    {
      args: [...BASE, '--app', 'https://127.0.0.1:9443', '--app-ca', '/nonexistent-ca.crt'],
      flag: '--app-ca',
      message: /^--app-ca: must name a readable file \(ENOENT\)/,
    },
    {
      args: [...BASE, ...APP, '--app-check-interval', '1s', '--app-check-timeout', '3s'],
      flag: '--app-check-timeout',
      message: /--app-check-timeout \(3000 ms\) must not be longer than --app-check-interval \(1000 ms\)/,
    },
    { args: [...BASE, ...APP, '--app-check', 'healthz'], flag: '--app-check', message: /^--app-check: must be/ },
    { args: [...BASE, ...APP, '--tolerance', '11'], flag: '--tolerance', message: /^--tolerance: must be .*<= 10/ },
    {
      args: [...BASE, ...APP, '--metrics', 'pod-ip'],
      flag: '--metrics',
      message: /^--metrics: must be HOST:PORT or :PORT/,
    },
    {
      args: ['--sidecar', '--config', '/etc/sidecar.yaml', ...APP],
      flag: '--app',
      message: /--app cannot be combined with --sidecar --config \(set sidecar\.app in the file\)/,
    },
  ];
  for (const c of cases) {
    it(`${c.args.join(' ')} → a usage error naming ${c.flag}`, () => {
      const { message, field } = usageOf(c.args);
      expect(message).toMatch(c.message);
      expect(field).toBe(c.flag);
    });
  }

  it('--load-report turns on load reporting (probes on the load port); --load-report N sets maxInFlight', async () => {
    const plain = build([...BASE, ...APP, '--load-report']);
    const sized = build([...BASE, ...APP, '--load-report', '32']);
    const off = build([...BASE, ...APP]);
    try {
      expect(plain?.config.listeners[0]?.loadReport).toMatchObject({ sampleRate: 1, periodMs: 500 });
      expect(plain?.config.listeners[0]?.loadReport).not.toHaveProperty('maxInFlight');
      expect(sized?.config.listeners[0]?.loadReport).toMatchObject({ maxInFlight: 32 });
      expect(off?.config.listeners[0]?.loadReport).toBeUndefined();
    } finally {
      await Promise.all([plain?.appHealth.destroy(), sized?.appHealth.destroy(), off?.appHealth.destroy()]);
    }
    expect(() => build([...BASE, ...APP, '--load-report', '0'])).toThrow(/--load-report/);
  });

  it('no sidecar flag: not a sidecar (the proxy’s own flags apply)', () => {
    expect(build(['--upstream', 'static:///127.0.0.1:9'])).toBeUndefined();
  });

  it('builds one listener shedding by fair share and one app cluster from the flags', async () => {
    const s = build([
      ...['--sidecar', '--listen', ':8443', '--app', 'h2c://localhost:50051', '--peers', 'k8s:///echo.prod:grpc'],
      ...['--load-port', '9910', '--pod-ip', '10.1.2.3', '--tolerance', '0.2', '--load-metric', 'connections'],
      ...['--app-check', '/healthz', '--app-check-interval', '5s', '--metrics', ':9902', '--trust-forwarded'],
    ]);
    try {
      expect(s).toBeDefined();
      const config = s?.config;
      expect(config?.listeners).toHaveLength(1);
      const listener = config?.listeners[0];
      expect(listener?.address).toBe('0.0.0.0:8443');
      expect(listener?.protocol).toBe('http');
      expect(listener?.trustForwardedHeaders).toBe(true);
      expect(listener?.recycle?.fairShare).toMatchObject({
        peers: 'k8s:///echo.prod:grpc',
        loadPort: 9910,
        self: '10.1.2.3',
        tolerance: 0.2,
        loadMetric: 'connections',
      });
      expect(config?.clusters[0]).toMatchObject({
        name: 'app',
        target: 'static:///127.0.0.1:50051',
        protocol: 'h2',
        policy: 'round-robin',
        outlierDetection: false,
      });
      expect(config?.admin).toEqual({ address: '127.0.0.1:9901', metricsAddress: '0.0.0.0:9902' });
      expect(s?.appHealth.notReady()).toMatch(/^app 127\.0\.0\.1:50051 \(GET \/healthz\)/);
    } finally {
      await s?.appHealth.destroy();
    }
  });
});
