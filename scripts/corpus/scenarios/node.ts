/** Node.js failures, warnings and noise. */
import { failure, lineOf, noise, pad, recovered, warning, type Scenario } from '../scenario.ts';

const node = (file: string, ...args: string[]) => ['node', file, ...args];

export const nodeScenarios: Scenario[] = [
  {
    id: 'node-typeerror-undefined',
    tool: 'node',
    program: 'getUser() returns undefined for an unknown id and the caller reads a property of it',
    variants: 4,
    prepare: ({ rng, vars }) => {
      vars.prop = rng.pick(['email', 'name', 'roles', 'tenantId']);
      return {
        files: {
          'users.js': `${pad(rng.int(0, 5), '//')}const users = new Map();\nfunction getUser(id) {\n  return users.get(id);\n}\nfunction emailOf(id) {\n  return getUser(id).${vars.prop};\n}\nconsole.log(emailOf(${rng.int(1, 99999)}));\n`,
        },
        cmd: node('users.js'),
      };
    },
    expect: ({ vars }) => failure(`TypeError: Cannot read properties of undefined (reading '${vars.prop}')`),
  },
  {
    id: 'node-referenceerror',
    tool: 'node',
    program: 'uses a misspelled variable inside computeTotal()',
    prepare: ({ rng, vars }) => {
      vars.name = 'totl';
      return {
        files: {
          'total.js': `${pad(rng.int(0, 4), '//')}function computeTotal(items) {\n  let total = 0;\n  for (const i of items) total += i;\n  return ${vars.name};\n}\nconsole.log(computeTotal([${rng.int(1, 9)}, 2]));\n`,
        },
        cmd: node('total.js'),
      };
    },
    expect: ({ vars }) => failure(`ReferenceError: ${vars.name} is not defined`),
  },
  {
    id: 'node-cannot-find-module',
    tool: 'node',
    program: 'require() of a package that is not installed (name varies)',
    variants: 4,
    prepare: ({ rng, vars }) => {
      vars.mod = `${rng.pick(['fast-csv', 'left-pad', 'acme-sdk', 'redis-lite'])}-${rng.int(1, 999)}`;
      return { files: { 'main.js': `${pad(rng.int(0, 3), '//')}const lib = require('${vars.mod}');\nlib.run();\n` }, cmd: node('main.js') };
    },
    expect: ({ vars }) => failure(`Error: Cannot find module '${vars.mod}'`),
  },
  {
    id: 'node-esm-package-not-found',
    tool: 'node',
    program: 'an ES module imports a package that is not installed',
    prepare: ({ rng, dir, vars }) => {
      vars.mod = `${rng.pick(['zod-lite', 'yaml-x', 'kv-store'])}${rng.int(1, 99)}`;
      vars.file = `${dir}/main.mjs`;
      return { files: { 'main.mjs': `import { parse } from '${vars.mod}';\nconsole.log(parse('${rng.ident()}'));\n` }, cmd: node('main.mjs') };
    },
    expect: ({ vars }) => failure(`Error [ERR_MODULE_NOT_FOUND]: Cannot find package '${vars.mod}' imported from ${vars.file}`),
  },
  {
    id: 'node-unhandled-rejection-value',
    tool: 'node',
    program: 'a promise is rejected with a plain string and never handled (reason varies)',
    prepare: ({ rng, vars }) => {
      vars.reason = `${rng.pick(['quota', 'lease', 'lock'])} ${rng.ident()} expired`;
      return {
        files: {
          'lease.js': `async function renew() {\n  await new Promise((r) => setTimeout(r, ${rng.int(1, 20)}));\n  return Promise.reject(${JSON.stringify(vars.reason)});\n}\nrenew();\n`,
        },
        cmd: node('lease.js'),
      };
    },
    expect: ({ vars }) => failure(`UnhandledPromiseRejection: The promise rejected with the reason "${vars.reason}".`),
  },
  {
    id: 'node-unhandled-rejection-error',
    tool: 'node',
    program: 'an async fetchPrices() throws an Error about an upstream status; nobody awaits it',
    prepare: ({ rng, vars }) => {
      vars.status = String(rng.pick([500, 502, 503, 504]));
      return {
        files: {
          'prices.js': `async function fetchPrices(symbol) {\n  await null;\n  throw new Error('upstream returned ' + ${vars.status} + ' for ' + symbol);\n}\nfetchPrices('${rng.pick(['AAPL', 'MSFT', 'NVDA'])}');\n`,
        },
        cmd: node('prices.js'),
      };
    },
    expect: (_c, run) => failure(lineOf(run.stderr, /^Error: upstream returned/)),
  },
  {
    id: 'node-syntaxerror-missing-paren',
    tool: 'node',
    program: 'a script with a missing closing parenthesis',
    prepare: ({ rng }) => ({ files: { 'broken.js': `${pad(rng.int(0, 5), '//')}console.log('total', compute(${rng.int(1, 9)});\n` }, cmd: node('broken.js') }),
    expect: () => failure('SyntaxError: missing ) after argument list'),
  },
  {
    id: 'node-econnrefused',
    tool: 'node',
    program: 'net.connect() to a local port where nothing listens; the error event is not handled',
    variants: 4,
    prepare: ({ rng, vars }) => {
      vars.port = String(rng.port());
      return {
        files: { 'client.js': `const net = require('net');\nconst sock = net.connect(${vars.port}, '127.0.0.1');\nsock.on('connect', () => sock.end());\n` },
        cmd: node('client.js'),
      };
    },
    expect: ({ vars }) => failure(`Error: connect ECONNREFUSED 127.0.0.1:${vars.port}`),
  },
  {
    id: 'node-enoent-read',
    tool: 'node',
    program: 'readFileSync() of a config file missing from its temp dir',
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/config-${rng.int(1, 9999)}.json`;
      return {
        files: {
          'cfg.js': `const fs = require('fs');\nfunction loadConfig(p) {\n  return JSON.parse(fs.readFileSync(p, 'utf8'));\n}\nloadConfig(${JSON.stringify(vars.path)});\n`,
        },
        cmd: node('cfg.js'),
      };
    },
    expect: ({ vars }) => failure(`Error: ENOENT: no such file or directory, open '${vars.path}'`),
  },
  {
    id: 'node-assert-strict-equal',
    tool: 'node',
    program: 'assert.strictEqual() on a wrong count (numbers vary)',
    prepare: ({ rng }) => ({
      files: {
        'check.js': `const assert = require('assert');\nfunction checkCount(n) {\n  assert.strictEqual(n, ${rng.int(50, 99)});\n}\ncheckCount(${rng.int(1, 49)});\n`,
      },
      cmd: node('check.js'),
    }),
    expect: () => failure('AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:'),
  },
  {
    id: 'node-json-parse',
    tool: 'node',
    program: 'JSON.parse() of a reply that is not JSON (reply varies)',
    prepare: ({ rng }) => ({
      files: {
        'reply.js': `function parseReply(body) {\n  return JSON.parse(body);\n}\nparseReply(${JSON.stringify(rng.pick(['OK ' + rng.int(1, 99), 'not json', 'undefined', '<html>']))});\n`,
      },
      cmd: node('reply.js'),
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^SyntaxError: /)),
  },
  {
    id: 'node-custom-error-cause',
    tool: 'node',
    program: 'a DbError("query failed for user N") with a cause is thrown from runQuery()',
    prepare: ({ rng, vars }) => {
      vars.user = String(rng.int(1, 99999));
      return {
        files: {
          'db.js': `class DbError extends Error {\n  constructor(msg, opts) { super(msg, opts); this.name = 'DbError'; }\n}\nfunction runQuery(user) {\n  const cause = new Error('connection reset by peer');\n  throw new DbError('query failed for user ' + user, { cause });\n}\nrunQuery(${vars.user});\n`,
        },
        cmd: node('db.js'),
      };
    },
    expect: ({ vars }) => failure(`DbError: query failed for user ${vars.user}`),
  },
  {
    id: 'node-stack-overflow',
    tool: 'node',
    program: 'visit() recurses without a base case',
    prepare: ({ rng }) => ({
      files: { 'walk.js': `${pad(rng.int(0, 4), '//')}function visit(n) {\n  return visit(n + ${rng.int(1, 9)}) + 1;\n}\nvisit(0);\n` },
      cmd: node('walk.js'),
    }),
    expect: () => failure('RangeError: Maximum call stack size exceeded'),
  },
  {
    id: 'node-throw-string',
    tool: 'node',
    program: 'throws a plain string (not an Error) naming a crashed worker',
    prepare: ({ rng, vars }) => {
      vars.msg = `worker ${rng.int(1, 64)} crashed`;
      return { files: { 'w.js': `${pad(rng.int(0, 3), '//')}throw ${JSON.stringify(vars.msg)};\n` }, cmd: node('w.js') };
    },
    expect: ({ vars }) => failure(vars.msg),
  },
  {
    id: 'node-fetch-failed-logged',
    tool: 'node',
    program: 'fetch() to a closed local port fails; the error is logged with console.error and the process exits 0',
    prepare: ({ rng }) => ({
      files: {
        'poll.js': `async function poll() {\n  try {\n    await fetch('http://127.0.0.1:${rng.port()}/health');\n  } catch (err) {\n    console.error(err);\n  }\n}\npoll();\n`,
      },
      cmd: node('poll.js'),
    }),
    expect: () => recovered('TypeError: fetch failed'),
  },
  {
    id: 'node-exit-with-message',
    tool: 'node',
    program: 'a CLI prints "Error: invalid config: missing <key>" and exits 2',
    prepare: ({ rng, vars }) => {
      vars.key = rng.ident();
      return {
        files: {
          'cli.js': `const cfg = {};\nif (!cfg[${JSON.stringify(vars.key)}]) {\n  console.error('Error: invalid config: missing "${vars.key}"');\n  process.exit(2);\n}\n`,
        },
        cmd: node('cli.js'),
      };
    },
    expect: ({ vars }) => failure(`Error: invalid config: missing "${vars.key}"`),
  },
  {
    id: 'node-eaddrinuse',
    tool: 'node',
    program: 'a second server listens on the port the first one holds; the error event is unhandled',
    prepare: ({ rng, vars }) => {
      vars.port = String(rng.port());
      return {
        files: {
          'server.js': `const net = require('net');\nconst a = net.createServer().listen(${vars.port}, '127.0.0.1', () => {\n  net.createServer().listen(${vars.port}, '127.0.0.1');\n  setTimeout(() => a.close(), 200);\n});\n`,
        },
        cmd: node('server.js'),
      };
    },
    expect: ({ vars }) => failure(`Error: listen EADDRINUSE: address already in use 127.0.0.1:${vars.port}`),
  },
  // -- warnings
  {
    id: 'node-dep0005',
    tool: 'node',
    program: 'calls the deprecated Buffer() constructor',
    prepare: ({ rng }) => ({ files: { 'buf.js': `const b = new Buffer(${rng.int(1, 64)});\nconsole.log(b.length);\n` }, cmd: node('buf.js') }),
    expect: () => warning(),
  },
  {
    id: 'node-experimental-warning',
    tool: 'node',
    program: 'runs with the experimental permission model',
    prepare: ({ rng }) => ({ cmd: ['node', '--experimental-permission', '--allow-fs-read=*', '-e', `console.log(${rng.int(1, 99)})`] }),
    expect: () => warning(),
  },
  {
    id: 'node-maxlisteners',
    tool: 'node',
    program: 'adds more listeners than the EventEmitter limit (count varies)',
    prepare: ({ rng }) => ({
      files: {
        'bus.js': `const { EventEmitter } = require('events');\nconst bus = new EventEmitter();\nfor (let i = 0; i < ${rng.int(11, 40)}; i++) bus.on('job', () => {});\n`,
      },
      cmd: node('bus.js'),
    }),
    expect: () => warning(),
  },
  {
    id: 'node-emit-warning',
    tool: 'node',
    program: 'process.emitWarning() about a cache over its soft limit',
    prepare: ({ rng }) => ({
      files: { 'cache.js': `process.emitWarning('cache size ${rng.int(100, 9999)} exceeds soft limit ${rng.int(10, 99)}');\n` },
      cmd: node('cache.js'),
    }),
    expect: () => warning(),
  },
  // -- noise
  {
    id: 'node-startup-noise',
    tool: 'node',
    program: 'a server logs its startup progress to stderr, including benign error words',
    prepare: ({ rng }) => ({
      files: {
        'boot.js': `console.error('[startup] listening on http://127.0.0.1:${rng.port()}');\nconsole.error('[startup] error_count=0 warn_count=0 uptime=${rng.int(1, 900)}ms');\nconsole.error('[startup] loaded ${rng.int(2, 9)} plugins: auth, ErrorReporter, metrics');\n`,
      },
      cmd: node('boot.js'),
    }),
    expect: () => noise(),
  },
  {
    id: 'node-debug-noise',
    tool: 'node',
    program: 'prints debug timings to stderr',
    prepare: ({ rng }) => ({
      files: {
        'dbg.js': `console.error('debug: connected to db in ${rng.int(1, 90)}ms (pool=${rng.int(2, 16)})');\nconsole.error('debug: cache warm, ${rng.int(10, 999)} keys');\n`,
      },
      cmd: node('dbg.js'),
    }),
    expect: () => noise(),
  },
];
