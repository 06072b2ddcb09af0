import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fingerprint, normalizeSignature } from '../src/processors/classify/fingerprint.ts';
import { isReferenceWarning, referenceSignature } from '../src/processors/classify/reference.ts';

describe('fingerprint: the same failure differing only in volatile parts', () => {
  const pairs: Array<[name: string, a: string, b: string]> = [
    ['integers', 'IndexError: index 5 out of range for length 3', 'IndexError: index 12 out of range for length 7'],
    ['floats and negatives', 'ValueError: got -1.5, expected >= 0', 'ValueError: got -27.25, expected >= 0'],
    ['uuids', 'LookupError: run 3f2a9c1e-8b4d-4e6f-9a1b-2c3d4e5f6a7b not found', 'LookupError: run 00000000-1111-2222-3333-444455556666 not found'],
    ['temp paths', 'OSError: cannot write /tmp/tmpk3j2x_ab/out.json', 'OSError: cannot write /tmp/tmp99zz_q1/out.json'],
    ['home directories', 'ImportError: bad module at /home/alice/proj/lib/util.py', 'ImportError: bad module at /Users/bob/code/proj/lib/util.py'],
    ['Windows paths', 'PermissionError: C:\\Users\\alice\\AppData\\Local\\Temp\\a1.lock', 'PermissionError: C:\\Users\\bob\\AppData\\Local\\Temp\\zz9.lock'],
    ['single-quoted values', "KeyError: 'user_17'", "KeyError: 'session'"],
    ['double-quoted values', 'ValueError: invalid literal "abc"', 'ValueError: invalid literal "x y z"'],
    ['hex addresses', 'Segmentation fault at 0x7ffd5e8a1b20', 'Segmentation fault at 0x55d0c0ffee10'],
    ['object reprs', 'TypeError: <Foo object at 0x7f3a2b1c0d90> is not callable', 'TypeError: <Foo object at 0x10a2b3c4d> is not callable'],
    ['hex ids', 'CommitError: object deadbeef1234 missing', 'CommitError: object 0a1b2c3d4e5f missing'],
    ['ports', 'ConnectionRefusedError: connect 127.0.0.1:5432', 'ConnectionRefusedError: connect 127.0.0.1:6543'],
    ['ips and ports', 'Error: connect ECONNREFUSED 10.0.0.12:6379', 'Error: connect ECONNREFUSED 192.168.1.7:6380'],
    ['ipv6 and ports', 'Error: connect ECONNREFUSED [::1]:6379', 'Error: connect ECONNREFUSED [fe80::1ff:fe23:4567:890a]:7000'],
    ['localhost ports', 'FetchError: localhost:3000 refused', 'FetchError: localhost:8080 refused'],
    ['durations', 'TimeoutError: no reply after 1500ms', 'TimeoutError: no reply after 2.5s'],
    ['long-form durations', 'TimeoutError: gave up after 30 seconds', 'TimeoutError: gave up after 1 second'],
    ['timestamps', 'StaleLock: held since 2024-01-31T12:34:56.789Z', 'StaleLock: held since 2025-11-02T01:02:03+02:00'],
    ['times of day', 'Error: job failed at 12:34:56', 'Error: job failed at 03:00:01.250'],
    ['sizes', 'MemoryError: could not allocate 512MB', 'MemoryError: could not allocate 2 GiB'],
    ['line numbers in file:line:col', "src/app.ts:12:5 - error TS2304: Cannot find name 'x'.", "src/app.ts:140:17 - error TS2304: Cannot find name 'y'."],
    ['whitespace', 'ValueError:  bad   value', 'ValueError: bad value'],
  ];
  for (const [name, a, b] of pairs) {
    test(name, () => assert.equal(fingerprint(a), fingerprint(b), `${normalizeSignature(a)} vs ${normalizeSignature(b)}`));
  }
});

describe('fingerprint: different failures differ', () => {
  const pairs: Array<[name: string, a: string, b: string]> = [
    ['different exception types', 'ValueError: bad input', 'TypeError: bad input'],
    ['different messages', 'ValueError: bad input', 'ValueError: empty input'],
    ['different file extensions', 'SyntaxError in /tmp/a/x.py', 'SyntaxError in /tmp/a/x.js'],
    ['different rustc codes', 'error[E0308]: mismatched types', 'error[E0382]: mismatched types'],
    ['identifiers with digits: utf-8 vs utf-16', 'LookupError: unknown encoding utf-8', 'LookupError: unknown encoding utf-16'],
    ['different identifiers with digits', 'unsupported arch x86_64', 'unsupported arch arm64'],
    ['null pointer vs a real address', 'Segmentation fault at 0x0', 'Segmentation fault at 0x7ffd5e8a1b20'],
    ['different error codes', 'Error [ERR_MODULE_NOT_FOUND]: Cannot find module', 'Error [ERR_REQUIRE_ESM]: Cannot find module'],
    ['case matters', 'error: x', 'Error: x'],
    ['extension vs none', 'NotFound: /data/a', 'NotFound: /data/a.csv'],
  ];
  for (const [name, a, b] of pairs) {
    test(name, () => assert.notEqual(fingerprint(a), fingerprint(b), `${normalizeSignature(a)} vs ${normalizeSignature(b)}`));
  }
  test('language is part of the identity', () => {
    assert.notEqual(fingerprint('ValueError: x', { language: 'python' }), fingerprint('ValueError: x'));
    assert.notEqual(fingerprint('ValueError: x', { language: 'python' }), fingerprint('ValueError: x', { language: 'node' }));
  });
});

