/**
 * Multi-row INSERTs of fixed arities. A page commit writes a few hundred rows (group states to
 * the group log, work events to the outbox, recent failures), and one statement per row cost about
 * as much in binding and stepping as the rows' own writing: each `run` is a call into the driver,
 * a reset and a VDBE program run for one row. Here the rows go in statements of ROW_CHUNKS rows
 * each, largest first (245 rows: three of 64, three of 16, one of 4, one of 1), each prepared once
 * per arity, so the statement count per commit is a handful and the SQL text stays fixed (no
 * statement built per commit). The rows are inserted in the order given, as one statement per row
 * would insert them: the same table contents.
 */
import type Database from 'better-sqlite3';

/** Rows per statement, largest first; 1 must be last (every count is a sum of these). */
export const ROW_CHUNKS: readonly number[] = [64, 16, 4, 1];

export class RowInserter {
  private readonly stmts = new Map<number, Database.Statement>();

  /**
   * `head`: `INSERT INTO t (a, b, c) VALUES`; `cols`: the columns per row; `tail`: what follows
   * the rows (an ON CONFLICT clause); `chunks`: the arities (tests pass [1]: a statement per row).
   */
  constructor(
    private readonly db: Database.Database,
    private readonly head: string,
    private readonly cols: number,
    private readonly tail = '',
    private readonly chunks: readonly number[] = ROW_CHUNKS,
  ) {
    if (chunks[chunks.length - 1] !== 1) throw new Error('row chunks must end with 1');
  }

  /** Inserts the rows held in `values`, `cols` values per row, in order. */
  run(values: readonly unknown[]): void {
    const rows = values.length / this.cols;
    if (!Number.isInteger(rows)) throw new Error(`${values.length} values are not rows of ${this.cols}`);
    let row = 0;
    for (const size of this.chunks) {
      while (rows - row >= size) {
        const stmt = this.stmt(size);
        stmt.run(values.slice(row * this.cols, (row + size) * this.cols));
        row += size;
      }
    }
  }

  private stmt(size: number): Database.Statement {
    let stmt = this.stmts.get(size);
    if (!stmt) {
      const one = `(${new Array<string>(this.cols).fill('?').join(', ')})`;
      stmt = this.db.prepare(`${this.head} ${new Array<string>(size).fill(one).join(', ')}${this.tail ? ` ${this.tail}` : ''}`);
      this.stmts.set(size, stmt);
    }
    return stmt;
  }
}
