import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'server/index': 'src/server/index.ts',
    'grpc/index': 'src/grpc/index.ts',
    'proxy/index': 'src/proxy/index.ts',
    'cli/main': 'src/cli/main.ts',
    'demo/pod': 'src/demo/pod-main.ts',
    'demo/load': 'src/demo/load-main.ts',
    'demo/sidecar-pod': 'src/demo/sidecar-pod-main.ts',
    'demo/plain-app': 'src/demo/plain-app-main.ts',
    'sim/index': 'src/sim/index.ts',
  },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: {
    entry: {
      index: 'src/index.ts',
      'server/index': 'src/server/index.ts',
      'grpc/index': 'src/grpc/index.ts',
      'proxy/index': 'src/proxy/index.ts',
    },
  },
  sourcemap: true,
  clean: true,
  splitting: true,
  shims: false,
});