describe('normalizeSignature', () => {
  const rows: Array<[name: string, input: string, expected: string]> = [
    [
      'identifiers survive',
      'utf-8 x86_64 sha256 E0308 ERR_MODULE_NOT_FOUND int64 v2 worker-3 base64',
      'utf-8 x86_64 sha256 E0308 ERR_MODULE_NOT_FOUND int64 v2 worker-3 base64',
    ],
    ['words made of hex letters survive', 'deadbeef facade accepted', 'deadbeef facade accepted'],
    ['C++ and Ruby scopes are not IPv6', 'std::vector::at Class::method', 'std::vector::at Class::method'],
    ['relative paths keep their name, numbers go', 'src/app.ts:12:5', 'src/app.ts:<num>:<num>'],
    ['URLs keep host and path words', 'GET https://api.example.com:8443/v1/users/42 failed', 'GET https://api.example.com:<port>/v1/users/<num> failed'],
    ['and/or is no path', 'read and/or write', 'read and/or write'],
    ['an apostrophe is no quote', "can't open 'x.txt'", "can't open <quoted>"],
    ['a path keeps only its extension', 'at /home/alice/proj/src/main.py', 'at <path>.py'],
    ['a path without extension', 'exec /usr/bin/python3 failed', 'exec <path> failed'],
    ['home-relative path', 'see ~/proj/notes.md', 'see <path>.md'],
    ['uuid', 'id 3f2a9c1e-8b4d-4e6f-9a1b-2c3d4e5f6a7b', 'id <uuid>'],
    ['ISO timestamp', 'at 2024-01-31T12:34:56.789Z', 'at <date>'],
    ['month-name date', 'since Jan 31, 2024', 'since <date>'],
    ['pointer vs small hex', 'at 0x7ffd5e8a1b20 flag 0xff', 'at <addr> flag <hex>'],
    ['ipv4 and port', 'connect 127.0.0.1:5432', 'connect <ip>:<port>'],
    ['ipv6 loopback in brackets', '[::1]:6379', '[<ip>]:<port>'],
    ['duration vs size vs number', '12ms 1.5s 512MB 42 -3 1e-5 3.11.4', '<duration> <duration> <size> <num> <num> <num> <num>'],
    ['whitespace collapsed and trimmed', '  a \t b\n c  ', 'a b c'],
  ];
  for (const [name, input, expected] of rows) {
    test(name, () => assert.equal(normalizeSignature(input), expected));
  }
});

describe('fingerprint format', () => {
  test('v1: and 16 hex digits, stable', () => {
    const f = fingerprint('ValueError: x');
    assert.match(f, /^v1:[0-9a-f]{16}$/);
    assert.equal(fingerprint('ValueError: x'), f);
  });
  test('no language equals an empty language', () => {
    assert.equal(fingerprint('E: x'), fingerprint('E: x', { language: '' }));
    assert.equal(fingerprint('E: x', { language: 'Python ' }), fingerprint('E: x', { language: 'python' }));
  });
});

describe('large inputs finish (linear-time expressions)', () => {
  const MB = 1_000_000;
  const big = (unit: string) => unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB);
  const units = ['a', '1', '/', "'", '"', '/a', '0x', '1.', '1:', 'a:', '::', '<a', '-1', 'a-1', '~/', 'C:\\', '1 ', '12:', 'Jan 1', 'f1', '1e'];
  for (const unit of units) {
    test(`1 MB single line of ${JSON.stringify(unit)}`, { timeout: 5000 }, () => {
      const text = big(unit);
      assert.match(fingerprint(text), /^v1:/);
      referenceSignature(text);
      isReferenceWarning(text);
    });
  }
  test('1 MB realistic single line', { timeout: 5000 }, () => {
    const text = big("ValueError: id 3f2a9c1e-8b4d-4e6f-9a1b-2c3d4e5f6a7b at /tmp/x/y.py:12 'q' 10.0.0.1:80 12ms 0xdeadbeef12 ");
    assert.match(fingerprint(text), /^v1:/);
    assert.equal(referenceSignature(text).length, 96);
  });
  test('10,000-line text', { timeout: 5000 }, () => {
    const lines = Array.from({ length: 10_000 }, (_, i) => `  File "/app/mod${i}.py", line ${i}, in f${i}`);
    const text = ['Traceback (most recent call last):', ...lines, 'RecursionError: maximum recursion depth exceeded'].join('\n');
    assert.equal(referenceSignature(text), 'RecursionError: maximum recursion depth exceeded');
    assert.match(fingerprint(text), /^v1:/);
    assert.equal(isReferenceWarning(text), false);
  });
});
