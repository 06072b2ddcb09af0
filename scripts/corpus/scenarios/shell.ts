/** bash and coreutils: the failures of the commands agents type. */
import { failure, lineOf, noise, normal, recovered, warning, type Scenario } from '../scenario.ts';

export const shell: Scenario[] = [
  {
    id: 'bash-command-not-found',
    tool: 'bash',
    program: 'bash -c runs a command that is not installed, on a varying line',
    variants: 4,
    prepare: ({ rng, vars }) => {
      vars.line = String(rng.int(1, 4));
      return { cmd: ['bash', '-c', `${'true\n'.repeat(Number(vars.line) - 1)}frobnicate --version ${rng.int(1, 99)}`] };
    },
    expect: ({ vars }) => failure(`bash: line ${vars.line}: frobnicate: command not found`),
  },
  {
    id: 'bash-script-command-not-found',
    tool: 'bash',
    program: 'a script calls a command that is not installed on one of its lines',
    prepare: ({ rng, dir, vars }) => {
      const line = rng.int(2, 6);
      vars.cmd = 'build-helper';
      vars.msg = `${dir}/run.sh: line ${line}: ${vars.cmd}: command not found`;
      return { files: { 'run.sh': `#!/bin/bash\n${'echo step\n'.repeat(line - 2)}${vars.cmd} --all\n` }, cmd: [`${dir}/run.sh`] };
    },
    expect: ({ vars }) => failure(vars.msg!),
  },
  {
    id: 'cat-no-such-file',
    tool: 'bash',
    program: 'cat of a file missing from the temp dir (name varies)',
    variants: 4,
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/${rng.ident()}.log`;
      return { cmd: ['cat', vars.path] };
    },
    expect: ({ vars }) => failure(`cat: ${vars.path}: No such file or directory`),
  },
  {
    id: 'bash-permission-denied',
    tool: 'bash',
    program: 'runs a script that is not executable',
    prepare: ({ vars }) => {
      vars.f = 'tool-noexec.sh';
      return { files: { [vars.f]: '#!/bin/sh\necho hi\n' }, cmd: ['bash', '-c', `./${vars.f}`] };
    },
    expect: ({ vars }) => failure(`bash: line 1: ./${vars.f}: Permission denied`),
  },
  {
    id: 'bash-unbound-variable',
    tool: 'bash',
    program: 'a set -u script reads an unset variable',
    prepare: ({ rng, dir, vars }) => {
      vars.name = 'DEPLOY_TOKEN';
      const line = rng.int(3, 6);
      vars.msg = `${dir}/deploy.sh: line ${line}: ${vars.name}: unbound variable`;
      return { files: { 'deploy.sh': `#!/bin/bash\nset -u\n${'true\n'.repeat(line - 3)}echo "$${vars.name}"\n` }, cmd: [`${dir}/deploy.sh`] };
    },
    expect: ({ vars }) => failure(vars.msg!),
  },
  {
    id: 'bash-syntax-error',
    tool: 'bash',
    program: 'a script with an unmatched fi',
    prepare: ({ rng, dir }) => ({
      files: { 'check.sh': `#!/bin/bash\n${'echo ok\n'.repeat(rng.int(0, 4))}echo start\nfi\n` },
      cmd: [`${dir}/check.sh`],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /syntax error near unexpected token `fi'/)),
  },
  {
    id: 'bash-cd-missing',
    tool: 'bash',
    program: 'a script cds into a directory that does not exist, under set -e',
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/build-${rng.int(1, 9999)}`;
      vars.msg = `${dir}/build.sh: line 3: cd: ${vars.path}: No such file or directory`;
      return { files: { 'build.sh': `#!/bin/bash\nset -e\ncd ${vars.path}\nmake\n` }, cmd: [`${dir}/build.sh`] };
    },
    expect: ({ vars }) => failure(vars.msg!),
  },
  {
    id: 'ls-cannot-access',
    tool: 'bash',
    program: 'ls of a path that does not exist',
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/out-${rng.int(1, 9999)}`;
      return { cmd: ['ls', vars.path] };
    },
    expect: ({ vars }) => failure(`ls: cannot access '${vars.path}': No such file or directory`),
  },
  {
    id: 'mkdir-file-exists',
    tool: 'bash',
    program: 'mkdir (without -p) of a directory that already exists',
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/cache-${rng.int(1, 99)}`;
      return { setup: [['mkdir', vars.path]], cmd: ['mkdir', vars.path] };
    },
    expect: (_c, run) => failure(lineOf(run.stderr, /^mkdir: cannot create directory .*: File exists$/)),
  },
  {
    id: 'cp-cannot-stat-recovered',
    tool: 'bash',
    program: 'a script copies an optional file that is missing, falls back, and exits 0',
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/overrides-${rng.int(1, 999)}.env`;
      return { files: { 'setup.sh': `#!/bin/bash\ncp ${vars.path} .env || echo "using defaults"\nexit 0\n` }, cmd: [`${dir}/setup.sh`] };
    },
    expect: ({ vars }) => recovered(`cp: cannot stat '${vars.path}': No such file or directory`),
  },
  {
    id: 'bash-killed',
    tool: 'bash',
    program: 'a background job is killed with SIGKILL (bash reports it with the pid)',
    prepare: ({ rng }) => ({ cmd: ['bash', '-c', `sleep ${rng.int(20, 60)} & pid=$!; kill -9 $pid; wait $pid`] }),
    expect: (_c, run) => failure(lineOf(run.stderr, /Killed/)),
  },
  {
    id: 'grep-no-match',
    tool: 'bash',
    program: 'grep finds no match: exit 1 and no output',
    variants: 2,
    prepare: ({ rng }) => ({ files: { 'a.txt': `alpha ${rng.int(1, 9)}\n` }, cmd: ['grep', '-q', 'omega', 'a.txt'] }),
    expect: () => failure('ExecutionError'),
  },
  {
    id: 'test-false',
    tool: 'bash',
    program: 'test -f on a missing file: exit 1 and no output',
    variants: 2,
    prepare: ({ rng }) => ({ cmd: ['test', '-f', `missing-${rng.int(1, 99)}`] }),
    expect: () => failure('ExecutionError'),
  },
  // -- warnings
  {
    id: 'bash-setlocale-warning',
    tool: 'bash',
    program: 'bash started with a locale that is not installed',
    variants: 2,
    prepare: ({ rng }) => ({ cmd: ['bash', '-c', `echo ${rng.int(1, 9)}`], env: { LC_ALL: rng.pick(['de_DE.UTF-8', 'fr_FR.UTF-8', 'ja_JP.UTF-8']) } }),
    expect: () => warning(),
  },
  // -- noise and normal output
  {
    id: 'bash-time-noise',
    tool: 'bash',
    program: 'the time keyword reports timings on stderr',
    variants: 2,
    prepare: () => ({ cmd: ['bash', '-c', 'time sleep 0.01'] }),
    expect: () => noise(),
  },
  {
    id: 'bash-progress-noise',
    tool: 'bash',
    program: 'a script reports progress on stderr, mentioning zero errors',
    prepare: ({ rng }) => ({ cmd: ['bash', '-c', `echo "processed ${rng.int(10, 999)} files, 0 errors" >&2; echo "elapsed ${rng.int(1, 59)}s" >&2`] }),
    expect: () => noise(),
  },
  {
    id: 'bash-echo-ok',
    tool: 'bash',
    program: 'a command that succeeds and writes only to stdout',
    variants: 2,
    prepare: ({ rng }) => ({ cmd: ['bash', '-c', `echo ok ${rng.int(1, 99)}`] }),
    expect: () => normal(),
  },
];
