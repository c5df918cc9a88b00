import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../core/errors.js';
import { readListPage, readWatchEvent } from './reflector-responses.js';

const slice = (name: string, rv: string) => ({ metadata: { name, resourceVersion: rv } });

describe('readWatchEvent', () => {
  it('reads object events with their name and resourceVersion', () => {
    expect(readWatchEvent(JSON.stringify({ type: 'MODIFIED', object: slice('web-a', '12') }), 'slices')).toEqual({
      type: 'MODIFIED',
      object: slice('web-a', '12'),
      name: 'web-a',
      resourceVersion: '12',
    });
    expect(readWatchEvent(JSON.stringify({ type: 'DELETED', object: {} }), 'slices')).toMatchObject({
      type: 'DELETED',
      name: undefined,
      resourceVersion: undefined,
    });
  });

  it('reads a bookmark, and a 410 ERROR as EXPIRED', () => {
    expect(readWatchEvent('{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}', 's')).toEqual({
      type: 'BOOKMARK',
      resourceVersion: '7',
    });
    const gone = { type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' } };
    expect(readWatchEvent(JSON.stringify(gone), 's')).toEqual({ type: 'EXPIRED' });
  });

  it('ignores shapes it does not know', () => {
    expect(readWatchEvent('{"type":"SOMETHING"}', 's')).toEqual({ type: 'OTHER' });
    expect(readWatchEvent('[1,2]', 's')).toEqual({ type: 'OTHER' });
  });

  it('throws naming what is followed for a line that is not JSON and for another ERROR status', () => {
    expect(() => readWatchEvent('{"type":', 'EndpointSlices of shop/web')).toThrow(
      'EndpointSlices of shop/web: malformed watch event',
    );
    const denied = { type: 'ERROR', object: { code: 500, reason: 'InternalError', message: 'etcd down' } };
    try {
      readWatchEvent(JSON.stringify(denied), 'EndpointSlices of shop/web');
      expect.unreachable();
    } catch (err) {
      expect(err).toMatchObject({ code: ErrorCodes.DISCOVERY_FAILED });
      expect((err as Error).message).toBe('EndpointSlices of shop/web: watch error 500 InternalError: etcd down');
    }
  });
});

describe('readListPage', () => {
  it('reads items, resourceVersion and the continue token (none on the last page)', () => {
    const page = { items: [slice('a', '3')], metadata: { resourceVersion: '9', continue: 'next' } };
    expect(readListPage(page, 's')).toEqual({ items: page.items, resourceVersion: '9', continueToken: 'next' });
    expect(readListPage({ items: [], metadata: { resourceVersion: '9', continue: '' } }, 's').continueToken).toBe(
      undefined,
    );
  });

  it('rejects a page without items or resourceVersion, naming what was expected', () => {
    expect(() => readListPage({ metadata: { resourceVersion: '9' } }, 'slices')).toThrow(
      'slices: malformed LIST response (expected items and metadata.resourceVersion)',
    );
    expect(() => readListPage({ items: [] }, 'slices')).toThrow(/expected items and metadata.resourceVersion/);
  });
});
