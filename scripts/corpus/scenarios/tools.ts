/** git, npm, make, perl and tsc. */
import { failure, lineOf, noise, pad, recovered, TSC, warning, type Scenario } from '../scenario.ts';

const gitInit = (): string[][] => [
  ['git', 'init', '-q', '-b', 'main'],
  ['git', 'config', 'user.name', 'Corpus Bot'],
  ['git', 'config', 'user.email', 'bot@example.invalid'],
];
const gitCommitAll = (msg: string): string[][] => [
  ['git', 'add', '-A'],
  ['git', 'commit', '-q', '-m', msg],
];

export const git: Scenario[] = [
  {
    id: 'git-not-a-repo',
    tool: 'git',
    program: 'git status outside any repository',
    prepare: ({ dir }) => ({ cmd: ['git', 'status'], env: { GIT_CEILING_DIRECTORIES: dir.replace(/\/[^/]+$/, '') } }),
    expect: () => failure('fatal: not a git repository (or any of the parent directories): .git'),
  },
  {
    id: 'git-pathspec',
    tool: 'git',
    program: 'git checkout of a path that git does not know (name varies)',
    prepare: ({ rng, vars }) => {
      vars.p = `${rng.ident()}.txt`;
      return { files: { 'a.txt': 'a\n' }, setup: [...gitInit(), ...gitCommitAll('init')], cmd: ['git', 'checkout', '--', vars.p] };
    },
    expect: ({ vars }) => failure(`error: pathspec '${vars.p}' did not match any file(s) known to git`),
  },
  {
    id: 'git-ambiguous-argument',
    tool: 'git',
    program: 'git log of a revision that does not exist (name varies); also seen in a script that ignores the failure',
    variants: 4,
    prepare: ({ rng, v, vars }) => {
      vars.rev = `release-${rng.int(1, 99)}.${rng.int(0, 9)}`;
      const setup = [...gitInit(), ...gitCommitAll('init')];
      const files = { 'a.txt': `${rng.int(1, 9)}\n` };
      // Variant 3 runs the same command from a script that carries on (exit 0).
      if (v === 3) return { files, setup, cmd: ['bash', '-c', `git log --oneline ${vars.rev} || echo "no such release, continuing"`] };
      return { files, setup, cmd: ['git', 'log', '--oneline', vars.rev] };
    },
    expect: ({ v, vars }) => {
      const sig = `fatal: ambiguous argument '${vars.rev}': unknown revision or path not in the working tree.`;
      return v === 3 ? recovered(sig) : failure(sig);
    },
  },
  {
    id: 'git-merge-conflict',
    tool: 'git',
    program: 'git merge of two branches that changed the same line (combined stdout+stderr)',
    prepare: ({ rng, vars }) => {
      vars.f = 'CHANGELOG.txt';
      const f = vars.f;
      return {
        files: { [f]: 'base\n' },
        setup: [
          ...gitInit(),
          ...gitCommitAll('base'),
          ['git', 'checkout', '-q', '-b', 'feature'],
          ['bash', '-c', `echo feature-${rng.int(1, 99)} > ${f}`],
          ...gitCommitAll('feature'),
          ['git', 'checkout', '-q', 'main'],
          ['bash', '-c', `echo main-${rng.int(1, 99)} > ${f}`],
          ...gitCommitAll('main'),
        ],
        cmd: ['git', 'merge', 'feature'],
        stream: 'combined',
      };
    },
    expect: ({ vars }) => failure(`CONFLICT (content): Merge conflict in ${vars.f}`),
  },
  {
    id: 'git-push-no-remote-repo',
    tool: 'git',
    program: 'git push to a local path that is not a repository',
    prepare: ({ rng, dir, vars }) => {
      vars.remote = `${dir}/remote-${rng.int(1, 999)}.git`;
      return { files: { 'a.txt': 'a\n' }, setup: [...gitInit(), ...gitCommitAll('init')], cmd: ['git', 'push', vars.remote, 'main'] };
    },
    expect: ({ vars }) => failure(`fatal: '${vars.remote}' does not appear to be a git repository`),
  },
  {
    id: 'git-branch-exists',
    tool: 'git',
    program: 'git checkout -b of a branch that already exists (name varies)',
    prepare: ({ rng, vars }) => {
      vars.b = `fix/${rng.ident()}`;
      return { files: { 'a.txt': 'a\n' }, setup: [...gitInit(), ...gitCommitAll('init'), ['git', 'branch', vars.b]], cmd: ['git', 'checkout', '-b', vars.b] };
    },
    expect: ({ vars }) => failure(`fatal: a branch named '${vars.b}' already exists`),
  },
  {
    id: 'git-unknown-option',
    tool: 'git',
    program: 'git log with an option that does not exist',
    variants: 2,
    prepare: ({ rng }) => ({ files: { 'a.txt': 'a\n' }, setup: [...gitInit(), ...gitCommitAll('init')], cmd: ['git', 'log', `--frobnicate=${rng.int(1, 9)}`] }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^fatal: unrecognized argument/)),
  },
  // -- warnings
  {
    id: 'git-embedded-repo-warning',
    tool: 'git',
    program: 'git add of a directory that is itself a repository',
    prepare: ({ rng, vars }) => {
      vars.sub = `vendor-${rng.int(1, 99)}`;
      return {
        files: { 'a.txt': 'a\n', [`${vars.sub}/b.txt`]: 'b\n' },
        setup: [...gitInit(), ['git', '-C', vars.sub, 'init', '-q'], ['git', '-C', vars.sub, 'add', '.'], ['git', '-C', vars.sub, 'commit', '-q', '-m', 'x']],
        cmd: ['git', 'add', '.'],
      };
    },
    expect: () => warning(),
  },
  {
    id: 'git-crlf-warning',
    tool: 'git',
    program: 'git add with core.autocrlf=true of a file with LF endings',
    prepare: ({ rng }) => ({
      files: { [`${rng.ident()}.txt`]: 'one\ntwo\n' },
      setup: [...gitInit(), ['git', 'config', 'core.autocrlf', 'true']],
      cmd: ['git', 'add', '.'],
    }),
    expect: () => warning(),
  },
  // -- noise
  {
    id: 'git-clone-local-noise',
    tool: 'git',
    program: 'git clone of a local repository (progress on stderr)',
    prepare: ({ rng }) => ({
      files: { 'src/a.txt': 'a\n' },
      setup: [
        ['git', '-C', 'src', 'init', '-q', '-b', 'main'],
        ['git', '-C', 'src', 'add', '.'],
        ['git', '-C', 'src', 'commit', '-q', '-m', 'x'],
      ],
      cmd: ['git', 'clone', 'src', `copy-${rng.int(1, 999)}`],
    }),
    expect: () => noise(),
  },
  {
    id: 'git-switch-branch-noise',
    tool: 'git',
    program: 'git checkout -b of a new branch (the message goes to stderr)',
    prepare: ({ rng }) => ({ files: { 'a.txt': 'a\n' }, setup: [...gitInit(), ...gitCommitAll('init')], cmd: ['git', 'checkout', '-b', `feat/${rng.ident()}`] }),
    expect: () => noise(),
  },
];

