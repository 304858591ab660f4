import { IncomingMessage, ServerResponse, validateHeaderName } from 'node:http';
import { Socket } from 'node:net';

/** A header this app writes on every answer, its name lower-cased once. */
export interface KnownHeader {
  name: string;
  lower: string;
}

/** Checked here, once, as setHeader would check the name on every call. */
export function knownHeader(name: string): KnownHeader {
  validateHeaderName(name);
  return { name, lower: name.toLowerCase() };
}

type HeaderTable = Record<string, [string, string]> | null;

/**
 * Node's own table of a response's headers (`kOutHeaders`), where setHeader keeps `[name, value]`
 * under the lower-cased name; undefined unless this Node keeps it exactly so (checked once, here).
 */
const outHeaders = ((): symbol | undefined => {
  const res = new ServerResponse(new IncomingMessage(new Socket()));
  const key = Object.getOwnPropertySymbols(res).find((s) => s.description === 'kOutHeaders');
  if (!key) return undefined;
  res.setHeader('X-Probe', 'value');
  const table = (res as unknown as Record<symbol, HeaderTable>)[key];
  const entry = table?.['x-probe'];
  return entry?.[0] === 'X-Probe' && entry[1] === 'value' && Object.keys(table!).length === 1 ? key : undefined;
})();

/**
 * `res.setHeader(header.name, value)` for a header whose name is a constant and whose value this
 * app made (digits, a fixed text, an id of safe characters): stored as setHeader stores it, without
 * its name and value checks and lower-casing, which were a visible part of a request's CPU for
 * the dozen headers every answer carries (bench/README.md). Anything unusual goes to setHeader.
 */
export function setKnownHeader(res: ServerResponse, header: KnownHeader, value: string): void {
  const table = outHeaders && (res as unknown as Record<symbol, HeaderTable>)[outHeaders];
  if (!table || res.headersSent) {
    res.setHeader(header.name, value);
    return;
  }
  table[header.lower] = [header.name, value];
}
