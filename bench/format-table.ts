import type { BenchmarkResult, Figure } from "./benchmark.js";

const HEADERS = ["benchmark", "figure", "value", "baseline", "ratio", "target", "met"] as const;

function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  return Math.abs(value) >= 1000 ? Math.round(value).toLocaleString("en") : String(value);
}

function row(name: string, figure: Figure): string[] {
  return [
    name,
    figure.label,
    `${formatNumber(figure.value)} ${figure.unit}`,
    figure.baseline ? `${formatNumber(figure.baseline.value)} (${figure.baseline.label})` : "",
    figure.ratio === undefined ? "" : figure.ratio.toFixed(2),
    figure.target ?? "",
    figure.isMet === undefined ? "" : figure.isMet ? "yes" : "NO",
  ];
}

/** The results as a plain-text table, one line per figure (a failed benchmark gets one line). */
export function formatTable(results: Record<string, BenchmarkResult | { error: string }>): string {
  const rows: string[][] = [];
  for (const [name, result] of Object.entries(results)) {
    if ("error" in result) rows.push([name, `FAILED: ${result.error.split("\n")[0]}`, "", "", "", "", ""]);
    else for (const figure of result.figures) rows.push(row(name, figure));
  }
  const widths = HEADERS.map((header, column) => Math.max(header.length, ...rows.map((cells) => cells[column]!.length)));
  const line = (cells: readonly string[]) => cells.map((cell, column) => cell.padEnd(widths[column]!)).join("  ").trimEnd();
  return [line(HEADERS), line(widths.map((width) => "-".repeat(width))), ...rows.map(line)].join("\n");
}