const pkg = (name: string, scripts: Record<string, string> = {}) => JSON.stringify({ name, version: '1.0.0', scripts }, null, 2);

export const npm: Scenario[] = [
  {
    id: 'npm-missing-script',
    tool: 'npm',
    program: 'npm run of a script the package does not define (name varies)',
    variants: 4,
    prepare: ({ rng, v, vars }) => {
      vars.s = rng.pick(['build', 'lint', 'deploy', 'bench']) + (rng.int(0, 1) ? `:${rng.ident()}` : '');
      return { files: { 'package.json': pkg(`app-${rng.int(1, 999)}`) }, cmd: ['npm', 'run', vars.s, ...(v === 1 ? ['--color=always'] : [])] };
    },
    expect: ({ vars }) => failure(`npm error Missing script: "${vars.s}"`),
  },
  {
    id: 'npm-ejsonparse',
    tool: 'npm',
    program: 'npm install with a package.json that is not valid JSON',
    prepare: ({ rng }) => ({
      files: { 'package.json': `{"name": "app-${rng.int(1, 999)}" "version": "1.0.${rng.int(0, 9)}"}\n` },
      cmd: ['npm', 'install', '--offline'],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^npm error JSON\.parse Invalid package\.json/)),
  },
  {
    id: 'npm-enotcached',
    tool: 'npm',
    program: 'npm install --offline of a package that is not in the cache',
    prepare: ({ vars }) => {
      vars.p = 'vigil-corpus-missing-pkg';
      return { files: { 'package.json': pkg('app') }, cmd: ['npm', 'install', '--offline', '--no-audit', '--no-fund', vars.p] };
    },
    expect: (_c, run) => failure(lineOf(run.stderr, /^npm error request to .* failed: cache mode is 'only-if-cached'/)),
  },
  {
    id: 'npm-enoent-package-json',
    tool: 'npm',
    program: 'npm run in a directory without package.json',
    prepare: ({ rng }) => ({ cmd: ['npm', 'run', rng.pick(['start', 'test', 'build'])] }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^npm error enoent Could not read package\.json/)),
  },
  {
    id: 'npm-script-eaddrinuse',
    // The same server as node-eaddrinuse, started through npm: the same failure.
    failureId: 'node-eaddrinuse',
    tool: 'npm',
    program: "npm start of a server that dies on EADDRINUSE (the node error is inside npm's output)",
    prepare: ({ rng, vars }) => {
      vars.port = String(rng.port());
      return {
        files: {
          'package.json': pkg('srv', { start: 'node server.js' }),
          'server.js': `const net = require('net');\nconst a = net.createServer().listen(${vars.port}, '127.0.0.1', () => {\n  net.createServer().listen(${vars.port}, '127.0.0.1');\n  setTimeout(() => a.close(), 200);\n});\n`,
        },
        cmd: ['npm', 'start'],
        stream: 'combined',
      };
    },
    expect: ({ vars }) => failure(`Error: listen EADDRINUSE: address already in use 127.0.0.1:${vars.port}`),
  },
  // -- warnings and noise
  {
    id: 'npm-warn-unknown-config',
    tool: 'npm',
    program: 'npm with an unknown config flag (npm warn)',
    prepare: ({ rng }) => ({
      files: { 'package.json': pkg('app') },
      cmd: ['npm', `--${rng.pick(['fastmode', 'legacy-thing', 'turbo'])}=${rng.int(1, 9)}`, 'pkg', 'get', 'name'],
    }),
    expect: () => warning(),
  },
  {
    id: 'npm-pack-dry-run-noise',
    tool: 'npm',
    program: 'npm pack --dry-run (npm notice lines on stderr)',
    prepare: ({ rng }) => ({
      files: { 'package.json': pkg(`lib-${rng.int(1, 999)}`), 'index.js': `module.exports = ${rng.int(1, 99)};\n` },
      cmd: ['npm', 'pack', '--dry-run'],
    }),
    expect: () => noise(),
  },
];

