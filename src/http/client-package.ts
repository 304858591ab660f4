import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { Express, RequestHandler } from 'express';
import { pack } from 'tar-stream';
import { PublishedDocument, servePublished } from './docs.ts';
import { ROOT_DIR } from '../root.ts';

const CLIENT_DIR = path.join(ROOT_DIR, 'clients', 'typescript');
const gzip = promisify(zlib.gzip);
/** npm's own fixed date for packed files (1985-10-26T08:15:00Z): the bytes do not depend on the checkout's times. */
const NPM_DATE = new Date(499162500 * 1000);

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

/**
 * The client package as `npm pack` makes it, a gzipped tar of `package/…`, built from the committed
 * files (clients/typescript/dist is checked fresh by `npm run generate:check`); the same bytes for the
 * same files, so its ETag changes only with the package.
 */
export async function packClient(): Promise<{ tgz: Buffer; modified: Date }> {
  const tar = pack();
  let modified = 0;
  for (const name of packageFiles()) {
    const file = path.join(CLIENT_DIR, name);
    const body = readFileSync(file);
    modified = Math.max(modified, statSync(file).mtimeMs);
    tar.entry({ name: `package/${name}`, size: body.length, mode: 0o644, uid: 0, gid: 0, mtime: NPM_DATE }, body);
  }
  tar.finalize();
  // In libuv's thread pool, not on the event loop (about 15 ms).
  return { tgz: await gzip(await buffer(tar), { level: 9 }), modified: new Date(modified) };
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
