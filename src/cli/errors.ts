/** An expected failure (bad input, unknown broker): one line on stderr, exit status 1, no stack. */
export class CliError extends Error {
  override readonly name = 'CliError';
}

/** A rejected import row: `row` is the 1-based data row (the header of a CSV is not counted). */
export class ImportRowError extends CliError {
  constructor(
    readonly row: number,
    readonly field: string | undefined,
    readonly reason: string,
  ) {
    super(field === undefined ? `row ${row}: ${reason}` : `row ${row}, field "${field}": ${reason}`);
  }
}

/** One line, whatever the error: Prisma and driver messages often span several. */
export function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s*\n\s*/g, ' ').trim() || 'unexpected error';
}