export const make: Scenario[] = [
  {
    id: 'make-no-rule',
    tool: 'make',
    program: 'make of a target that has no rule (name varies)',
    prepare: ({ rng, vars }) => {
      vars.t = rng.pick(['deploy', 'docs', 'release']) + '-' + rng.int(1, 99);
      return { files: { Makefile: 'all:\n\t@echo ok\n' }, cmd: ['make', vars.t] };
    },
    expect: ({ vars }) => failure(`make: *** No rule to make target '${vars.t}'.  Stop.`),
  },
  {
    id: 'make-missing-separator',
    tool: 'make',
    program: 'a Makefile whose recipe is indented with spaces',
    prepare: ({ rng, vars }) => {
      const line = rng.int(2, 5);
      vars.line = String(line);
      return { files: { Makefile: `${'# c\n'.repeat(line - 2)}all:\n    echo ok\n` }, cmd: ['make'] };
    },
    expect: ({ vars }) => failure(`Makefile:${Number(vars.line)}: *** missing separator.  Stop.`),
  },
  {
    id: 'make-gcc-error',
    tool: 'make',
    program: "make builds a C file with a missing semicolon (the compiler error is inside make's output)",
    prepare: ({ rng }) => ({
      files: { Makefile: 'prog: prog.c\n\tgcc -c prog.c\n', 'prog.c': `${pad(rng.int(0, 3), '//')}int f(int x) {\n    return x + ${rng.int(1, 9)}\n}\n` },
      cmd: ['make'],
      stream: 'combined',
    }),
    expect: (_c, run) => failure(lineOf(run.stdout + run.stderr, /error: expected .;. before .}. token/)),
  },
  {
    id: 'make-recipe-exit',
    tool: 'make',
    program: 'a recipe exits non-zero (code varies) without printing anything',
    prepare: ({ rng, vars }) => {
      vars.t = 'check';
      vars.code = String(rng.int(2, 9));
      return { files: { Makefile: `${vars.t}:\n\t@exit ${vars.code}\n` }, cmd: ['make', vars.t] };
    },
    expect: ({ vars }) => failure(`make: *** [Makefile:2: ${vars.t}] Error ${vars.code}`),
  },
  {
    id: 'make-python-traceback',
    tool: 'make',
    program: "make runs a Python step that raises a KeyError (the traceback is inside make's output)",
    prepare: ({ rng, vars }) => {
      vars.key = rng.ident();
      return {
        files: {
          Makefile: 'report:\n\tpython3 report.py\n',
          'report.py': `ROWS = {}\n\ndef column(name):\n    return ROWS[name]\n\ncolumn(${JSON.stringify(vars.key)})\n`,
        },
        cmd: ['make', 'report'],
      };
    },
    expect: ({ vars }) => failure(`KeyError: '${vars.key}'`),
  },
  {
    id: 'make-ignored-error',
    tool: 'make',
    program: 'make -i ignores a failing recipe and exits 0',
    prepare: ({ rng, vars }) => {
      vars.t = 'lint';
      vars.line = String(rng.int(2, 5));
      return { files: { Makefile: `${'# c\n'.repeat(Number(vars.line) - 2)}${vars.t}:\n\t@exit 1\n` }, cmd: ['make', '-i', vars.t] };
    },
    expect: ({ vars }) => recovered(`make: [Makefile:${vars.line}: ${vars.t}] Error 1 (ignored)`),
  },
  {
    id: 'make-overriding-recipe',
    tool: 'make',
    program: 'a Makefile defines the same target twice (make warns)',
    prepare: ({ rng }) => {
      const t = `build${rng.int(1, 9)}`;
      return { files: { Makefile: `${t}:\n\t@echo one\n${t}:\n\t@echo two\n` }, cmd: ['make', t] };
    },
    expect: () => warning(),
  },
];

