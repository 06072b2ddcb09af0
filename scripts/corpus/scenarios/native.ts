/** C and C++ (gcc/g++, GNU ld, glibc and libstdc++ at run time). */
import { failure, lineOf, pad, recovered, warning, type Scenario } from '../scenario.ts';

/** Asks gcc for colour on some variants, as a pty-backed agent shell would get it. */
const color = (v: number) => (v === 2 ? ['-fdiagnostics-color=always'] : []);

export const native: Scenario[] = [
  {
    id: 'gcc-undeclared',
    tool: 'gcc',
    program: 'main() assigns to an undeclared variable (name varies)',
    variants: 4,
    prepare: ({ rng, v, vars }) => {
      vars.name = rng.pick(['count', 'total', 'idx', 'len']) + rng.int(1, 9);
      return {
        files: { 'main.c': `${pad(rng.int(0, 5), '//')}#include <stdio.h>\nint main(void) {\n    ${vars.name} = ${rng.int(1, 99)};\n    return 0;\n}\n` },
        cmd: ['gcc', ...color(v), '-c', 'main.c'],
      };
    },
    expect: (_c, run) => failure(lineOf(run.stderr, /error: .*undeclared/)),
  },
  {
    id: 'gcc-expected-semicolon',
    tool: 'gcc',
    program: 'a statement without its semicolon before a closing brace',
    prepare: ({ rng, v }) => ({
      files: { 'calc.c': `${pad(rng.int(0, 5), '//')}int twice(int x) {\n    return x * ${rng.int(2, 9)}\n}\n` },
      cmd: ['gcc', ...color(v), '-c', 'calc.c'],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /error: expected .;. before .}. token/)),
  },
  {
    id: 'gcc-werror-implicit',
    tool: 'gcc',
    program: 'calls an undeclared function under -Werror (warning turned error; cc1 wrapper line follows)',
    prepare: ({ rng, vars }) => {
      vars.fn = rng.pick(['compute', 'flush', 'reset']) + '_' + rng.pick(['all', 'cache', 'state']);
      return {
        files: { 'job.c': `${pad(rng.int(0, 4), '//')}int main(void) {\n    return ${vars.fn}(${rng.int(1, 9)});\n}\n` },
        cmd: ['gcc', '-Werror', '-c', 'job.c'],
      };
    },
    expect: (_c, run) => failure(lineOf(run.stderr, /error: implicit declaration of function/)),
  },
  {
    id: 'gcc-missing-header',
    tool: 'gcc',
    program: 'includes a generated header that does not exist yet',
    prepare: ({ rng, vars }) => {
      vars.h = 'config_gen.h';
      return { files: { 'app.c': `${pad(rng.int(0, 5), '//')}#include "${vars.h}"\nint main(void) { return 0; }\n` }, cmd: ['gcc', '-c', 'app.c'] };
    },
    expect: (_c, run) => failure(lineOf(run.stderr, /fatal error: .*No such file or directory/)),
  },
  {
    id: 'ld-undefined-reference',
    tool: 'gcc',
    program: 'links a program that calls a function defined nowhere (name varies)',
    variants: 4,
    prepare: ({ rng, vars }) => {
      vars.fn = `${rng.pick(['compute', 'load', 'encode'])}_${rng.pick(['checksum', 'table', 'frame'])}`;
      return {
        files: { 'main.c': `${pad(rng.int(0, 4), '//')}int ${vars.fn}(int);\nint main(void) {\n    return ${vars.fn}(${rng.int(1, 99)});\n}\n` },
        cmd: ['gcc', 'main.c', '-o', 'prog'],
      };
    },
    expect: (_c, run) => failure(lineOf(run.stderr, /undefined reference to/)),
  },
  {
    id: 'ld-cannot-find-lib',
    tool: 'gcc',
    program: 'links against a library that is not installed',
    prepare: ({ vars }) => {
      vars.lib = 'acmecodec';
      return { files: { 'main.c': 'int main(void) { return 0; }\n' }, cmd: ['gcc', 'main.c', '-o', 'prog', `-l${vars.lib}`] };
    },
    expect: (_c, run) => failure(lineOf(run.stderr, /cannot find -l/)),
  },
  {
    id: 'gxx-no-member',
    tool: 'g++',
    program: 'C++ code calls a member function the class does not have (name varies)',
    prepare: ({ rng, v, vars }) => {
      vars.m = rng.pick(['flush', 'reset', 'drain']) + rng.int(1, 9);
      return {
        files: {
          'queue.cpp': `${pad(rng.int(0, 4), '//')}struct Queue {\n  int size() const { return 0; }\n};\nint main() {\n  Queue q;\n  q.${vars.m}();\n  return q.size();\n}\n`,
        },
        cmd: ['g++', ...color(v), '-c', 'queue.cpp'],
      };
    },
    expect: (_c, run) => failure(lineOf(run.stderr, /error: .*has no member named/)),
  },
  {
    id: 'gcc-no-input-file',
    tool: 'gcc',
    program: 'gcc is given a source file (in its temp dir) that does not exist',
    prepare: ({ dir, vars }) => {
      vars.f = `${dir}/parser.c`;
      return { cmd: ['gcc', '-c', vars.f] };
    },
    expect: (_c, run) => failure(lineOf(run.stderr, /fatal error: .*No such file or directory/)),
  },
  {
    id: 'c-assert-abort',
    tool: 'gcc',
    program: 'a C program fails an assert() at run time (glibc prints the assertion, SIGABRT)',
    prepare: ({ rng }) => ({
      files: {
        'check.c': `#include <assert.h>\n#include <stdio.h>\nint main(int argc, char **argv) {\n    int count = argc - ${rng.int(1, 1)};\n    assert(count > 0);\n    printf("%d\\n", count);\n    return 0;\n}\n`,
      },
      setup: [['gcc', 'check.c', '-o', 'check']],
      cmd: ['./check'],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /Assertion .count > 0. failed/)),
  },
  {
    id: 'cxx-uncaught-exception',
    tool: 'g++',
    program: 'a C++ program throws std::runtime_error naming a missing data file; nothing catches it',
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/shard-${rng.int(1, 999)}.dat`;
      return {
        files: {
          'load.cpp': `#include <stdexcept>\n#include <string>\nvoid load(const std::string& p) { throw std::runtime_error("cannot open " + p); }\nint main() { load("${vars.path}"); }\n`,
        },
        setup: [['g++', 'load.cpp', '-o', 'load']],
        cmd: ['./load'],
      };
    },
    expect: ({ vars }) => failure(`std::runtime_error: cannot open ${vars.path}`),
  },
  {
    id: 'c-segfault-bash',
    tool: 'bash',
    program: 'bash runs a C program that dereferences NULL (bash reports the signal with the pid)',
    prepare: ({ rng }) => ({
      files: { 'crash.c': `#include <stdio.h>\nint main(void) {\n    int *p = 0;\n    printf("%d\\n", p[${rng.int(0, 9)}]);\n    return 0;\n}\n` },
      setup: [['gcc', 'crash.c', '-o', 'crash']],
      cmd: ['bash', '-c', './crash; exit $?'],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /Segmentation fault/)),
  },
  // -- warnings
  {
    id: 'gcc-wall-unused',
    tool: 'gcc',
    program: 'gcc -Wall on code with an unused variable (compiles)',
    prepare: ({ rng, v }) => ({
      files: {
        'u.c': `${pad(rng.int(0, 4), '//')}int main(void) {\n    int ${rng.pick(['tmp', 'unused', 'x'])}${rng.int(1, 9)} = ${rng.int(1, 99)};\n    return 0;\n}\n`,
      },
      cmd: ['gcc', ...color(v), '-Wall', '-c', 'u.c'],
    }),
    expect: () => warning(),
  },
  {
    id: 'gcc-format-warning',
    tool: 'gcc',
    program: 'printf with a format that does not match its argument (compiles)',
    prepare: ({ rng }) => ({
      files: { 'fmt.c': `#include <stdio.h>\nint main(void) {\n    long n = ${rng.int(1, 99999)};\n    printf("%d\\n", n);\n    return 0;\n}\n` },
      cmd: ['gcc', '-Wall', '-c', 'fmt.c'],
    }),
    expect: () => warning(),
  },
  {
    id: 'gxx-sign-compare',
    tool: 'g++',
    program: 'g++ -Wall on a signed/unsigned comparison (compiles)',
    prepare: ({ rng }) => ({
      files: {
        'loop.cpp': `#include <vector>\nint count(const std::vector<int>& v) {\n  int n = 0;\n  for (int i = 0; i < v.size(); i++) n += v[i] * ${rng.int(1, 9)};\n  return n;\n}\n`,
      },
      cmd: ['g++', '-Wall', '-c', 'loop.cpp'],
    }),
    expect: () => warning(),
  },
  {
    id: 'c-stderr-perror-recovered',
    tool: 'gcc',
    program: 'a C program perror()s a failed fopen of an optional file and goes on (exit 0)',
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/optional-${rng.int(1, 999)}.conf`;
      return {
        files: {
          'opt.c': `#include <stdio.h>\nint main(void) {\n    FILE *f = fopen("${vars.path}", "r");\n    if (!f) perror("${vars.path}");\n    puts("defaults");\n    return 0;\n}\n`,
        },
        setup: [['gcc', 'opt.c', '-o', 'opt']],
        cmd: ['./opt'],
      };
    },
    expect: ({ vars }) => recovered(`${vars.path}: No such file or directory`),
  },
];
