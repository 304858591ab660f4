import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { Express, RequestHandler } from 'express';
import { PublishedDocument, servePublished } from './docs.ts';
import { ROOT_DIR } from '../root.ts';

const CLIENT_DIR = path.join(ROOT_DIR, 'clients', 'typescript');
const gzip = promisify(zlib.gzip);

/** Where the TypeScript client's package is served, outside /api and without a key: `npm install <server>/clients/typescript.tgz`. */
export const CLIENT_PACKAGE_PATH = '/clients/typescript.tgz';

/** The files `npm pack` would put in the package: package.json, README.md and `files` (dist/). */
function packageFiles(): string[] {
  const manifest = JSON.parse(readFileSync(path.join(CLIENT_DIR, 'package.json'), 'utf8')) as { files: string[] };
  const files = ['package.json', 'README.md'];
  for (const entry of manifest.files) {
    for (const item of readdirSync(path.join(CLIENT_DIR, entry), { recursive: true, withFileTypes: true })) {
      if (item.isFile()) files.push(path.relative(CLIENT_DIR, path.join(item.parentPath, item.name)).split(path.sep).join('/'));
    }
  }
  return files.sort();
}

/** One ustar header block (POSIX.1-1988) for a regular file under `package/`, as npm's tarballs have. */
function tarHeader(name: string, size: number, mtime: number): Buffer {
  const header = Buffer.alloc(512);
  const field = (value: string, offset: number, length: number) => header.write(value, offset, length, 'utf8');
  const octal = (value: number, offset: number, length: number) => field(value.toString(8).padStart(length - 1, '0') + '\0', offset, length);
  const full = `package/${name}`;
  if (Buffer.byteLength(full) > 100) throw new Error(`client package file name too long for a tar header: ${full}`);
  field(full, 0, 100);
  octal(0o644, 100, 8);
  octal(0, 108, 8);
  octal(0, 116, 8);
  octal(size, 124, 12);
  octal(mtime, 136, 12);
  field('        ', 148, 8);
  field('0', 156, 1);
  field('ustar\u000000', 257, 8);
  let sum = 0;
  for (const byte of header) sum += byte;
  field(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8);
  return header;
}

/**
 * The client package as `npm pack` makes it, a gzipped tar of `package/…`, built from the committed
 * files (clients/typescript/dist is checked fresh by `npm run generate:check`); the same bytes for the
 * same files, so its ETag changes only with the package.
 */
export async function packClient(): Promise<{ tgz: Buffer; modified: Date }> {
  const blocks: Buffer[] = [];
  let modified = 0;
  for (const name of packageFiles()) {
    const file = path.join(CLIENT_DIR, name);
    const body = readFileSync(file);
    modified = Math.max(modified, statSync(file).mtimeMs);
    // npm's own fixed date (1985-10-26T08:15:00Z): the bytes do not depend on the checkout's times.
    blocks.push(tarHeader(name, body.length, 499162500), body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  // In libuv's thread pool, not on the event loop (about 15 ms).
  return { tgz: await gzip(Buffer.concat(blocks), { level: 9 }), modified: new Date(modified) };
}

/** Serves the client package, packed once when first asked for, with the published documents' validators. */
export function registerClientPackage(app: Express): void {
  let packing: Promise<RequestHandler> | undefined;
  app.get(CLIENT_PACKAGE_PATH, (req, res, next) => {
    packing ??= packClient().then(({ tgz, modified }) => {
      const doc = new PublishedDocument(tgz, 'application/gzip', modified);
      return servePublished(() => doc, { compressed: true });
    });
    packing.then(
      (serve) => {
        res.setHeader('Content-Disposition', 'attachment; filename="client-api-v1-client.tgz"');
        serve(req, res, next);
      },
      (err: unknown) => {
        // A failed pack (clients/typescript missing from a deployment) is tried again by the next request.
        packing = undefined;
        next(err);
      },
    );
  });
}