export const perl: Scenario[] = [
  {
    id: 'perl-die-open',
    tool: 'perl',
    program: 'a script dies because it cannot open its config file',
    variants: 4,
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/app-${rng.int(1, 999)}.cfg`;
      const line = rng.int(2, 6);
      vars.msg = `Cannot open config ${vars.path}: No such file or directory at ${dir}/app.pl line ${line}.`;
      return {
        files: { 'app.pl': `use strict;\n${'# c\n'.repeat(line - 2)}open(my $fh, '<', '${vars.path}') or die "Cannot open config ${vars.path}: $!";\n` },
        cmd: ['perl', `${dir}/app.pl`],
      };
    },
    expect: ({ vars }) => failure(vars.msg!),
  },
  {
    id: 'perl-cant-locate',
    tool: 'perl',
    program: 'uses a module that is not installed',
    prepare: ({ rng, dir }) => ({ files: { 'w.pl': `use strict;\n${'# c\n'.repeat(rng.int(0, 4))}use Acme::Widget;\n` }, cmd: ['perl', `${dir}/w.pl`] }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^Can't locate Acme\/Widget/)),
  },
  {
    id: 'perl-division-by-zero',
    tool: 'perl',
    program: 'divides by a count that is zero',
    prepare: ({ rng, dir }) => {
      const line = rng.int(2, 5);
      return { files: { 'avg.pl': `my $count = 0;\n${'# c\n'.repeat(line - 2)}print ${rng.int(1, 99)} / $count;\n` }, cmd: ['perl', `${dir}/avg.pl`] };
    },
    expect: (_c, run) => failure(lineOf(run.stderr, /^Illegal division by zero at /)),
  },
  {
    id: 'perl-syntax-error',
    tool: 'perl',
    program: 'a script with a missing semicolon',
    prepare: ({ rng }) => ({ files: { 's.pl': `my $a = ${rng.int(1, 9)}\nmy $b = 2;\nprint $a + $b;\n` }, cmd: ['perl', 's.pl'] }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^syntax error at /)),
  },
  {
    id: 'perl-undefined-sub',
    tool: 'perl',
    program: 'calls a subroutine that is not defined',
    prepare: ({ rng, dir, vars }) => {
      const line = rng.int(2, 6);
      vars.msg = `Undefined subroutine &main::compute_totals called at ${dir}/u.pl line ${line}.`;
      return { files: { 'u.pl': `use strict;\n${'# c\n'.repeat(line - 2)}compute_totals(${rng.int(1, 9)});\n` }, cmd: ['perl', `${dir}/u.pl`] };
    },
    expect: ({ vars }) => failure(vars.msg!),
  },
  {
    id: 'perl-method-on-undef',
    tool: 'perl',
    program: 'calls a method on an undefined value (method varies)',
    prepare: ({ rng, vars }) => {
      vars.m = rng.pick(['name', 'save', 'fetch']);
      return { files: { 'm.pl': `use strict;\nmy $obj;\n$obj->${vars.m}();\n` }, cmd: ['perl', 'm.pl'] };
    },
    expect: ({ vars }) => failure(`Can't call method "${vars.m}" on an undefined value at m.pl line 3.`),
  },
  // -- warnings
  {
    id: 'perl-uninitialized-warning',
    tool: 'perl',
    program: 'use warnings: concatenates an undefined variable (exit 0)',
    prepare: ({ rng }) => ({
      files: { 'w.pl': `use strict;\nuse warnings;\nmy $${rng.pick(['name', 'host', 'id'])};\nmy $x;\nprint "value: " . $x . "\\n";\n` },
      cmd: ['perl', 'w.pl'],
    }),
    expect: () => warning(),
  },
  {
    id: 'perl-isnt-numeric-warning',
    tool: 'perl',
    program: 'use warnings: adds a non-numeric string (exit 0)',
    prepare: ({ rng }) => ({
      files: { 'n.pl': `use warnings;\nmy $v = "${rng.pick(['abc', 'x12', 'n/a'])}";\nprint $v + ${rng.int(1, 9)}, "\\n";\n` },
      cmd: ['perl', 'n.pl'],
    }),
    expect: () => warning(),
  },
];

