/** Rust: rustc and cargo diagnostics, panics at run time. */
import { failure, lineOf, noise, pad, warning, type Scenario } from '../scenario.ts';

const color = (v: number) => (v === 1 ? ['--color=always'] : []);
const noBacktrace = { RUST_BACKTRACE: undefined };

export const rust: Scenario[] = [
  {
    id: 'rustc-e0308',
    tool: 'rustc',
    program: 'returns a &str where an i32 is expected',
    variants: 4,
    prepare: ({ rng, v }) => ({
      files: { 'main.rs': `${pad(rng.int(0, 4), '//')}fn count() -> i32 {\n    "${rng.int(1, 999)}"\n}\nfn main() {\n    println!("{}", count());\n}\n` },
      cmd: ['rustc', ...color(v), 'main.rs'],
    }),
    expect: () => failure('error[E0308]: mismatched types'),
  },
  {
    id: 'rustc-e0425',
    tool: 'rustc',
    program: 'uses a value that is not in scope (name varies)',
    prepare: ({ rng, v, vars }) => {
      vars.name = rng.pick(['totl', 'cnt', 'itemz']) + rng.int(1, 9);
      return {
        files: { 'main.rs': `${pad(rng.int(0, 4), '//')}fn main() {\n    let total = ${rng.int(1, 9)};\n    println!("{}", ${vars.name} + total);\n}\n` },
        cmd: ['rustc', ...color(v), 'main.rs'],
      };
    },
    expect: ({ vars }) => failure(`error[E0425]: cannot find value \`${vars.name}\` in this scope`),
  },
  {
    id: 'rustc-e0382',
    tool: 'rustc',
    program: 'uses a String after moving it (variable name varies)',
    prepare: ({ rng, vars }) => {
      vars.name = rng.pick(['name', 'label', 'path']);
      return {
        files: {
          'main.rs': `${pad(rng.int(0, 4), '//')}fn consume(s: String) -> usize { s.len() }\nfn main() {\n    let ${vars.name} = String::from("${rng.ident()}");\n    let n = consume(${vars.name});\n    println!("{} {}", n, ${vars.name});\n}\n`,
        },
        cmd: ['rustc', 'main.rs'],
      };
    },
    expect: ({ vars }) => failure(`error[E0382]: borrow of moved value: \`${vars.name}\``),
  },
  {
    id: 'rustc-syntax-expected-semicolon',
    tool: 'rustc',
    program: 'a let statement without its semicolon',
    prepare: ({ rng }) => ({
      files: { 'main.rs': `${pad(rng.int(0, 4), '//')}fn main() {\n    let a = ${rng.int(1, 99)}\n    let b = a + 1;\n    println!("{}", b);\n}\n` },
      cmd: ['rustc', 'main.rs'],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^error: expected `;`/)),
  },
  {
    id: 'rust-panic-index',
    tool: 'rustc',
    program: 'a Rust program indexes past the end of a Vec (index varies; with and without RUST_BACKTRACE)',
    variants: 4,
    prepare: ({ rng, v, vars }) => {
      vars.idx = String(rng.int(5, 99));
      return {
        files: {
          'main.rs': `${pad(rng.int(0, 3), '//')}fn pick(v: &[u32], i: usize) -> u32 {\n    v[i]\n}\nfn main() {\n    let v = vec![1, 2, 3];\n    println!("{}", pick(&v, ${vars.idx}));\n}\n`,
        },
        setup: [['rustc', 'main.rs']],
        cmd: ['./main'],
        env: v % 2 === 0 ? noBacktrace : { RUST_BACKTRACE: '1' },
      };
    },
    expect: ({ vars }) => failure(`thread 'main' panicked: index out of bounds: the len is 3 but the index is ${vars.idx}`),
  },
  {
    id: 'rust-panic-unwrap-none',
    tool: 'rustc',
    program: 'unwrap() on a None returned by a map lookup',
    prepare: ({ rng }) => ({
      files: {
        'main.rs': `use std::collections::HashMap;\nfn main() {\n    let m: HashMap<&str, u32> = HashMap::new();\n    let v = m.get("${rng.ident()}").unwrap();\n    println!("{}", v);\n}\n`,
      },
      setup: [['rustc', 'main.rs']],
      cmd: ['./main'],
      env: noBacktrace,
    }),
    expect: () => failure("thread 'main' panicked: called `Option::unwrap()` on a `None` value"),
  },
  {
    id: 'rust-panic-message',
    tool: 'rustc',
    program: 'panic!() with a formatted message about an invalid state (number varies; with and without RUST_BACKTRACE)',
    variants: 4,
    prepare: ({ rng, v, vars }) => {
      vars.n = String(rng.int(2, 9999));
      return {
        files: {
          'main.rs': `fn check(state: u32) {\n    if state > 1 {\n        panic!("invalid state: {}", state);\n    }\n}\nfn main() {\n    check(${vars.n});\n}\n`,
        },
        setup: [['rustc', 'main.rs']],
        cmd: ['./main'],
        env: v < 2 ? noBacktrace : { RUST_BACKTRACE: '1' },
      };
    },
    expect: ({ vars }) => failure(`thread 'main' panicked: invalid state: ${vars.n}`),
  },
  {
    id: 'rust-main-err',
    tool: 'rustc',
    program: 'main() returns the Err of a failed integer parse',
    prepare: ({ rng }) => ({
      files: {
        'main.rs': `fn main() -> Result<(), std::num::ParseIntError> {\n    let n: i64 = "${rng.pick(['12a', 'x' + rng.int(1, 9), 'ten'])}".parse()?;\n    println!("{}", n);\n    Ok(())\n}\n`,
      },
      setup: [['rustc', 'main.rs']],
      cmd: ['./main'],
    }),
    expect: () => failure('Error: ParseIntError { kind: InvalidDigit }'),
  },
  {
    id: 'cargo-e0425',
    tool: 'cargo',
    program: 'cargo build of a crate whose main uses an undefined value (crate name varies)',
    variants: 2,
    prepare: ({ rng, vars }) => {
      vars.crate = `svc_${rng.int(1, 999)}`;
      vars.name = `cfg${rng.int(1, 9)}`;
      return {
        files: {
          'Cargo.toml': `[package]\nname = "${vars.crate}"\nversion = "0.1.0"\nedition = "2021"\n`,
          'src/main.rs': `fn main() {\n    println!("{}", ${vars.name});\n}\n`,
        },
        cmd: ['cargo', 'build', '--offline', '-q'],
        env: { CARGO_TARGET_DIR: undefined },
      };
    },
    expect: ({ vars }) => failure(`error[E0425]: cannot find value \`${vars.name}\` in this scope`),
  },
  // -- warnings
  {
    id: 'rustc-unused-warning',
    tool: 'rustc',
    program: 'rustc on code with an unused variable and a dead function (compiles)',
    prepare: ({ rng, v }) => ({
      files: { 'main.rs': `fn helper_${rng.int(1, 99)}() {}\nfn main() {\n    let ${rng.pick(['tmp', 'x', 'unused'])} = ${rng.int(1, 99)};\n}\n` },
      cmd: ['rustc', ...color(v), 'main.rs'],
    }),
    expect: () => warning(),
  },
  // -- noise
  {
    id: 'cargo-build-ok',
    tool: 'cargo',
    program: 'a successful cargo build (progress on stderr)',
    variants: 2,
    prepare: ({ rng }) => ({
      files: {
        'Cargo.toml': `[package]\nname = "ok_${rng.int(1, 999)}"\nversion = "0.1.${rng.int(0, 9)}"\nedition = "2021"\n`,
        'src/main.rs': 'fn main() {\n    println!("hi");\n}\n',
      },
      cmd: ['cargo', 'build', '--offline'],
    }),
    expect: () => noise(),
  },
];
