/** The shape every benchmark of `npm run bench` has, and what it reports. */

/** One measured figure. */
export interface Figure {
  /** What was measured, e.g. `accepted → signal aborted p99`. */
  label: string;
  value: number;
  unit: string;
  /** The figure it is compared with, measured in the same run (a baseline), if any. */
  baseline?: { label: string; value: number };
  /** `value / baseline.value`, when there is a baseline. */
  ratio?: number;
  /** The target this figure is checked against, in words (e.g. `≤ 5 ms`). */
  target?: string;
  isMet?: boolean;
}

/** What a benchmark reports: figures for the table, details for the JSON file. */
export interface BenchmarkResult {
  figures: Figure[];
  details: Record<string, unknown>;
}

/** What a benchmark may use while it runs. */
export interface BenchmarkContext {
  /** Progress notes, written to stderr so that stdout keeps the table only. */
  log(message: string): void;
}

/** One benchmark, selected on the command line by `name`. */
export interface Benchmark {
  readonly name: string;
  /** One line: what is measured and against what. */
  readonly summary: string;
  run(context: BenchmarkContext): Promise<BenchmarkResult>;
}

/** A figure compared with a baseline: fills in the ratio. */
export function compared(figure: Omit<Figure, "ratio">, baseline: { label: string; value: number }): Figure {
  return { ...figure, baseline, ratio: baseline.value === 0 ? Number.NaN : figure.value / baseline.value };
}