const TSC_ARGS = ['node', TSC, '--noEmit', '--pretty', 'false'];

export const tsc: Scenario[] = [
  {
    id: 'tsc-ts2304',
    tool: 'tsc',
    program: 'tsc on a file that uses an undeclared name (tsc reports on stdout)',
    prepare: ({ rng }) => ({
      files: { 'main.ts': `${pad(rng.int(0, 4), '//')}export const result = ${rng.pick(['quotaLimit', 'retryBudget', 'pageSize'])}${rng.int(1, 9)} + 1;\n` },
      cmd: [...TSC_ARGS, 'main.ts'],
      stream: 'combined',
    }),
    expect: (_c, run) => failure(lineOf(run.stdout, /error TS2304: Cannot find name/)),
  },
  {
    id: 'tsc-ts2322',
    tool: 'tsc',
    program: 'tsc on a file that assigns a string to a number',
    prepare: ({ rng }) => ({
      files: { 'types.ts': `${pad(rng.int(0, 4), '//')}export const n: number = "${rng.int(1, 999)}";\n` },
      cmd: [...TSC_ARGS, 'types.ts'],
      stream: 'combined',
    }),
    expect: (_c, run) => failure(lineOf(run.stdout, /error TS2322: Type 'string' is not assignable to type 'number'/)),
  },
];
