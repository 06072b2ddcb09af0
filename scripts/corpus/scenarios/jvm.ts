/** Java (javac + java 17) failures, warnings and noise. */
import { failure, lineOf, noise, pad, recovered, warning, type Scenario } from '../scenario.ts';

const javaRun = (main: string, ...args: string[]) => ['java', '-cp', '.', main, ...args];
const compile = (...files: string[]) => [['javac', '-g', ...files]];

export const jvm: Scenario[] = [
  {
    id: 'java-npe-helpful',
    tool: 'java',
    program: 'Main.describe() calls length() on a null String field (field name varies)',
    prepare: ({ rng, vars }) => {
      vars.field = rng.pick(['title', 'owner', 'label', 'region']);
      return {
        files: {
          'Main.java': `${pad(rng.int(0, 4), '//')}public class Main {\n  static String ${vars.field};\n  static int describe() {\n    return ${vars.field}.length();\n  }\n  public static void main(String[] args) {\n    System.out.println(describe() + ${rng.int(1, 9)});\n  }\n}\n`,
        },
        setup: compile('Main.java'),
        cmd: javaRun('Main'),
      };
    },
    expect: ({ vars }) => failure(`java.lang.NullPointerException: Cannot invoke "String.length()" because "Main.${vars.field}" is null`),
  },
  {
    id: 'java-array-index',
    tool: 'java',
    program: 'Main.pick() indexes past the end of an array (index and length vary)',
    variants: 4,
    prepare: ({ rng, vars }) => {
      vars.len = String(rng.int(1, 5));
      vars.idx = String(rng.int(6, 40));
      return {
        files: {
          'Main.java': `public class Main {\n  static int pick(int[] xs, int i) {\n    return xs[i];\n  }\n  public static void main(String[] args) {\n    System.out.println(pick(new int[${vars.len}], ${vars.idx}));\n  }\n}\n`,
        },
        setup: compile('Main.java'),
        cmd: javaRun('Main'),
      };
    },
    expect: ({ vars }) => failure(`java.lang.ArrayIndexOutOfBoundsException: Index ${vars.idx} out of bounds for length ${vars.len}`),
  },
  {
    id: 'java-caused-by-fnf',
    tool: 'java',
    program: 'Config.load() wraps a FileNotFoundException in a RuntimeException; the root cause is the missing file',
    variants: 4,
    prepare: ({ rng, dir, vars }) => {
      vars.path = `${dir}/config-${rng.int(1, 9999)}.yml`;
      return {
        files: {
          'Main.java': `import java.io.*;\npublic class Main {\n  static String load(String path) {\n    try (FileInputStream in = new FileInputStream(path)) {\n      return new String(in.readAllBytes());\n    } catch (IOException e) {\n      throw new RuntimeException("failed to load config", e);\n    }\n  }\n  public static void main(String[] args) {\n    System.out.println(load(args[0]));\n  }\n}\n`,
        },
        setup: compile('Main.java'),
        cmd: javaRun('Main', vars.path),
      };
    },
    expect: ({ vars }) => failure(`java.io.FileNotFoundException: ${vars.path} (No such file or directory)`),
  },
  {
    id: 'java-number-format',
    tool: 'java',
    program: 'Main.parsePort() calls Integer.parseInt on a non-number (input varies)',
    prepare: ({ rng, vars }) => {
      vars.input = rng.pick(['80a', 'http', 'x' + rng.int(1, 99), 'port']);
      return {
        files: {
          'Main.java': `public class Main {\n  static int parsePort(String s) {\n    return Integer.parseInt(s);\n  }\n  public static void main(String[] args) {\n    System.out.println(parsePort(args[0]));\n  }\n}\n`,
        },
        setup: compile('Main.java'),
        cmd: javaRun('Main', vars.input),
      };
    },
    expect: ({ vars }) => failure(`java.lang.NumberFormatException: For input string: "${vars.input}"`),
  },
  {
    id: 'java-nested-causes',
    tool: 'java',
    program: 'an AppException caused by a ServiceException caused by an IllegalStateException (pool exhausted)',
    prepare: ({ rng, vars }) => {
      vars.n = String(rng.int(2, 64));
      return {
        files: {
          'Main.java': `public class Main {\n  static class AppException extends Exception { AppException(String m, Throwable c) { super(m, c); } }\n  static class ServiceException extends Exception { ServiceException(String m, Throwable c) { super(m, c); } }\n  static void acquire() { throw new IllegalStateException("connection pool exhausted (size=${vars.n})"); }\n  static void service() throws ServiceException {\n    try { acquire(); } catch (IllegalStateException e) { throw new ServiceException("order service unavailable", e); }\n  }\n  public static void main(String[] args) throws Exception {\n    try { service(); } catch (ServiceException e) { throw new AppException("request ${rng.int(1, 99999)} failed", e); }\n  }\n}\n`,
        },
        setup: compile('Main.java'),
        cmd: javaRun('Main'),
      };
    },
    expect: ({ vars }) => failure(`java.lang.IllegalStateException: connection pool exhausted (size=${vars.n})`),
  },
  {
    id: 'java-stack-overflow',
    tool: 'java',
    program: 'Main.recurse() calls itself without a base case (deep stack, 1024 frames)',
    variants: 2,
    prepare: ({ rng }) => ({
      files: {
        'Main.java': `${pad(rng.int(0, 3), '//')}public class Main {\n  static int recurse(int n) { return recurse(n + 1) + 1; }\n  public static void main(String[] args) { recurse(0); }\n}\n`,
      },
      setup: compile('Main.java'),
      cmd: javaRun('Main'),
    }),
    expect: () => failure('java.lang.StackOverflowError'),
  },
  {
    id: 'javac-cannot-find-symbol',
    tool: 'javac',
    program: 'a class uses an undeclared variable (name varies)',
    prepare: ({ rng, vars }) => {
      const name = rng.pick(['totl', 'cnt', 'itemz']) + rng.int(1, 9);
      const line = rng.int(0, 4) + 3;
      vars.line = String(line);
      return {
        files: {
          'Main.java': `${pad(rng.int(0, 0), '//')}public class Main {\n  public static void main(String[] args) {\n${'\n'.repeat(line - 3)}    System.out.println(${name});\n  }\n}\n`,
        },
        cmd: ['javac', 'Main.java'],
      };
    },
    expect: (_c, run) => failure(lineOf(run.stderr, /^Main\.java:\d+: error: cannot find symbol$/)),
  },
  {
    id: 'javac-semicolon-expected',
    tool: 'javac',
    program: 'a statement without its semicolon',
    prepare: ({ rng }) => ({
      files: { 'Calc.java': `${pad(rng.int(0, 4), '//')}public class Calc {\n  int twice(int x) {\n    int y = x * ${rng.int(2, 9)}\n    return y;\n  }\n}\n` },
      cmd: ['javac', 'Calc.java'],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /^Calc\.java:\d+: error: ';' expected$/)),
  },
  {
    id: 'javac-incompatible-types',
    tool: 'javac',
    program: 'assigns a String to an int',
    prepare: ({ rng }) => ({
      files: { 'Types.java': `${pad(rng.int(0, 4), '//')}public class Types {\n  int count() {\n    int n = "${rng.int(1, 999)}";\n    return n;\n  }\n}\n` },
      cmd: ['javac', 'Types.java'],
    }),
    expect: (_c, run) => failure(lineOf(run.stderr, /error: incompatible types: String cannot be converted to int/)),
  },
  {
    id: 'java-class-not-found',
    tool: 'java',
    program: 'java is asked to run a main class that does not exist',
    prepare: ({ rng, vars }) => {
      vars.cls = 'JobRunner';
      return { cmd: javaRun(vars.cls, String(rng.int(1, 99))) };
    },
    expect: ({ vars }) => failure(`java.lang.ClassNotFoundException: ${vars.cls}`),
  },
  {
    id: 'java-caught-printstacktrace',
    tool: 'java',
    program: 'catches an IllegalArgumentException, prints its stack trace and exits 0',
    prepare: ({ rng, vars }) => {
      vars.n = String(-rng.int(1, 99));
      return {
        files: {
          'Main.java': `public class Main {\n  static void setRetries(int n) {\n    if (n < 0) throw new IllegalArgumentException("invalid retry count: " + n);\n  }\n  public static void main(String[] args) {\n    try { setRetries(${vars.n}); } catch (IllegalArgumentException e) { e.printStackTrace(); }\n    System.out.println("using defaults");\n  }\n}\n`,
        },
        setup: compile('Main.java'),
        cmd: javaRun('Main'),
      };
    },
    expect: ({ vars }) => recovered(`java.lang.IllegalArgumentException: invalid retry count: ${vars.n}`),
  },
  // -- warnings
  {
    id: 'javac-xlint-warnings',
    tool: 'javac',
    program: 'javac -Xlint:all on code with a raw type and an unchecked call',
    prepare: ({ rng }) => ({
      files: { 'Raw.java': `import java.util.*;\npublic class Raw {\n  List items = new ArrayList();\n  void add() { items.add("${rng.ident()}"); }\n}\n` },
      cmd: ['javac', '-Xlint:all', 'Raw.java'],
    }),
    expect: () => warning(),
  },
  {
    id: 'javac-deprecation-note',
    tool: 'javac',
    program: 'javac on code that calls a deprecated API (without -Xlint: a Note)',
    prepare: ({ rng }) => ({
      files: { 'Old.java': `public class Old {\n  Integer box() { return new Integer(${rng.int(1, 999)}); }\n}\n` },
      cmd: ['javac', 'Old.java'],
    }),
    expect: () => warning(),
  },
  {
    id: 'java-vm-warning',
    tool: 'java',
    program: 'java with a removed VM option that the JVM ignores with a warning',
    variants: 2,
    prepare: () => ({ cmd: ['java', '-XX:+UseBiasedLocking', '-version'] }),
    expect: () => warning(),
  },
  // -- noise
  {
    id: 'java-version-noise',
    tool: 'java',
    program: 'java -version (prints to stderr)',
    variants: 2,
    prepare: () => ({ cmd: ['java', '-version'] }),
    expect: () => noise(),
  },
];
